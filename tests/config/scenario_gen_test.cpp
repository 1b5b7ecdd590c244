// The seeded scenario generator (tests/support/scenario_gen.hpp): deterministic per
// (seed, index), stratified over systems x dispatchers x schedules, every model drawn;
// and every draw either loads or is refused with an InputError (the loader half of the
// end-to-end fuzz test `fuzz-generated-scenarios`, in-process and fast).
#include <catch2/catch.hpp>

#include <set>

#include "support/helpers.hpp"
#include "support/scenario_gen.hpp"

using namespace moesim;

TEST_CASE("Scenario generator: deterministic per seed and index", "[config][fuzz]") {
  const test::ScenarioGenerator a(15), b(15), c(16);
  for (int i : {0, 7, 139, 140, 199, 5000}) {
    CHECK(a.generate(i).json == b.generate(i).json);
    CHECK(a.generate(i).json != c.generate(i).json);
  }
}

TEST_CASE("Scenario generator: 200 draws cover every combination", "[config][fuzz]") {
  const test::ScenarioGenerator gen(15);
  CHECK(gen.systems().size() >= 7);
  CHECK(gen.models().size() >= 8);
  CHECK(gen.dispatchers().size() == 4);
  CHECK(gen.schedules().size() == 5);
  REQUIRE(gen.combinations() <= 200);
  std::set<std::string> combos, models;
  int perturbed = 0, layouts = 0;
  for (int i = 0; i < 200; ++i) {
    const auto g = gen.generate(i);
    combos.insert(g.system + "/" + g.dispatcher + "/" + g.schedule);
    models.insert(g.model);
    perturbed += g.perturbed;
    layouts += g.json.contains("parallelism") && g.json["parallelism"].is_object() &&
               g.json["parallelism"].contains("pp_layout");
  }
  CHECK(static_cast<int>(combos.size()) == gen.combinations());
  CHECK(models.size() == gen.models().size());
  CHECK(perturbed > 20);
  CHECK(layouts > 30);
}

TEST_CASE("Scenario generator: every draw loads or is an InputError", "[config][fuzz]") {
  const test::ScenarioGenerator gen(15);
  int loaded = 0, refused = 0;
  for (int i = 0; i < 600; ++i) {
    const auto g = gen.generate(i);
    try {
      config::load_scenario_text(g.json.dump(), "fuzz.json");
      ++loaded;
    } catch (const config::InputError&) {
      ++refused;
    } catch (const std::exception& e) {
      FAIL("draw " << i << ": non-InputError exception: " << e.what() << "\n" << g.json.dump(2));
    }
  }
  // Most draws aim at valid layouts: the simulation must see plenty of them.
  CHECK(loaded > 200);
  CHECK(refused > 50);
}
