// config/caveats.hpp: a prediction that prices something beyond its evidence says so. The
// NUMA-unbound host factor is fitted on the corpus's unbound runs, all on Grace today
// (calibration/profiles/corpus.json `fits[].cpus`); an unbound x86 run pays it unmeasured.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "config/caveats.hpp"
#include "config/load.hpp"
#include "config/routing_profile.hpp"
#include "hw_models/dispatcher.hpp"

using namespace moesim;

namespace {
const std::string kRoot = MOESIM_SOURCE_DIR "/scenarios/";
bool mentions(const std::vector<std::string>& v, const std::string& what) {
  return std::any_of(v.begin(), v.end(),
                     [&](const std::string& s) { return s.find(what) != std::string::npos; });
}
}  // namespace

TEST_CASE("Caveats: the NUMA-unbound factor off the hosts it was measured on",
          "[config][caveats]") {
  const auto cpus = config::corpus_fit_cpus("host.numa_unbound_factor");
  REQUIRE_FALSE(cpus.empty());
  // Measured where unbound runs were fitted: the GB200 journey's first steps (Grace).
  const auto journey = config::load_scenario_file(kRoot + "journey/01-baseline.json");
  REQUIRE_FALSE(journey.stack.cpu_numa_binding);
  CHECK(std::find(cpus.begin(), cpus.end(), journey.system.node.cpu) != cpus.end());
  CHECK(config::prediction_caveats(journey).empty());

  // A host no unbound run was measured on: the caveat names the factor and the host.
  auto other = journey;
  other.system.node.cpu = "a CPU no corpus run used";
  const auto c = config::prediction_caveats(other);
  REQUIRE(c.size() == 1);
  CHECK(mentions(c, "host.numa_unbound_factor"));
  CHECK(mentions(c, "a CPU no corpus run used"));
  // PAI's unbound x86 runs (held out): no unbound x86 run is in the fit today.
  auto p1 = config::load_scenario_file(kRoot + "pai/p1-tp4pp8vpp4.json");
  REQUIRE_FALSE(p1.stack.cpu_numa_binding);
  REQUIRE(std::find(cpus.begin(), cpus.end(), p1.system.node.cpu) == cpus.end());
  CHECK(mentions(config::prediction_caveats(p1), p1.system.node.cpu));
  // Bound, there is no host factor to extrapolate.
  p1.stack.cpu_numa_binding = true;
  CHECK_FALSE(mentions(config::prediction_caveats(p1), "host.numa_unbound_factor"));
}

TEST_CASE("Caveats: grouped GEMMs in a dtype the system has no grouped measurement in",
          "[config][caveats]") {
  // GB200's grouped table holds MXFP8 (the journey's 2,672 TFLOPS at K 7168): an MXFP8
  // DeepSeek-V3 run is priced from it, a BF16 one from the dense BF16 efficiency.
  auto sc = config::load_scenario_file(kRoot + "journey/13-norm-quant-fusion.json");
  REQUIRE(sc.system.efficiency.grouped_gemm.count(hw_models::Dtype::mxfp8) == 1);
  REQUIRE(sc.system.efficiency.grouped_gemm.count(hw_models::Dtype::bf16) == 0);
  CHECK_FALSE(mentions(config::prediction_caveats(sc), "grouped GEMMs"));
  sc.training.precision = workload::Precision::bf16;
  const auto c = config::prediction_caveats(sc);
  CHECK(mentions(c, "grouped GEMMs in bf16 are priced at gb200-nvl72's dense GEMM efficiency"));
  CHECK(mentions(c, "efficiency.grouped_gemm holds mxfp8"));
  // MXFP8 with BF16 first and last layers: their experts run BF16 GEMMs.
  sc.training.precision = workload::Precision::mxfp8;
  sc.training.bf16_layers_at_start = 1;
  CHECK(mentions(config::prediction_caveats(sc), "grouped GEMMs in bf16"));
  // Hopper's BF16 grouped GEMMs are measured (TE's multi-stream path on H100, profile
  // h100-te-grouped, carried to H800 and H200): PAI's BF16 Qwen3-235B on H800 is priced from it.
  const auto pai = config::load_scenario_file(kRoot + "pai/p5-tp1pp32vpp3-mbs4-full.json");
  REQUIRE(pai.system.efficiency.grouped_gemm.count(hw_models::Dtype::bf16) == 1);
  CHECK_FALSE(mentions(config::prediction_caveats(pai), "grouped GEMMs"));
  // A dense model has no grouped GEMMs.
  auto dense = config::load_scenario_file(kRoot + "journey/13-norm-quant-fusion.json");
  dense.training.precision = workload::Precision::bf16;
  dense.model.num_experts = 0;
  REQUIRE_FALSE(dense.model.is_moe());
  CHECK_FALSE(mentions(config::prediction_caveats(dense), "grouped GEMMs"));
}

