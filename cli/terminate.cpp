#include "cli/terminate.hpp"

#include <pthread.h>

#include <cstdlib>
#include <ctime>

namespace moesim::cli {

TerminationWatch::TerminationWatch() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set_, &old_);
  watcher_ = std::jthread([this](std::stop_token own) {
    // Wakes ten times a second to notice the destructor's stop.
    const timespec tick{0, 100'000'000};
    while (!own.stop_requested()) {
      const int s = sigtimedwait(&set_, nullptr, &tick);
      if (s <= 0) continue;
      if (signal_.exchange(s) != 0) std::_Exit(128 + s);
      source_.request_stop();
    }
  });
}

TerminationWatch::~TerminationWatch() {
  watcher_.request_stop();
  watcher_.join();
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

}  // namespace moesim::cli
