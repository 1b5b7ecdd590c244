// The per-step work outside the microbatches (schedules/kernel_pricing.hpp: the gradient
// norm, its all-reduce, clipping, the loss all-reduce) and FP8 delayed scaling's amax
// reductions, read off the trace against their closed forms; the LL-tree latency of the
// small all-reduces by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

#include "config/load.hpp"
#include "hw_models/collectives.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {

// Per rank: how many kernels of each name, and the first one's duration.
struct Seen {
  std::map<std::string, int> count;
  std::map<std::string, double> first;
};
std::map<int, Seen> kernels(const predict::Prediction& p) {
  std::map<int, Seen> out;
  for (const auto& s : p.step.trace) {
    if (s.track != 0) continue;
    auto& seen = out[s.rank];
    const auto& name = p.step.labels[s.label];
    ++seen.count[name];
    seen.first.try_emplace(name, s.end_s - s.start_s);
  }
  return out;
}

predict::Prediction traced(const std::string& precision, std::int64_t gpus = 64) {
  auto j = config::Json::parse(R"({
    "name": "edges", "system": "h100",
    "model": {"base": "llama3-70b", "num_hidden_layers": 4},
    "training": {"seq_length": 4096, "micro_batch_size": 1},
    "parallelism": {"tp": 8, "pp": 2, "vpp": 2, "sequence_parallel": true},
    "framework": {"distributed_optimizer": true}
  })");
  j["gpus"] = gpus;
  j["training"]["global_batch_size"] = 4 * gpus / 16;  // 4 microbatches per pipeline
  j["training"]["precision"] = precision;
  return predict::predict(config::load_scenario_text(j.dump(), "t.json"), {true, false});
}

}  // namespace

TEST_CASE("Small all-reduces cost NCCL's LL tree latency",
          "[hw_models][collectives][closed-form]") {
  // One rank: nothing to do. Inside one domain of 8: a chain, 6.6 + 2 x 7 x 0.6 us.
  CHECK(hw_models::small_all_reduce_seconds(1, 8) == 0);
  CHECK(hw_models::small_all_reduce_seconds(8, 8) == Approx(15.0e-6));
  // 1,024 ranks on 128 nodes of 8: 6.6 + 2 (7 x 0.6 + 7 x 2.7) = 52.8 us.
  CHECK(hw_models::small_all_reduce_seconds(1024, 8) == Approx(52.8e-6));
  // A group smaller than the domain is one chain of its own size.
  CHECK(hw_models::small_all_reduce_seconds(4, 72) == Approx((6.6 + 2 * 3 * 0.6) * 1e-6));
}

TEST_CASE("Every step computes the gradient norm, clips and logs the loss",
          "[schedules][edges][closed-form]") {
  const auto p = traced("bf16");
  const auto seen = kernels(p);
  REQUIRE(seen.size() == 2);  // the two pipeline ranks
  for (const auto& [rank, s] : seen) {
    CHECK(s.count.at("optimizer.grad_norm") == 1);
    CHECK(s.count.at("optimizer.clip_grad") == 1);
    // Clipping reads and writes what the norm reads: twice the bytes (both HBM-bound;
    // a kernel's fixed device cost aside).
    CHECK(s.first.at("optimizer.clip_grad") > 1.5 * s.first.at("optimizer.grad_norm"));
    // The norm's all-reduce spans all 64 GPUs (8 nodes of 8).
    CHECK(s.first.at("optimizer.grad_norm_all_reduce") ==
          Approx(hw_models::small_all_reduce_seconds(64, 8)).epsilon(1e-6));
    // Only the stage holding the loss all-reduces it (over DP 4, one rank per node).
    CHECK(s.count.count("loss.all_reduce") == (rank == 1 ? 1u : 0u));
  }
  CHECK(seen.at(1).first.at("loss.all_reduce") ==
        Approx(hw_models::small_all_reduce_seconds(4, 1)).epsilon(1e-6));
  // No delayed scaling, no amax reductions.
  CHECK(seen.at(0).count.count("fp8.amax_all_reduce") == 0);
}

