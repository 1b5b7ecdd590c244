#include "reports/evidence.hpp"

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reports/text.hpp"

namespace moesim::reports {

std::string decision_record(config::Decision d) {
  const auto& ev = config::evidence_for(d);
  if (ev.pairs == 0) return fmt::format("{} (no measured pair)", config::decision_names().name(d));
  return fmt::format(
      "{} ({}, largest measured effect {:.1f}%, mean ratio error {:.1f}%{})",
      config::decision_names().name(d), counted(ev.pairs, "pair"), ev.max_measured_effect_pct,
      ev.mean_abs_ratio_error_pct,
      ev.wrong_direction ? fmt::format(", {} the wrong way", ev.wrong_direction) : "");
}

std::string claim_text(const config::ClaimAssessment& claim) {
  std::vector<std::string> ds;
  for (auto d : claim.decisions) ds.push_back(decision_record(d));
  return fmt::format(
      "{}: {}", config::claim_support_names().name(claim.support),
      ds.empty() ? std::string("no decision differs") : fmt::format("{}", fmt::join(ds, "; ")));
}

nlohmann::ordered_json claim_json(double gain_pct, const config::ClaimAssessment& claim) {
  using Json = nlohmann::ordered_json;
  Json decisions = Json::array();
  for (auto d : claim.decisions) {
    const auto& ev = config::evidence_for(d);
    decisions.push_back({{"decision", config::decision_names().name(d)},
                         {"pairs", ev.pairs},
                         {"mean_abs_ratio_error_pct", ev.mean_abs_ratio_error_pct},
                         {"max_measured_effect_pct", ev.max_measured_effect_pct},
                         {"wrong_direction", ev.wrong_direction}});
  }
  Json weak = Json::array();
  for (auto d : claim.weak) weak.push_back(config::decision_names().name(d));
  return {{"gain_pct", gain_pct},
          {"decisions", decisions},
          {"demonstrated_error_pct",
           claim.demonstrated_error ? Json(*claim.demonstrated_error) : Json(nullptr)},
          {"support", config::claim_support_names().name(claim.support)},
          {"weak", weak}};
}

}  // namespace moesim::reports
