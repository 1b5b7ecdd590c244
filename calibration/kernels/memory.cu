// calibration/kernels/memory.cu: achieved HBM bandwidth of streaming kernels vs size.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "calibration/kernels/common.cuh"

namespace moesim::calib {
namespace {

__device__ std::uint32_t mix(std::uint64_t i) {
  std::uint64_t x = i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return static_cast<std::uint32_t>(x >> 32);
}

__global__ void fill_bf16(__nv_bfloat16* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(static_cast<float>(mix(i) & 0xFFFF) / 32768.0f - 1.0f);
}

__global__ void fill_fp8(std::uint8_t* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint8_t b = static_cast<std::uint8_t>(mix(i));
    if ((b & 0x7F) == 0x7F) b ^= 1;  // E4M3's NaNs
    p[i] = b;
  }
}

// 16-byte vectors, grid-stride.
__global__ void copy_kernel(const uint4* __restrict__ x, uint4* __restrict__ y, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    y[i] = x[i];
}

__global__ void axpy_kernel(const float4* __restrict__ x, float4* __restrict__ y, float a,
                            std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 u = x[i];
    float4 v = y[i];
    v.x += a * u.x;
    v.y += a * u.y;
    v.z += a * u.z;
    v.w += a * u.w;
    y[i] = v;
  }
}

// One warp per 128-value block: amax over the block, a scale, FP8 E4M3 values.
__global__ void quantize_kernel(const __nv_bfloat16* __restrict__ x, __nv_fp8_e4m3* __restrict__ q,
                                float* __restrict__ scale, std::size_t blocks) {
  const std::size_t warp = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  for (std::size_t b = warp; b < blocks;
       b += static_cast<std::size_t>(gridDim.x) * blockDim.x / 32) {
    float v[4];
    float amax = 0;
    for (int j = 0; j < 4; ++j) {
      v[j] = __bfloat162float(x[b * 128 + lane * 4 + j]);
      amax = fmaxf(amax, fabsf(v[j]));
    }
    for (int o = 16; o > 0; o /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
    const float s = amax > 0 ? 448.0f / amax : 1.0f;
    for (int j = 0; j < 4; ++j) q[b * 128 + lane * 4 + j] = __nv_fp8_e4m3(v[j] * s);
    if (lane == 0) scale[b] = 1.0f / s;
  }
}

int grid_for(std::size_t work) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const std::size_t want = (work + 255) / 256;
  return static_cast<int>(std::min<std::size_t>(want, static_cast<std::size_t>(sms) * 8));
}

}  // namespace

void fill_random(void* p, std::size_t n, bool fp8, cudaStream_t s) {
  if (fp8)
    fill_fp8<<<grid_for(n), 256, 0, s>>>(static_cast<std::uint8_t*>(p), n);
  else
    fill_bf16<<<grid_for(n / 2), 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), n / 2);
  cuda_check(cudaGetLastError(), "fill kernel");
}

MemoryResult bench_memory(const std::string& kernel, double bytes) {
  MemoryResult r{kernel, 0, 0, 0};
  // Buffer sizes so that the kernel moves `bytes` in total, rounded to whole 16-byte
  // vectors (copy, elementwise) or 128-value blocks (quantize).
  if (kernel == "copy") {
    const std::size_t n = static_cast<std::size_t>(bytes / 2 / 16);
    void *x, *y;
    cuda_check(cudaMalloc(&x, n * 16), "cudaMalloc");
    cuda_check(cudaMalloc(&y, n * 16), "cudaMalloc");
    fill_random(x, n * 16, false, nullptr);
    r.time_us = time_us(nullptr, [&] {
      copy_kernel<<<grid_for(n), 256>>>(static_cast<uint4*>(x), static_cast<uint4*>(y), n);
    });
    r.bytes = 2.0 * static_cast<double>(n) * 16;
    cudaFree(x);
    cudaFree(y);
  } else if (kernel == "elementwise") {
    const std::size_t n = static_cast<std::size_t>(bytes / 3 / 16);
    void *x, *y;
    cuda_check(cudaMalloc(&x, n * 16), "cudaMalloc");
    cuda_check(cudaMalloc(&y, n * 16), "cudaMalloc");
    cuda_check(cudaMemset(x, 0, n * 16), "cudaMemset");
    cuda_check(cudaMemset(y, 0, n * 16), "cudaMemset");
    r.time_us = time_us(nullptr, [&] {
      axpy_kernel<<<grid_for(n), 256>>>(static_cast<float4*>(x), static_cast<float4*>(y), 0.5f, n);
    });
    r.bytes = 3.0 * static_cast<double>(n) * 16;
    cudaFree(x);
    cudaFree(y);
  } else if (kernel == "quantize") {
    // Per 128 values: 256 bytes read, 128 + 4 written.
    const std::size_t blocks = static_cast<std::size_t>(bytes / (256 + 132));
    void *x, *q, *s;
    cuda_check(cudaMalloc(&x, blocks * 256), "cudaMalloc");
    cuda_check(cudaMalloc(&q, blocks * 128), "cudaMalloc");
    cuda_check(cudaMalloc(&s, blocks * 4), "cudaMalloc");
    fill_random(x, blocks * 256, false, nullptr);
    r.time_us = time_us(nullptr, [&] {
      quantize_kernel<<<grid_for(blocks * 32), 256>>>(static_cast<__nv_bfloat16*>(x),
                                                      static_cast<__nv_fp8_e4m3*>(q),
                                                      static_cast<float*>(s), blocks);
    });
    r.bytes = static_cast<double>(blocks) * (256 + 132);
    cudaFree(x);
    cudaFree(q);
    cudaFree(s);
  } else {
    check(false, "unknown memory kernel '" + kernel + "' (copy, elementwise, quantize)");
  }
  cuda_check(cudaGetLastError(), kernel.c_str());
  r.GBps = r.bytes / (r.time_us * 1e3);
  return r;
}

}  // namespace moesim::calib
