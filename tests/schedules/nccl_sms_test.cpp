// NCCL's EP all-to-all holds one SM per p2p channel it runs on (hw_models::nccl_dispatcher_sms:
// 32), so a computation beside it under EP overlap runs on what is left, as it does beside
// DeepEP's and HybridEP's kernels.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "config/load.hpp"
#include "hw_models/dispatcher.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("NCCL's EP all-to-all takes its channels' SMs from the computation beside it",
          "[schedules][closed-form]") {
  CHECK(hw_models::nccl_dispatcher_sms(hw_models::Dispatcher::alltoall) == 32);
  CHECK(hw_models::nccl_dispatcher_sms(hw_models::Dispatcher::allgather) == 24);
  CHECK(hw_models::nccl_dispatcher_sms(hw_models::Dispatcher::deepep) == 0);
  // Qwen3-30B's layers on 8 H100, EP8, the all-to-all dispatcher with EP overlap (Megatron's
  // combined 1F1B): the first forward runs alone, every later one beside the previous
  // microbatch's backward, whose all-to-alls run while its computation does.
  const auto sc = config::load_scenario_text(R"({
    "name": "nccl-sms", "system": "h100", "gpus": 8, "model": {"base": "qwen3-30b-a3b", "num_hidden_layers": 2},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 32, "precision": "bf16"},
    "parallelism": {"ep": 8},
    "framework": {"dispatcher": "alltoall", "moe_a2a_overlap": true, "cuda_graph_scope": []}
  })",
                                             "t.json");
  const auto p = predict::predict(sc, {true, false});
  const auto& s = p.step;
  // A kernel's duration alone: the shortest of its label's spans on rank 0.
  std::map<std::uint32_t, double> alone;
  for (const auto& sp : s.trace)
    if (sp.rank == 0 && sp.track >= 0 && sp.comm == 0) {
      auto [it, fresh] = alone.try_emplace(sp.label, sp.end_s - sp.start_s);
      if (!fresh) it->second = std::min(it->second, sp.end_s - sp.start_s);
    }
  const auto is_ep = [&](const schedules::TraceSpan& sp) {
    return sp.comm == 1 + static_cast<std::uint8_t>(schedules::CommKind::ep);
  };
  // Computation entirely inside an all-to-all on another stream, and beside nothing else:
  // it runs on 132 - 32 SMs, so it lasts 132 / 100 times its time alone.
  int checked = 0;
  for (const auto& c : s.trace) {
    if (c.rank != 0 || c.track < 0 || c.comm != 0 || c.end_s - c.start_s < 50e-6) continue;
    bool inside = false, crowded = false;
    for (const auto& o : s.trace) {
      if (o.rank != 0 || o.track < 0 || o.track == c.track || o.end_s <= c.start_s ||
          o.start_s >= c.end_s)
        continue;
      if (is_ep(o) && o.start_s <= c.start_s && o.end_s >= c.end_s)
        inside = true;
      else
        crowded = true;
    }
    if (!inside || crowded) continue;
    INFO(s.labels[c.label]);
    CHECK((c.end_s - c.start_s) / alone.at(c.label) == Approx(132.0 / 100.0).epsilon(1e-6));
    ++checked;
  }
  CHECK(checked > 0);
}
