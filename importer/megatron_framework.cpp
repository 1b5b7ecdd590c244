// importer/megatron_framework.cpp: the framework and library-stack sections of a
// Megatron-LM import (importer/megatron_detail.hpp): the MoE dispatcher, overlaps, CUDA
// graphs, recomputation, the optimizer and its dtypes, offloading, the attention and loss
// kernels; the switches the command shows (router fusion, NUMA binding, the norm's
// quantization fusion) and the release's or the newest stack's for the rest.
#include <charconv>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "config/releases.hpp"
#include "importer/megatron_detail.hpp"

namespace moesim::importer::detail {
namespace {

// An environment variable read as Python's int() reads a plain decimal (no sign, no blanks):
// the whole text a number below a million, else nothing.
std::optional<int> env_int(const std::string& s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0 || v >= 1000000)
    return std::nullopt;
  return v;
}

}  // namespace

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;

void Importer::framework(Json& sc) {
  Json fw;
  const bool moe = moe_;  // set by model()
  const std::string type =
      f_.choice("--moe-token-dispatcher-type", "allgather", {"allgather", "alltoall", "flex"});
  std::string dispatcher = type;
  if (type == "flex" || f_.has("--moe-enable-deepep"))
    dispatcher = f_.choice("--moe-flex-dispatcher-backend", "deepep", {"deepep", "hybridep"});
  if (moe) {
    fw["dispatcher"] = dispatcher;
    if (dispatcher == "deepep") fw["dispatcher_sms"] = f_.integer_or("--moe-deepep-num-sms", 20);
    if (dispatcher == "hybridep")
      fw["dispatcher_sms"] = f_.integer_or("--moe-hybridep-num-sms", 16);
  }
  // TransformerEngine reads NVTE_EXT_MARGIN_SM from the environment: SMs its GEMMs leave free.
  if (const auto m = w_.env.find("NVTE_EXT_MARGIN_SM"); m != w_.env.end() && !m->second.empty()) {
    // TE reads it with Python's int() (pytorch/cpp_extensions/gemm.py 668 at d0067d0d).
    const auto sms = env_int(m->second);
    if (!sms)
      throw InputError(opts_.source, "NVTE_EXT_MARGIN_SM",
                       "'" + m->second + "' is not a whole number of SMs");
    fw["gemm_sm_margin"] = *sms;
    assume("framework.gemm_sm_margin", "NVTE_EXT_MARGIN_SM=" + m->second);
  }
  if (moe) {
    if (!f_.has("--moe-grouped-gemm"))
      f_.fail("--moe-grouped-gemm",
              "absent: Megatron's SequentialMLP (one GEMM per local expert from Python) "
              "is not modeled; moesim models TE's grouped GEMM");
    if (!f_.has("--moe-permute-fusion"))
      assume("framework",
             "permutation as TE's fused kernels: Megatron's unfused permute "
             "(--moe-permute-fusion absent) is not modeled");
  }
  fw["moe_a2a_overlap"] = f_.has("--overlap-moe-expert-parallel-comm");
  fw["delay_wgrad_compute"] = f_.has("--delay-wgrad-compute");
  // Written only when given; on a model without a shared expert, where Megatron ignores it
  // ("only effective when moe-shared-expert-intermediate-size is set"), the loader refuses it.
  if (f_.has("--moe-shared-expert-overlap")) fw["moe_shared_expert_overlap"] = true;
  // Written only when given: at TP 1 the setting is inert, and run lists it as such.
  if (f_.has("--tp-comm-overlap")) fw["tp_comm_overlap"] = true;
  // CUDA graphs.
  // The legacy switches name an implementation (arguments.py: --enable-cuda-graph is
  // local, --external-cuda-graph transformer_engine; both deprecated).
  const std::string impl =
      f_.has("--external-cuda-graph") ? "transformer_engine"
      : f_.has("--enable-cuda-graph")
          ? "local"
          : f_.choice("--cuda-graph-impl", "none", {"none", "local", "transformer_engine"});
  Json scopes = Json::array();
  if (impl != "none") {
    // --cuda-graph-modules: newer Megatron's name for the scopes.
    const auto* s = f_.list("--cuda-graph-scope");
    if (!s) s = f_.list("--cuda-graph-modules");
    if (!s || s->empty())
      f_.fail("--cuda-graph-scope",
              "absent: Megatron then captures whole layers, which dropless MoE layers "
              "cannot be; give the scopes");
    for (const auto& x : *s) scopes.push_back(x);
  } else if (f_.has("--cuda-graph-scope") || f_.has("--cuda-graph-modules")) {
    f_.fail(f_.has("--cuda-graph-scope") ? "--cuda-graph-scope" : "--cuda-graph-modules",
            "without --cuda-graph-impl (default none) Megatron captures nothing");
  }
  fw["cuda_graph_scope"] = scopes;
  fw["recompute_modules"] = recompute();
  if (fw["recompute_modules"] == Json::array({"full"}))
    if (const auto n = recompute_num_layers()) fw["recompute_num_layers"] = *n;
  fw["distributed_optimizer"] = f_.has("--use-distributed-optimizer");
  fw["overlap_grad_reduce"] = f_.has("--overlap-grad-reduce");
  fw["overlap_param_gather"] = f_.has("--overlap-param-gather");
  if (f_.has("--overlap-param-gather-with-optimizer-step"))
    fw["overlap_param_gather_with_optimizer_step"] = true;
  if (f_.has("--no-align-param-gather")) fw["align_param_gather"] = false;
  if (f_.has("--fp4-param-gather") && !f_.has("--fp4-format"))
    f_.fail("--fp4-param-gather", "needs --fp4-format (Megatron asserts the same)");
  fw["fp8_param_gather"] = f_.has("--fp8-param-gather") || f_.has("--fp4-param-gather");
  fw["fp8_dot_product_attention"] = f_.has("--fp8-dot-product-attention");
  // --no-rope-fusion: apply_rope_fusion off (arguments.py: store_false, on by default).
  if (f_.has("--no-rope-fusion")) fw["rope_fusion"] = false;
  // Optimizer states, main gradients and the gradients' reduction dtype
  // (arguments.py: under --bf16 the gradients are accumulated and reduced in FP32
  // unless --grad-reduce-in-bf16 or BF16 main gradients).
  const std::string avg = f_.choice("--exp-avg-dtype", "fp32", {"fp32", "fp16", "bf16", "fp8"});
  const std::string avg_sq =
      f_.choice("--exp-avg-sq-dtype", "fp32", {"fp32", "fp16", "bf16", "fp8"});
  if (avg != avg_sq || (avg != "fp32" && avg != "bf16"))
    f_.fail("--exp-avg-dtype",
            fmt::format("Adam moments {} / {}: moesim models both FP32 or both BF16", avg, avg_sq));
  if (avg != "fp32" && !f_.has("--use-precision-aware-optimizer"))
    f_.fail("--exp-avg-dtype",
            "Megatron needs --use-precision-aware-optimizer for non-FP32 moments");
  fw["optimizer_state_dtype"] = avg;
  const std::string main_grads = f_.choice("--main-grads-dtype", "fp32", {"fp32", "bf16"});
  f_.choice("--main-params-dtype", "fp32", {"fp32"});
  // The DDP gradient buffer (main_grad) holds the reduction's dtype: FP32 when
  // accumulate_allreduce_grads_in_fp32, else the parameters' (param_and_grad_buffer.py:
  // grad_dtype = float if grad_reduce_in_fp32 else param.dtype); --grad-reduce-in-bf16
  // turns the FP32 accumulation off (arguments.py @ d98e8a64, under --bf16), whatever
  // --main-grads-dtype says of the precision-aware optimizer's copy.
  // Under --fp16 the buffer is FP16 (2 bytes, moesim's "bf16" width) unless
  // --accumulate-allreduce-grads-in-fp32; under --bf16 that accumulation is the default.
  const bool bf16_reduce = f_.has("--grad-reduce-in-bf16") || main_grads == "bf16" ||
                           (f_.has("--fp16") && !f_.has("--accumulate-allreduce-grads-in-fp32"));
  if (f_.has("--fp16"))
    assume("framework.main_grads_dtype",
           bf16_reduce ? "FP16 gradient buffer and reduction: 2 bytes, written as bf16"
                       : "FP32 gradient buffer (--accumulate-allreduce-grads-in-fp32)");
  fw["main_grads_dtype"] = bf16_reduce ? "bf16" : "fp32";
  fw["grad_reduce_dtype"] = bf16_reduce ? "bf16" : "fp32";
  // Megatron-FSDP keeps its own: the main gradients in --megatron-fsdp-main-grads-dtype
  // (auto: the parameters' dtype, 2 bytes under --bf16 or --fp16), communicated in
  // --megatron-fsdp-grad-comm-dtype (auto: the main gradients'); the flags above do not
  // reach it (megatron/core/distributed/fsdp/mcore_fsdp_adapter.py:139-143,
  // arguments.py:3691-3698 @ d98e8a64).
  if (f_.has("--megatron-fsdp-main-grads-dtype") || f_.has("--megatron-fsdp-grad-comm-dtype"))
    if (!f_.has("--use-megatron-fsdp"))
      f_.fail(f_.has("--megatron-fsdp-main-grads-dtype") ? "--megatron-fsdp-main-grads-dtype"
                                                         : "--megatron-fsdp-grad-comm-dtype",
              "acts only with --use-megatron-fsdp");
  if (f_.has("--use-megatron-fsdp")) {
    const auto width = [](const std::string& d) {  // moesim's 4- or 2-byte dtypes
      return d == "fp32" ? std::string("fp32") : std::string("bf16");
    };
    const std::string grads =
        f_.choice("--megatron-fsdp-main-grads-dtype", "auto", {"fp32", "bf16", "fp16", "auto"});
    const std::string comm =
        f_.choice("--megatron-fsdp-grad-comm-dtype", "auto", {"fp32", "bf16", "fp16", "auto"});
    const std::string main = grads == "auto" ? "bf16" : width(grads);
    fw["main_grads_dtype"] = main;
    fw["grad_reduce_dtype"] = comm == "auto" ? main : width(comm);
  }
  const std::string opt = f_.choice("--optimizer", "adam", {"adam", "sgd", "muon", "dist_muon"});
  if (opt == "sgd") f_.fail("--optimizer", "SGD is not modeled (Adam and Muon are)");
  fw["optimizer"] = opt == "adam" ? "adam" : "muon";
  Json offload = Json::array();
  if (f_.has("--optimizer-cpu-offload")) {
    if (f_.number("--optimizer-offload-fraction").value_or(1.0) != 1.0)
      f_.fail("--optimizer-offload-fraction",
              "a partial optimizer offload is not modeled (1.0 is)");
    offload.push_back("optimizer");
  }
  // Megatron-Core dev's --offload-optimizer-states: the main weights and moments wait in
  // host memory through forward and backward, reloaded for the step.
  if (f_.has("--offload-optimizer-states") && offload.empty()) offload.push_back("optimizer");
  if (!offload.empty())
    assume("framework.offload",
           "the optimizer states in host memory; their transfers are not priced in the step");
  // Fine-grained activation offloading (--offload-modules: what each module saves for
  // the backward waits in host memory).
  if (f_.has("--offload-modules") && !f_.has("--fine-grained-activation-offloading"))
    f_.fail("--offload-modules", "acts only with --fine-grained-activation-offloading");
  if (f_.has("--fine-grained-activation-offloading")) {
    const auto* mods = f_.list("--offload-modules");
    if (!mods || mods->empty())
      f_.fail("--fine-grained-activation-offloading",
              "give the modules to offload (--offload-modules)");
    for (const auto& m : *mods) {
      if (m == "dense_mlp")
        f_.fail("--offload-modules",
                "'dense_mlp': offloading a dense MLP's activations is not modeled");
      offload.push_back(m);
    }
    assume("framework.offload",
           "the offloaded activations' copies are not priced in the step (Megatron overlaps "
           "them on a side stream)");
  }
  fw["offload"] = offload;
  // Layer offloading (--cpu-offloading-num-layers N > 0 switches cpu_offloading on,
  // megatron/training/arguments.py 1852-1853 at cd4afffa): the first N layers' activations.
  if (const auto n = f_.integer("--cpu-offloading-num-layers"); n && *n > 0)
    fw["offload_layers"] = *n;
  if (const auto b = f_.number("--ddp-bucket-size")) fw["ddp_bucket_size"] = *b;
  // Sync-free experts (Megatron-Core dev, docs/user-guide/features/paged_stash.md at d98e8a64):
  // a rank capacity sizes HybridEP's buffers on the host, and paged stashing keeps only the
  // tokens that arrived; the loader checks what each needs (HybridEP, full-iteration graph).
  if (const auto c = f_.number("--moe-expert-rank-capacity-factor"))
    fw["moe_expert_rank_capacity_factor"] = *c;
  if (f_.has("--moe-paged-stash")) fw["moe_paged_stash"] = true;
  // TE's op fuser (te.ops): the experts' bias and clamp in the fused grouped MLP; with
  // NVTE_CUTEDSL_FUSED_GROUPED_MLP above 0 in the environment, its CuTe DSL kernels (TE
  // ops/fused/grouped_mlp.py is_supported reads the variable as an integer).
  const bool op_fuser = f_.has("--use-transformer-engine-op-fuser");
  if (op_fuser) fw["te_op_fuser"] = true;
  if (const auto c = w_.env.find("NVTE_CUTEDSL_FUSED_GROUPED_MLP"); c != w_.env.end()) {
    const auto on = env_int(c->second);
    if (!on)
      throw InputError(opts_.source, "NVTE_CUTEDSL_FUSED_GROUPED_MLP",
                       "'" + c->second + "' is not an integer (TransformerEngine reads it as one)");
    if (*on > 0 && op_fuser) {
      fw["fused_grouped_mlp"] = true;
      assume("framework.fused_grouped_mlp", "NVTE_CUTEDSL_FUSED_GROUPED_MLP=" + c->second);
      // cuDNN frontend's kernels leave this many two-SM clusters free (default 0).
      if (const auto m = w_.env.find("CUDNNFE_CLUSTER_OVERLAP_MARGIN");
          m != w_.env.end() && !m->second.empty()) {
        const auto clusters = env_int(m->second);
        if (!clusters)
          throw InputError(opts_.source, "CUDNNFE_CLUSTER_OVERLAP_MARGIN",
                           "'" + m->second + "' is not a whole number of clusters");
        fw["fused_grouped_mlp_sm_margin"] = 2 * *clusters;
        assume("framework.fused_grouped_mlp_sm_margin",
               "CUDNNFE_CLUSTER_OVERLAP_MARGIN=" + m->second + " two-SM clusters");
      }
    } else if (*on > 0) {
      assume("framework.fused_grouped_mlp",
             "off: NVTE_CUTEDSL_FUSED_GROUPED_MLP=" + c->second +
                 " without --use-transformer-engine-op-fuser (Megatron-Core's TEGroupedMLP does "
                 "not read it)");
    }
  }
  // Things Megatron selects that moesim takes as given.
  const std::string impl_t = f_.choice("--transformer-impl", "transformer_engine",
                                       {"transformer_engine", "local", "inference_optimized"});
  if (impl_t != "transformer_engine")
    f_.fail("--transformer-impl", "only Transformer Engine layers are modeled");
  // Core attention: TE's unfused path for unfused (and Megatron's own, equally
  // unfused, for local); its flash or cuDNN kernels otherwise (auto picks them).
  const std::string backend =
      f_.choice("--attention-backend", "auto", {"auto", "flash", "fused", "unfused", "local"});
  fw["attention_backend"] = backend == "unfused" || backend == "local" ? "unfused" : "fused";
  // Unfused, attention dropout keeps a mask and the dropped probabilities of every
  // score (the fused kernels regenerate it): not modeled. Megatron's default is 0.1.
  if (fw["attention_backend"] == "unfused" && f_.number("--attention-dropout").value_or(0.1) != 0)
    f_.fail("--attention-backend",
            "unfused attention with attention dropout (Megatron's default 0.1; "
            "--attention-dropout 0 turns it off) is not modeled");
  // The loss: unfused without --cross-entropy-loss-fusion; with it, Megatron's
  // --cross-entropy-fusion-impl (default native) or TransformerEngine's kernel.
  fw["cross_entropy"] = f_.has("--cross-entropy-loss-fusion")
                            ? f_.choice("--cross-entropy-fusion-impl", "native", {"native", "te"})
                            : std::string("unfused");
  if (!f_.has("--disable-bias-linear"))
    assume(
        "model",
        learned_sinks(f_)
            ? "biases as GPT-OSS has them (attention, router, experts: their parameters; the "
              "bias "
              "adds are not priced as kernels)"
            : "linear layers without biases (--disable-bias-linear absent: the bias adds are not "
              "modeled; --add-qkv-bias counts the attention's)");
  if (f_.has("--manual-gc"))
    assume("framework", "--manual-gc: garbage collection pauses are not modeled either way");
  else
    assume("framework",
           "automatic garbage collection (no --manual-gc): its pauses are not modeled");
  sc["framework"] = fw;
}

