// calibration/kernels/gemm.cu: dense and grouped GEMM throughput through cuBLASLt.
#include <cublasLt.h>
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "calibration/kernels/common.cuh"

namespace moesim::calib {
namespace {

void lt_check(cublasStatus_t st, const char* what) {
  check(st == CUBLAS_STATUS_SUCCESS,
        std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(st)));
}

constexpr std::size_t kWorkspace = 32u << 20;

// One planned matmul: descriptors, the heuristic's algorithm, operands and workspace.
class Matmul {
 public:
  Matmul(cublasLtHandle_t lt, bool fp8, std::int64_t m, std::int64_t n, std::int64_t k) : lt_(lt) {
    const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    const std::size_t eb = fp8 ? 1 : 2;
    lt_check(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
             "cublasLtMatmulDescCreate");
    const cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    lt_check(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t),
             "TRANSA");
    lt_check(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn),
             "TRANSB");
    // Column-major TN: A is k x m (lda k), B k x n (ldb k), C and D m x n (ldc m).
    lt_check(cublasLtMatrixLayoutCreate(&a_, in, static_cast<std::uint64_t>(k),
                                        static_cast<std::uint64_t>(m), k),
             "layout A");
    lt_check(cublasLtMatrixLayoutCreate(&b_, in, static_cast<std::uint64_t>(k),
                                        static_cast<std::uint64_t>(n), k),
             "layout B");
    lt_check(cublasLtMatrixLayoutCreate(&c_, CUDA_R_16BF, static_cast<std::uint64_t>(m),
                                        static_cast<std::uint64_t>(n), m),
             "layout C");
    cublasLtMatmulPreference_t pref;
    lt_check(cublasLtMatmulPreferenceCreate(&pref), "preference");
    const std::size_t ws = kWorkspace;
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws),
             "workspace preference");
    int found = 0;
    lt_check(cublasLtMatmulAlgoGetHeuristic(lt_, op_, a_, b_, c_, c_, pref, 1, &heur_, &found),
             "heuristic");
    cublasLtMatmulPreferenceDestroy(pref);
    check(found > 0, "cuBLASLt has no algorithm for this GEMM");
    const auto bytes = [](std::int64_t r, std::int64_t c, std::size_t e) {
      return static_cast<std::size_t>(r) * static_cast<std::size_t>(c) * e;
    };
    cuda_check(cudaMalloc(&A_, bytes(m, k, eb)), "cudaMalloc A");
    cuda_check(cudaMalloc(&B_, bytes(k, n, eb)), "cudaMalloc B");
    cuda_check(cudaMalloc(&D_, bytes(m, n, 2)), "cudaMalloc D");
    cuda_check(cudaMalloc(&ws_, kWorkspace), "cudaMalloc workspace");
    fill_random(A_, bytes(m, k, eb), fp8, nullptr);
    fill_random(B_, bytes(k, n, eb), fp8, nullptr);
    cuda_check(cudaDeviceSynchronize(), "fill");
  }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;
  ~Matmul() {
    cudaFree(A_);
    cudaFree(B_);
    cudaFree(D_);
    cudaFree(ws_);
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(c_);
    cublasLtMatmulDescDestroy(op_);
  }
  void run(cudaStream_t s) {
    const float alpha = 1, beta = 0;
    lt_check(cublasLtMatmul(lt_, op_, &alpha, A_, a_, B_, b_, &beta, D_, c_, D_, c_, &heur_.algo,
                            ws_, kWorkspace, s),
             "cublasLtMatmul");
  }

 private:
  cublasLtHandle_t lt_;
  cublasLtMatmulDesc_t op_{};
  cublasLtMatrixLayout_t a_{}, b_{}, c_{};
  cublasLtMatmulHeuristicResult_t heur_{};
  void *A_ = nullptr, *B_ = nullptr, *D_ = nullptr, *ws_ = nullptr;
};

struct Handle {
  cublasLtHandle_t h{};
  Handle() { lt_check(cublasLtCreate(&h), "cublasLtCreate"); }
  ~Handle() { cublasLtDestroy(h); }
};

// The SM clock now: one thread counts SM cycles (clock64) against the global timer's
// nanoseconds across `span_ns`; out[0] cycles, out[1] nanoseconds.
__global__ void clock_probe(long long* out, long long span_ns) {
  long long t0 = 0, t1 = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  } while (t1 - t0 < span_ns);
  const long long c1 = clock64();
  out[0] = c1 - c0;
  out[1] = t1 - t0;
}

bool is_fp8(const std::string& dtype) {
  check(dtype == "bf16" || dtype == "fp8", "unknown GEMM dtype '" + dtype + "' (bf16, fp8)");
  return dtype == "fp8";
}

}  // namespace

GemmResult bench_gemm(const std::string& dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
  Handle lt;
  Matmul mm(lt.h, is_fp8(dtype), m, n, k);
  GemmResult r{dtype, m, n, k, 1, 0, 0};
  r.time_us = time_us(nullptr, [&] { mm.run(nullptr); });
  r.tflops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) /
             (r.time_us * 1e6);
  return r;
}

