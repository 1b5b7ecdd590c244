// `moesim calibrate corpus`'s parameter table: every system preset gets exactly one value of
// each quantity that holds for it, so no preset is left with the op-loop host costs (a
// load factor of 1) because its GPU is missing from a per-CPU group.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "reports/corpus.hpp"

using namespace moesim;

TEST_CASE("Every system preset is in exactly one load-factor group", "[reports][corpus]") {
  for (const auto& name : config::preset_names(config::PresetKind::system)) {
    INFO("system preset " << name);
    const auto sys = config::load_system_preset(name);
    int groups = 0;
    for (const auto& p : reports::corpus_params())
      if (p.name == "host.load_factor" && p.applies_to(sys)) ++groups;
    CHECK(groups == 1);
    // And the fitted value reaches the preset through calibration/profiles/corpus.json.
    REQUIRE(sys.host.load_factor.has_value());
    CHECK(sys.host.load_factor->value > 1.0);
    CHECK(sys.host.load_factor->source.find("corpus") != std::string::npos);
  }
}