Json Importer::recompute() const {
  // --recompute-activations: arguments.py's shorthand for selective granularity.
  const std::string g =
      f_.has("--recompute-activations")
          ? std::string("selective")
          : f_.choice("--recompute-granularity", "none", {"none", "full", "selective"});
  if (g == "none") {
    if (f_.has("--recompute-modules"))
      f_.fail("--recompute-modules",
              "without --recompute-granularity selective Megatron recomputes nothing");
    return Json::array();
  }
  if (g == "selective") {
    const auto* m = f_.list("--recompute-modules");
    if (!m) return Json::array({"core_attn"});  // Megatron's default module (given empty: none)
    Json out = Json::array();
    for (const auto& x : *m) out.push_back(x);
    return out;
  }
  // Full recompute: Megatron's uniform method with one layer a group recomputes every
  // layer, as moesim's "full" does; its block method the first N of each virtual stage
  // (recompute_num_layers below). Uniform groups of several layers keep fewer inputs and
  // rebuild a whole group at once, which moesim does not model.
  const std::string method = f_.choice("--recompute-method", "uniform", {"uniform", "block"});
  const std::int64_t n = f_.integer_or("--recompute-num-layers", 1);
  if (method == "uniform" && n != 1)
    f_.fail("--recompute-num-layers",
            "full recompute in uniform groups of several layers is not modeled; uniform with "
            "--recompute-num-layers 1 and the block method are");
  return Json::array({"full"});
}

