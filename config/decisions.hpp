// config/decisions.hpp: what the what-if corpus says about each kind of decision (issue #44
// item 4). A measured pair (measured.compare_with, config::Decision) tests one decision;
// `moesim validate --evidence FILE` writes, per decision, how many pairs the corpus holds and
// how far the predicted ratios were from the measured ones. That file is
// calibration/evidence/decisions.json, compiled in; `plan` reads it to say how well the
// corpus supports the decisions that separate a candidate from the scenario as given, and
// the CTest decision-evidence holds it equal to what validate computes now.
//
// A claimed gain g = 100 (candidate / given - 1) of the objective, over the decisions D that
// differ between them (decision_of_setting on each differing column):
//   demonstrated error  e = max over d in D of d's largest absolute ratio error, its worst
//                       pair (none when a decision has no pair): with one to a few pairs per
//                       decision, the worst is the honest bound;
//   within error        g <= e: the model cannot tell the two apart on its record;
//   backed              g >= 2e (the claim keeps at least half its size under the worst
//                       error), every d in D has a pair, none of d's pairs went the wrong way,
//                       and g <= e + the largest effect any pair of a decision in D measured
//                       (a difference this large has been measured for one of them);
//   uncertain           as backed, but e < g < 2e: the worst error would take most of it;
//   extrapolated        as backed, but g is beyond what the pairs ever measured;
//   unvalidated         otherwise: a decision without a pair, or with a pair whose
//                       measured difference over 2% the model got the wrong way.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/scenario.hpp"

namespace moesim::config {

// The decision a scenario setting (a dotted path such as "parallelism.tp") belongs to;
// none for settings no decision covers (gpus, the model, the system). A registry of path
// prefixes, most specific first.
std::optional<Decision> decision_of_setting(std::string_view dotted_path);
struct DecisionSetting {
  std::string_view
      path;  // a dotted path (also matching path.* and path_*) or a prefix ending in '.'
  std::optional<Decision> decision;  // none: derived from other settings (dp, microbatches)
};
const std::vector<DecisionSetting>& decision_settings();

// One decision's record on the what-if corpus.
struct DecisionEvidence {
  Decision decision = Decision::layout;
  int pairs = 0, significant = 0, wrong_direction = 0;
  double mean_abs_ratio_error_pct = 0, max_abs_ratio_error_pct = 0;
  double max_measured_effect_pct = 0;  // the largest 100 |measured ratio - 1| among its pairs
  std::string worst;                   // the pair with the largest error
};
// The compiled-in table (calibration/evidence/decisions.json), one entry per decision
// (pairs 0 where the corpus has none).
const std::vector<DecisionEvidence>& decision_evidence();
// One decision's entry in `table` (no pairs where the table has none).
const DecisionEvidence& evidence_for(
    Decision d, const std::vector<DecisionEvidence>& table = decision_evidence());

enum class ClaimSupport { within_error, backed, uncertain, extrapolated, unvalidated };
struct ClaimAssessment {
  std::vector<Decision> decisions;           // that differ, in the table's order, once each
  std::optional<double> demonstrated_error;  // e above; none when a decision has no pair
  ClaimSupport support = ClaimSupport::within_error;
  std::vector<Decision>
      weak;  // unvalidated: the decisions without a pair or with a wrong direction
};
// `table`: the evidence to judge by (default: the compiled-in one).
ClaimAssessment assess_claim(double gain_pct, const std::vector<Decision>& decisions,
                             const std::vector<DecisionEvidence>& table = decision_evidence());
const sim_core::NameTable<ClaimSupport>& claim_support_names();

}  // namespace moesim::config
