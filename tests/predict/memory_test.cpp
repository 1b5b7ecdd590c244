// The memory model's mechanisms against hand-derived bytes (predict/memory.hpp): what PyTorch's
// allocator holds and what lives beside it, the measured points' counters, and the settings
// that move memory (hidden dropout, the loss kernel, unfused attention, MTP's embedding copy).
#include <catch2/catch.hpp>

#include "predict/memory.hpp"
#include "predict/predict.hpp"
#include "predict/validate.hpp"
#include "reports/validate.hpp"
#include "schedules/stage_params.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;
using test::load;

namespace {

constexpr double kMiB = 1024.0 * 1024;
constexpr double kGiB = kMiB * 1024;

// A small dense GQA model on 8 H100: TP2 with sequence parallelism, PP1, DP4; 4 layers
// of hidden 1024, 16 heads (8 per rank) of 64, 4 KV heads; seq 2048, one microbatch in
// flight.
Json dense() {
  return Json::parse(R"({
    "name": "mem", "system": "h100", "gpus": 8,
    "model": {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16,
              "num_key_value_heads": 4, "intermediate_size": 4096, "vocab_size": 32000,
              "tie_word_embeddings": false},
    "training": {"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 8},
    "parallelism": {"tp": 2, "pp": 1, "sequence_parallel": true},
    "framework": {"cuda_graph_scope": [], "recompute_modules": []}
  })");
}

predict::MemoryParts parts(const Json& j) {
  const auto sc = load(j);
  return predict::estimate_memory(sc, predict::scenario_ep_load(sc)).rank_parts.front();
}
Json with(Json j, const char* section, const char* key, const Json& v) {
  j[section][key] = v;
  return j;
}

}  // namespace

TEST_CASE("Beside the allocator: the CUDA context, NCCL's communicators, TE's userbuffers",
          "[predict][memory]") {
  // DP4 x TP2, PP1: the DP, TP and model-parallel (TP x PP) communicators, 24 channels
  // of 9.1875 MiB each; the context 0.59 GiB; no userbuffers without TP overlap.
  const auto rt = predict::runtime_outside_allocator(load(dense()));
  CHECK(rt.context == Approx(0.59 * kGiB));
  CHECK(rt.nccl == Approx(3 * 24 * 9.1875 * kMiB));
  CHECK(rt.userbuffers == 0);
  // TE's 12 buffers of the full (seq x mbs / cp) x hidden tensor: BF16, or 8 of them FP8.
  auto j = with(dense(), "framework", "tp_comm_overlap", true);
  CHECK(predict::runtime_outside_allocator(load(j)).userbuffers == Approx(12 * 2 * 2048.0 * 1024));
  j["training"]["precision"] = "fp8-delayed";
  CHECK(predict::runtime_outside_allocator(load(j)).userbuffers ==
        Approx((8 * 1 + 4 * 2) * 2048.0 * 1024));
  // The parts add up: what the allocator holds plus what lives beside it is the rank's total.
  const auto sc = load(dense());
  const auto m = predict::estimate_memory(sc, 1);
  CHECK(m.rank_parts.front().runtime == Approx(rt.total() / kGiB));
  CHECK(m.rank_parts.front().allocated() + m.rank_parts.front().outside_allocator() ==
        Approx(m.rank_memory_gib.front()));
}

TEST_CASE("Hidden dropout keeps two one-byte masks a layer", "[predict][memory]") {
  // The residual stream under sequence parallelism: 2048 / 2 tokens x 1024, after
  // attention and after the MLP, on 4 layers, one microbatch in flight.
  const double masks = 4 * 2 * 1024.0 * 1024;
  const double d = parts(with(dense(), "training", "hidden_dropout", 0.1)).activations -
                   parts(dense()).activations;
  CHECK(d * kGiB == Approx(masks));
}

TEST_CASE("The loss kernel keeps the logits' gradient in BF16 (TE) or the FP32 exponentials",
          "[predict][memory]") {
  // 2048 tokens (gathered) x 32000 / 2 logits per rank: 2 bytes more each for FP32.
  const double logits = 2048.0 * 16000;
  const double te = parts(dense()).activations;
  CHECK((parts(with(dense(), "framework", "cross_entropy", "native")).activations - te) * kGiB ==
        Approx(2 * logits));
  CHECK((parts(with(dense(), "framework", "cross_entropy", "unfused")).activations - te) * kGiB ==
        Approx(2 * logits));
}

TEST_CASE("Unfused attention keeps the softmax probabilities and holds the scores",
          "[predict][memory]") {
  // 8 heads x 2048 x 2048 BF16 probabilities on each of 4 layers; k and v repeated from 2
  // to 8 heads (TE's unfused GQA); the scores (or their gradient) and the probabilities of
  // one layer live together once: 2 x 64 MiB.
  const double probs = 8 * 2048.0 * 2048 * 2;
  const double repeated = 2048.0 * 2 * (8 - 2) * 64 * 2;
  const auto fused = parts(dense());
  const auto unfused = parts(with(dense(), "framework", "attention_backend", "unfused"));
  CHECK((unfused.activations - fused.activations) * kGiB ==
        Approx(4 * (probs + repeated) + 2 * probs));
  // Context parallelism needs TE's fused kernels.
  auto j = with(dense(), "framework", "attention_backend", "unfused");
  j["parallelism"]["cp"] = 2;
  CHECK(test::load_error(j).path() == "framework.attention_backend");
}