std::optional<std::int64_t> Importer::recompute_num_layers() const {
  if (f_.choice("--recompute-method", "uniform", {"uniform", "block"}) != "block")
    return std::nullopt;
  return f_.integer_or("--recompute-num-layers", 1);
}

void Importer::stack(Json& sc) {
  Json st;
  st["router_fusion"] = f_.has("--moe-router-fusion");
  if (f_.has("--moe-permute-fusion-into-hybridep")) {
    st["hybridep_permute_fusion"] = true;
    assume("stack.hybridep_permute_fusion", "on: --moe-permute-fusion-into-hybridep");
  }
  // A recipe without its launcher: bound, as NVIDIA's Slurm launchers bind every rank
  // (config/releases.cpp, cpu_numa_binding's history); the recipe itself does not say.
  st["cpu_numa_binding"] = w_.numa_bound || opts_.no_launcher;
  assume("stack.cpu_numa_binding",
         opts_.no_launcher
             ? "on: the recipe names no launcher; NVIDIA's Slurm launchers bind every "
               "rank with numactl, taken as this run's (not stated)"
         : w_.numa_bound ? "on: bindpcie or numactl starts the command"
                         : "off: no bindpcie or numactl before the command");
  const auto norm = w_.env.find("NVTE_NORM_FWD_USE_CUDNN");
  st["norm_quant_fusion"] = norm != w_.env.end() && norm->second == "1";
  assume("stack.norm_quant_fusion",
         st["norm_quant_fusion"].get<bool>()
             ? "on: NVTE_NORM_FWD_USE_CUDNN=1 (cuDNN 9.14 or later assumed)"
             : "off: NVTE_NORM_FWD_USE_CUDNN=1 is not set");
  // The library switches no flag shows: the release's (config/releases.hpp), else the newest.
  const auto* rel = opts_.release ? find_release(*opts_.release) : nullptr;
  if (opts_.release) {
    if (auto why = unknown_release(*opts_.release))
      throw InputError(opts_.source, "--release", *why);
    if (!rel)
      throw InputError(
          opts_.source, "--release",
          "'custom' resolves no switch: import without --release and set the stack keys by hand");
    st["release"] = *opts_.release;
  }
  for (const char* k : {"mxfp8_alloc_fusion", "permute_fusion_v2", "swizzle_fusion", "pdl_quant",
                        "te_host_slim", "cuda_graph_shared_expert", "deepep_tuned",
                        "hybridep_permute_fusion", "nvfp4_rht_fusion"}) {
    if (st.contains(k)) continue;  // the command shows it
    if (rel) {
      assume(std::string("stack.") + k, fmt::format("release {}'s where it settles it, else on "
                                                    "and noted by run (no Megatron flag says)",
                                                    rel->name));
      continue;
    }
    st[k] = true;
    assume(std::string("stack.") + k,
           "on: the newest library versions moesim models (no Megatron flag says)");
  }
  sc["stack"] = st;
}

}  // namespace moesim::importer::detail
