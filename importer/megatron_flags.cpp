// importer/megatron_flags.cpp: Megatron-LM's flags as the importer reads them (importer/
// megatron_detail.hpp): the table of the flags it models with their arities, of those with
// no effect on step time or memory, and of those refused with a reason; and the command's
// flags parsed against it (every unknown flag reported at once), with their values read as
// integers, numbers and choices.
#include <algorithm>
#include <array>
#include <charconv>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "importer/megatron_detail.hpp"

namespace moesim::importer::detail {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;
namespace {

// ---- the flag table -------------------------------------------------------------------

enum class Arity { none, one, many };

struct FlagSpec {
  std::string_view name;
  Arity arity;
};

// Flags the importer maps onto the scenario (arguments.py's names and arities).
constexpr std::array kModeled{
    // model shape
    FlagSpec{"--num-layers", Arity::one},
    FlagSpec{"--hidden-size", Arity::one},
    FlagSpec{"--ffn-hidden-size", Arity::one},
    FlagSpec{"--num-attention-heads", Arity::one},
    FlagSpec{"--group-query-attention", Arity::none},
    FlagSpec{"--num-query-groups", Arity::one},
    FlagSpec{"--kv-channels", Arity::one},
    FlagSpec{"--vocab-size", Arity::one},
    FlagSpec{"--make-vocab-size-divisible-by", Arity::one},
    FlagSpec{"--untie-embeddings-and-output-weights", Arity::none},
    FlagSpec{"--swiglu", Arity::none},
    FlagSpec{"--qk-layernorm", Arity::none},
    FlagSpec{"--multi-latent-attention", Arity::none},
    FlagSpec{"--q-lora-rank", Arity::one},
    FlagSpec{"--kv-lora-rank", Arity::one},
    FlagSpec{"--qk-head-dim", Arity::one},
    FlagSpec{"--qk-pos-emb-head-dim", Arity::one},
    FlagSpec{"--v-head-dim", Arity::one},
    FlagSpec{"--num-experts", Arity::one},
    FlagSpec{"--moe-router-topk", Arity::one},
    FlagSpec{"--moe-ffn-hidden-size", Arity::one},
    FlagSpec{"--moe-shared-expert-intermediate-size", Arity::one},
    FlagSpec{"--moe-layer-freq", Arity::one},
    FlagSpec{"--moe-router-score-function", Arity::one},
    FlagSpec{"--moe-router-num-groups", Arity::one},
    FlagSpec{"--moe-router-group-topk", Arity::one},
    FlagSpec{"--mtp-num-layers", Arity::one},
    // training
    FlagSpec{"--hidden-dropout", Arity::one},
    FlagSpec{"--attention-dropout", Arity::one},
    FlagSpec{"--seq-length", Arity::one},
    FlagSpec{"--micro-batch-size", Arity::one},
    FlagSpec{"--global-batch-size", Arity::one},
    FlagSpec{"--bf16", Arity::none},
    FlagSpec{"--fp16", Arity::none},
    FlagSpec{"--accumulate-allreduce-grads-in-fp32", Arity::none},
    FlagSpec{"--fp8-format", Arity::one},
    FlagSpec{"--fp8-recipe", Arity::one},
    FlagSpec{"--fp8-param-gather", Arity::none},
    FlagSpec{"--window-size", Arity::one},
    FlagSpec{"--window-attn-skip-freq", Arity::one},
    FlagSpec{"--softmax-type", Arity::one},
    // Qwen3-Next (importer/megatron_model.cpp linear_attention_from_flags): Gated DeltaNet
    // layers (the flag's name before and after Megatron-LM 6630c7f3b3), their heads, and the
    // gates on the attention output and on the shared expert.
    FlagSpec{"--linear-attention-type", Arity::one},
    FlagSpec{"--experimental-attention-variant", Arity::one},
    FlagSpec{"--linear-attention-freq", Arity::one},
    FlagSpec{"--linear-conv-kernel-dim", Arity::one},
    FlagSpec{"--linear-key-head-dim", Arity::one},
    FlagSpec{"--linear-value-head-dim", Arity::one},
    FlagSpec{"--linear-num-key-heads", Arity::one},
    FlagSpec{"--linear-num-value-heads", Arity::one},
    FlagSpec{"--attention-output-gate", Arity::none},
    FlagSpec{"--moe-shared-expert-gate", Arity::none},
    FlagSpec{"--add-qkv-bias", Arity::none},
    FlagSpec{"--quick-geglu", Arity::none},
    // GPT-OSS: the activation's clamp (its eager kernels, layer_graph_moe.cpp) and ModelOpt's
    // YaRN constants (megatron/post_training/model_builder.py 298-310 at d98e8a64: factor 32,
    // mscale 1, mscale_all_dim 0, so RoPE runs unfused: layer_graph_attention.cpp).
    FlagSpec{"--activation-func-clamp-value", Arity::one},
    FlagSpec{"--enable-gpt-oss", Arity::none},
    FlagSpec{"--fp4-format", Arity::one},
    FlagSpec{"--fp4-recipe", Arity::one},
    FlagSpec{"--fp4-param-gather", Arity::none},
    FlagSpec{"--first-last-layers-bf16", Arity::none},
    FlagSpec{"--num-layers-at-start-in-bf16", Arity::one},
    FlagSpec{"--num-layers-at-end-in-bf16", Arity::one},
    FlagSpec{"--fp8-dot-product-attention", Arity::none},
    FlagSpec{"--no-rope-fusion", Arity::none},
    FlagSpec{"--rotary-percent", Arity::one},
    FlagSpec{"--moe-expert-capacity-factor", Arity::one},
    FlagSpec{"--moe-pad-expert-input-to-capacity", Arity::none},
    FlagSpec{"--moe-router-force-load-balancing", Arity::none},
    // The router's balancing, which prices a dropless run's routing (Importer::routing).
    FlagSpec{"--moe-router-load-balancing-type", Arity::many},
    FlagSpec{"--moe-aux-loss-coeff", Arity::many},
    FlagSpec{"--moe-router-enable-expert-bias", Arity::none},
    // parallelism
    FlagSpec{"--tensor-model-parallel-size", Arity::one},
    FlagSpec{"--pipeline-model-parallel-size", Arity::one},
    FlagSpec{"--num-virtual-stages-per-pipeline-rank", Arity::one},
    FlagSpec{"--num-layers-per-virtual-pipeline-stage", Arity::one},
    FlagSpec{"--pipeline-model-parallel-layout", Arity::one},
    FlagSpec{"--account-for-embedding-in-pipeline-split", Arity::none},
    FlagSpec{"--account-for-loss-in-pipeline-split", Arity::none},
    FlagSpec{"--expert-model-parallel-size", Arity::one},
    FlagSpec{"--expert-tensor-parallel-size", Arity::one},
    FlagSpec{"--context-parallel-size", Arity::one},
    FlagSpec{"--cp-comm-type", Arity::one},
    FlagSpec{"--sequence-parallel", Arity::none},
    FlagSpec{"--use-megatron-fsdp", Arity::none},
    FlagSpec{"--data-parallel-sharding-strategy", Arity::one},
    FlagSpec{"--fsdp-double-buffer", Arity::none},
    FlagSpec{"--num-distributed-optimizer-instances", Arity::one},
    FlagSpec{"--outer-dp-sharding-strategy", Arity::one},
    FlagSpec{"--megatron-fsdp-main-grads-dtype", Arity::one},
    FlagSpec{"--megatron-fsdp-grad-comm-dtype", Arity::one},
    // Accepted, their effect not priced: listed among the assumed settings (kUnpriced).
    FlagSpec{"--no-gradient-accumulation-fusion", Arity::none},
    FlagSpec{"--use-nccl-ub", Arity::none},
    FlagSpec{"--fsdp-manual-registration", Arity::none},
    // framework
    FlagSpec{"--moe-token-dispatcher-type", Arity::one},
    FlagSpec{"--moe-flex-dispatcher-backend", Arity::one},
    FlagSpec{"--moe-enable-deepep", Arity::none},
    FlagSpec{"--moe-deepep-num-sms", Arity::one},
    FlagSpec{"--moe-hybridep-num-sms", Arity::one},
    FlagSpec{"--overlap-moe-expert-parallel-comm", Arity::none},
    FlagSpec{"--delay-wgrad-compute", Arity::none},
    FlagSpec{"--moe-shared-expert-overlap", Arity::none},
    FlagSpec{"--tp-comm-overlap", Arity::none},
    FlagSpec{"--cuda-graph-impl", Arity::one},
    FlagSpec{"--cuda-graph-scope", Arity::many},
    FlagSpec{"--recompute-granularity", Arity::one},
    FlagSpec{"--recompute-modules", Arity::many},
    FlagSpec{"--recompute-activations", Arity::none},
    FlagSpec{"--cuda-graph-modules", Arity::many},
    FlagSpec{"--recompute-method", Arity::one},
    FlagSpec{"--recompute-num-layers", Arity::one},
    FlagSpec{"--use-distributed-optimizer", Arity::none},
    FlagSpec{"--overlap-grad-reduce", Arity::none},
    FlagSpec{"--overlap-param-gather", Arity::none},
    FlagSpec{"--overlap-param-gather-with-optimizer-step", Arity::none},
    FlagSpec{"--use-precision-aware-optimizer", Arity::none},
    FlagSpec{"--exp-avg-dtype", Arity::one},
    FlagSpec{"--exp-avg-sq-dtype", Arity::one},
    FlagSpec{"--main-grads-dtype", Arity::one},
    FlagSpec{"--main-params-dtype", Arity::one},
    FlagSpec{"--grad-reduce-in-bf16", Arity::none},
    FlagSpec{"--optimizer", Arity::one},
    FlagSpec{"--optimizer-cpu-offload", Arity::none},
    FlagSpec{"--offload-optimizer-states", Arity::none},
    FlagSpec{"--fine-grained-activation-offloading", Arity::none},
    FlagSpec{"--offload-modules", Arity::many},
    FlagSpec{"--moe-permute-fusion-into-hybridep", Arity::none},
    FlagSpec{"--external-cuda-graph", Arity::none},
    FlagSpec{"--enable-cuda-graph", Arity::none},
    FlagSpec{"--optimizer-offload-fraction", Arity::one},
    FlagSpec{"--ddp-bucket-size", Arity::one},
    FlagSpec{"--cpu-offloading-num-layers", Arity::one},
    FlagSpec{"--moe-router-fusion", Arity::none},
    // Megatron-Core dev's sync-free experts (docs/user-guide/features/paged_stash.md at
    // d98e8a64): HybridEP's buffers sized by a rank capacity, the saved tokens paged.
    FlagSpec{"--moe-expert-rank-capacity-factor", Arity::one},
    FlagSpec{"--moe-paged-stash", Arity::none},
    FlagSpec{"--use-transformer-engine-op-fuser", Arity::none},
    FlagSpec{"--moe-grouped-gemm", Arity::none},
    FlagSpec{"--moe-permute-fusion", Arity::none},
    FlagSpec{"--cross-entropy-loss-fusion", Arity::none},
    FlagSpec{"--cross-entropy-fusion-impl", Arity::one},
    FlagSpec{"--attention-backend", Arity::one},
    FlagSpec{"--transformer-impl", Arity::one},
    FlagSpec{"--disable-bias-linear", Arity::none},
    FlagSpec{"--manual-gc", Arity::none},
};

// Flags with no effect on step time or memory in this model: model numerics that cost
// nothing measurable (initialization, norms' epsilon, RoPE constants, router scaling),
// the learning-rate schedule, data, tokenizer, checkpoints, logging, evaluation.
constexpr std::array<std::string_view, 130> kIgnored{
    "--mock-data",
    "--distributed-timeout-minutes",
    "--use-mcore-models",
    "--use-flash-attn",
    "--train-samples",
    "--train-iters",
    "--exit-duration-in-mins",
    "--exit-interval",
    "--no-save-optim",
    "--no-save-rng",
    "--no-check-for-nan-in-loss-and-grad",
    "--manual-gc-interval",
    "--enable-experimental",
    "--data-cache-path",
    "--tokenizer-type",
    "--tokenizer-model",
    "--data-path",
    "--split",
    "--no-mmap-bin-files",
    "--no-create-attention-mask-in-dataloader",
    "--num-workers",
    "--max-position-embeddings",
    "--position-embedding-type",
    "--rotary-base",
    "--normalization",
    "--norm-epsilon",
    "--clip-grad",
    "--weight-decay",
    "--lr-decay-samples",
    "--lr-decay-iters",
    "--lr-warmup-samples",
    "--lr-warmup-iters",
    "--lr-warmup-fraction",
    "--lr-warmup-init",
    "--lr",
    "--min-lr",
    "--lr-decay-style",
    "--adam-beta1",
    "--adam-beta2",
    "--adam-eps",
    "--moe-z-loss-coeff",
    "--moe-router-pre-softmax",
    "--moe-router-padding-for-quantization",
    "--moe-router-topk-scaling-factor",
    "--moe-router-bias-update-rate",
    "--moe-router-dtype",
    "--moe-token-drop-policy",
    "--rotary-scaling-factor",
    "--mscale",
    "--mscale-all-dim",
    "--eval-iters",
    "--eval-interval",
    "--no-load-optim",
    "--no-load-rng",
    "--auto-detect-ckpt-format",
    "--ckpt-format",
    "--load",
    "--save",
    "--save-interval",
    "--dist-ckpt-strictness",
    "--init-method-std",
    "--log-timers-to-tensorboard",
    "--log-memory-to-tensorboard",
    "--log-validation-ppl-to-tensorboard",
    "--log-throughput",
    "--log-interval",
    "--logging-level",
    "--tensorboard-dir",
    "--wandb-project",
    "--wandb-exp-name",
    "--wandb-save-dir",
    "--te-rng-tracker",
    "--reuse-grad-buf-for-mxfp8-param-ag",
    "--seed",
    "--timing-log-level",
    "--log-params-norm",
    "--log-num-zeros-in-grad",
    "--tensorboard-log-interval",
    "--tensorboard-queue-size",
    "--vocab-file",
    "--merge-file",
    "--ckpt-fully-parallel-load",
    "--async-save",
    "--use-dist-ckpt",
    "--attention-softmax-in-fp32",
    "--no-masked-softmax-fusion",
    "--no-bias-dropout-fusion",
    "--moe-per-layer-logging",
    // GPT-OSS's linear half's +1 offset is elementwise work inside the activation kernel.
    "--glu-linear-offset",
    "--export-force-local-attention",
    // The bias-GeLU fusion fuses a bias add the model does not price (see --disable-bias-linear).
    "--no-bias-gelu-fusion",
    // The learned absolute position table (max_position_embeddings x hidden, a lookup and
    // an add) is as unpriced as the position type itself (--position-embedding-type).
    "--no-position-embedding",
    // The steady state's step runs at --global-batch-size; the ramp-up only shapes the
    // first samples (megatron/training/microbatches.py).
    "--rampup-batch-size",
    // Numerics and schedules without a kernel or tensor of their own: the norm's +1 weight
    // offset, the embeddings' own learning rate, per-token loss scaling, the delayed-scaling
    // recipe's history length and reduction (one amax a tensor is all-reduced either way).
    "--apply-layernorm-1p",
    "--decoupled-lr",
    "--decoupled-min-lr",
    "--calculate-per-token-loss",
    "--fp8-amax-history-len",
    "--fp8-amax-compute-algo",
    // Once per step torch.cuda.empty_cache() (level 1): the cached blocks are returned and
    // re-allocated, a host cost of milliseconds in a step of seconds.
    "--empty-unused-memory-level",
    // The tokenizer's pattern, and profiling of a few steps (--profile-step-start/end).
    "--tiktoken-pattern",
    "--profile",
    "--profile-step-start",
    "--profile-step-end",
    // Checkpoint loading and saving, the RoPE interpolation factor (a constant of the
    // rotary kernel), the MTP loss weight, parameter groups of weight decay.
    "--finetune",
    "--no-ckpt-fully-parallel-save",
    "--rotary-seq-len-interpolation-factor",
    "--mtp-loss-scaling-factor",
    "--no-weight-decay-cond-type",
    // The older name of --moe-router-padding-for-quantization (arguments.py keeps both).
    "--moe-router-padding-for-fp8",
    // CUDA graphs are captured in the first steps; the steady step replays them.
    "--cuda-graph-warmup-steps",
    // Separate communicators for pipeline sends and receives: moesim's pipeline transfers
    // are already independent flows in both directions.
    "--use-separate-send-recv-groups",
    // Timing of the offloads' copies on their own stream, which moesim does not price
    // (the offloaded optimizer's and activations' transfers are listed as assumed).
    "--overlap-cpu-optimizer-d2h-h2d",
    "--delay-offload-until-cuda-graph",
    // The batch-size ramp as a schedule of tokens (the steady step runs at the global batch),
    // the RoPE variant (rope or yarn: the same rotary kernel), and cuBLAS's switch for
    // reduced-precision reductions inside BF16 GEMMs (their numerics, not their rate).
    "--step-batch-size-schedule",
    "--rope-type",
    "--disable-bf16-reduced-precision-matmul",
    // FP16's loss scale: its start, floor, growth window and hysteresis shape its value,
    // not the per-step unscale pass moesim prices (training.precision fp16).
    "--loss-scale",
    "--initial-loss-scale",
    "--min-loss-scale",
    "--loss-scale-window",
    "--hysteresis",
    // Parameters created on the meta device and materialized sharded: initialization only.
    "--init-model-with-meta-device",
    // The paged stash's page size and its buffers' sizes on the GPU and the host: with forced
    // or even loads nothing overflows them, and moesim keeps what arrived (moe_paged_stash);
    // expert padding for CUDA-graphed inference; the GLU weights' interleave that the fused
    // grouped MLP reads (a layout, not work).
    "--moe-paged-stash-page-size",
    "--moe-paged-stash-buffer-size-factor-cuda",
    "--moe-paged-stash-buffer-size-factor-cpu",
    "--moe-pad-experts-for-cuda-graph-inference",
    "--moe-mlp-glu-interleave-size",
};

// Flags refused with a reason: what they select is not modeled.
constexpr std::string_view kDsv4 =
    "DeepSeek-V4's hybrid attention, indexer, hash-routed layers and hyper-connections are not "
    "read from Megatron flags: import the run through Megatron-Bridge's launcher, whose "
    "DeepSeek-V4 recipes moesim reads, or write the scenario with the model preset "
    "deepseek-v4-flash or deepseek-v4-pro";

const std::map<std::string_view, std::string_view>& refused() {
  static const std::map<std::string_view, std::string_view> m{
      {"--use-torch-fsdp2", "PyTorch FSDP2 is not modeled (Megatron-FSDP is: --use-megatron-fsdp)"},
      {"--decoder-first-pipeline-num-layers",
       "uneven first/last stages are modeled through --pipeline-model-parallel-layout; write the "
       "layout instead"},
      {"--decoder-last-pipeline-num-layers",
       "uneven first/last stages are modeled through --pipeline-model-parallel-layout; write the "
       "layout instead"},
      // DeepSeek-V4's shape (Megatron-LM dev's deepseek_v4 recipes, examples/moe_recipes at
      // d48bd6be): its hybrid attention, indexer, hash routing and hyper-connections.
      {"--o-groups", kDsv4},
      {"--o-lora-rank", kDsv4},
      {"--csa-window-size", kDsv4},
      {"--csa-compress-ratios", kDsv4},
      {"--csa-compress-rotary-base", kDsv4},
      {"--dsa-indexer-n-heads", kDsv4},
      {"--dsa-indexer-head-dim", kDsv4},
      {"--dsa-indexer-topk", kDsv4},
      {"--dsa-indexer-loss-coeff", kDsv4},
      {"--dsa-indexer-use-sparse-loss", kDsv4},
      {"--moe-n-hash-layers", kDsv4},
      {"--enable-hyper-connections", kDsv4},
      {"--num-residual-streams", kDsv4},
      {"--mhc-sinkhorn-iterations", kDsv4},
      {"--use-fused-mhc", kDsv4},
  };
  return m;
}

const FlagSpec* modeled_spec(std::string_view name) {
  for (const auto& f : kModeled)
    if (f.name == name) return &f;
  return nullptr;
}
bool is_ignored(std::string_view name) {
  return std::find(kIgnored.begin(), kIgnored.end(), name) != kIgnored.end();
}

}  // namespace

bool megatron_flag(std::string_view word) {
  return modeled_spec(word) != nullptr || is_ignored(word);
}

// ---- parsed flags -----------------------------------------------------------------------

Flags::Flags(const std::vector<std::string>& words, const std::string& source,
             std::vector<std::string>& ignored)
    : source_(source) {
  std::vector<std::string> unknown;
  for (std::size_t i = 0; i < words.size();) {
    std::string name = words[i];
    if (name.rfind("--", 0) != 0 && name.find('=') != std::string::npos)
      throw InputError(
          source, name,
          "a Megatron-Bridge recipe override (key=value): it changes the recipe's own "
          "configuration, "
          "which the command line does not show, so it cannot be imported alone; import the "
          "Megatron-LM flags (pretrain_gpt.py --name value) or write the scenario");
    if (name.rfind("--", 0) != 0)
      throw InputError(source, name, "expected a flag (--name) here; values follow their flag");
    std::vector<std::string> values;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      values.push_back(name.substr(eq + 1));
      name.resize(eq);
    }
    ++i;
    while (i < words.size() && words[i].rfind("--", 0) != 0) values.push_back(words[i++]);
    // A value in literal quotes ("'([0]*1+[1]*60)'" in ModelZoo's Kimi-K2 config and
    // slime's scripts) is meant for a second shell evaluation by those launchers; read
    // without them.
    for (auto& v : values)
      if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front())
        v = v.substr(1, v.size() - 2);
    for (const auto& v : values)
      if (v.find('$') != std::string::npos)
        throw InputError(source, name,
                         fmt::format("'{}' is a shell variable: pass the expanded command "
                                     "(e.g. the line the launcher prints)",
                                     v));
    if (const auto r = refused().find(name); r != refused().end())
      throw InputError(source, name, std::string(r->second));
    if (is_ignored(name)) {
      ignored.push_back(name);
      continue;
    }
    const FlagSpec* spec = modeled_spec(name);
    if (!spec) {  // every unknown flag of the command is reported at once, below
      if (std::find(unknown.begin(), unknown.end(), name) == unknown.end()) unknown.push_back(name);
      continue;
    }
    if ((spec->arity == Arity::none && !values.empty()) ||
        (spec->arity == Arity::one && values.size() != 1))
      throw InputError(
          source, name,
          fmt::format("takes {} value(s); given: {}", spec->arity == Arity::none ? "no" : "one",
                      fmt::join(values, " ")));
    values_[name] = values;  // argparse: the last occurrence wins
  }
  if (!unknown.empty())
    throw InputError(source, unknown.front(),
                     fmt::format("unknown Megatron flag{}: neither modeled nor known to be "
                                 "irrelevant to performance{}",
                                 unknown.size() > 1 ? "s" : "",
                                 unknown.size() > 1 ? fmt::format(" (all {}: {})", unknown.size(),
                                                                  fmt::join(unknown, ", "))
                                                    : std::string()));
}

