#include "config/inert_settings.hpp"
#include "config/releases.hpp"
#include "importer/import.hpp"
#include "importer/import_bridge.hpp"
#include "importer/launch_wrapper.hpp"
#include "importer/pipeline_split.hpp"
#include "importer/shell_eval.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>

#include "config/load.hpp"

namespace moesim::importer {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;
namespace {

// ---- the command line as words ------------------------------------------------------

struct Words {
  std::vector<std::string> words;          // the Megatron flags and their values
  std::map<std::string, std::string> env;  // NAME=VALUE before the command or exported
  bool numa_bound = false;                 // bindpcie or numactl in the launch command
  std::optional<std::int64_t> gpus;  // the world size the command states (torchrun, a wrapper)
  std::optional<std::int64_t> gpus_per_nvlink_domain;        // placement a wrapper asks for
  std::vector<std::pair<std::string, std::string>> derived;  // what a wrapper decided
  std::string label;  // the command as the script writes it, shortened
  std::string entry;  // the Python program (pretrain_gpt.py); empty when none is named
  std::optional<InputError>
      failure;  // why a wrapper could not build this run (raised if it is picked)
  std::vector<std::string> notes;  // what of its wrapper was not followed
};

// Megatron-LM's training programs other than GPT's (pretrain_gpt.py): what they train is
// not a decoder-only GPT model, which is what moesim models.
const std::map<std::string_view, std::string_view>& other_entries() {
  static const std::map<std::string_view, std::string_view> m{
      {"pretrain_bert.py", "BERT, an encoder with a masked-LM head"},
      {"pretrain_t5.py", "T5, an encoder-decoder"},
      {"pretrain_mamba.py", "a hybrid Mamba model (state-space layers)"},
      {"pretrain_hybrid.py", "a hybrid Mamba model (state-space layers)"},
      {"pretrain_vlm.py", "a vision-language model (an image encoder before the language model)"},
      {"pretrain_retro.py", "RETRO (retrieval with a chunked cross-attention encoder)"},
      {"pretrain_ict.py", "an inverse-cloze retriever (two BERT encoders)"},
      {"pretrain_vision_classify.py", "a vision transformer"},
      {"pretrain_vision_dino.py", "a vision transformer"},
      {"pretrain_vision_inpaint.py", "a vision transformer"},
      {"examples/multimodal/train.py",
       "a vision-language model (an image encoder before the language model)"},
      {"examples/mimo/train.py",
       "a multimodal MIMO model (modality encoders around the language model)"},
      {"examples/mimo/pretrain_mimo.py",
       "a multimodal MIMO model (modality encoders around the language model)"},
  };
  return m;
}

// The entry's registered kind, by its path's tail.
std::optional<std::string_view> other_entry(const std::string& entry) {
  for (const auto& [tail, what] : other_entries())
    if (entry == tail || (entry.size() > tail.size() && entry.ends_with(tail) &&
                          entry[entry.size() - tail.size() - 1] == '/'))
      return what;
  return std::nullopt;
}

bool launcher_binds_numa(const std::vector<std::string>& words, std::size_t end) {
  for (std::size_t i = 0; i < end && i < words.size(); ++i)
    if (words[i].find("bindpcie") != std::string::npos || words[i] == "numactl") return true;
  return false;
}

// torchrun's world size: --nproc_per_node (or --nproc-per-node) times --nnodes, where both
// are integers (an elastic range "1:4" states none).
std::optional<std::int64_t> torchrun_gpus(const std::vector<std::string>& words, std::size_t end) {
  std::optional<std::int64_t> per_node, nodes;
  for (std::size_t i = 0; i < end && i < words.size(); ++i) {
    std::string name = words[i], value;
    if (const auto eq = name.find('='); eq != std::string::npos)
      value = name.substr(eq + 1), name.resize(eq);
    else if (i + 1 < end)
      value = words[i + 1];
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || p != value.data() + value.size() || v <= 0) continue;
    if (name == "--nproc_per_node" || name == "--nproc-per-node") per_node = v;
    if (name == "--nnodes") nodes = v;
  }
  if (per_node && nodes) return *per_node * *nodes;
  return std::nullopt;
}

std::string command_label(const ShellCommand& c) {
  std::string s;
  for (const auto& [k, v] : c.prefix_env) s += k + "=" + v + " ";
  for (const auto& w : c.words) s += w + " ";
  if (!s.empty()) s.pop_back();
  return s.size() > 110 ? s.substr(0, 107) + "..." : s;
}

bool megatron_flag(std::string_view word);  // modeled or ignored (the flag table below)

// Whether a command is a Megatron run: a registered program (pretrain_gpt.py, the others
// named above), or a Megatron flag or a Megatron-Bridge override among its words;
// `python tools/plot.py --log x` is not.
bool is_megatron_run(const std::vector<std::string>& words, std::size_t start,
                     const std::string& entry) {
  if (entry.ends_with("pretrain_gpt.py") || other_entry(entry) || is_bridge_launcher(entry))
    return true;
  for (std::size_t i = start; i < words.size(); ++i) {
    const auto eq = words[i].find('=');
    if (megatron_flag(words[i].substr(0, eq))) return true;
    // A Megatron-Bridge recipe override (train.micro_batch_size=2): refused by the flags' reader.
    if (!words[i].starts_with("-") && eq != std::string::npos && words[i].find('.') < eq)
      return true;
  }
  return false;
}

// The runs among evaluated commands (script_runs below), appended to `runs`.
void collect_runs(const std::vector<ShellCommand>& commands, const ShellOptions& so,
                  const MegatronImportOptions& opts, std::vector<std::string>& notes,
                  std::vector<Words>& runs, int depth) {
  for (const auto& c : commands) {
    if (c.words.empty() || c.words[0] == "echo" || c.words[0] == "printf")
      continue;  // prints, runs nothing
    std::size_t at = 0;
    if (const LaunchWrapper* wrapper = find_launch_wrapper(c.words, at)) {
      WrapperCall call;
      call.args.assign(c.words.begin() + static_cast<std::ptrdiff_t>(at) + 1, c.words.end());
      call.environment = c.environment;
      call.script_path = so.script_path;
      call.wrapper_word = c.words[at];
      call.root = opts.wrapper_root;
      Words w;
      w.label = command_label(c);
      WrappedCommand wc;
      try {
        wc = expand_launch_wrapper(*wrapper, call);
      } catch (const InputError& e) {  // another run of the script may still be the one asked for
        w.failure = e;
        runs.push_back(std::move(w));
        continue;
      }
      w.words = std::move(wc.flags);
      w.env = std::move(wc.environment);
      w.numa_bound = launcher_binds_numa(wc.launcher, wc.launcher.size());
      w.gpus = wc.gpus;
      w.gpus_per_nvlink_domain = wc.gpus_per_nvlink_domain;
      w.derived = std::move(wc.derived);
      w.notes = std::move(wc.notes);
      runs.push_back(std::move(w));
      continue;
    }
    // `sh -c "STRING"` / `bash -c "STRING"` (srun ... sh -c "${run_cmd}"): STRING is
    // evaluated as a script of its own, in the command's environment.
    bool nested = false;
    for (std::size_t i = 0; depth < 4 && i + 2 < c.words.size(); ++i)
      if ((c.words[i] == "sh" || c.words[i] == "bash") && c.words[i + 1] == "-c") {
        ShellOptions inner = so;
        inner.environment = c.environment;
        const ShellResult r = evaluate_shell(c.words[i + 2], inner);
        notes.insert(notes.end(), r.notes.begin(), r.notes.end());
        collect_runs(r.commands, so, opts, notes, runs, depth + 1);
        nested = true;
        break;
      }
    if (nested) continue;
    // The flags follow the program (a *.py path, or a module after -m that is not
    // torch.distributed.run, torchrun's own); a command of flags alone (a flags file)
    // starts with one.
    std::optional<std::size_t> start;
    std::string entry;
    for (std::size_t i = 0; i < c.words.size(); ++i) {
      if (c.words[i].size() > 3 && c.words[i].ends_with(".py")) {
        start = i + 1, entry = c.words[i];
        break;
      }
      if (c.words[i] == "-m" && i + 1 < c.words.size() &&
          !c.words[i + 1].starts_with("torch.distributed")) {
        start = i + 2, entry = c.words[i + 1];
        std::replace(entry.begin(), entry.end(), '.', '/');
        entry += ".py";
        break;
      }
    }
    if (!start && c.words[0].starts_with("--")) start = 0;
    if (!start || !is_megatron_run(c.words, *start, entry)) continue;
    Words w;
    w.label = command_label(c);
    w.entry = entry;
    w.numa_bound = launcher_binds_numa(c.words, *start);
    w.gpus = torchrun_gpus(c.words, *start);
    w.words.assign(c.words.begin() + static_cast<std::ptrdiff_t>(*start), c.words.end());
    w.env = c.environment;
    runs.push_back(std::move(w));
  }
}

// The Megatron runs a launch script starts, as bash would build them
// (importer/shell_eval.hpp): each command with a `*.py` word (a launcher's own flags come
// before it) or a Python module after -m, or whose words start with `--`, with the
// exported variables and its prefix assignments as environment; each call of a
// registered wrapper (importer/launch_wrapper.hpp), expanded into the command it would
// submit; and the runs of a `sh -c STRING` command's STRING.
std::vector<Words> script_runs(const std::string& text, const MegatronImportOptions& opts,
                               std::vector<std::string>& notes, bool& exited) {
  ShellOptions so;
  so.script_path = opts.source.starts_with("<") ? std::string() : opts.source;
  so.environment = opts.environment;
  so.source_roots = opts.source_roots;
  const ShellResult r = evaluate_shell(text, so);
  notes = r.notes;
  exited = r.exited;
  std::vector<Words> runs;
  collect_runs(r.commands, so, opts, notes, runs, 0);
  return runs;
}

// The run --run picks (1-based); the only one when the script starts one.
Words pick_run(std::vector<Words> runs, const MegatronImportOptions& opts, bool exited) {
  if (runs.empty())
    throw InputError(
        opts.source, "",
        exited ? "the script exits before it launches anything (it checks for variables it expects "
                 "from the environment: give them with --env NAME=VALUE)"
               : "no Megatron command found (a *.py program and its flags, or --name value ...)");
  if (opts.run) {
    if (*opts.run < 1 || *opts.run > static_cast<std::int64_t>(runs.size()))
      throw InputError(opts.source, "--run",
                       fmt::format("run {} of a script that starts {}", *opts.run, runs.size()));
    auto& picked = runs[static_cast<std::size_t>(*opts.run - 1)];
    if (picked.failure) throw *picked.failure;
    return std::move(picked);
  }
  if (runs.size() == 1) {
    if (runs.front().failure) throw *runs.front().failure;
    return std::move(runs.front());
  }
  std::string list;
  for (std::size_t i = 0; i < runs.size(); ++i)
    list += fmt::format("\n  {}: {}", i + 1, runs[i].label);
  throw InputError(
      opts.source, "--run",
      fmt::format("the script starts {} runs; choose one with --run N:{}", runs.size(), list));
}

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
    FlagSpec{"--add-qkv-bias", Arity::none},
    FlagSpec{"--quick-geglu", Arity::none},
    FlagSpec{"--fp4-format", Arity::one},
    FlagSpec{"--fp4-recipe", Arity::one},
    FlagSpec{"--fp4-param-gather", Arity::none},
    FlagSpec{"--first-last-layers-bf16", Arity::none},
    FlagSpec{"--fp8-dot-product-attention", Arity::none},
    FlagSpec{"--moe-expert-capacity-factor", Arity::one},
    FlagSpec{"--moe-router-force-load-balancing", Arity::none},
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
    FlagSpec{"--sequence-parallel", Arity::none},
    FlagSpec{"--use-megatron-fsdp", Arity::none},
    FlagSpec{"--data-parallel-sharding-strategy", Arity::one},
    FlagSpec{"--fsdp-double-buffer", Arity::none},
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
    FlagSpec{"--moe-router-fusion", Arity::none},
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
constexpr std::array<std::string_view, 132> kIgnored{
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
    "--rotary-percent",
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
    "--moe-router-load-balancing-type",
    "--moe-aux-loss-coeff",
    "--moe-z-loss-coeff",
    "--moe-router-pre-softmax",
    "--moe-router-padding-for-quantization",
    "--moe-router-topk-scaling-factor",
    "--moe-router-enable-expert-bias",
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
    "--no-rope-fusion",
    // GPT-OSS's activation details: the linear half's +1 offset and the clamp at 7 are
    // elementwise work inside the activation kernel (no kernel or tensor of their own).
    "--glu-linear-offset",
    "--activation-func-clamp-value",
    "--export-force-local-attention",
    // ModelOpt's GPT-OSS switch (megatron/post_training/model_builder.py): YaRN RoPE
    // constants; the rotary kernel is the same.
    "--enable-gpt-oss",
    // The bias-GeLU fusion fuses a bias add the model does not price (see --disable-bias-linear).
    "--no-bias-gelu-fusion",
    // Counts of BF16 layers: they act only under --first-last-layers-bf16, which is refused.
    "--num-layers-at-start-in-bf16",
    "--num-layers-at-end-in-bf16",
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
};

// Flags refused with a reason: what they select is not modeled.
const std::map<std::string_view, std::string_view>& refused() {
  static const std::map<std::string_view, std::string_view> m{
      {"--use-torch-fsdp2", "PyTorch FSDP2 is not modeled (Megatron-FSDP is: --use-megatron-fsdp)"},
      {"--decoder-first-pipeline-num-layers",
       "uneven first/last stages are modeled through --pipeline-model-parallel-layout; write the "
       "layout instead"},
      {"--decoder-last-pipeline-num-layers",
       "uneven first/last stages are modeled through --pipeline-model-parallel-layout; write the "
       "layout instead"},
      {"--moe-pad-expert-input-to-capacity", "padding expert inputs to capacity is not modeled"},
      // Qwen3-Next (ModelZoo best_practice/qwen3/run_next_80b.sh): Gated DeltaNet layers
      // between the attention layers, and gates on the attention output and shared expert.
      {"--linear-attention-type",
       "linear attention (Gated DeltaNet, Qwen3-Next) is not modeled: moesim's layers "
       "are softmax attention (MHA, GQA, MLA, windowed) with dense or MoE MLPs"},
      {"--linear-attention-freq", "linear attention (Gated DeltaNet, Qwen3-Next) is not modeled"},
      {"--attention-output-gate",
       "the gated attention output (Qwen3-Next: a gate projection and product per "
       "layer) is not modeled"},
      {"--moe-shared-expert-gate",
       "the shared expert's sigmoid gate (Qwen2-MoE, Qwen3-Next) is not modeled"},
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
bool megatron_flag(std::string_view word) {
  return modeled_spec(word) != nullptr || is_ignored(word);
}

// ---- parsed flags -----------------------------------------------------------------------

class Flags {
 public:
  Flags(const std::vector<std::string>& words, const std::string& source,
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
        if (std::find(unknown.begin(), unknown.end(), name) == unknown.end())
          unknown.push_back(name);
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
  bool has(std::string_view f) const { return values_.count(std::string(f)) != 0; }
  std::optional<std::string> str(std::string_view f) const {
    const auto it = values_.find(std::string(f));
    if (it == values_.end() || it->second.empty()) return std::nullopt;
    return it->second.front();
  }
  const std::vector<std::string>* list(std::string_view f) const {
    const auto it = values_.find(std::string(f));
    return it == values_.end() ? nullptr : &it->second;
  }
  // Sizes and counts: at least 1, or at least 0 for the counts that may be none.
  std::optional<std::int64_t> integer(std::string_view f) const {
    const auto s = str(f);
    if (!s) return std::nullopt;
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    if (ec != std::errc() || p != s->data() + s->size())
      fail(f, fmt::format("expected an integer, not '{}'", *s));
    static constexpr std::array<std::string_view, 5> kMayBeZero{
        "--num-experts", "--mtp-num-layers", "--moe-router-num-groups", "--moe-router-group-topk",
        "--moe-shared-expert-intermediate-size"};
    const bool zero_ok = std::find(kMayBeZero.begin(), kMayBeZero.end(), f) != kMayBeZero.end();
    if (v < (zero_ok ? 0 : 1))
      fail(f, fmt::format("must be at least {}, not {}", zero_ok ? 0 : 1, v));
    return v;
  }
  std::int64_t positive(std::string_view f) const { return integer(f).value(); }
  std::int64_t integer_or(std::string_view f, std::int64_t def) const {
    return integer(f).value_or(def);
  }
  std::optional<double> number(std::string_view f) const {
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
  std::string choice(std::string_view f, std::string_view def,
                     std::initializer_list<std::string_view> known) const {
    const std::string v = str(f).value_or(std::string(def));
    if (std::find(known.begin(), known.end(), v) == known.end())
      fail(f, fmt::format("unknown value '{}'; Megatron's choices: {}", v, fmt::join(known, ", ")));
    return v;
  }
  [[noreturn]] void fail(std::string_view f, const std::string& why) const {
    throw InputError(source_, std::string(f), why);
  }

 private:
  std::string source_;
  std::map<std::string, std::vector<std::string>> values_;
};

// Megatron's per-layer lists (--moe-layer-freq, --window-attn-skip-freq): a Python list
// expression of 0/1 lists, sums and integer repeats, parenthesized at will:
// "([0]*3+[1]*58)", "([1]*3+[0]*1)*3" (arguments.py's help). Lists longer than the
// model are refused while parsing, before they are built.
class LayerFreqParser {
 public:
  LayerFreqParser(std::string expr, std::int64_t layers, const Flags& f, std::string flag)
      : e_(std::move(expr)), max_(layers), f_(f), flag_(std::move(flag)) {}
  std::vector<int> parse() {
    std::vector<int> v = sum();
    if (i_ != e_.size()) bad();
    return v;
  }

 private:
  [[noreturn]] void bad() const {
    f_.fail(flag_,
            fmt::format("'{}': expected an integer or a list expression like ([0]*3+[1]*58)", e_));
  }
  void check(std::size_t n) const {
    if (static_cast<std::int64_t>(n) > max_)
      f_.fail(flag_, fmt::format("'{}' lists more than the {} layers of --num-layers", e_, max_));
  }
  bool eat(char c) {
    if (i_ < e_.size() && e_[i_] == c) return ++i_, true;
    return false;
  }
  std::vector<int> sum() {
    std::vector<int> v = product();
    while (eat('+')) {
      const auto w = product();
      check(v.size() + w.size());
      v.insert(v.end(), w.begin(), w.end());
    }
    return v;
  }
  std::vector<int> product() {
    std::vector<int> v = atom();
    while (eat('*')) {
      const std::size_t from = i_;
      while (i_ < e_.size() && std::isdigit(static_cast<unsigned char>(e_[i_]))) ++i_;
      std::int64_t n = 0;
      const auto [p, ec] = std::from_chars(e_.data() + from, e_.data() + i_, n);
      if (from == i_ || ec != std::errc()) bad();
      if (v.empty() || n == 0) {
        v.clear();
        continue;
      }
      if (n > max_) check(static_cast<std::size_t>(max_) + 1);
      check(v.size() * static_cast<std::size_t>(n));
      std::vector<int> r;
      for (std::int64_t k = 0; k < n; ++k) r.insert(r.end(), v.begin(), v.end());
      v = std::move(r);
    }
    return v;
  }
  std::vector<int> atom() {
    if (eat('(')) {
      std::vector<int> v = sum();
      if (!eat(')')) bad();
      return v;
    }
    if (!eat('[')) bad();
    std::vector<int> v;
    if (eat(']')) return v;
    do {
      if (eat('0'))
        v.push_back(0);
      else if (eat('1'))
        v.push_back(1);
      else
        bad();
      check(v.size());
    } while (eat(','));
    if (!eat(']')) bad();
    return v;
  }
  std::string e_;
  std::int64_t max_;
  const Flags& f_;
  std::string flag_;
  std::size_t i_ = 0;
};

// A per-layer 0/1 list flag: absent, every layer 1; an integer N, `every(i, N)` for the
// 0-based layer i; else a list expression of exactly --num-layers entries.
template <class Every>
std::vector<int> layer_pattern(const Flags& f, const std::string& flag, std::int64_t layers,
                               Every every) {
  const auto s = f.str(flag);
  if (!s) return std::vector<int>(static_cast<std::size_t>(layers), 1);
  std::string e;
  for (char c : *s)
    if (!std::isspace(static_cast<unsigned char>(c))) e += c;
  std::vector<int> out;
  if (!e.empty() && std::isdigit(static_cast<unsigned char>(e[0]))) {
    const auto n = f.positive(flag);
    for (std::int64_t i = 0; i < layers; ++i) out.push_back(every(i, n) ? 1 : 0);
    return out;
  }
  out = LayerFreqParser(e, layers, f, flag).parse();
  if (static_cast<std::int64_t>(out.size()) != layers)
    f.fail(flag, fmt::format("lists {} layers; --num-layers is {}", out.size(), layers));
  return out;
}
// --moe-layer-freq N: every N-th layer is MoE, from layer 0.
std::vector<int> moe_layer_pattern(const Flags& f, std::int64_t layers) {
  return layer_pattern(f, "--moe-layer-freq", layers,
                       [](std::int64_t i, std::int64_t n) { return i % n == 0; });
}

// Windowed attention (Megatron-Core transformer/utils.py is_layer_window_attention @
// d98e8a64): --window-size "left,right" windows every layer, or with
// --window-attn-skip-freq N all but every N-th (1-based layer % N == 0 is full), or the
// layers a 0/1 list marks 1. TE's left window counts the tokens before the query, so a
// left window of L is Hugging Face's sliding_window L + 1 (GPT-OSS: 127,0 and 128).
struct FlagWindow {
  std::int64_t tokens = 0;   // Hugging Face's sliding_window
  std::vector<bool> layers;  // per decoder layer: windowed
};
std::optional<FlagWindow> window_from_flags(const Flags& f, std::int64_t layers) {
  const auto w = f.str("--window-size");
  if (!w) {
    if (f.has("--window-attn-skip-freq")) f.fail("--window-attn-skip-freq", "needs --window-size");
    return std::nullopt;
  }
  std::string t;
  for (char c : *w)
    if (c != '(' && c != ')' && !std::isspace(static_cast<unsigned char>(c))) t += c;
  const auto comma = t.find(',');
  std::int64_t left = -1, right = -1;
  const auto num = [&](std::string_view v, std::int64_t& out) {
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return ec == std::errc() && p == v.data() + v.size();
  };
  if (comma == std::string::npos || !num(std::string_view(t).substr(0, comma), left) ||
      !num(std::string_view(t).substr(comma + 1), right) || left < 0)
    f.fail("--window-size",
           fmt::format("'{}': expected left,right token counts (GPT-OSS: 127,0)", *w));
  if (right != 0)
    f.fail("--window-size",
           "a right window (attention to later tokens) is not modeled: causal only");
  FlagWindow out{left + 1, {}};
  for (int v : layer_pattern(f, "--window-attn-skip-freq", layers,
                             [](std::int64_t i, std::int64_t n) { return (i + 1) % n != 0; }))
    out.layers.push_back(v == 1);
  return out;
}

// Learned attention sinks (--softmax-type learnable) are GPT-OSS's: its model type carries
// them with the router and expert biases.
bool learned_sinks(const Flags& f) {
  return f.choice("--softmax-type", "vanilla", {"vanilla", "off-by-one", "learnable"}) ==
         "learnable";
}

// The model as Hugging Face config.json fields from the shape flags (Megatron's
// defaults where a flag is absent), without the vocabulary.
Json model_from_flags(const Flags& f) {
  const auto layers = f.integer("--num-layers");
  const auto hidden = f.integer("--hidden-size");
  const auto heads = f.integer("--num-attention-heads");
  if (!layers || !hidden || !heads)
    f.fail(!layers   ? "--num-layers"
           : !hidden ? "--hidden-size"
                     : "--num-attention-heads",
           "the model's shape needs --num-layers, --hidden-size and --num-attention-heads (or "
           "--model PRESET)");
  const bool mla = f.has("--multi-latent-attention");
  const std::int64_t experts = f.integer_or("--num-experts", 0);
  const bool gpt_oss = learned_sinks(f);
  if (gpt_oss && experts == 0)
    f.fail(
        "--softmax-type",
        "learned attention sinks are modeled as GPT-OSS's, a model with experts (--num-experts)");
  if (gpt_oss && mla)
    f.fail("--multi-latent-attention", "GPT-OSS's attention with MLA is not modeled");
  Json m;
  m["model_type"] = gpt_oss ? "gpt_oss" : mla ? "deepseek_v3" : experts > 0 ? "qwen2_moe" : "llama";
  m["hidden_size"] = *hidden;
  m["num_hidden_layers"] = *layers;
  m["num_attention_heads"] = *heads;
  // arguments.py: 4 h, or with SwiGLU int(4 h x 2/3 / 64) x 64.
  const std::int64_t ffn = f.integer_or(
      "--ffn-hidden-size",
      f.has("--swiglu")
          ? static_cast<std::int64_t>(4.0 * static_cast<double>(*hidden) * 2 / 3 / 64) * 64
          : 4 * *hidden);
  m["intermediate_size"] = ffn;
  m["tie_word_embeddings"] = !f.has("--untie-embeddings-and-output-weights");
  // --quick-geglu: GPT-OSS's gated activation (x sigmoid(1.702 x), times the linear half):
  // gated like SwiGLU, two matrices in, one out.
  m["gated_linear_unit"] = f.has("--swiglu") || f.has("--quick-geglu");
  // --add-qkv-bias: the q, k, v projections' biases (moesim's attention_bias also counts the
  // output projection's, h parameters a layer). GPT-OSS has them wherever Megatron's default
  // --add-bias-linear stands (arguments.py turns add_qkv_bias on with it); other models are
  // taken without biases (Importer::framework notes it).
  if (f.has("--add-qkv-bias") || (gpt_oss && !f.has("--disable-bias-linear")))
    m["attention_bias"] = true;
  if (mla) {
    // MLA's q/kv latent norms are part of the attention (--qk-layernorm there names them).
    if (const auto q = f.integer("--q-lora-rank"))
      m["q_lora_rank"] = *q;
    else
      m["q_lora_rank"] = nullptr;
    m["kv_lora_rank"] = f.integer_or("--kv-lora-rank", 32);
    m["qk_nope_head_dim"] = f.integer_or("--qk-head-dim", 128);
    m["qk_rope_head_dim"] = f.integer_or("--qk-pos-emb-head-dim", 64);
    m["v_head_dim"] = f.integer_or("--v-head-dim", 128);
  } else {
    m["qk_layernorm"] = f.has("--qk-layernorm");
    m["num_key_value_heads"] =
        f.has("--group-query-attention") ? f.integer_or("--num-query-groups", 1) : *heads;
    if (const auto kv = f.integer("--kv-channels")) m["head_dim"] = *kv;
  }
  if (const auto w = window_from_flags(f, *layers)) {
    m["sliding_window"] = w->tokens;
    Json types = Json::array();
    for (bool v : w->layers) types.push_back(v ? "sliding_attention" : "full_attention");
    m["layer_types"] = types;
  }
  if (experts > 0) {
    m["n_routed_experts"] = experts;
    m["num_experts_per_tok"] = f.integer_or("--moe-router-topk", 2);
    // GPT-OSS's experts take intermediate_size (Mixtral's convention); it has no dense MLP.
    m[gpt_oss ? "intermediate_size" : "moe_intermediate_size"] =
        f.integer_or("--moe-ffn-hidden-size", ffn);
    if (const auto s = f.integer("--moe-shared-expert-intermediate-size"))
      m["shared_expert_intermediate_size"] = *s;
    m["scoring_func"] = f.choice("--moe-router-score-function", "softmax", {"softmax", "sigmoid"});
    if (const auto g = f.integer("--moe-router-num-groups")) m["n_group"] = *g;
    if (const auto g = f.integer("--moe-router-group-topk")) m["topk_group"] = *g;
    m["moe_layer_freq"] = moe_layer_pattern(f, *layers);
  }
  return m;
}

// The resolved shape of a model JSON (every field the simulation reads but the name,
// source, type and vocabulary), to find a preset with the same shape.
bool same_shape(const workload::ModelConfig& a, const workload::ModelConfig& b) {
  return a.hidden_size == b.hidden_size && a.num_layers == b.num_layers &&
         a.num_heads == b.num_heads && a.num_kv_heads == b.num_kv_heads &&
         a.head_dim == b.head_dim && a.attention == b.attention &&
         a.mla.q_lora_rank == b.mla.q_lora_rank && a.mla.kv_lora_rank == b.mla.kv_lora_rank &&
         a.mla.qk_nope_head_dim == b.mla.qk_nope_head_dim &&
         a.mla.qk_rope_head_dim == b.mla.qk_rope_head_dim && a.mla.v_head_dim == b.mla.v_head_dim &&
         a.qk_layernorm == b.qk_layernorm && a.gated_linear_unit == b.gated_linear_unit &&
         a.num_experts == b.num_experts &&
         (a.num_experts == 0 ||
          (a.moe_ffn_hidden_size == b.moe_ffn_hidden_size && a.topk == b.topk &&
           a.shared_expert_ffn_hidden_size == b.shared_expert_ffn_hidden_size &&
           a.moe_layer == b.moe_layer && a.router_scoring == b.router_scoring &&
           a.router_groups == b.router_groups && a.router_topk_groups == b.router_topk_groups)) &&
         (a.num_dense_layers() == 0 || a.ffn_hidden_size == b.ffn_hidden_size) &&
         a.tie_word_embeddings == b.tie_word_embeddings && a.sliding_window == b.sliding_window &&
         (a.sliding_window == 0 || a.sliding_layer == b.sliding_layer) &&
         a.attention_sinks == b.attention_sinks && a.attention_bias == b.attention_bias &&
         a.expert_bias == b.expert_bias && a.router_bias == b.router_bias;
}

workload::ModelConfig resolve_model(const Json& j, const std::string& label) {
  return read_model(Node(j, "", std::make_shared<const std::string>(label)));
}

// ---- the importer -------------------------------------------------------------------------

class Importer {
 public:
  Importer(const Words& w, const MegatronImportOptions& opts, MegatronImport& out)
      : w_(w), opts_(opts), out_(out), f_(w.words, opts.source, out.ignored) {}

  void run() {
    Json& sc = out_.scenario;
    sc["name"] = "imported-megatron";
    sc["description"] = fmt::format("moesim import megatron from {}", opts_.source);
    sc["system"] = opts_.system;
    sc["gpus"] = opts_.gpus;
    if (opts_.gpus_per_nvlink_domain)
      sc["placement"] = {{"gpus_per_nvlink_domain", *opts_.gpus_per_nvlink_domain}};
    model(sc);
    training(sc);
    parallelism(sc);
    framework(sc);
    stack(sc);
    unpriced();
    sc["routing"] = {{"balance", "forced"}};
    if (!f_.has("--moe-router-force-load-balancing") && f_.integer_or("--num-experts", 0) > 0)
      assume("routing.balance",
             "forced balance: without --moe-router-force-load-balancing the real routing "
             "depends on the data; give a `routing` block (sampled or a histogram) to model it");
  }

 private:
  void assume(std::string key, std::string why) {
    out_.assumed.emplace_back(std::move(key), std::move(why));
  }

  // Flags accepted whose effect moesim does not price: each is listed with why.
  void unpriced() {
    static const std::array<std::pair<std::string_view, std::string_view>, 3> kUnpriced{{
        {"--no-gradient-accumulation-fusion",
         "the weight-gradient GEMMs then write a separate gradient that an add folds into the FP32 "
         "main gradient "
         "(one read and write of the gradients per microbatch); priced as the fused accumulation"},
        {"--use-nccl-ub",
         "NCCL user-buffer registration (zero-copy collectives): collectives priced as without it"},
        {"--fsdp-manual-registration",
         "NCCL user-buffer registration of Megatron-FSDP's buffers: priced as without it"},
    }};
    for (const auto& [flag, why] : kUnpriced)
      if (f_.has(flag)) assume(std::string(flag), std::string(why));
  }

  void model(Json& sc) {
    if (opts_.model) {
      sc["model"] = *opts_.model;
      const workload::ModelConfig preset = load_model_preset(*opts_.model);
      moe_ = preset.is_moe();
      vocab_ = preset.vocab_size;
      layers_ = preset.num_layers;
      check_against_preset(preset);
      return;
    }
    Json j = model_from_flags(f_);
    if (f_.str("--softmax-type") == "off-by-one")
      assume("model",
             "--softmax-type off-by-one: a softmax with one more term in its sum has no parameters "
             "and no kernel of its own, so it is priced as the plain softmax");
    moe_ = f_.integer_or("--num-experts", 0) > 0;
    const auto vocab = f_.integer("--vocab-size");
    // A preset with the same shape (the vocabulary comes from the tokenizer).
    for (const auto& name : preset_names(PresetKind::model)) {
      const workload::ModelConfig p = load_model_preset(name);
      Json probe = j;
      probe["vocab_size"] = vocab.value_or(p.vocab_size);
      if (same_shape(resolve_model(probe, opts_.source), p) && (!vocab || *vocab == p.vocab_size)) {
        sc["model"] = name;
        assume("model",
               fmt::format(
                   "preset '{}': the shape flags match it; its vocabulary ({}) is the tokenizer's",
                   name, p.vocab_size));
        vocab_ = p.vocab_size;
        layers_ = p.num_layers;
        return;
      }
    }
    if (!vocab)
      f_.fail("--num-layers",
              "no model preset has this shape, and the vocabulary comes from the tokenizer: "
              "give --vocab-size (or --model PRESET)");
    j["vocab_size"] = *vocab;
    vocab_ = *vocab;
    j["name"] = "imported";
    layers_ = resolve_model(j, opts_.source)
                  .num_layers;  // refuses here, naming the flag's field, what the loader refuses
    sc["model"] = j;
  }

  // Every shape flag given must state what the preset has (--model): a flag that
  // contradicts it is refused, naming both values.
  void check_against_preset(const workload::ModelConfig& m) {
    const auto is = [&](std::string_view flag, std::int64_t have) {
      if (const auto v = f_.integer(flag); v && *v != have)
        throw InputError(
            opts_.source, std::string(flag),
            fmt::format("gives {}; preset '{}' has {} (leave --model out to import the shape from "
                        "the flags)",
                        *v, *opts_.model, have));
    };
    const auto on = [&](std::string_view flag, bool have) {
      if (f_.has(flag) && !have)
        throw InputError(opts_.source, std::string(flag),
                         fmt::format("preset '{}' has no such thing", *opts_.model));
    };
    const bool mla = m.attention == workload::AttentionKind::mla;
    is("--num-layers", m.num_layers);
    is("--hidden-size", m.hidden_size);
    is("--num-attention-heads", m.num_heads);
    if (m.num_dense_layers() > 0) is("--ffn-hidden-size", m.ffn_hidden_size);
    if (!mla) {
      is("--num-query-groups", m.num_kv_heads);
      is("--kv-channels", m.head_dim);
    }
    on("--swiglu", m.gated_linear_unit);
    on("--quick-geglu", m.gated_linear_unit);
    on("--add-qkv-bias", m.attention_bias);
    on("--untie-embeddings-and-output-weights", !m.tie_word_embeddings);
    // GPT-OSS's attention: the sinks and the windows must be the preset's.
    if (const auto sm = f_.str("--softmax-type"); sm && learned_sinks(f_) != m.attention_sinks)
      f_.fail("--softmax-type",
              fmt::format("gives {}; preset '{}' has {}", *sm, *opts_.model,
                          m.attention_sinks ? "learned sinks (learnable)" : "no sinks"));
    if (const auto w = window_from_flags(f_, m.num_layers);
        w && (w->tokens != m.sliding_window || w->layers != m.sliding_layer))
      f_.fail(
          "--window-size",
          fmt::format("windows {} layers at {} tokens; preset '{}' windows {} at {}",
                      std::count(w->layers.begin(), w->layers.end(), true), w->tokens, *opts_.model,
                      std::count(m.sliding_layer.begin(), m.sliding_layer.end(), true),
                      m.sliding_window));
    on("--multi-latent-attention", mla);
    if (mla) {
      is("--q-lora-rank", m.mla.q_lora_rank);
      is("--kv-lora-rank", m.mla.kv_lora_rank);
      is("--qk-head-dim", m.mla.qk_nope_head_dim);
      is("--qk-pos-emb-head-dim", m.mla.qk_rope_head_dim);
      is("--v-head-dim", m.mla.v_head_dim);
    }
    is("--num-experts", m.num_experts);
    if (m.is_moe()) {
      is("--moe-router-topk", m.topk);
      is("--moe-ffn-hidden-size", m.moe_ffn_hidden_size);
      is("--moe-shared-expert-intermediate-size", m.shared_expert_ffn_hidden_size);
      is("--moe-router-num-groups", m.router_groups);
      is("--moe-router-group-topk", m.router_topk_groups);
      if (const auto sf = f_.str("--moe-router-score-function"); sf && *sf != m.router_scoring)
        f_.fail("--moe-router-score-function",
                fmt::format("gives {}; preset '{}' has {}", *sf, *opts_.model, m.router_scoring));
      if (f_.has("--moe-layer-freq")) {
        const auto pattern = moe_layer_pattern(f_, m.num_layers);
        for (std::size_t i = 0; i < pattern.size(); ++i)
          if ((pattern[i] == 1) != m.moe_layer[i])
            f_.fail("--moe-layer-freq",
                    fmt::format("layer {} is {} here and {} in preset '{}'", i,
                                pattern[i] ? "MoE" : "dense", m.moe_layer[i] ? "MoE" : "dense",
                                *opts_.model));
      }
    }
  }

  void training(Json& sc) {
    Json t;
    const auto seq = f_.integer("--seq-length");
    const auto mbs = f_.integer("--micro-batch-size");
    if (!seq) f_.fail("--seq-length", "required");
    if (!mbs) f_.fail("--micro-batch-size", "required");
    t["seq_length"] = *seq;
    t["micro_batch_size"] = *mbs;
    const std::int64_t dp = dp_size();
    t["global_batch_size"] = f_.integer_or("--global-batch-size", *mbs * dp);
    if (f_.has("--fp16") && f_.has("--bf16"))
      f_.fail("--fp16", "with --bf16: Megatron asserts one of them");
    // Megatron's FP4 (megatron/core/fp4_utils.py, arguments.py @ d98e8a64): --fp4-format e2m1
    // with --fp4-recipe nvfp4 (its default) runs TransformerEngine's NVFP4BlockScaling in
    // every transformer layer; its Hadamard transform and stochastic rounding follow TE's
    // environment (NVTE_NVFP4_DISABLE_*), not flags, so the scenario takes TE's defaults.
    if (f_.has("--first-last-layers-bf16"))
      f_.fail(
          "--first-last-layers-bf16",
          "layers in another precision than the rest are not modeled (one precision per scenario)");
    if (f_.has("--fp4-format")) {
      f_.choice("--fp4-format", "e2m1", {"e2m1"});
      f_.choice("--fp4-recipe", "nvfp4", {"nvfp4"});
      if (f_.has("--fp8-format"))
        f_.fail("--fp4-format", "FP4 and FP8 recipes together are not modeled");
      if (!f_.has("--bf16"))
        f_.fail(
            "--fp4-format",
            "FP4 is modeled with --bf16 for the non-FP4 parts (with FP16 parameters it is not)");
      t["precision"] = "nvfp4";
    } else if (f_.has("--fp8-format")) {
      f_.choice("--fp8-format", "e4m3", {"e4m3", "hybrid"});
      const std::string recipe =
          f_.choice("--fp8-recipe", "delayed", {"tensorwise", "delayed", "mxfp8", "blockwise"});
      if (!f_.has("--bf16"))
        f_.fail(
            "--fp8-format",
            "FP8 is modeled with --bf16 for the non-FP8 parts (with FP16 parameters it is not)");
      t["precision"] = recipe == "mxfp8"       ? "mxfp8"
                       : recipe == "blockwise" ? "fp8-blockwise"
                       : recipe == "delayed"   ? "fp8-delayed"
                                               : "fp8-tensorwise";
    } else if (f_.has("--bf16") || f_.has("--fp16")) {
      t["precision"] = f_.has("--fp16") ? "fp16" : "bf16";
    } else {
      f_.fail("--bf16",
              "absent: FP32 training is not modeled (give --bf16, or --fp8-format with --bf16)");
    }
    t["mtp_layers"] = f_.integer_or("--mtp-num-layers", 0);
    // Megatron pads the vocabulary to --make-vocab-size-divisible-by x TP: written where
    // it pads otherwise than the default 128 does.
    if (const auto div = f_.integer("--make-vocab-size-divisible-by")) {
      const std::int64_t tp = f_.integer_or("--tensor-model-parallel-size", 1);
      if (workload::padded_vocab_size(vocab_, tp, *div) != workload::padded_vocab_size(vocab_, tp))
        t["make_vocab_size_divisible_by"] = *div;
    }
    // Megatron's default hidden dropout is 0.1 (arguments.py --hidden-dropout).
    t["hidden_dropout"] = f_.number("--hidden-dropout").value_or(0.1);
    if (const auto cf = f_.number("--moe-expert-capacity-factor"))
      t["token_drop"] = {{"capacity_factor", *cf}};
    sc["training"] = t;
  }

  std::int64_t dp_size() const {
    const std::int64_t mp = f_.integer_or("--tensor-model-parallel-size", 1) *
                            f_.integer_or("--pipeline-model-parallel-size", 1) *
                            f_.integer_or("--context-parallel-size", 1);
    return mp > 0 && opts_.gpus % mp == 0 ? opts_.gpus / mp : 1;
  }

  void parallelism(Json& sc) {
    Json p;
    const std::int64_t tp = f_.integer_or("--tensor-model-parallel-size", 1);
    const std::int64_t pp = f_.integer_or("--pipeline-model-parallel-size", 1);
    p["tp"] = tp;
    p["pp"] = pp;
    std::int64_t vpp = 1;
    if (const auto v = f_.integer("--num-virtual-stages-per-pipeline-rank")) vpp = *v;
    if (const auto per = f_.integer("--num-layers-per-virtual-pipeline-stage")) {
      // arguments.py counts the embedding and the loss as layers here too, under their
      // --account-for-*-in-pipeline-split flags.
      const std::int64_t layers = f_.integer_or("--num-layers", 0) +
                                  (f_.has("--account-for-embedding-in-pipeline-split") ? 1 : 0) +
                                  (f_.has("--account-for-loss-in-pipeline-split") ? 1 : 0);
      if (*per < 1 || layers == 0 || layers % (pp * *per) != 0)
        f_.fail("--num-layers-per-virtual-pipeline-stage",
                fmt::format("{} layers do not split into {} ranks of {}-layer virtual stages",
                            layers, pp, *per));
      vpp = layers / (pp * *per);
    }
    if (const auto layout = f_.str("--pipeline-model-parallel-layout")) {
      p["pp_layout"] = *layout;
      // Megatron derives the virtual stages from the layout: its stages over pp.
      // (An unparsable layout is reported by the loader, against parallelism.pp_layout.)
      try {
        const auto stages = static_cast<std::int64_t>(
            schedules::PipelineLayout::parse(*layout, static_cast<int>(pp)).stages().size());
        if (stages % pp == 0) vpp = stages / pp;
      } catch (const std::exception&) {
      }
    }
    if (!p.contains("pp_layout")) account_split(p, pp, vpp);
    p["vpp"] = vpp;
    p["ep"] = f_.integer_or("--expert-model-parallel-size", 1);
    // Megatron: --expert-tensor-parallel-size defaults to the TP size; a dense model has
    // no expert layers to split (moesim requires etp 1 there).
    p["etp"] = f_.integer_or("--expert-tensor-parallel-size", moe_ ? tp : 1);
    p["cp"] = f_.integer_or("--context-parallel-size", 1);
    p["sequence_parallel"] = f_.has("--sequence-parallel");
    p["pipeline_schedule"] = vpp > 1 ? "interleaved-1f1b" : "1f1b";
    p["fsdp"] = f_.has("--use-megatron-fsdp");
    // Megatron-FSDP's sharding (arguments.py --data-parallel-sharding-strategy): moesim's
    // FSDP shards parameters, gradients and optimizer states (ZeRO-3) and holds two units'
    // gathered parameters, the one computing and the one prefetched (--fsdp-double-buffer's
    // buffers).
    if (const auto strat = f_.str("--data-parallel-sharding-strategy")) {
      f_.choice("--data-parallel-sharding-strategy", "no_shard",
                {"no_shard", "optim", "optim_grads", "optim_grads_params"});
      if (!f_.has("--use-megatron-fsdp"))
        f_.fail("--data-parallel-sharding-strategy", "acts only with --use-megatron-fsdp");
      if (*strat != "optim_grads_params")
        f_.fail(
            "--data-parallel-sharding-strategy",
            fmt::format(
                "'{}': Megatron-FSDP's partial sharding is not modeled (optim_grads_params is; the "
                "distributed optimizer without FSDP shards the optimizer states alone)",
                *strat));
    }
    if (f_.has("--fsdp-double-buffer") && !f_.has("--use-megatron-fsdp"))
      f_.fail("--fsdp-double-buffer", "acts only with --use-megatron-fsdp");
    sc["parallelism"] = p;
  }

  // --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split
  // (Megatron-Core transformer_block.py, get_num_layers_to_build): the embedding and the
  // loss count as a layer each, so the L + e + l units split evenly over the pp x vpp
  // virtual stages, the first one building a decoder layer fewer (e) and the last one
  // (l). Megatron requires the units to divide evenly (its config check); written here as
  // the equivalent pp_layout.
  void account_split(Json& p, std::int64_t pp, std::int64_t vpp) {
    const bool e = f_.has("--account-for-embedding-in-pipeline-split");
    const bool l = f_.has("--account-for-loss-in-pipeline-split");
    if (!e && !l) return;
    const char* flag =
        e ? "--account-for-embedding-in-pipeline-split" : "--account-for-loss-in-pipeline-split";
    if (f_.integer_or("--mtp-num-layers", 0) > 0)
      f_.fail(flag, "with MTP layers: write their placement as --pipeline-model-parallel-layout");
    const auto split = accounted_layout(layers_, pp, vpp, e, l);
    if (!split.layout) f_.fail(flag, split.error);
    const std::string layout = *split.layout;
    p["pp_layout"] = layout;
    assume("parallelism.pp_layout", fmt::format("'{}': {}{}", layout, e ? "the embedding" : "",
                                                e && l ? " and the loss counted as layers"
                                                : e    ? " counted as a layer"
                                                       : "the loss counted as a layer"));
  }

  void framework(Json& sc) {
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
      for (const auto& x : *s) {
        if (x == "mamba")
          f_.fail("--cuda-graph-scope", "'mamba': hybrid Mamba models are not modeled");
        scopes.push_back(x);
      }
    } else if (f_.has("--cuda-graph-scope") || f_.has("--cuda-graph-modules")) {
      f_.fail(f_.has("--cuda-graph-scope") ? "--cuda-graph-scope" : "--cuda-graph-modules",
              "without --cuda-graph-impl (default none) Megatron captures nothing");
    }
    fw["cuda_graph_scope"] = scopes;
    fw["recompute_modules"] = recompute();
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
    // Optimizer states, main gradients and the gradients' reduction dtype
    // (arguments.py: under --bf16 the gradients are accumulated and reduced in FP32
    // unless --grad-reduce-in-bf16 or BF16 main gradients).
    const std::string avg = f_.choice("--exp-avg-dtype", "fp32", {"fp32", "fp16", "bf16", "fp8"});
    const std::string avg_sq =
        f_.choice("--exp-avg-sq-dtype", "fp32", {"fp32", "fp16", "bf16", "fp8"});
    if (avg != avg_sq || (avg != "fp32" && avg != "bf16"))
      f_.fail(
          "--exp-avg-dtype",
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
    if (const auto b = f_.number("--ddp-bucket-size")) fw["ddp_bucket_size"] = *b;
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

  Json recompute() const {
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
    // Full recompute: moesim recomputes every layer; Megatron's uniform method with one
    // layer per group does the same.
    const std::string method = f_.choice("--recompute-method", "uniform", {"uniform", "block"});
    const std::int64_t n = f_.integer_or("--recompute-num-layers", 1);
    if (method != "uniform" || n != 1)
      f_.fail("--recompute-method",
              "full recompute of some layers (block, or groups of several layers) is not "
              "modeled; uniform with --recompute-num-layers 1 is");
    return Json::array({"full"});
  }

  void stack(Json& sc) {
    Json st;
    st["router_fusion"] = f_.has("--moe-router-fusion");
    if (f_.has("--moe-permute-fusion-into-hybridep")) {
      st["hybridep_permute_fusion"] = true;
      assume("stack.hybridep_permute_fusion", "on: --moe-permute-fusion-into-hybridep");
    }
    st["cpu_numa_binding"] = w_.numa_bound;
    assume("stack.cpu_numa_binding", w_.numa_bound
                                         ? "on: bindpcie or numactl starts the command"
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

  bool moe_ = false;         // the model has routed experts (model() decides)
  std::int64_t layers_ = 0;  // its decoder layers (model() decides)
  std::int64_t vocab_ = 0;   // the model's vocabulary before padding (model() decides)
  const Words& w_;
  const MegatronImportOptions& opts_;
  MegatronImport& out_;
  Flags f_;
};

// The result must load: what the loader refuses is reported against the command.
void check_loads(const MegatronImport& out, const MegatronImportOptions& opts) {
  try {
    load_scenario_json(out.scenario, opts.source);
  } catch (const InputError& e) {
    throw InputError(opts.source, e.path(), e.message() + " (in the imported scenario)");
  }
}

}  // namespace

MegatronImport import_megatron(const std::string& text, const MegatronImportOptions& opts) {
  MegatronImport out;
  bool exited = false;
  auto runs = script_runs(text, opts, out.notes, exited);
  const Words w = pick_run(std::move(runs), opts, exited);
  out.notes.insert(out.notes.end(), w.notes.begin(), w.notes.end());
  if (is_bridge_launcher(
          w.entry)) {  // Megatron-Bridge's performance launcher (importer/import_bridge.hpp)
    MegatronImport bridge = import_bridge(w.words, opts);
    bridge.notes.insert(bridge.notes.begin(), out.notes.begin(), out.notes.end());
    if (opts.wrapper_root)
      bridge.notes.push_back(
          "--wrapper-root: unused, the command calls Megatron-Bridge's launcher, not a wrapper");
    out = std::move(bridge);  // loaded there, with the launcher's layout named when it fails
    return out;
  }
  if (opts.system.empty())
    throw InputError("<command line>", "--system",
                     "the system preset the command runs on is needed (--system S)");
  if (w.words.empty() && !other_entry(w.entry))
    throw InputError(opts.source, w.entry,
                     "no Megatron flags (--name value ...) follow the program");
  if (const auto what = other_entry(w.entry))
    throw InputError(
        opts.source, w.entry,
        fmt::format("trains {}: not modeled (moesim models decoder-only GPT-style training, "
                    "Megatron-LM's pretrain_gpt.py)",
                    *what));
  if (!w.entry.empty() && !w.entry.ends_with("pretrain_gpt.py"))
    out.assumed.emplace_back(
        "model",
        fmt::format("{} taken as GPT-style decoder-only training, as pretrain_gpt.py", w.entry));
  // The world size: --gpus, else what the script states (torchrun's, a wrapper's).
  MegatronImportOptions o = opts;
  if (o.gpus <= 0) {
    if (!w.gpus)
      throw InputError(
          opts.source, "--gpus",
          "the script does not state the world size (no torchrun --nnodes and --nproc_per_node, no "
          "wrapper's NNODES): give --gpus N or --nodes N --gpus-per-node G");
    o.gpus = *w.gpus;
  }
  if (!o.gpus_per_nvlink_domain) o.gpus_per_nvlink_domain = w.gpus_per_nvlink_domain;
  for (const auto& [key, why] : w.derived) out.derived.emplace_back(key, why);
  if (opts.gpus > 0 && w.gpus && *w.gpus != opts.gpus)
    out.derived.emplace_back(
        "gpus", fmt::format("{} as --gpus gives; the script launches {}", opts.gpus, *w.gpus));
  Importer(w, o, out).run();
  check_loads(out, opts);
  out.recorded = record_inert_settings(out.scenario, opts.source, "moesim import megatron");
  return out;
}

}  // namespace moesim::importer
