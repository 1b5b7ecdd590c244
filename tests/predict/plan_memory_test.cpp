// A plan's memory does not grow with its scenario (issue #47 item 2): the expanded candidates
// keep their CSV values, not their scenarios (predict::candidate_point rebuilds one), and the
// description, text no prediction reads, is emptied for the layouts and candidates. Before,
// a 5 MB description made an 8-GPU plan hold a copy per layout and candidate (17.5 GB).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "config/load.hpp"
#include "predict/plan.hpp"
#include "predict/sweep.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;

TEST_CASE("plan: candidates keep values, not scenarios; a long description changes no row",
          "[predict][plan]") {
  const std::string example = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");
  Json long_text = config::read_json_file(example);
  long_text["description"] = std::string(1 << 20, 'x');  // 1 MiB
  const test::TempFile file(long_text.dump());

  predict::PlanRequest req;
  req.gpus = 8;
  req.top = 3;
  req.jobs = 2;
  req.scenario_file = example;
  const predict::Plan plain = predict::plan(req);
  req.scenario_file = file.path();
  const predict::Plan described = predict::plan(req);

  REQUIRE(plain.outcome.simulated > 0);
  REQUIRE(described.outcome.candidates.size() == plain.outcome.candidates.size());
  for (std::size_t i = 0; i < plain.outcome.candidates.size(); ++i) {
    const auto &a = plain.outcome.candidates[i], &b = described.outcome.candidates[i];
    CHECK(a.point.id == b.point.id);
    CHECK(a.point.values == b.point.values);
    CHECK(a.row.status == b.row.status);
    CHECK(a.row.step_time_s == b.row.step_time_s);
    CHECK(a.row.message == b.row.message);
    // Bounded or simulated, no candidate holds a scenario.
    CHECK(b.point.scenario.is_null());
  }
  // Each layout's scenario carries the description emptied, not the 1 MiB.
  for (const auto& l : described.layouts.points)
    CHECK(l.scenario.value("description", std::string()).empty());

  // A candidate's scenario rebuilt: the same values, and it loads to the row's layout.
  std::size_t rebuilt = 0;
  for (const auto& c : described.outcome.candidates) {
    if (c.row.status != predict::SweepStatus::ok) continue;
    const config::SweepPoint p =
        predict::candidate_point(described.layouts.points, described.dims, c.point.id);
    CHECK(p.id == c.point.id);
    CHECK(p.values == c.point.values);
    const config::Scenario sc = config::load_scenario_json(p.scenario, file.path());
    CHECK(sc.gpus == 8);
    // The first one simulated again from its rebuilt scenario: the plan's row.
    if (rebuilt++ == 0) {
      const predict::SweepResult again = predict::evaluate_point(p, file.path(), std::nullopt);
      REQUIRE(again.status == predict::SweepStatus::ok);
      CHECK(again.step_time_s == Approx(c.row.step_time_s).epsilon(1e-12));
      CHECK(again.peak_memory_gib == Approx(c.row.peak_memory_gib).epsilon(1e-12));
    }
  }
  CHECK(rebuilt > 0);
  CHECK(rebuilt <= static_cast<std::size_t>(described.outcome.simulated));
  const auto space = static_cast<std::int64_t>(described.layouts.points.size()) *
                     predict::candidates_per_layout(described.dims);
  CHECK_THROWS_AS(predict::candidate_point(described.layouts.points, described.dims, space),
                  std::logic_error);
  CHECK_THROWS_AS(predict::candidate_point(described.layouts.points, described.dims, -1),
                  std::logic_error);
}