TEST_CASE("Caveats: layernorm recompute with the router in a TE graph", "[config][caveats]") {
  // Megatron-Core 0.16+ drops the MoE pre-MLP norm from 'layernorm' recompute when TE graphs
  // capture moe_router without an all-to-all or latent-MoE moe_preprocess; moesim does not.
  auto sc = config::load_scenario_file(kRoot + "journey/13-norm-quant-fusion.json");
  sc.framework.recompute_modules = {workload::RecomputeModule::layernorm};
  sc.framework.cuda_graph_scope = {workload::CudaGraphScope::attn,
                                   workload::CudaGraphScope::moe_router};
  REQUIRE(sc.framework.dispatcher != hw_models::Dispatcher::alltoall);
  CHECK(mentions(config::prediction_caveats(sc), "with the router in a TE CUDA graph"));
  // With the preprocess captured it still applies to a flex dispatcher...
  sc.framework.cuda_graph_scope.push_back(workload::CudaGraphScope::moe_preprocess);
  CHECK(mentions(config::prediction_caveats(sc), "with the router in a TE CUDA graph"));
  // ...but not to the all-to-all one, whose pre-MLP norm Megatron recomputes.
  sc.framework.dispatcher = hw_models::Dispatcher::alltoall;
  CHECK_FALSE(mentions(config::prediction_caveats(sc), "with the router in a TE CUDA graph"));
  // Nor without router graphs.
  sc.framework.cuda_graph_scope.clear();
  sc.framework.dispatcher = hw_models::Dispatcher::hybridep;
  CHECK_FALSE(mentions(config::prediction_caveats(sc), "with the router in a TE CUDA graph"));
}

TEST_CASE("Caveats: layernorm recompute on dense MLP layers is DeepSeek's, not Megatron's",
          "[config][caveats]") {
  // DeepSeek's own run recomputes every RMSNorm, the three dense layers' included; Megatron
  // fuses a dense layer's norm into linear_fc1 and keeps it.
  auto sc = config::load_scenario_file(kRoot + "h800/dsv3-production.json");
  REQUIRE(sc.model.num_dense_layers() == 3);
  CHECK(mentions(config::prediction_caveats(sc), "on the dense MLP layers"));
  // Recomputed whole ('mlp'), the norm goes with the layer: nothing to say.
  sc.framework.recompute_modules.push_back(workload::RecomputeModule::mlp);
  CHECK_FALSE(mentions(config::prediction_caveats(sc), "on the dense MLP layers"));
  // A model without dense layers has none.
  auto moe = config::load_scenario_file(kRoot + "pai/p2-tp2pp8.json");
  REQUIRE(moe.model.num_dense_layers() == 0);
  CHECK_FALSE(mentions(config::prediction_caveats(moe), "on the dense MLP layers"));
}