TEST_CASE("FP8 delayed scaling reduces the amaxes after every chunk's forward and backward",
          "[schedules][edges][fp8][closed-form]") {
  const auto delayed = traced("fp8-delayed"), current = traced("fp8-tensorwise");
  const auto d = kernels(delayed), c = kernels(current);
  // 4 microbatches x 2 chunks per rank, a forward and a backward each.
  for (const auto& [rank, s] : d) {
    CHECK(s.count.at("fp8.amax_all_reduce") == 4 * 2 * 2);
    // Over TP x DP x CP = 8 x 4 x 1 = 32 ranks of contiguous GPUs, 4 nodes of 8; plus the
    // history update's kernel.
    CHECK(s.first.at("fp8.amax_all_reduce") ==
          Approx(hw_models::small_all_reduce_seconds(32, 8) + 0.75e-6).epsilon(1e-6));
    CHECK(c.at(rank).count.count("fp8.amax_all_reduce") == 0);
  }
  // Delayed scaling casts in one pass: current scaling's amax and scale kernels are gone.
  std::int64_t amax_current = 0, amax_delayed = 0;
  for (const auto& [name, n] : c.at(0).count)
    if (name.find(".amax") != std::string::npos && name != "fp8.amax_all_reduce") amax_current += n;
  for (const auto& [name, n] : d.at(0).count)
    if (name.find(".amax") != std::string::npos && name != "fp8.amax_all_reduce") amax_delayed += n;
  CHECK(amax_current > 0);
  CHECK(amax_delayed == 0);
}

TEST_CASE("FP16 unscales and checks the gradients each step, at the BF16 GEMM rate",
          "[schedules][edges][closed-form]") {
  const auto fp16 = traced("fp16"), bf16 = traced("bf16");
  const auto h = kernels(fp16), b = kernels(bf16);
  for (const auto& [rank, s] : h) {
    CHECK(s.count.at("optimizer.unscale") == 1);
    CHECK(b.at(rank).count.count("optimizer.unscale") == 0);
    // The pass reads and writes the FP32 main-gradient shard, as clipping does (FP32
    // buffer here: both 8 bytes a parameter).
    CHECK(s.first.at("optimizer.unscale") ==
          Approx(s.first.at("optimizer.clip_grad")).epsilon(1e-9));
    // The found-inf flag's all-reduce spans all 64 GPUs, as the norm's.
    CHECK(s.first.at("optimizer.found_inf_all_reduce") ==
          Approx(hw_models::small_all_reduce_seconds(64, 8)).epsilon(1e-6));
    // The layers are BF16's: same kernels, same durations.
    CHECK(s.first.at("optimizer.grad_norm") == Approx(b.at(rank).first.at("optimizer.grad_norm")));
  }
  // The step is BF16's plus the unscale pass and the all-reduce, and the launches after
  // the host's wait on the flag: the norm, its all-reduce, clipping and the optimizer step
  // no longer queue ahead of the GPU (a few launch costs of ~10-20 us each).
  const double extra =
      h.at(0).first.at("optimizer.unscale") + h.at(0).first.at("optimizer.found_inf_all_reduce");
  const double added = fp16.step.step_time_s - bf16.step.step_time_s;
  CHECK(added > extra);
  CHECK(added < extra + 100e-6);
  CHECK(fp16.peak_memory_gib == Approx(bf16.peak_memory_gib));
}

TEST_CASE("GPT models: learned positions, no rotary kernels, two FFN matrices",
          "[config][models]") {
  const auto m = config::load_model_preset("gpt3-175b");
  CHECK(m.model_type == "gpt");
  CHECK_FALSE(m.gated_linear_unit);
  CHECK(m.learned_positions == 2048);
  CHECK(m.ffn_matrices() == 2);
  // Parameters: 96 layers of 12 h^2 plus biases and norms aside, the word and position
  // embeddings (tied output head): 174.6 B without biases (Brown et al.: 175 B).
  auto j = config::Json::parse(R"({
    "name": "g", "system": "h100", "gpus": 8, "model": "gpt3-175b",
    "training": {"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 8, "precision": "bf16"},
    "parallelism": {"tp": 8}
  })");
  const auto sc = config::load_scenario_text(j.dump(), "t.json");
  const auto p = predict::predict(sc, {true, false});
  bool rope = false;
  for (const auto& l : p.step.labels) rope = rope || l.find("attn.rope") != std::string::npos;
  CHECK_FALSE(rope);
  // A GPT model without max_position_embeddings is refused.
  auto bad = j;
  bad["model"] =
      config::Json::parse(R"({"model_type": "gpt", "hidden_size": 64, "intermediate_size": 256,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000})");
  CHECK_THROWS_AS(config::load_scenario_text(bad.dump(), "t.json"), config::InputError);
}
