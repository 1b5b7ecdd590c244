// The steady-state reduction (predict/predict.hpp): two shorter runs extrapolated in the
// microbatches stay within 0.5% of simulating every microbatch, on every shipped scenario
// it applies to; where it does not apply, predict() simulates the step as it is.
#include <catch2/catch.hpp>

#include <cmath>

#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {
double rel(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}
}  // namespace

TEST_CASE(
    "Steady-state microbatch counts: past warm-up, as the schedule accepts, only where it saves a "
    "quarter",
    "[predict][steady_state]") {
  using schedules::ScheduleKind;
  workload::Parallelism p;
  p.pp = 8;
  p.vpp = 4;
  p.num_microbatches = 1024;
  // 32 virtual stages, a multiple of pp 8: M1 64, M2 96, and the check M3 128;
  // 4 x 288 <= 3 x 1024.
  auto r = predict::steady_state_microbatches(ScheduleKind::interleaved_1f1b, p);
  REQUIRE(r);
  CHECK(r->first == 64);
  CHECK(r->second == 96);
  p.num_microbatches = 376;  // 4 x 288 > 3 x 376
  CHECK_FALSE(predict::steady_state_microbatches(ScheduleKind::interleaved_1f1b, p));
  p.num_microbatches = 384;  // 1152 <= 1152
  CHECK(predict::steady_state_microbatches(ScheduleKind::interleaved_1f1b, p));
  p.pp = 1;
  p.vpp = 1;
  p.num_microbatches = 64;  // A14's 64 microbatches on one stage: 16, 24 and 32 save too little
  CHECK_FALSE(predict::steady_state_microbatches(ScheduleKind::one_f_one_b, p));
  p.num_microbatches = 96;
  r = predict::steady_state_microbatches(ScheduleKind::one_f_one_b, p);
  REQUIRE(r);
  CHECK(r->first == 16);
  CHECK(r->second == 24);
  p.pp = 6;
  p.num_microbatches =
      600;  // DualPipe: multiples of 2 pp = 12; 16 rounds up to 24, 8 to 12 -> 24, 36
  r = predict::steady_state_microbatches(ScheduleKind::dualpipe, p);
  REQUIRE(r);
  CHECK(r->first == 24);
  CHECK(r->second == 36);
}

TEST_CASE("The steady-state reduction is within 0.5% of the full step on every shipped scenario",
          "[predict][steady_state][slow]") {
  int reduced = 0;
  for (const auto& file : test::shipped_scenarios()) {
    config::Scenario sc;
    try {
      sc = config::load_scenario_file(file);
    } catch (const config::InputError&) {
      continue;  // the bad-input examples
    }
    if (!predict::steady_state_microbatches(sc.pipeline_schedule, sc.parallelism)) continue;
    ++reduced;
    INFO(file);
    schedules::StepOptions every;
    every.steady_state = false;
    const auto full = predict::predict(sc, every);
    const auto fast = predict::predict(sc);
    CHECK(rel(fast.step.step_time_s, full.step.step_time_s) < 0.005);
    CHECK(fast.step.critical_rank == full.step.critical_rank);
    const auto& a = fast.step.breakdown;
    const auto& b = full.step.breakdown;
    const double t = full.step.step_time_s;
    for (const auto& [x, y] :
         {std::pair{a.compute, b.compute}, std::pair{a.exposed_comm, b.exposed_comm},
          std::pair{a.pipeline_bubble, b.pipeline_bubble},
          std::pair{a.host_bound_idle, b.host_bound_idle}})
      CHECK(std::abs(x - y) < 0.005 * t);
    CHECK(fast.step.kernels < full.step.kernels + full.step.kernels / 100);
  }
  CHECK(reduced > 0);
}
