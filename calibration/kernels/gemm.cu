// calibration/kernels/gemm.cu: dense and grouped GEMM throughput through cuBLASLt.
#include <cublasLt.h>
#include <cuda_bf16.h>

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
