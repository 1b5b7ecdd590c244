// calibration/kernels/common.cuh: error checks, fills and event timing shared by the
// measurement files.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "calibration/kernels/calib.hpp"

namespace moesim::calib {

inline void cuda_check(cudaError_t e, const char* what) {
  check(e == cudaSuccess, std::string(what) + ": " + cudaGetErrorString(e));
}

// Mean device time of `reps` runs of f on `s` after `warmup` runs, best of three trials.
template <class F>
double time_us(cudaStream_t s, F&& f, int warmup = 3, int reps = 20) {
  cudaEvent_t a, b;
  cuda_check(cudaEventCreate(&a), "cudaEventCreate");
  cuda_check(cudaEventCreate(&b), "cudaEventCreate");
  for (int i = 0; i < warmup; ++i) f();
  double best = 1e300;
  for (int trial = 0; trial < 3; ++trial) {
    cuda_check(cudaEventRecord(a, s), "cudaEventRecord");
    for (int i = 0; i < reps; ++i) f();
    cuda_check(cudaEventRecord(b, s), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    best = std::min(best, 1000.0 * ms / reps);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}

// Fills `n` bytes with pseudo-random data that is finite in the element type: BF16
// values in [-1, 1), FP8 E4M3 bytes without the NaN patterns.
void fill_random(void* p, std::size_t n, bool fp8, cudaStream_t s);

}  // namespace moesim::calib
