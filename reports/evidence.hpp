// reports/evidence.hpp: what the what-if corpus says about a claimed gain, as `plan --given`
// and `diff` print it (config/decisions.hpp holds the table and the rule; this file formats).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "config/decisions.hpp"

namespace moesim::reports {

// One decision's record: "tp (2 pairs, largest measured effect 2.3%, mean ratio error 17.9%)".
std::string decision_record(config::Decision d);
// A claim's line: "backed: tp (...); mbs (...)", or "no decision differs".
std::string claim_text(const config::ClaimAssessment& claim);
// {gain_pct, decisions [{decision, pairs, mean_abs_ratio_error_pct, max_measured_effect_pct,
// wrong_direction}], demonstrated_error_pct, support, weak}.
nlohmann::ordered_json claim_json(double gain_pct, const config::ClaimAssessment& claim);

}  // namespace moesim::reports
