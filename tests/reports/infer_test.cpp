// The journey's three inferred parameters: the command's contract, and the GB200 preset's
// values still reproducing the steps they were inferred from.
#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "reports/infer.hpp"
#include "reports/run.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {

config::Scenario load(const char* file) { return config::load_scenario_file(test::source_path(file)); }

// predicted(after) / predicted(before) against the measured ratio, with the preset as is.
void check_step_reproduced(const char* before, const char* after) {
  const auto b = load(before), a = load(after);
  const double pred = reports::predict(a).tflops_per_gpu / reports::predict(b).tflops_per_gpu;
  const double meas = a.measured->value / b.measured->value;
  INFO(before << " -> " << after << ": predicted " << pred << ", measured " << meas);
  CHECK(pred == Approx(meas).epsilon(0.005));
}

}  // namespace

TEST_CASE("The GB200 preset's inferred parameters reproduce their steps", "[reports][infer][journey]") {
  // Re-infer with `moesim infer` (see the preset's sources) when the model changes.
  check_step_reproduced("scenarios/journey/06-partial-cuda-graphs.json", "scenarios/journey/07-deepep-tuned.json");
  check_step_reproduced("scenarios/journey/07-deepep-tuned.json", "scenarios/journey/08-numa-binding.json");
}

TEST_CASE("Inference refuses pairs that are not before/after its switch", "[reports][infer]") {
  const auto* numa = reports::find_inferable("numa_unbound_factor");
  REQUIRE(numa != nullptr);
  CHECK(reports::find_inferable("clock_speed") == nullptr);
  const auto s8 = load("scenarios/journey/08-numa-binding.json");
  const auto s9 = load("scenarios/journey/09-pdl-swizzle.json");
  // Both have the binding on: not the step of this parameter.
  CHECK_THROWS_AS(reports::infer(*numa, s8, s9), config::InputError);
  auto unmeasured = load("scenarios/journey/07-deepep-tuned.json");
  unmeasured.measured.reset();
  CHECK_THROWS_AS(reports::infer(*numa, unmeasured, s8), config::InputError);
}

TEST_CASE("A parameter the step does not depend on is reported unsolved", "[reports][infer]") {
  // TE's slimmer host code cannot matter where the model has the host hidden behind the GPU:
  // the command says so instead of returning an end of the range as if it were a fit.
  const auto* slim = reports::find_inferable("te_slim_factor");
  const auto r = reports::infer(*slim, load("scenarios/journey/11-hybridep.json"),
                                load("scenarios/journey/12-te-host-slim.json"));
  if (!r.solved) {
    CHECK(r.ratio_lo == Approx(r.ratio_hi).epsilon(0.02));
    CHECK(r.measured_ratio == Approx(956.21 / 943.56));
  } else {
    CHECK(r.predicted_ratio == Approx(r.measured_ratio).epsilon(1e-3));
  }
}
