// Layer offloading (framework.offload_layers; TransformerEngine's CPU offload under
// Megatron-Core, docs/research/cpu-layer-offloading.md): the first N decoder layers' saved
// activations in host memory, their copies on a stream of their own, the waits that hold
// at most L - N layers on the GPU, and Megatron's refusals.
#include <catch2/catch.hpp>

#include "importer/import.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;
using test::load;

namespace {
// Llama3 70B on 8 GB200 under Megatron-FSDP, pp 1, MBS 1: Megatron-Bridge's layer-offloading
// recipes' shape (70B GB200 FP8 offloads 40 of 80 layers).
Json llama(std::int64_t offload, double host_link = 0) {
  Json sys = "gb200-nvl72";
  if (host_link > 0)
    sys = {{"base", "gb200-nvl72"},
           {"sources", {{"what-if", "a slower host link, for the test"}}},
           {"node", {{"host_link_GBps", {{"value", host_link}, {"source", "what-if"}}}}}};
  Json fw = {{"cuda_graph_scope", Json::array()}, {"recompute_modules", Json::array()}};
  if (offload >= 0) fw["offload_layers"] = offload;
  return {{"name", "offload"},
          {"system", sys},
          {"gpus", 8},
          {"model", "llama3-70b"},
          {"training",
           {{"seq_length", 8192},
            {"micro_batch_size", 1},
            {"global_batch_size", 16},
            {"precision", "bf16"}}},
          {"parallelism", {{"tp", 1}, {"pp", 1}, {"fsdp", true}}},
          {"framework", fw}};
}
}  // namespace

TEST_CASE("Layer offloading keeps the first N layers' activations in host memory",
          "[schedules][offload]") {
  const auto none = predict::predict(load(llama(-1)));
  const auto half = predict::predict(load(llama(40)));
  // 80 identical layers: half of the layers' activations leave the GPU (the embedding's and
  // the output layer's stay).
  const double a0 = none.peak_memory_parts.activations, a1 = half.peak_memory_parts.activations;
  CHECK(a1 < 0.55 * a0);
  CHECK(a1 > 0.45 * a0);
  CHECK(half.peak_memory_parts.weights_grads == Approx(none.peak_memory_parts.weights_grads));
  // Over NVLink-C2C the copies hide behind the compute: the step barely moves.
  CHECK(half.step.step_time_s == Approx(none.step.step_time_s).epsilon(0.01));
}

TEST_CASE("A slow host link makes layer offloading's copies stall the compute",
          "[schedules][offload]") {
  const auto none = predict::predict(load(llama(-1, 2)));
  const auto half = predict::predict(load(llama(40, 2)));
  // At 2 GB/s a layer's copy outlasts the layers that should hide it.
  CHECK(half.step.step_time_s > 1.2 * none.step.step_time_s);
  CHECK(half.step.breakdown
            .exposed_comm_by_kind[static_cast<std::size_t>(schedules::CommKind::offload)] > 0);
  // The same step with N = 0 is the same as without the key.
  CHECK(predict::predict(load(llama(0, 2))).step.step_time_s ==
        Approx(none.step.step_time_s).epsilon(1e-9));
}

TEST_CASE("Layer offloading is refused where Megatron-Core asserts", "[schedules][offload]") {
  auto pp = llama(10);
  pp["parallelism"]["pp"] = 2;
  CHECK_THROWS_WITH(load(pp), Catch::Contains("without pipeline parallelism"));
  auto rc = llama(10);
  rc["framework"]["recompute_modules"] = Json::array({"core_attn"});
  CHECK_THROWS_WITH(load(rc), Catch::Contains("without activation recompute"));
  auto graphs = llama(10);
  graphs["framework"]["cuda_graph_scope"] = Json::array({"attn"});
  CHECK_THROWS_WITH(load(graphs), Catch::Contains("no CUDA graphs or a full-iteration one"));
  auto both = llama(10);
  both["framework"]["offload"] = Json::array({"core_attn"});
  CHECK_THROWS_WITH(load(both), Catch::Contains("exclude each other"));
  auto all = llama(80);
  CHECK_THROWS(load(all));  // N must leave a layer on the GPU
  // Without a graph scope given, none.
  auto dflt = llama(10);
  dflt["framework"].erase("cuda_graph_scope");
  CHECK(load(dflt).framework.cuda_graph_scope.empty());
}

TEST_CASE("Megatron's --cpu-offloading-num-layers imports as framework.offload_layers",
          "[schedules][offload][import]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const std::string cmd =
      "torchrun --nproc-per-node 8 --nnodes 2 pretrain_gpt.py --num-layers 4 --hidden-size 2048 "
      "--num-attention-heads 16 --ffn-hidden-size 6144 --swiglu --vocab-size 32000 "
      "--seq-length 4096 --micro-batch-size 1 --global-batch-size 64 --bf16 "
      "--cpu-offloading-num-layers 2";
  const auto imp = importer::import_megatron(cmd, o);
  CHECK(imp.scenario["framework"]["offload_layers"] == 2);
  CHECK(load(imp.scenario).framework.offload_layers == 2);
}
