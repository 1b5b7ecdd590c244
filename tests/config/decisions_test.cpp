// config/decisions.hpp: the setting -> decision registry and the rule that says whether the
// what-if corpus backs a claimed gain (issue #44 item 4), on hand-built evidence tables; the
// compiled-in table has every decision.
#include <catch2/catch.hpp>

#include "config/decisions.hpp"

using namespace moesim;
using config::Decision;

TEST_CASE("Decisions: each plan and describe setting names its decision", "[config][decisions]") {
  const auto d = [](const char* p) { return config::decision_of_setting(p); };
  CHECK(d("parallelism.tp") == Decision::tp);
  CHECK(d("parallelism.etp") == Decision::tp);
  CHECK(d("parallelism.ep") == Decision::ep_span);
  CHECK(d("parallelism.pp_layout") == Decision::pipeline);  // the pp entry with its '_' suffix
  CHECK(d("parallelism.vpp") == Decision::pipeline);
  CHECK_FALSE(d("parallelism.dp"));  // derived from the others
  CHECK_FALSE(d("parallelism.num_microbatches"));
  CHECK(d("training.micro_batch_size") == Decision::mbs);
  CHECK(d("framework.dispatcher_sms") == Decision::dispatcher);
  CHECK(d("framework.moe_a2a_overlap") == Decision::ep_overlap);
  CHECK(d("framework.cuda_graph_scope") == Decision::cuda_graph);
  CHECK(d("framework.recompute_modules") == Decision::recompute);
  CHECK(d("framework.overlap_param_gather") == Decision::zero_overlap);
  CHECK(d("stack.release") == Decision::release);
  CHECK(d("stack.cpu_numa_binding") == Decision::host);
  CHECK(d("stack.router_fusion") == Decision::fusion);
  CHECK(d("system.name") == Decision::system);
  CHECK(d("placement.gpus_per_nvlink_domain") == Decision::ep_span);
  CHECK(d("routing.balance") == Decision::routing);
  CHECK(d("routing.coefficient") == Decision::routing);
  CHECK_FALSE(d("model.hidden_size"));
  CHECK_FALSE(d("training.seq_length"));
  // The compiled-in table has one entry per decision.
  CHECK(config::decision_evidence().size() == config::decision_names().entries().size());
}

TEST_CASE("Decisions: within error, backed, uncertain, extrapolated, unvalidated, by hand",
          "[config][decisions]") {
  std::vector<config::DecisionEvidence> t(3);
  t[0] = {Decision::tp, 2, 2, 0, 5.0, 8.0, 12.0, ""};  // 2 pairs, 5% error, effects up to 12%
  t[1] = {Decision::mbs, 1, 1, 0, 2.0, 2.0, 3.0, ""};  // 1 pair, 2% error, effect 3%
  t[2] = {Decision::ep_overlap, 2, 2, 1, 6.0, 7.0, 30.0, ""};  // a wrong direction
  using S = config::ClaimSupport;
  // The demonstrated error is the worst pair's among the decisions: tp's 8%.
  auto a = config::assess_claim(7.5, {Decision::mbs, Decision::tp}, t);
  CHECK(a.support == S::within_error);
  REQUIRE(a.demonstrated_error);
  CHECK(*a.demonstrated_error == 8.0);
  CHECK(a.decisions == std::vector<Decision>{Decision::tp, Decision::mbs});  // the table's order
  // Beyond 8%, within 8 + 12 = 20% (tp's largest measured effect, the larger): backed; beyond
  // it: extrapolated.
  CHECK(config::assess_claim(19.0, {Decision::tp, Decision::mbs}, t).support == S::backed);
  CHECK(config::assess_claim(16.0, {Decision::tp, Decision::mbs}, t).support ==
        S::backed);  // 2 x 8
  CHECK(config::assess_claim(15.0, {Decision::tp, Decision::mbs}, t).support ==
        S::uncertain);  // 8 < 15 < 16
  CHECK(config::assess_claim(21.0, {Decision::tp, Decision::mbs}, t).support == S::extrapolated);
  CHECK(config::assess_claim(6.0, {Decision::mbs}, t).support == S::extrapolated);  // 2 + 3 < 6
  // A decision the model got the wrong way, or one without a pair: unvalidated, named.
  a = config::assess_claim(50.0, {Decision::ep_overlap}, t);
  CHECK(a.support == S::unvalidated);
  CHECK(a.weak == std::vector<Decision>{Decision::ep_overlap});
  a = config::assess_claim(1.0, {Decision::tp, Decision::cuda_graph}, t);
  CHECK(a.support == S::unvalidated);  // no demonstrated error without a pair: even 1% is unbacked
  CHECK_FALSE(a.demonstrated_error);
  CHECK(a.weak == std::vector<Decision>{Decision::cuda_graph});
}