std::optional<std::string> Flags::str(std::string_view f) const {
  const auto it = values_.find(std::string(f));
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.front();
}
const std::vector<std::string>* Flags::list(std::string_view f) const {
  const auto it = values_.find(std::string(f));
  return it == values_.end() ? nullptr : &it->second;
}
// Sizes and counts: at least 1, or at least 0 for the counts that may be none.
std::optional<std::int64_t> Flags::integer(std::string_view f) const {
  const auto s = str(f);
  if (!s) return std::nullopt;
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || p != s->data() + s->size())
    fail(f, fmt::format("expected an integer, not '{}'", *s));
  static constexpr std::array<std::string_view, 7> kMayBeZero{
      "--num-experts",
      "--mtp-num-layers",
      "--moe-router-num-groups",
      "--moe-router-group-topk",
      "--moe-shared-expert-intermediate-size",
      "--num-layers-at-start-in-bf16",
      "--num-layers-at-end-in-bf16"};
  const bool zero_ok = std::find(kMayBeZero.begin(), kMayBeZero.end(), f) != kMayBeZero.end();
  if (v < (zero_ok ? 0 : 1))
    fail(f, fmt::format("must be at least {}, not {}", zero_ok ? 0 : 1, v));
  return v;
}
std::optional<double> Flags::number(std::string_view f) const {
  const auto s = str(f);
  if (!s) return std::nullopt;
  try {
    std::size_t used = 0;
    const double v = std::stod(*s, &used);
    if (used == s->size()) return v;
  } catch (const std::exception&) {
  }
  fail(f, fmt::format("expected a number, not '{}'", *s));
}
std::string Flags::choice(std::string_view f, std::string_view def,
                          std::initializer_list<std::string_view> known) const {
  const std::string v = str(f).value_or(std::string(def));
  if (std::find(known.begin(), known.end(), v) == known.end())
    fail(f, fmt::format("unknown value '{}'; Megatron's choices: {}", v, fmt::join(known, ", ")));
  return v;
}

}  // namespace moesim::importer::detail
