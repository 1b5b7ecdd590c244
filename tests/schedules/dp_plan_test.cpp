// Data-parallel traffic: Megatron's buckets by hand, and the engine's placement of the
// reductions and gathers (distributed optimizer, plain DDP, Megatron-FSDP).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "reports/run.hpp"
#include "schedules/dp_plan.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;
using test::load;

namespace {

// 16 H100, TP2 PP2 VPP2 EP4 (DP 4, expert-DP 2), four DeepSeek-V3 layers (the first
// dense), one per virtual stage: rank 0 runs stages 0 (E t0) and 2 (t2), rank 1 stages
// 1 (t1) and 3 (t3 L); 16 / (1 x 4) = 4 microbatches.
Json scenario() {
  return Json::parse(R"({
    "name": "dp", "system": "h100", "gpus": 16,
    "model": {"base": "deepseek-v3", "num_hidden_layers": 4, "first_k_dense_replace": 1},
    "training": {"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 16, "precision": "bf16"},
    "parallelism": {"tp": 2, "pp": 2, "vpp": 2, "ep": 4},
    "framework": {"dispatcher": "deepep", "dispatcher_sms": 20, "cuda_graph_scope": []}
  })");
}
struct Span {
  int track;
  double start, end;
};
// Rank r's kernels by name.
std::map<std::string, std::vector<Span>> kernels(const predict::Prediction& p, int rank) {
  std::map<std::string, std::vector<Span>> out;
  for (const auto& s : p.step.trace)
    if (s.rank == rank && s.track >= 0)
      out[p.step.labels[s.label]].push_back({s.track, s.start_s, s.end_s});
  return out;
}
double last_end(const std::vector<Span>& v) {
  double e = 0;
  for (const auto& s : v) e = std::max(e, s.end);
  return e;
}
double first_start(const std::vector<Span>& v) {
  double t = 1e30;
  for (const auto& s : v) t = std::min(t, s.start);
  return t;
}

}  // namespace

TEST_CASE("Megatron's buckets: filled in backward order, closed at the item reaching the size",
          "[schedules][dp]") {
  auto j = scenario();
  j["model"]["num_hidden_layers"] = 8;
  j["parallelism"] = {{"tp", 1}, {"pp", 1}, {"ep", 1}};
  j["framework"]["dispatcher"] = "alltoall";  // DeepEP needs EP > 1
  const auto sc = load(j);
  const auto& stage = sc.layout.stages().front();  // E t0..t7 L
  REQUIRE(stage.items.size() == 10);
  auto fw = sc.framework;
  const auto item = [&](std::size_t k) {
    return schedules::item_parameters(sc.model, sc.parallelism, stage.items[k], sc.padded_vocab());
  };
  const double moe_layer = item(5).dense, experts = item(5).expert;
  // Items: 0 E, 1 t0 (dense), 2-8 t1-t7 (MoE), 9 L. A bucket of 1.5 MoE layers' dense
  // parameters: from L backward, L alone exceeds it (129280 x 7168), then t7 t6 close at
  // item 7, t5 t4 at 5, t3 t2 at 3, t1 t0 at 1 (t0's dense MLP is large), E at 0.
  fw.ddp_bucket_size = 1.5 * moe_layer;
  REQUIRE(item(9).dense > *fw.ddp_bucket_size);
  const auto plan = schedules::dp_plan(sc.model, sc.parallelism, fw, stage, sc.padded_vocab(),
                                       sc.pipeline_schedule);
  CHECK(plan.bucket[9].dense == item(9).dense);
  CHECK(plan.bucket[7].dense == Approx(2 * moe_layer));
  CHECK(plan.bucket[5].dense == Approx(2 * moe_layer));
  CHECK(plan.bucket[3].dense == Approx(2 * moe_layer));
  CHECK(plan.bucket[1].dense == Approx(item(1).dense + moe_layer));
  CHECK(plan.bucket[0].dense == item(0).dense);
  for (std::size_t k : {2u, 4u, 6u, 8u}) CHECK(plan.bucket[k].dense == 0);
  // Experts fill their own buckets (256 experts of 44 M: each MoE layer exceeds 1.5 x).
  for (std::size_t k = 2; k <= 8; ++k) CHECK(plan.bucket[k].expert == Approx(experts));
  double dense = 0, expert = 0;
  for (const auto& b : plan.bucket) dense += b.dense, expert += b.expert;
  const auto all = schedules::stage_parameters(sc.model, sc.parallelism, stage, sc.padded_vocab(),
                                               sc.pipeline_schedule);
  CHECK(dense == Approx(all.dense));
  CHECK(expert == Approx(all.expert));
  // Megatron's default: max(40 M, 1 M x DP).
  CHECK(schedules::default_bucket_params(8) == 40e6);
  CHECK(schedules::default_bucket_params(128) == 128e6);
  // Without --overlap-grad-reduce DDP sets bucket_size None (distributed_data_parallel.py
  // 70-72 at cd4afffa): one bucket, closing at the first item.
  fw.overlap_grad_reduce = false;
  const auto one = schedules::dp_plan(sc.model, sc.parallelism, fw, stage, sc.padded_vocab(),
                                      sc.pipeline_schedule);
  CHECK(one.bucket[0].dense == Approx(all.dense));
  CHECK(one.bucket[0].expert == Approx(all.expert));
  for (std::size_t k = 1; k < one.bucket.size(); ++k) CHECK_FALSE(one.bucket[k].any());
}

