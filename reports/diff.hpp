// reports/diff.hpp: `moesim diff A.json B.json`: two predictions side by side, the
// settings that differ, and the step-time difference split into contributions
// (predict/diff.hpp), as text or as one JSON object. Formatting only.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "predict/diff.hpp"

namespace moesim::reports {

struct DiffSide {
  const config::Scenario& scenario;
  const predict::Prediction& prediction;
};

nlohmann::ordered_json diff_json(const DiffSide& a, const DiffSide& b);
// What the two predictions are priced beyond (config::prediction_caveats, as `run` lists them:
// an announced system's projection, a --set what-if, ...): those both carry, then each side's own.
struct DiffCaveats {
  std::vector<std::string> both, a_only, b_only;
  // The three with whose they are ("of A and B", "of A only", "of B only"), in that order:
  // what the text's headings and the page's facts name.
  std::array<std::pair<const char*, const std::vector<std::string>*>, 3> groups() const {
    return {{{"of A and B", &both}, {"of A only", &a_only}, {"of B only", &b_only}}};
  }
};
DiffCaveats diff_caveats(const DiffSide& a, const DiffSide& b);
std::string diff_text(const DiffSide& a, const DiffSide& b);

}  // namespace moesim::reports
