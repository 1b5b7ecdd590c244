// `moesim calibrate corpus`'s parameter table: every system preset gets exactly one value of
// each quantity that holds for it, so no preset is left with the op-loop host costs (a
// load factor of 1) because its GPU is missing from a per-CPU group.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "calibration/corpus_params.hpp"
#include "calibration/infer_params.hpp"
#include "workload/options.hpp"

using namespace moesim;

TEST_CASE("Every system preset is in exactly one load-factor group", "[calibration][corpus]") {
  for (const auto& name : config::preset_names(config::PresetKind::system)) {
    INFO("system preset " << name);
    const auto sys = config::load_system_preset(name);
    int groups = 0;
    for (const auto& p : calibration::corpus_params())
      if (p.name == "host.load_factor" && p.applies_to(sys)) ++groups;
    CHECK(groups == 1);
    // And the fitted value reaches the preset through calibration/profiles/corpus.json.
    REQUIRE(sys.host.load_factor.has_value());
    CHECK(sys.host.load_factor->value > 1.0);
    CHECK(sys.host.load_factor->source.find("corpus") != std::string::npos);
  }
}

TEST_CASE("Corpus parameters carry physical bounds around their start and name their GPUs", "[calibration][corpus]") {
  const auto systems = config::preset_names(config::PresetKind::system);
  for (const auto& p : calibration::corpus_params()) {
    INFO(p.label());
    CHECK(p.lo <= p.initial);
    CHECK(p.initial <= p.hi);
    // Every GPU a parameter names is some system preset's, so no group is a typo.
    for (const auto gpu : calibration::gpu_names(p.gpus)) {
      bool known = false;
      for (const auto& name : systems) known = known || config::load_system_preset(name).gpu.name == gpu;
      CHECK(known);
    }
  }
  CHECK(calibration::corpus_params()[0].label() == "host.load_factor [H100 SXM|H800 SXM|H200 SXM|H20|B200 (HGX)]");
}

TEST_CASE("Every inferable parameter belongs to a known stack switch and writes its system field",
          "[calibration][infer]") {
  for (const auto& p : calibration::inferable_params()) {
    INFO(p.name);
    int found = 0;
    for (const auto& s : workload::stack_switches()) found += s.name == p.stack_switch;
    CHECK(found == 1);
    CHECK(p.lo < p.hi);
    hw_models::SystemSpec sys;
    p.set(sys, 0.5 * (p.lo + p.hi));
    const bool written = (sys.host.numa_unbound_factor && sys.host.numa_unbound_factor->value == 0.5 * (p.lo + p.hi)) ||
                         (sys.host.te_slim_factor && sys.host.te_slim_factor->value == 0.5 * (p.lo + p.hi)) ||
                         (sys.ep_dispatch.deepep_tuned_factor &&
                          sys.ep_dispatch.deepep_tuned_factor->value == 0.5 * (p.lo + p.hi));
    CHECK(written);
  }
  CHECK(calibration::find_inferable("numa_unbound_factor") != nullptr);
  CHECK(calibration::find_inferable("clock_speed") == nullptr);
}
