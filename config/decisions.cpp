#include "config/decisions.hpp"

#include <algorithm>
#include <array>
#include <mutex>

#include <fmt/format.h>

#include "config/json_reader.hpp"
#include "config/load.hpp"

namespace moesim::config {

const std::vector<DecisionSetting>& decision_settings() {
  // Most specific first: the first prefix that matches decides.
  static const std::vector<DecisionSetting> kSettings{
      {"parallelism.dp", std::nullopt},  // derived: the GPUs over tp x pp x cp
      {"parallelism.expert_dp", std::nullopt},
      {"parallelism.num_microbatches", std::nullopt},
      {"parallelism.tp", Decision::tp},
      {"parallelism.etp", Decision::tp},
      {"parallelism.sequence_parallel", Decision::tp},
      {"framework.tp_comm_overlap", Decision::tp},
      {"parallelism.ep", Decision::ep_span},
      {"parallelism.pp", Decision::pipeline},  // pp, pp_layout
      {"parallelism.vpp", Decision::pipeline},
      {"parallelism.pipeline_schedule", Decision::pipeline},
      {"parallelism.cp", Decision::layout},
      {"parallelism.", Decision::layout},
      {"training.micro_batch_size", Decision::mbs},
      {"training.global_batch_size", Decision::batch},
      {"training.precision", Decision::precision},
      {"framework.dispatcher", Decision::dispatcher},  // dispatcher, dispatcher_sms
      {"framework.moe_a2a_overlap", Decision::ep_overlap},
      {"framework.delay_wgrad_compute", Decision::ep_overlap},
      // The shared expert's GEMMs beside the EP all-to-alls: an overlap of EP communication.
      {"framework.moe_shared_expert_overlap", Decision::ep_overlap},
      {"framework.cuda_graph_scope", Decision::cuda_graph},
      {"framework.recompute_modules", Decision::recompute},
      {"framework.overlap_grad_reduce", Decision::zero_overlap},
      {"framework.overlap_param_gather", Decision::zero_overlap},
      {"stack.release", Decision::release},
      {"stack.cpu_numa_binding", Decision::host},
      {"stack.te_host_slim", Decision::host},
      {"stack.", Decision::fusion},
      {"system", Decision::system},
      {"placement", Decision::ep_span},
      {"routing", Decision::routing},  // balance, its coefficient, seed, histogram
  };
  return kSettings;
}

std::optional<Decision> decision_of_setting(std::string_view path) {
  for (const auto& s : decision_settings()) {
    const bool match = s.path.ends_with('.')
                           ? path.starts_with(s.path)
                           : path.starts_with(s.path) &&
                                 (path.size() == s.path.size() || path[s.path.size()] == '_' ||
                                  path[s.path.size()] == '.');
    if (match) return s.decision;
  }
  return std::nullopt;
}

const std::vector<DecisionEvidence>& decision_evidence() {
  static std::once_flag once;
  static std::vector<DecisionEvidence> table;
  std::call_once(once, [] {
    const std::string label = "calibration/evidence/decisions.json (built-in)";
    const Json j = parse_json(preset_text(PresetKind::evidence, "decisions", label), label);
    const Node root(j, "", std::make_shared<const std::string>(label));
    for (const auto& e : decision_names().entries()) {
      DecisionEvidence d;
      d.decision = e.value;
      if (j.contains("decisions") && j["decisions"].contains(std::string(e.name))) {
        const Node n =
            root.child_at(j["decisions"][std::string(e.name)], "decisions." + std::string(e.name));
        read_object(n, [&](Object& o) {
          d.pairs = static_cast<int>(o.req("pairs").as_int(0, 1 << 20));
          d.significant = static_cast<int>(o.req("significant").as_int(0, 1 << 20));
          d.wrong_direction = static_cast<int>(o.req("wrong_direction").as_int(0, 1 << 20));
          d.mean_abs_ratio_error_pct = o.req("mean_abs_ratio_error_pct").as_number(0, 1e6);
          d.max_abs_ratio_error_pct = o.req("max_abs_ratio_error_pct").as_number(0, 1e6);
          d.max_measured_effect_pct = o.req("max_measured_effect_pct").as_number(0, 1e6);
          d.worst = o.string_or("worst", "");
        });
      }
      table.push_back(d);
    }
  });
  return table;
}

const DecisionEvidence& evidence_for(Decision d, const std::vector<DecisionEvidence>& table) {
  static const DecisionEvidence kNone;
  const auto it = std::find_if(table.begin(), table.end(),
                               [&](const DecisionEvidence& e) { return e.decision == d; });
  return it == table.end() ? kNone : *it;
}

ClaimAssessment assess_claim(double gain_pct, const std::vector<Decision>& decisions,
                             const std::vector<DecisionEvidence>& table) {
  ClaimAssessment a;
  for (const auto& e : decision_names().entries())
    if (std::find(decisions.begin(), decisions.end(), e.value) != decisions.end())
      a.decisions.push_back(e.value);
  double worst = 0, seen = 0;
  bool all_have_pairs = true;
  for (Decision d : a.decisions) {
    const auto& ev = evidence_for(d, table);
    if (ev.pairs == 0) all_have_pairs = false;
    worst = std::max(worst, ev.max_abs_ratio_error_pct);
    seen = std::max(seen, ev.max_measured_effect_pct);
    if (ev.pairs == 0 || ev.wrong_direction > 0) a.weak.push_back(d);
  }
  if (all_have_pairs) a.demonstrated_error = worst;
  if (a.demonstrated_error && gain_pct <= *a.demonstrated_error)
    a.support = ClaimSupport::within_error;
  else if (!a.weak.empty() || !all_have_pairs)
    a.support = ClaimSupport::unvalidated;
  else if (gain_pct > worst + seen)
    a.support = ClaimSupport::extrapolated;
  else
    a.support = gain_pct >= 2 * worst ? ClaimSupport::backed : ClaimSupport::uncertain;
  return a;
}

const sim_core::NameTable<ClaimSupport>& claim_support_names() {
  static constexpr std::array<sim_core::NameEntry<ClaimSupport>, 5> kEntries{{
      {ClaimSupport::within_error, "within_error",
       "the gain is within the model's demonstrated error for these decisions"},
      {ClaimSupport::backed, "backed",
       "every decision has measured pairs, none the wrong way, and a pair measured an effect this "
       "large"},
      {ClaimSupport::uncertain, "uncertain",
       "every decision has measured pairs, none the wrong way, but the model's worst error on them "
       "would take most of the gain"},
      {ClaimSupport::extrapolated, "extrapolated",
       "every decision has measured pairs, none the wrong way, but none measured an effect this "
       "large"},
      {ClaimSupport::unvalidated, "unvalidated",
       "a decision has no measured pair, or one the model got the wrong way"},
  }};
  static constexpr sim_core::NameTable<ClaimSupport> kTable{kEntries};
  return kTable;
}

}  // namespace moesim::config