TEST_CASE(
    "Distributed optimizer: a reduce-scatter per bucket in the last backward, gathers before the "
    "first forward",
    "[schedules][dp]") {
  auto j = scenario();
  j["framework"]["ddp_bucket_size"] = 1;  // every item its own bucket
  const auto p = predict::predict(load(j), {true, false});
  const auto k = kernels(p, 0);
  // Rank 0: items E, t0 (chunk 0) and t2 (chunk 1): three buckets, each reduced once and
  // gathered once.
  REQUIRE(k.count("dp.grad_reduce_scatter") == 1);
  CHECK(k.at("dp.grad_reduce_scatter").size() == 3);
  CHECK(k.at("dp.param_all_gather").size() == 3);
  CHECK(k.count("dp.grad_all_reduce") == 0);
  // Overlapped: the first reduction starts before the last backward kernel ends.
  double compute_end = 0;
  for (const auto& [name, spans] : k)
    if (name.find(".bwd") != std::string::npos || name.find(".dgrad") != std::string::npos ||
        name.find(".wgrad") != std::string::npos)
      compute_end = std::max(compute_end, last_end(spans));
  CHECK(first_start(k.at("dp.grad_reduce_scatter")) < compute_end);

  // Without --overlap-grad-reduce they all follow the backward, and the step is longer.
  j["framework"]["overlap_grad_reduce"] = false;
  const auto q = predict::predict(load(j), {true, false});
  const auto kq = kernels(q, 0);
  double q_end = 0;
  for (const auto& [name, spans] : kq)
    if (name.find(".wgrad") != std::string::npos) q_end = std::max(q_end, last_end(spans));
  CHECK(first_start(kq.at("dp.grad_reduce_scatter")) >= q_end);
  CHECK(q.step.step_time_s > p.step.step_time_s);

  // Without --overlap-param-gather the first forward kernel waits for every gather, and the
  // host no longer runs DDP's forward pre-hook at every module call (the overlap's own host
  // cost, which can outweigh the gather it hides: PAI's Qwen3-235B rows P2 and P3).
  j["framework"]["overlap_grad_reduce"] = true;
  j["framework"]["overlap_param_gather"] = false;
  const auto g = predict::predict(load(j), {true, false});
  const auto kg = kernels(g, 0);
  CHECK(first_start(kg.at("embedding.fwd")) >= last_end(kg.at("dp.param_all_gather")));
  CHECK(g.step.host_busy_s.at(0) < p.step.host_busy_s.at(0));
}

TEST_CASE("Plain DDP all-reduces the gradients and gathers nothing", "[schedules][dp]") {
  auto j = scenario();
  j["framework"]["distributed_optimizer"] = false;
  const auto p = predict::predict(load(j), {true, false});
  const auto k = kernels(p, 0);
  CHECK(k.count("dp.param_all_gather") == 0);
  CHECK(k.count("dp.grad_reduce_scatter") == 0);
  REQUIRE(k.count("dp.grad_all_reduce") == 1);
  CHECK(k.at("dp.grad_all_reduce").size() == 3);  // E, t0, t2: each over 40 M parameters
  // The optimizer states are no longer sharded.
  auto d = predict::predict(load(scenario()));
  CHECK(p.peak_memory_parts.optimizer > 1.5 * d.peak_memory_parts.optimizer);
}

