// config/caveats.hpp: a prediction that prices something beyond its evidence says so. The
// NUMA-unbound host factor is fitted on the corpus's unbound runs, all on Grace today
// (calibration/profiles/corpus.json `fits[].cpus`); an unbound x86 run pays it unmeasured.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "config/caveats.hpp"
#include "config/load.hpp"

using namespace moesim;

namespace {
const std::string kRoot = MOESIM_SOURCE_DIR "/scenarios/";
bool mentions(const std::vector<std::string>& v, const std::string& what) {
  return std::any_of(v.begin(), v.end(),
                     [&](const std::string& s) { return s.find(what) != std::string::npos; });
}
}  // namespace

TEST_CASE("Caveats: the NUMA-unbound factor off the hosts it was measured on",
          "[config][caveats]") {
  const auto cpus = config::corpus_fit_cpus("host.numa_unbound_factor");
  REQUIRE_FALSE(cpus.empty());
  // Measured where unbound runs were fitted: the GB200 journey's first steps (Grace).
  const auto journey = config::load_scenario_file(kRoot + "journey/01-baseline.json");
  REQUIRE_FALSE(journey.stack.cpu_numa_binding);
  CHECK(std::find(cpus.begin(), cpus.end(), journey.system.node.cpu) != cpus.end());
  CHECK(config::prediction_caveats(journey).empty());

  // A host no unbound run was measured on: the caveat names the factor and the host.
  auto other = journey;
  other.system.node.cpu = "a CPU no corpus run used";
  const auto c = config::prediction_caveats(other);
  REQUIRE(c.size() == 1);
  CHECK(mentions(c, "host.numa_unbound_factor"));
  CHECK(mentions(c, "a CPU no corpus run used"));
  // PAI's unbound x86 runs (held out): no unbound x86 run is in the fit today.
  auto p1 = config::load_scenario_file(kRoot + "pai/p1-tp4pp8vpp4.json");
  REQUIRE_FALSE(p1.stack.cpu_numa_binding);
  REQUIRE(std::find(cpus.begin(), cpus.end(), p1.system.node.cpu) == cpus.end());
  CHECK(mentions(config::prediction_caveats(p1), p1.system.node.cpu));
  // Bound, there is nothing to extrapolate.
  p1.stack.cpu_numa_binding = true;
  CHECK(config::prediction_caveats(p1).empty());
}
