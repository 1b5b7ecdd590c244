// Megatron-Core's 1F1B all-to-all overlap launches a forward layer and a backward layer as
// schedule nodes in TransformerLayerSchedulePlan.run's order (model_chunk_schedule_plan.py
// @ d98e8a64): the backward's combine, the forward's attention, the backward's experts,
// the forward's dispatch, the backward's dispatch, the forward's experts and combine, the
// backward's attention. The experts' backward is queued before the host blocks on the
// forward dispatch's token-count sync, and a node waits only for its own microbatch's
// previous node (schedules/rank_program_pairs.cpp, expand_overlapped).
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {

predict::Prediction traced(const std::string& dispatcher) {
  const auto sc =
      config::load_scenario_text(R"({
    "name": "c1f1b", "system": "h100", "gpus": 8, "model": {"base": "qwen3-30b-a3b", "num_hidden_layers": 2},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 32, "precision": "bf16"},
    "parallelism": {"ep": 8},
    "framework": {"dispatcher": ")" + dispatcher +
                                     R"(", "moe_a2a_overlap": true, "cuda_graph_scope": []}
  })",
                                 "t.json");
  return predict::predict(sc, {true, false});
}

struct HostOp {
  std::string name;
  double start_s, end_s;
};
// Rank 0's host ops, in order.
std::vector<HostOp> host_ops(const predict::Prediction& p) {
  std::vector<HostOp> out;
  for (const auto& s : p.step.trace)
    if (s.rank == 0 && s.track < 0) out.push_back({p.step.labels[s.label], s.start_s, s.end_s});
  return out;
}

// Position of the first `name` at or after `from` (npos: none).
std::size_t find(const std::vector<HostOp>& ops, const std::string& name, std::size_t from) {
  for (std::size_t i = from; i < ops.size(); ++i)
    if (ops[i].name == name) return i;
  return std::string::npos;
}

// The end of the first GPU kernel `name` on rank 0 that starts at or after `t`.
double kernel_end(const predict::Prediction& p, const std::string& name, double t) {
  double best_start = 1e30, end = -1;
  for (const auto& s : p.step.trace)
    if (s.rank == 0 && s.track >= 0 && p.step.labels[s.label] == name && s.start_s >= t &&
        s.start_s < best_start) {
      best_start = s.start_s;
      end = s.end_s;
    }
  return end;
}

// DeepSeek-V3's layers over DualPipe on 2 pipeline ranks of 16 H800 each, DeepEP, with
// `mtp` MTP layers.
predict::Prediction dualpipe(int mtp) {
  auto j = config::Json::parse(R"({
    "name": "dualpipe", "system": "h800", "gpus": 32,
    "model": {"base": "deepseek-v3", "num_hidden_layers": 4, "first_k_dense_replace": 0, "vocab_size": 256},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 128, "precision": "fp8-blockwise"},
    "parallelism": {"pp": 2, "ep": 16, "pipeline_schedule": "dualpipe"},
    "framework": {"dispatcher": "deepep", "dispatcher_sms": 20, "cuda_graph_scope": []},
    "routing": {"balance": "forced"}
  })");
  j["training"]["mtp_layers"] = mtp;
  return predict::predict(config::load_scenario_text(j.dump(), "t.json"), {true, false});
}

}  // namespace

TEST_CASE("The all-to-all overlap launches each layer pair in Megatron's node order",
          "[schedules]") {
  const auto p = traced("hybridep");
  const auto ops = host_ops(p);
  // The first pair starts with the backward's combine (microbatch 0's last layer); the first
  // forward ran alone before it.
  const std::size_t start = find(ops, "moe.combine.bwd", 0);
  REQUIRE(start != std::string::npos);
  CHECK(find(ops, "moe.combine.fwd", 0) < start);  // microbatch 0's forward, alone
  const std::vector<std::string> order{
      "moe.combine.bwd",          // b.combine
      "attn.qkv.fprop",           // f.pre_dispatch
      "moe.fc2.dgrad",            // b.experts
      "moe.hybridep_meta.0.fwd",  // f.dispatch, with its token-count sync
      "moe.dispatch.bwd",         // b.dispatch
      "moe.fc1.fprop",            // f.experts
      "moe.combine.fwd",          // f.combine
      "attn.o_proj.dgrad",        // b.pre_dispatch
  };
  std::size_t at = start;
  for (const auto& name : order) {
    INFO(name);
    const std::size_t next = find(ops, name, at);
    REQUIRE(next != std::string::npos);
    // Nothing of the list launches out of turn in between.
    for (const auto& other : order)
      if (other != name) {
        INFO(other);
        const std::size_t o = find(ops, other, at);
        CHECK((o == std::string::npos || o >= next));
      }
    at = next + 1;
  }
  // The host blocks after the metadata kernels until the received count is on the host.
  const std::size_t meta = find(ops, "moe.hybridep_meta.2.fwd", start);
  REQUIRE(meta + 1 < ops.size());
  CHECK(ops[meta + 1].start_s >=
        kernel_end(p, "moe.hybridep_meta.2.fwd", ops[meta].start_s) - 1e-12);
}