TEST_CASE(
    "Megatron-FSDP gathers every layer in every forward and backward and reduce-scatters after "
    "each backward",
    "[schedules][dp]") {
  auto j = scenario();
  j["parallelism"]["fsdp"] = true;
  const auto p = predict::predict(load(j), {true, false});
  const auto k = kernels(p, 0);
  // Rank 0 holds three units (E, t0, t2) and runs 4 microbatches through each chunk:
  // 3 units x 2 passes x 4 gathers, 3 x 4 reductions.
  REQUIRE(k.count("fsdp.param_all_gather") == 1);
  CHECK(k.at("fsdp.param_all_gather").size() == 24);
  CHECK(k.at("fsdp.grad_reduce_scatter").size() == 12);
  CHECK(k.count("dp.param_all_gather") == 0);
  // Gathers on their own stream, beside the reductions.
  CHECK(k.at("fsdp.param_all_gather").front().track !=
        k.at("fsdp.grad_reduce_scatter").front().track);
  // Memory: BF16 weights and FP32 gradients sharded over DP (4) and expert-DP (2), plus
  // two gathered units and one unit's gradients of the largest unit (t2: its 64 experts).
  const auto sc = load(j);
  double dense = 0, expert = 0, largest = 0;
  for (int stage : {0, 2})
    for (const auto& it : sc.layout.stages()[static_cast<std::size_t>(stage)].items) {
      const auto ip = schedules::item_parameters(sc.model, sc.parallelism, it, sc.padded_vocab());
      dense += ip.dense, expert += ip.expert, largest = std::max(largest, ip.dense + ip.expert);
    }
  const double gib = 1024.0 * 1024 * 1024;
  const auto d = predict::predict(load(scenario()));
  const auto& r0 = p.rank_memory_gib;
  REQUIRE(r0.size() == 2);
  CHECK(p.peak_memory_parts.optimizer == Approx(d.peak_memory_parts.optimizer));
  // Rank 0's total against the unsharded run's: the weights and gradients' difference.
  const double sharded = (dense / 4 + expert / 2) * 6 + largest * 8;
  CHECK(r0[0] - d.rank_memory_gib[0] ==
        Approx((sharded - (dense + expert) * 6) / gib).epsilon(1e-6));
}

namespace {

// HSDP: the scenario at PP1 (TP2 EP4: DP 8, expert-DP 4) on two optimizer instances (inner
// DP 4, expert-DP 2); 16 / (1 x 8) = 2 microbatches; units E, t0..t3, L.
Json hsdp(const char* outer) {
  auto j = scenario();
  j["parallelism"] = {{"tp", 2},
                      {"pp", 1},
                      {"ep", 4},
                      {"fsdp", true},
                      {"optimizer_instances", 2},
                      {"outer_dp_sharding", outer}};
  return j;
}
double duration(const Span& s) {
  return s.end - s.start;
}

}  // namespace

