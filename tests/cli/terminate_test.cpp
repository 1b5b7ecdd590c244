// cli/terminate.hpp: SIGTERM and SIGINT become a stop request while the watch lives, and
// the signal mask is as before once it is gone.
#include <catch2/catch.hpp>

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "cli/terminate.hpp"

using namespace moesim;

namespace {

bool blocked(int sig) {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, sig) == 1;
}

// Waits up to 5 s for the watcher to see the signal (it wakes every 0.1 s).
bool stop_seen(const cli::TerminationWatch& w) {
  for (int i = 0; i < 500 && !w.token().stop_requested(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return w.token().stop_requested();
}

}  // namespace

TEST_CASE("A termination watch turns SIGTERM and SIGINT into a stop request", "[cli][terminate]") {
  REQUIRE_FALSE(blocked(SIGTERM));
  for (const int sig : {SIGTERM, SIGINT}) {
    const cli::TerminationWatch w;
    CHECK(blocked(sig));
    CHECK_FALSE(w.token().stop_requested());
    CHECK(w.signal() == 0);
    // To the process, as Slurm and `kill` send it: the blocked signal waits for the watcher.
    REQUIRE(kill(getpid(), sig) == 0);
    CHECK(stop_seen(w));
    CHECK(w.signal() == sig);
  }
  CHECK_FALSE(blocked(SIGTERM));
  CHECK_FALSE(blocked(SIGINT));
}
