// Simulating runs of kernels as one (schedules/kernel_pricing.hpp, PricedLayer::merged;
// sim_core/gpu.hpp, coalescing) against the same step kernel by kernel (a trace keeps
// every kernel): the same step time and breakdown up to the picosecond rounding of the
// merged ends, the same kernel count, and far fewer engine events.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "config/load.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("Merged kernel runs predict what the step kernel by kernel predicts",
          "[schedules][merge]") {
  // The default scenario (captured attention, router and preprocessing: graph runs merge;
  // the experts' eager kernels coalesce behind a host that runs ahead), an eager BF16 H100
  // run, and ZB-H1 (its weight-gradient kernels keep a pass of their own).
  const auto zb = test::patched(
      test::default_scenario_json(),
      R"({"parallelism": {"pipeline_schedule": "zb-h1", "vpp": 1, "pp_layout": null}})");
  for (const char* file :
       {"scenarios/dsv3-gb200.json", "scenarios/examples/qwen3-30b-a3b-h100.json", "zb-h1"}) {
    INFO(file);
    const bool patched = std::string(file) == "zb-h1";
    const auto sc = patched ? config::load_scenario_text(zb.dump(), "zb-h1.json")
                            : config::load_scenario_file(test::source_path(file));
    schedules::StepOptions merged, single;
    merged.steady_state = single.steady_state = false;
    single.trace = true;
    const auto a = predict::predict(sc, merged), b = predict::predict(sc, single);
    CHECK(a.step.kernels == b.step.kernels);
    // Kernel by kernel every end is rounded to the picosecond (half a picosecond at most),
    // merged once a run: the two differ by less than a picosecond a kernel.
    const double rounding = 1e-12 * static_cast<double>(b.step.kernels);
    CHECK(std::abs(a.step.step_time_s - b.step.step_time_s) <= rounding);
    const auto fa = a.step.breakdown.flat(), fb = b.step.breakdown.flat();
    REQUIRE(fa.size() == fb.size());
    for (std::size_t i = 0; i < fa.size(); ++i) {
      INFO("breakdown field " << i);
      CHECK(std::abs(fa[i] - fb[i]) <= rounding);
    }
    // What the merging is for: fewer events (none fewer where nothing merges). GEMMs and
    // attention kernels stay apart (persistent: they hold their SMs, sim_core/gpu.hpp), so
    // a captured layer merges into the runs between them; the residual adds between a GEMM
    // and the next module's kernels (and the eager MoE combine's) stay alone: on the default
    // scenario about half the events go.
    CHECK(a.step.events <= b.step.events);
    if (std::string(file) == "scenarios/dsv3-gb200.json")
      CHECK(static_cast<double>(a.step.events) < 0.55 * static_cast<double>(b.step.events));
  }
}