std::vector<SustainedBin> bench_sustained_gemm(const std::string& dtype, std::int64_t m,
                                               std::int64_t n, std::int64_t k, double seconds,
                                               double bin_s) {
  check(seconds > 0 && bin_s > 0 && bin_s <= seconds, "sustained GEMM: needs 0 < bin_s <= seconds");
  Handle lt;
  Matmul mm(lt.h, is_fp8(dtype), m, n, k);
  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  const double call_us = time_us(s, [&] { mm.run(s); });
  const long long per_bin = std::max(1LL, std::llround(bin_s * 1e6 / call_us));
  const int bins = static_cast<int>(std::max(1LL, std::llround(seconds / bin_s)));
  std::vector<cudaEvent_t> start(bins), end(bins);
  for (int b = 0; b < bins; ++b) {
    cuda_check(cudaEventCreate(&start[b]), "cudaEventCreate");
    cuda_check(cudaEventCreate(&end[b]), "cudaEventCreate");
  }
  long long* probe = nullptr;
  cuda_check(cudaMalloc(&probe, sizeof(long long) * 2 * static_cast<std::size_t>(bins)),
             "cudaMalloc");
  // The host queues every call; it blocks while the launch queue is full, so the GPU never
  // waits for it. The probe between two bins takes 100 us of a bin's second or more.
  for (int b = 0; b < bins; ++b) {
    cuda_check(cudaEventRecord(start[b], s), "cudaEventRecord");
    for (long long i = 0; i < per_bin; ++i) mm.run(s);
    cuda_check(cudaEventRecord(end[b], s), "cudaEventRecord");
    clock_probe<<<1, 1, 0, s>>>(probe + 2 * b, 100000);
    cuda_check(cudaGetLastError(), "clock_probe");
  }
  cuda_check(cudaStreamSynchronize(s), "sustained GEMM");
  std::vector<long long> ticks(2 * static_cast<std::size_t>(bins));
  cuda_check(
      cudaMemcpy(ticks.data(), probe, sizeof(long long) * ticks.size(), cudaMemcpyDeviceToHost),
      "cudaMemcpy");
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                       static_cast<double>(k) * static_cast<double>(per_bin);
  std::vector<SustainedBin> out;
  for (int b = 0; b < bins; ++b) {
    float bin_ms = 0, since_ms = 0;
    cuda_check(cudaEventElapsedTime(&bin_ms, start[b], end[b]), "cudaEventElapsedTime");
    cuda_check(cudaEventElapsedTime(&since_ms, start[0], end[b]), "cudaEventElapsedTime");
    const auto cycles = static_cast<double>(ticks[2 * static_cast<std::size_t>(b)]);
    const auto ns = static_cast<double>(ticks[2 * static_cast<std::size_t>(b) + 1]);
    out.push_back({since_ms / 1e3, flops / (static_cast<double>(bin_ms) * 1e9),
                   ns > 0 ? cycles / ns * 1e3 : 0});
  }
  cudaFree(probe);
  for (int b = 0; b < bins; ++b) {
    cudaEventDestroy(start[b]);
    cudaEventDestroy(end[b]);
  }
  cudaStreamDestroy(s);
  return out;
}

GemmResult bench_grouped_gemm(const std::string& dtype, std::int64_t groups, std::int64_t m,
                              std::int64_t n, std::int64_t k, int streams) {
  Handle lt;
  const bool fp8 = is_fp8(dtype);
  std::vector<std::unique_ptr<Matmul>> mms;
  for (std::int64_t g = 0; g < groups; ++g)
    mms.push_back(std::make_unique<Matmul>(lt.h, fp8, m, n, k));
  std::vector<cudaStream_t> ss(static_cast<std::size_t>(std::max(1, streams)));
  for (auto& s : ss)
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaStream_t main_stream;
  cuda_check(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<cudaEvent_t> fork(ss.size()), join(ss.size());
  for (std::size_t i = 0; i < ss.size(); ++i) {
    cuda_check(cudaEventCreateWithFlags(&fork[i], cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaEventCreateWithFlags(&join[i], cudaEventDisableTiming), "cudaEventCreate");
  }
  // Fork from the main stream, run the experts round-robin, join back.
  const auto once = [&] {
    for (std::size_t i = 0; i < ss.size(); ++i) {
      cuda_check(cudaEventRecord(fork[i], main_stream), "fork");
      cuda_check(cudaStreamWaitEvent(ss[i], fork[i]), "fork wait");
    }
    for (std::size_t g = 0; g < mms.size(); ++g) mms[g]->run(ss[g % ss.size()]);
    for (std::size_t i = 0; i < ss.size(); ++i) {
      cuda_check(cudaEventRecord(join[i], ss[i]), "join");
      cuda_check(cudaStreamWaitEvent(main_stream, join[i]), "join wait");
    }
  };
  GemmResult r{dtype, m, n, k, groups, 0, 0};
  r.time_us = time_us(main_stream, once);
  r.tflops = 2.0 * static_cast<double>(groups) * static_cast<double>(m) * static_cast<double>(n) *
             static_cast<double>(k) / (r.time_us * 1e6);
  for (std::size_t i = 0; i < ss.size(); ++i) {
    cudaEventDestroy(fork[i]);
    cudaEventDestroy(join[i]);
    cudaStreamDestroy(ss[i]);
  }
  cudaStreamDestroy(main_stream);
  return r;
}

}  // namespace moesim::calib
