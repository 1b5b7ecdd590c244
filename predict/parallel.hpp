// predict/parallel.hpp: independent simulations on a pool of threads (validate, the
// corpus fit, sweeps). Simulations share nothing mutable, so each thread runs whole
// predictions; results go to caller-owned slots by index, keeping outputs deterministic.
#pragma once

#include <cstddef>
#include <functional>
#include <stop_token>

namespace moesim::predict {

// Runs f(0..n-1) on up to `jobs` threads (0: all cores); the first exception is rethrown
// after the running calls finish, and no further index is started. Once `stop` is
// requested (a sweep told to terminate, cli/terminate.hpp), no further index is started
// either: the running calls finish and run_parallel returns normally.
void run_parallel(std::size_t n, int jobs, const std::function<void(std::size_t)>& f,
                  std::stop_token stop = {});

}  // namespace moesim::predict
