// Fuzzes the loader with truncated and mutated versions of every shipped scenario: each
// attempt must either load or raise InputError; any other exception, a crash or a hang
// fails. Deterministic (fixed seeds), sized to run in a few seconds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <random>

#include "support/helpers.hpp"

using namespace moesim;
using config::Json;

namespace {

struct Tally {
  int loaded = 0, refused = 0;
};

void attempt(const std::string& text, Tally& t) {
  try {
    config::load_scenario_text(text, "fuzz.json");
    ++t.loaded;
  } catch (const config::InputError&) {
    ++t.refused;
  } catch (const std::exception& e) {
    FAIL("non-InputError exception: " << e.what() << "\ninput:\n" << text);
  }
}

// Every leaf of a JSON document, by JSON pointer.
void leaves(const Json& j, const Json::json_pointer& at, std::vector<Json::json_pointer>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) leaves(v, at / k, out);
  } else if (j.is_array() && !j.empty()) {
    for (std::size_t i = 0; i < j.size(); ++i) leaves(j[i], at / i, out);
  } else {
    out.push_back(at);
  }
}

}  // namespace

TEST_CASE("Loader fuzz: truncations of shipped scenarios", "[config][fuzz]") {
  REQUIRE(test::shipped_scenarios().size() >= 17);
  Tally t;
  for (const auto& f : test::shipped_scenarios()) {
    const std::string text = test::read_text(f);
    // Every prefix that stops before the closing brace is incomplete JSON.
    const std::size_t end = text.rfind('}');
    for (std::size_t n = 0; n < end; n += 7) attempt(text.substr(0, n), t);
    attempt(text.substr(0, end), t);
  }
  CHECK(t.refused > 1000);
  CHECK(t.loaded == 0);
}

TEST_CASE("Loader fuzz: byte mutations", "[config][fuzz]") {
  Tally t;
  std::mt19937_64 rng(20261122);
  const std::string alphabet = "{}[]\":,0123456789-+.eE tfnaxyz|()*\\\n\x01\xff";
  for (const auto& f : test::shipped_scenarios()) {
    const std::string text = test::read_text(f);
    for (int i = 0; i < 150; ++i) {
      std::string m = text;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        const std::size_t pos = rng() % m.size();
        const char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 3) {
          case 0:
            m[pos] = c;
            break;
          case 1:
            m.erase(pos, 1 + rng() % 4);
            break;
          default:
            m.insert(pos, 1, c);
            break;
        }
      }
      attempt(m, t);
    }
  }
  CHECK(t.loaded + t.refused == static_cast<int>(test::shipped_scenarios().size()) * 150);
  CHECK(t.refused > 0);
}

TEST_CASE("Loader fuzz: every leaf replaced by hostile values", "[config][fuzz]") {
  const Json hostile[] = {Json(nullptr),
                          Json(-1),
                          Json(0),
                          Json(3.5),
                          Json(1e308),
                          Json(-1e308),
                          Json(std::numeric_limits<std::int64_t>::max()),
                          Json(std::numeric_limits<std::uint64_t>::max()),
                          Json("x"),
                          Json(""),
                          Json(true),
                          Json::array(),
                          Json::object(),
                          Json("(t*999999)*999999"),
                          Json(65536),
                          Json(1048576)};
  Tally t;
  for (const auto& f : test::shipped_scenarios()) {
    const Json doc = Json::parse(test::read_text(f));
    std::vector<Json::json_pointer> ptrs;
    leaves(doc, Json::json_pointer(), ptrs);
    for (const auto& p : ptrs) {
      for (const auto& h : hostile) {
        Json m = doc;
        m[p] = h;
        attempt(m.dump(), t);
      }
      Json removed = doc;
      Json& parent = removed[p.parent_pointer()];
      if (parent.is_array())
        parent.erase(static_cast<std::size_t>(std::stoul(p.back())));
      else
        parent.erase(p.back());
      attempt(removed.dump(), t);
    }
  }
  CHECK(t.refused > t.loaded);
}
