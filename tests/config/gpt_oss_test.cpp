// GPT-OSS and sliding-window attention (issue #25 item 6): every config.json field modeled
// or refused; the windowed layers' attention priced over their window.
#include <catch2/catch.hpp>

#include <algorithm>

#include "predict/predict.hpp"
#include "support/helpers.hpp"
#include "workload/flops.hpp"
#include "workload/layer_graph.hpp"

using namespace moesim;
using config::Json;

namespace {
config::Scenario load(const Json& j) {
  return config::load_scenario_text(j.dump(), "test.json");
}

Json gpt_oss(const Json& model_overrides = Json::object()) {
  Json m = {{"base", "gpt-oss-120b"}};
  m.update(model_overrides);
  return {{"name", "oss"},
          {"system", "h100"},
          {"gpus", 64},
          {"model", m},
          {"training", {{"seq_length", 4096}, {"micro_batch_size", 1}, {"global_batch_size", 64}}},
          {"parallelism", {{"tp", 1}, {"pp", 4}, {"ep", 8}}},
          {"framework", {{"dispatcher", "alltoall"}, {"cuda_graph_scope", Json::array()}}}};
}

double core_fwd_flops(const workload::LayerTemplate& t) {
  const auto k = std::find_if(t.fwd.begin(), t.fwd.end(),
                              [](const auto& x) { return x.name == "attn.core.fwd"; });
  REQUIRE(k != t.fwd.end());
  return k->work.flops;
}
}  // namespace

TEST_CASE("GPT-OSS 120B: OpenAI's parameter counts from its config.json", "[config][hf][gpt_oss]") {
  const auto m = config::load_model_preset("gpt-oss-120b");
  // Model card: 116.83 B total, 5.13 B active (the input embedding not counted active).
  const auto p = workload::count_parameters(m, 0, workload::padded_vocab_size(m.vocab_size, 1));
  CHECK(p.total / 1e9 == Approx(116.83).epsilon(0.001));
  CHECK((p.active - p.embedding) / 1e9 == Approx(5.13).epsilon(0.002));
  // Alternating sliding (even layers) and full attention, a 128-token window, sinks.
  CHECK(m.sliding_window == 128);
  CHECK(m.sliding_layer.size() == 36);
  CHECK(m.windowed(0));
  CHECK_FALSE(m.windowed(1));
  CHECK(std::count(m.sliding_layer.begin(), m.sliding_layer.end(), true) == 18);
  CHECK(m.attention_sinks);
  CHECK(m.expert_bias);
  const auto small = config::load_model_preset("gpt-oss-20b");
  CHECK(
      workload::count_parameters(small, 0, workload::padded_vocab_size(small.vocab_size, 1)).total /
          1e9 ==
      Approx(20.91).epsilon(0.002));
}

TEST_CASE("A windowed layer's attention runs over its window", "[config][gpt_oss]") {
  const auto sc = load(gpt_oss());
  const auto t = test::build_templates(sc);
  // Full causal: s / 2 keys a query; a window of w: (w s - w (w - 1) / 2) / s.
  const double s = 4096, w = 128;
  CHECK(core_fwd_flops(t.moe_window) / core_fwd_flops(t.moe) ==
        Approx((w - w * (w - 1) / (2 * s)) / (s / 2)));
  // Megatron's FLOPs accounting counts every layer as full causal attention; the windowed
  // half of the layers makes the step faster, not the accounted work smaller.
  auto full = gpt_oss({{"sliding_window", nullptr}});
  const auto a = predict::predict(load(full)), b = predict::predict(sc);
  CHECK(a.flops_per_step == b.flops_per_step);
  CHECK(b.step.step_time_s < a.step.step_time_s);
}

TEST_CASE("Sliding-window fields: modeled or refused, never ignored", "[config][hf][gpt_oss]") {
  const Json mistral = {{"model_type", "mistral"},   {"hidden_size", 1024},
                        {"num_hidden_layers", 4},    {"num_attention_heads", 8},
                        {"intermediate_size", 4096}, {"vocab_size", 32000},
                        {"sliding_window", 256}};
  auto sc = gpt_oss();
  sc["model"] = mistral;
  sc["parallelism"] = {{"tp", 1}, {"pp", 1}};
  sc["framework"] = {{"cuda_graph_scope", Json::array()}};
  // No layer_types: every layer is windowed.
  const auto all = load(sc).model;
  CHECK(std::count(all.sliding_layer.begin(), all.sliding_layer.end(), true) == 4);
  // Qwen2's max_window_layers: the layers from that index on.
  sc["model"]["max_window_layers"] = 3;
  CHECK(load(sc).model.windowed(3));
  CHECK_FALSE(load(sc).model.windowed(2));
  // use_sliding_window false (Qwen2/3) or a null window: none.
  sc["model"]["use_sliding_window"] = false;
  CHECK_FALSE(load(sc).model.any_windowed());
  sc["model"].erase("use_sliding_window");
  sc["model"]["sliding_window"] = nullptr;
  CHECK_FALSE(load(sc).model.any_windowed());
  // Refused: a layer_types list of the wrong length or with an unknown type, context
  // parallelism over windowed layers, a window on MLA, two expert counts that differ.
  sc["model"]["sliding_window"] = 256;
  sc["model"]["layer_types"] = {"sliding_attention", "full_attention"};
  CHECK(test::load_error(sc).path() == "model.layer_types");
  sc["model"]["layer_types"] = {"sliding_attention", "full_attention", "chunked_attention",
                                "full_attention"};
  CHECK(test::load_error(sc).path() == "model.layer_types[2]");
  sc["model"].erase("layer_types");
  sc["parallelism"]["cp"] = 2;
  sc["gpus"] = 2;
  CHECK(test::load_error(sc).path() == "parallelism.cp");
  auto mla = gpt_oss();
  mla["model"] = {{"base", "deepseek-v3"}, {"sliding_window", 128}};
  CHECK(test::load_error(mla).path() == "model.sliding_window");
  CHECK(test::load_error(gpt_oss({{"experts_per_token", 2}})).path() == "model.experts_per_token");
}