TEST_CASE(
    "HSDP reduces each unit across the instances after its last inner reduce-scatter, on its "
    "own stream; outer optim gathers each unit across them in microbatch 0",
    "[schedules][dp]") {
  const auto none = predict::predict(load(hsdp("no_shard")), {true, false});
  const auto k = kernels(none, 0);
  const auto& rs = k.at("fsdp.grad_reduce_scatter");
  const auto& ar = k.at("hsdp.outer_grad_all_reduce");
  // Six units x 2 microbatches of inner reductions; one outer all-reduce per unit, only
  // after the last microbatch's.
  REQUIRE(rs.size() == 12);
  REQUIRE(ar.size() == 6);
  CHECK(k.count("hsdp.outer_param_all_gather") == 0);
  CHECK(ar.front().track != rs.front().track);
  auto late = rs;
  std::sort(late.begin(), late.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  late.erase(late.begin(), late.begin() + 6);  // the last microbatch's six
  auto outer = ar;
  std::sort(outer.begin(), outer.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  for (std::size_t u = 0; u < 6; ++u) CHECK(outer[u].start >= late[u].end - 1e-12);
  // The gradient norm waits for the last outer reduction.
  CHECK(first_start(k.at("optimizer.grad_norm")) >= last_end(ar) - 1e-12);

  const auto optim = predict::predict(load(hsdp("optim")), {true, false});
  const auto o = kernels(optim, 0);
  const auto& ors = o.at("hsdp.outer_grad_reduce_scatter");
  REQUIRE(ors.size() == 6);
  CHECK(o.count("hsdp.outer_grad_all_reduce") == 0);
  // A ring all-reduce is its reduce-scatter and its all-gather: twice the bytes' time.
  CHECK(duration(ar.front()) == Approx(2 * duration(ors.front())).epsilon(0.02));
  // Microbatch 0 gathers each unit across the instances in its forward and its backward
  // (Megatron-FSDP counts the microbatch after the root backward), before the inner gather
  // on the same stream; the inner gathers are those of plain FSDP.
  const auto& og = o.at("hsdp.outer_param_all_gather");
  CHECK(og.size() == 12);
  CHECK(o.at("fsdp.param_all_gather").size() == 24);
  CHECK(og.front().track == o.at("fsdp.param_all_gather").front().track);
  CHECK(first_start(o.at("fsdp.param_all_gather")) >= og.front().end - 1e-12);

  // Memory: weights and gradients sharded over the inner groups (4 and 2) in both; the
  // optimizer states over them under no_shard, over the whole DP groups (8 and 4) under
  // optim, as plain FSDP does.
  auto plain_j = hsdp("no_shard");
  plain_j["parallelism"].erase("optimizer_instances");
  plain_j["parallelism"].erase("outer_dp_sharding");
  const auto plain = predict::predict(load(plain_j));
  CHECK(none.peak_memory_parts.optimizer == Approx(2 * optim.peak_memory_parts.optimizer));
  CHECK(optim.peak_memory_parts.optimizer == Approx(plain.peak_memory_parts.optimizer));
  CHECK(optim.peak_memory_parts.weights_grads == Approx(none.peak_memory_parts.weights_grads));
  CHECK(none.peak_memory_parts.weights_grads > plain.peak_memory_parts.weights_grads);
}

TEST_CASE(
    "The distributed optimizer across instances all-reduces each bucket's shard over them and "
    "shards its states over the inner group",
    "[schedules][dp]") {
  auto one = scenario();
  one["framework"]["distributed_optimizer"] = true;
  auto two = one;
  two["parallelism"]["optimizer_instances"] = 2;
  const auto p1 = predict::predict(load(one), {true, false});
  const auto p2 = predict::predict(load(two), {true, false});
  // DP 4 and expert-DP 2 cut in two: the states on half the ranks, twice the bytes.
  CHECK(p2.peak_memory_parts.optimizer == Approx(2 * p1.peak_memory_parts.optimizer));
  const auto k1 = kernels(p1, 0), k2 = kernels(p2, 0);
  REQUIRE(k1.at("dp.grad_reduce_scatter").size() == k2.at("dp.grad_reduce_scatter").size());
  // All in one node: the reduce-scatter over 4 ranks moves 3/4 of the bucket; over 2, 1/2,
  // then the all-reduce of the half shard over 2 another 2 x 1/2 x 1/2: the bucket whole.
  CHECK(duration(k2.at("dp.grad_reduce_scatter").front()) >
        duration(k1.at("dp.grad_reduce_scatter").front()));
  CHECK(k2.count("hsdp.outer_grad_all_reduce") == 0);
}

TEST_CASE("Optimizer instances: Megatron-Core's asserts, and HSDP at PP1 only",
          "[schedules][dp][config]") {
  auto j = hsdp("optim");
  j["parallelism"]["optimizer_instances"] = 3;
  CHECK_THAT(test::load_error(j).what(), Catch::Contains("do not divide dp x cp = 8 x 1"));
  j = scenario();
  j["parallelism"]["fsdp"] = true;
  j["parallelism"]["optimizer_instances"] = 2;
  CHECK_THAT(test::load_error(j).what(), Catch::Contains("pp 1 only"));
  j = scenario();
  j["parallelism"]["optimizer_instances"] = 2;
  j["framework"]["distributed_optimizer"] = false;
  CHECK_THAT(test::load_error(j).what(), Catch::Contains("needs framework.distributed_optimizer"));
}
