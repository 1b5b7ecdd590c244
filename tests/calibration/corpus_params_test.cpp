// `moesim calibrate corpus`'s parameter table: every system preset gets exactly one value of
// each quantity that holds for it, so no preset is left with the op-loop host costs (a
// load factor of 1) because its GPU is missing from a per-CPU group.
#include <catch2/catch.hpp>

#include <string>

#include "calibration/corpus_params.hpp"
#include "calibration/infer_params.hpp"
#include "config/load.hpp"
#include "hw_models/system.hpp"
#include "workload/options.hpp"

using namespace moesim;

TEST_CASE("Every system preset gets the fitted host contention from the corpus profile",
          "[calibration][corpus]") {
  for (const auto& name : config::preset_names(config::PresetKind::system)) {
    INFO("system preset " << name);
    const auto sys = config::load_system_preset(name);
    // One host load quantity reaches every preset: no per-CPU group can leave one out.
    int host_loads = 0;
    for (const auto& p : calibration::corpus_params())
      if (p.name == "host.rank_contention" || p.name == "host.load_factor")
        host_loads += p.applies_to(sys);
    CHECK(host_loads == 1);
    // The fitted value reaches the preset through calibration/profiles/corpus.json, and no
    // per-system load factor overrides it.
    REQUIRE(sys.host.rank_contention.has_value());
    CHECK(sys.host.rank_contention->source.find("corpus") != std::string::npos);
    CHECK_FALSE(sys.host.load_factor.has_value());
    CHECK(hw_models::host_load_factor(sys, 1024) > 1.0);
  }
}

TEST_CASE("A loaded process's host load grows with the processes on its CPU socket",
          "[calibration][corpus]") {
  auto sys = config::load_system_preset("h100");  // 8 GPUs, 2 sockets a node
  sys.host.rank_contention = hw_models::Param{1.5, "test"};
  CHECK(hw_models::host_load_factor(sys, 1024) == Approx(1 + 1.5 * 4));
  CHECK(hw_models::host_load_factor(sys, 4) == Approx(1 + 1.5 * 2));  // half a node
  CHECK(hw_models::host_load_factor(sys, 1) == Approx(1 + 1.5 * 1));  // a socket holds at least one
  auto tray = config::load_system_preset("gb200-nvl72");              // 4 GPUs, 2 Grace a tray
  tray.host.rank_contention = hw_models::Param{1.5, "test"};
  CHECK(hw_models::host_load_factor(tray, 72) == Approx(1 + 1.5 * 2));
  // A system's explicit load factor replaces the formula; neither: the op-loop costs.
  sys.host.load_factor = hw_models::Param{2.0, "test"};
  CHECK(hw_models::host_load_factor(sys, 1024) == 2.0);
  sys.host.load_factor.reset();
  sys.host.rank_contention.reset();
  CHECK(hw_models::host_load_factor(sys, 1024) == 1.0);
}

TEST_CASE("Corpus parameters carry physical bounds around their start and name their GPUs",
          "[calibration][corpus]") {
  const auto systems = config::preset_names(config::PresetKind::system);
  for (const auto& p : calibration::corpus_params()) {
    INFO(p.label());
    CHECK(p.lo <= p.initial);
    CHECK(p.initial <= p.hi);
    // Every GPU a parameter names is some system preset's, so no group is a typo.
    for (const auto gpu : calibration::gpu_names(p.gpus)) {
      bool known = false;
      for (const auto& name : systems)
        known = known || config::load_system_preset(name).gpu.name == gpu;
      CHECK(known);
    }
  }
  CHECK(calibration::corpus_params()[0].label() == "host.rank_contention");
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
    const bool written =
        (sys.host.numa_unbound_factor &&
         sys.host.numa_unbound_factor->value == 0.5 * (p.lo + p.hi)) ||
        (sys.host.te_slim_factor && sys.host.te_slim_factor->value == 0.5 * (p.lo + p.hi)) ||
        (sys.ep_dispatch.deepep_tuned_factor &&
         sys.ep_dispatch.deepep_tuned_factor->value == 0.5 * (p.lo + p.hi));
    CHECK(written);
  }
  CHECK(calibration::find_inferable("numa_unbound_factor") != nullptr);
  CHECK(calibration::find_inferable("clock_speed") == nullptr);
}