TEST_CASE("A pipeline stage running MTP without the embedding holds a copy of it",
          "[predict][memory]") {
  // DeepSeek-V3 cut to 4 layers with MTP, PP2: MTP on the last stage beside the loss.
  auto j = Json::parse(R"({
    "name": "mtp", "system": "h100", "gpus": 16,
    "model": {"base": "deepseek-v3", "num_hidden_layers": 4, "first_k_dense_replace": 1},
    "training": {"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 16, "mtp_layers": 1},
    "parallelism": {"tp": 2, "pp": 2, "ep": 8},
    "framework": {"dispatcher": "alltoall", "cuda_graph_scope": []}
  })");
  const auto sc = load(j);
  const auto& last = sc.layout.stages().back();
  const auto with_copy = schedules::stage_parameters(
      sc.model, sc.parallelism, last, sc.padded_vocab(), schedules::ScheduleKind::one_f_one_b);
  const auto shared = schedules::stage_parameters(sc.model, sc.parallelism, last, sc.padded_vocab(),
                                                  schedules::ScheduleKind::dualpipe);
  // Megatron builds the embedding in the MTP chunk (129280 x 7168 / TP 2); DualPipe
  // shares the first stage's.
  CHECK(with_copy.dense - shared.dense == Approx(129280.0 * 7168 / 2));
  CHECK(with_copy.expert == shared.expert);
  // The first stage, which holds the embedding, has no MTP and no copy.
  const auto& first = sc.layout.stages().front();
  CHECK(schedules::stage_parameters(sc.model, sc.parallelism, first, sc.padded_vocab(),
                                    schedules::ScheduleKind::one_f_one_b)
            .dense ==
        Approx(schedules::stage_parameters(sc.model, sc.parallelism, first, sc.padded_vocab(),
                                           schedules::ScheduleKind::dualpipe)
                   .dense));
}

TEST_CASE("A measured peak is a counter of one pipeline rank", "[predict][memory][validate]") {
  auto j = dense();
  j["parallelism"]["pp"] = 2;
  j["framework"]["allocator_fragmentation"] = 0.2;
  const auto p = predict::predict(load(j));
  REQUIRE(p.rank_max_allocated_gib.size() == 2);
  for (std::size_t r = 0; r < 2; ++r) {
    CHECK(p.rank_max_reserved_gib[r] == Approx(1.2 * p.rank_max_allocated_gib[r]));
    CHECK(p.rank_max_allocated_gib[r] == Approx(p.rank_memory_parts[r].allocated()));
  }
  config::Measured m;
  m.metric = config::MeasuredMetric::peak_memory_gib;
  m.memory_counter = config::MemoryCounter::max_allocated;
  m.pp_rank = 1;
  CHECK(predict::predicted_metric(m, p) == p.rank_max_allocated_gib[1]);
  m.memory_counter = config::MemoryCounter::max_reserved;
  m.pp_rank.reset();  // the largest rank
  CHECK(predict::predicted_metric(m, p) ==
        std::max(p.rank_max_reserved_gib[0], p.rank_max_reserved_gib[1]));

  // The loader: the counter and the rank only with a memory figure, the rank in range.
  auto bad = j;
  bad["measured"] = {{"tflops_per_gpu", 100}, {"memory_counter", "max_allocated"}, {"source", "s"}};
  CHECK(test::load_error(bad).path() == "measured.memory_counter");
  bad["measured"] = {{"peak_memory_gib", 40},
                     {"memory_counter", "max_allocated"},
                     {"pp_rank", 2},
                     {"source", "s"}};
  CHECK(test::load_error(bad).path() == "measured.pp_rank");
  bad["measured"] = {{"peak_memory_gib", 40}, {"source", "s"}};  // which counter must be said
  CHECK_THAT(test::load_error(bad).what(), Catch::Contains("memory_counter"));
  bad["measured"] = {{"peak_memory_gib", 40}, {"memory_counter", "max_used"}, {"source", "s"}};
  CHECK(test::load_error(bad).path() == "measured.memory_counter");
}

TEST_CASE("validate reports memory points apart from the timing runs",
          "[predict][memory][validate]") {
  auto timing = dense();
  timing["measured"] = {{"step_time_s", 1.0}, {"source", "s"}};
  auto memory = dense();
  memory["measured"] = {{"peak_memory_gib", 30.0},
                        {"memory_counter", "max_allocated"},
                        {"pp_rank", 0},
                        {"source", "s"},
                        {"tolerance_pct", 5}};
  test::TempFile a(timing.dump(), "timing.json"), b(memory.dump(), "memory.json");
  const auto rows = predict::validate_files({a.path(), b.path()}, {}, 1);
  REQUIRE(rows.size() == 2);
  CHECK_FALSE(rows[0].memory);
  CHECK(rows[1].memory);
  CHECK(rows[1].metric == "peak_memory_gib max_allocated pp0");
  const auto p = predict::predict(load(memory));
  CHECK(rows[1].predicted == Approx(p.rank_max_allocated_gib[0]));
  const auto sum = predict::summarize(rows);
  CHECK(sum.all.runs == 1);  // the timing MAE sees the timing run only
  CHECK(sum.memory.runs == 1);
  CHECK(sum.by_system.at("h100").runs == 1);
  const std::string text = reports::validate_text(rows, sum, {});
  CHECK_THAT(text, Catch::Contains("1 run, mean absolute error"));
  CHECK_THAT(text, Catch::Contains("1 memory point, mean absolute error"));
  CHECK_THAT(text, Catch::Contains("max_allocated pp0"));
  const auto js = reports::validate_json(rows, sum, {});
  CHECK(js["memory"]["points"] == 1);
}
