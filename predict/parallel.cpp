#include "predict/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace moesim::predict {

void run_parallel(std::size_t n, int jobs, const std::function<void(std::size_t)>& f,
                  std::stop_token stop) {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads =
      std::min<std::size_t>(n, jobs > 0 ? static_cast<std::size_t>(jobs) : cores);
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex m;
  const auto worker = [&] {
    for (std::size_t i; !stop.stop_requested() && (i = next++) < n;) {
      try {
        f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!error) error = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace moesim::predict
