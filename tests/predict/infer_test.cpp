// `moesim infer`: the command's contract. (The presets no longer hold step-inferred values:
// the NUMA and DeepEP-tuning quantities are fitted over the corpus, calibration/corpus_params.hpp.)
#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "predict/infer.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {

config::Scenario load(const char* file) {
  return config::load_scenario_file(test::source_path(file));
}

}  // namespace

TEST_CASE("Inference refuses pairs that are not before/after its switch", "[predict][infer]") {
  const auto* numa = calibration::find_inferable("numa_unbound_factor");
  REQUIRE(numa != nullptr);
  CHECK(calibration::find_inferable("clock_speed") == nullptr);
  const auto s8 = load("scenarios/journey/08-numa-binding.json");
  const auto s9 = load("scenarios/journey/09-pdl-swizzle.json");
  // Both have the binding on: not the step of this parameter.
  CHECK_THROWS_AS(predict::infer(*numa, s8, s9), config::InputError);
  auto unmeasured = load("scenarios/journey/07-deepep-tuned.json");
  unmeasured.measured.reset();
  CHECK_THROWS_AS(predict::infer(*numa, unmeasured, s8), config::InputError);
}

TEST_CASE("A parameter the step does not depend on is reported unsolved", "[predict][infer]") {
  // TE's slimmer host code cannot matter where the model has the host hidden behind the GPU:
  // the command says so instead of returning an end of the range as if it were a fit.
  const auto* slim = calibration::find_inferable("te_slim_factor");
  const auto r = predict::infer(*slim, load("scenarios/journey/11-hybridep.json"),
                                load("scenarios/journey/12-te-host-slim.json"));
  if (!r.solved) {
    CHECK(r.ratio_lo == Approx(r.ratio_hi).epsilon(0.02));
    CHECK(r.measured_ratio == Approx(956.21 / 943.56));
  } else {
    CHECK(r.predicted_ratio == Approx(r.measured_ratio).epsilon(1e-3));
  }
}