// TE's permute before 2.6 is priced from one GB200 profile point: on GB200 (the GB200
// journey's step 1) no caveat, on Hopper (PAI's 25.04 runs) the carried-over walk is named.
TEST_CASE("Caveats: the old permute's walk off the GPU it was measured on", "[config][caveats]") {
  const auto journey = config::load_scenario_file(kRoot + "journey/01-baseline.json");
  REQUIRE_FALSE(journey.stack.permute_fusion_v2);
  CHECK_FALSE(mentions(config::prediction_caveats(journey), "permute_fusion_v2"));
  auto p5 = config::load_scenario_file(kRoot + "pai/p5-tp1pp32vpp3-mbs4-full.json");
  REQUIRE_FALSE(p5.stack.permute_fusion_v2);
  const auto c = config::prediction_caveats(p5);
  CHECK(mentions(c, "permute_fusion_v2 off"));
  CHECK(mentions(c, "carried over to H800 SXM"));
  p5.stack.permute_fusion_v2 = true;
  CHECK_FALSE(mentions(config::prediction_caveats(p5), "permute_fusion_v2"));
  // HybridEP permutes in its own kernels: nothing to carry over.
  p5.stack.permute_fusion_v2 = false;
  p5.framework.dispatcher = hw_models::Dispatcher::hybridep;
  CHECK_FALSE(mentions(config::prediction_caveats(p5), "permute_fusion_v2"));
}

TEST_CASE("Caveats: trained routing says how far its measured pairs hold", "[config][caveats]") {
  // Megatron-MoE-ModelZoo's dropless Qwen3-235B run against its forced-balanced twin: Qwen3's
  // routers were pretrained with global-batch balancing, priced at the dispersion fitted to
  // such pairs (calibration/profiles/routing.json), and the caveat says it with its record.
  auto sc =
      config::load_scenario_file(kRoot + "longcontext/mz-qwen3-235b-h100-seq16k-cp1-dropless.json");
  REQUIRE(sc.routing.balance == workload::RoutingBalance::aux_loss);
  const auto c = config::prediction_caveats(sc);
  CHECK(mentions(c, "routing.balance aux_loss"));
  CHECK(mentions(c, "global-batch balance"));
  CHECK(mentions(c, "calibration/profiles/routing.json"));
  CHECK(mentions(c, fmt::format("sigma {:.3f}", config::global_batch_sigma().value)));
  // Given by the file, the dispersion is the file's, and the caveat says that instead.
  sc.routing.popularity_sigma = 0.5;
  sc.given_keys.push_back("routing.popularity_sigma");
  CHECK(mentions(config::prediction_caveats(sc), "the given dispersion sigma 0.500"));
  CHECK_FALSE(mentions(config::prediction_caveats(sc), "global-batch"));
  // The forced-balanced twin prices no router.
  const auto forced =
      config::load_scenario_file(kRoot + "longcontext/mz-qwen3-235b-h100-seq16k-cp1.json");
  CHECK_FALSE(mentions(config::prediction_caveats(forced), "routing.balance"));
  // Another family's trained router: the published statistic, without the global-batch clause.
  const auto mixtral =
      config::load_scenario_file(kRoot + "pairs/c3-mixtral-8x22b-h100-dropless.json");
  CHECK(mentions(config::prediction_caveats(mixtral), "published global statistic"));
  CHECK_FALSE(mentions(config::prediction_caveats(mixtral), "global-batch"));
}

TEST_CASE("Caveats: FP8 block scales on Hopper are priced at rates without them",
          "[config][caveats]") {
  // DeepSeek-V3 on 2,048 H800 trains with its own block-scaled kernels: the caveat names the
  // rates it is priced at and what TE's recipe measured.
  auto sc = config::load_scenario_file(kRoot + "h800/dsv3-production.json");
  REQUIRE(sc.training.precision == workload::Precision::fp8_blockwise);
  const auto c = config::prediction_caveats(sc);
  CHECK(mentions(c, "training.precision fp8-blockwise on H800 SXM"));
  CHECK(mentions(c, "DeepGEMM's block-scaled grouped kernels"));
  // Per-tensor FP8 or BF16 on the same system: no such caveat.
  sc.training.precision = workload::Precision::fp8_tensorwise;
  CHECK_FALSE(mentions(config::prediction_caveats(sc), "fp8-blockwise"));
  sc.training.precision = workload::Precision::bf16;
  CHECK_FALSE(mentions(config::prediction_caveats(sc), "fp8-blockwise"));
  // The measurement is of H100s: a Blackwell run does not carry it.
  auto gb = config::load_scenario_file(kRoot + "journey/13-norm-quant-fusion.json");
  gb.training.precision = workload::Precision::fp8_blockwise;
  CHECK_FALSE(mentions(config::prediction_caveats(gb), "fp8-blockwise on"));
}