TEST_CASE("Under the all-to-all overlap the forward's dispatch runs beside the backward's experts",
          "[schedules]") {
  for (const char* dispatcher : {"hybridep", "alltoall"}) {
    INFO(dispatcher);
    const auto p = traced(dispatcher);
    const auto& s = p.step;
    const auto experts_bwd = [&](std::uint32_t label) {
      const auto& n = s.labels[label];
      return n == "moe.fc1.dgrad" || n == "moe.fc2.dgrad" || n == "moe.fc1.wgrad" ||
             n == "moe.fc2.wgrad";
    };
    int overlapped = 0;
    for (const auto& d : s.trace) {
      if (d.rank != 0 || d.track < 0 || s.labels[d.label] != "moe.dispatch.fwd") continue;
      for (const auto& g : s.trace)
        if (g.rank == 0 && g.track >= 0 && g.track != d.track && experts_bwd(g.label) &&
            g.start_s < d.end_s && g.end_s > d.start_s)
          ++overlapped;
    }
    CHECK(overlapped > 0);
  }
}

TEST_CASE("Megatron's alltoall dispatcher takes its dropless sync in the dispatch node",
          "[schedules]") {
  // Dropless, EP > 1: the sync point is before_ep_alltoall (token_dispatcher.py), in
  // token_dispatch. In a pair the host has launched the backward's experts before it blocks.
  const auto p = traced("alltoall");
  const auto ops = host_ops(p);
  const std::size_t start = find(ops, "moe.combine.bwd", 0);
  REQUIRE(start != std::string::npos);
  const std::size_t pre = find(ops, "moe.preprocess.1.fwd", start);
  const std::size_t dgrad = find(ops, "moe.fc2.dgrad", start);
  const std::size_t permute = find(ops, "moe.global_permute.fwd", start);
  REQUIRE(permute + 1 < ops.size());
  CHECK(pre < dgrad);
  CHECK(dgrad < permute);
  // After launching the permute the host waits for the counts (the preprocess kernels).
  CHECK(ops[permute + 1].start_s >=
        kernel_end(p, "moe.preprocess.1.fwd", ops[pre].start_s) - 1e-12);
  CHECK(ops[permute + 1].start_s > ops[permute].end_s);
}

TEST_CASE("DualPipe's pairs launch in the node order of DeepSeek's own trace", "[schedules]") {
  // deepseek-ai/profile-data train.json, each layer pair: combine(B), attn(F), mlp(B),
  // dispatch(F), dispatch(B), mlp(W), mlp(F), attn(B), attn(W), combine(F).
  const auto ops = host_ops(dualpipe(0));
  // The first overlapped pair: the first node a pair launches (a lone item launches none).
  const std::size_t start = find(ops, "moe.combine.bwd", find(ops, "host.pair_sync", 0));
  REQUIRE(start != std::string::npos);
  const std::vector<std::string> order{
      "moe.combine.bwd",    // combine(B)
      "attn.q_a.fprop",     // attn(F)
      "moe.fc2.dgrad",      // mlp(B)
      "moe.dispatch.fwd",   // dispatch(F)
      "moe.dispatch.bwd",   // dispatch(B)
      "moe.fc2.wgrad",      // mlp(W)
      "moe.fc1.fprop",      // mlp(F)
      "attn.o_proj.dgrad",  // attn(B)
      "attn.o_proj.wgrad",  // attn(W)
      "moe.combine.fwd",    // combine(F)
  };
  std::size_t at = start;
  for (const auto& name : order) {
    INFO(name);
    const std::size_t next = find(ops, name, at);
    REQUIRE(next != std::string::npos);
    at = next + 1;
  }
  // The pair ends before the next layer's combine(B).
  const std::size_t next_pair = find(ops, "moe.combine.bwd", start + 1);
  REQUIRE(next_pair != std::string::npos);
  CHECK(at <= next_pair + 1);
}

namespace {
// Rank 0's GPU kernels by name, with their counts.
std::map<std::string, int> kernel_counts(const predict::Prediction& p) {
  std::map<std::string, int> out;
  for (const auto& s : p.step.trace)
    if (s.rank == 0 && s.track >= 0) ++out[p.step.labels[s.label]];
  return out;
}
}  // namespace

TEST_CASE("An overlapped pair launches every kernel of both items once", "[schedules]") {
  // Megatron: the same step with and without the overlap runs the same kernels, an MTP
  // layer (whose head and loss fill the post-process node) and a shared expert included.
  const auto scenario = [](bool overlap) {
    auto j = config::Json::parse(R"({
      "name": "conserve", "system": "h100", "gpus": 16,
      "model": {"base": "deepseek-v3", "num_hidden_layers": 3, "first_k_dense_replace": 1},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64, "precision": "bf16",
                   "mtp_layers": 1},
      "parallelism": {"ep": 16},
      "framework": {"dispatcher": "alltoall", "cuda_graph_scope": []}
    })");
    j["framework"]["moe_a2a_overlap"] = overlap;
    j["framework"]["delay_wgrad_compute"] = overlap;  // Megatron allows it only with the overlap
    return predict::predict(config::load_scenario_text(j.dump(), "t.json"), {true, false});
  };
  const auto on = kernel_counts(scenario(true)), off = kernel_counts(scenario(false));
  CHECK(on.count("loss.cross_entropy.fwd") == 1);
  CHECK(on == off);
}

TEST_CASE("DualPipe's pairs launch every forward's head and loss", "[schedules]") {
  // With MTP, the last stage's layers end in MTP's post-process (its head and loss): each
  // microbatch's forward of them has its backward.
  const auto p = dualpipe(1);
  for (int rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    std::map<std::string, int> n;
    for (const auto& s : p.step.trace)
      if (s.rank == rank && s.track >= 0) ++n[p.step.labels[s.label]];
    CHECK(n["loss.cross_entropy.fwd"] > 0);
    CHECK(n["loss.cross_entropy.fwd"] == n["loss.cross_entropy.bwd"]);
    CHECK(n["head.output.fprop"] == n["head.output.dgrad"]);
  }
}
