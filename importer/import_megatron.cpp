// importer/import_megatron.cpp: a Megatron-LM launch command or script as a scenario
// (importer/import.hpp): import_megatron, which picks the script's run, hands Megatron-
// Bridge's launcher to importer/import_bridge.hpp and checks that the result loads; and the
// importer's run, training and parallel-layout sections. The script's runs are
// importer/megatron_runs.cpp; the flag table importer/megatron_flags.cpp; the model
// importer/megatron_model.cpp; the framework and stack importer/megatron_framework.cpp.
#include "config/inert_settings.hpp"
#include "importer/import.hpp"
#include "importer/import_bridge.hpp"
#include "importer/pipeline_split.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/load.hpp"
#include "importer/megatron_detail.hpp"

namespace moesim::importer {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;

namespace detail {

void Importer::run() {
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
  routing(sc);
}

// Megatron-LM's router balancing (arguments.py 3532-3537 at d98e8a64): types aux_loss (the
// default), seq_aux_loss, global_aux_loss, sinkhorn, quantile_balancing or none, each with its
// --moe-aux-loss-coeff (default 0); --moe-router-enable-expert-bias is DeepSeek's loss-free
// bias. Forced balance (--moe-router-force-load-balancing) overrides all of them, which then
// change nothing. Without it the run is dropless on the trained router's own loads
// (workload/routing.hpp): aux_loss at the largest coefficient of the auxiliary losses, or
// loss_free; with neither, the model family's trained routing (the loader's default).
void Importer::routing(Json& sc) {
  static constexpr std::array<std::string_view, 3> kFlags{"--moe-router-load-balancing-type",
                                                          "--moe-aux-loss-coeff",
                                                          "--moe-router-enable-expert-bias"};
  if (!moe_ || f_.has("--moe-router-force-load-balancing")) {
    sc["routing"] = {{"balance", "forced"}};
    for (const auto flag : kFlags)
      if (f_.has(flag)) out_.ignored.emplace_back(flag);
    return;
  }
  if (f_.has("--moe-router-enable-expert-bias")) {
    sc["routing"] = {{"balance", "loss_free"}};
    assume("routing.balance",
           "loss_free: --moe-router-enable-expert-bias without --moe-router-force-load-balancing, "
           "a dropless run on the trained router's own loads");
    return;
  }
  const std::vector<std::string> types =
      f_.has("--moe-router-load-balancing-type")
          ? *f_.list("--moe-router-load-balancing-type")
          : std::vector<std::string>{"aux_loss"};  // Megatron's default
  static constexpr std::array<std::string_view, 6> kTypes{
      "aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "quantile_balancing", "none"};
  for (const auto& t : types)
    if (std::find(kTypes.begin(), kTypes.end(), t) == kTypes.end())
      f_.fail("--moe-router-load-balancing-type",
              fmt::format("'{}' is not one of Megatron's: {}", t, fmt::join(kTypes, ", ")));
  std::vector<double> coeffs;
  if (const auto* cs = f_.list("--moe-aux-loss-coeff"))
    for (const auto& c : *cs) {
      double v = 0;
      const auto [p, ec] = std::from_chars(c.data(), c.data() + c.size(), v);
      if (ec != std::errc() || p != c.data() + c.size() || v < 0)
        f_.fail("--moe-aux-loss-coeff", fmt::format("expected a number >= 0, not '{}'", c));
      coeffs.push_back(v);
    }
  // Each type takes its own coefficient; a single one applies to every type.
  double coeff = 0;
  std::string chosen;
  for (std::size_t i = 0; i < types.size(); ++i) {
    const double c = coeffs.empty() ? 0.0 : coeffs[std::min(i, coeffs.size() - 1)];
    const bool aux =
        types[i] == "aux_loss" || types[i] == "seq_aux_loss" || types[i] == "global_aux_loss";
    if (aux && c > coeff) coeff = c, chosen = types[i];
  }
  if (coeff >= 1e-6 && coeff <= 1) {
    sc["routing"] = {{"balance", "aux_loss"}, {"coefficient", coeff}};
    assume("routing.balance",
           fmt::format("aux_loss {}: --moe-router-load-balancing-type {} with --moe-aux-loss-coeff "
                       "{} and no --moe-router-force-load-balancing, a dropless run on the trained "
                       "router's own loads",
                       coeff, chosen, coeff));
    return;
  }
  assume("routing.balance",
         fmt::format("the model family's trained routing (the loader's default): the command "
                     "neither forces balance nor sets an auxiliary loss of 1e-6 to 1 (types {}, "
                     "largest auxiliary coefficient {})",
                     fmt::join(types, " "), coeff));
}

// Flags accepted whose effect moesim does not price: each is listed with why.
void Importer::unpriced() {
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

void Importer::training(Json& sc) {
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
  // Megatron's BF16 first and last layers (transformer_config.py 628-637 at cd4afffa: one at
  // each end unless the counts say otherwise); the counts act only with the switch.
  if (f_.has("--first-last-layers-bf16")) {
    t["bf16_layers_at_start"] = f_.integer_or("--num-layers-at-start-in-bf16", 1);
    t["bf16_layers_at_end"] = f_.integer_or("--num-layers-at-end-in-bf16", 1);
  } else {
    for (const char* k : {"--num-layers-at-start-in-bf16", "--num-layers-at-end-in-bf16"})
      if (f_.has(k))
        assume(k,
               "a count of BF16 layers: it acts only with --first-last-layers-bf16, which the "
               "command does not give");
  }
  if (f_.has("--fp4-format")) {
    f_.choice("--fp4-format", "e2m1", {"e2m1"});
    f_.choice("--fp4-recipe", "nvfp4", {"nvfp4"});
    if (f_.has("--fp8-format"))
      f_.fail("--fp4-format", "FP4 and FP8 recipes together are not modeled");
    if (!f_.has("--bf16"))
      f_.fail("--fp4-format",
              "FP4 is modeled with --bf16 for the non-FP4 parts (with FP16 parameters it is not)");
    t["precision"] = "nvfp4";
  } else if (f_.has("--fp8-format")) {
    f_.choice("--fp8-format", "e4m3", {"e4m3", "hybrid"});
    const std::string recipe =
        f_.choice("--fp8-recipe", "delayed", {"tensorwise", "delayed", "mxfp8", "blockwise"});
    if (!f_.has("--bf16"))
      f_.fail("--fp8-format",
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
  // Megatron-Core asserts a capacity factor with the padding (token_dispatcher.py 432).
  if (f_.has("--moe-pad-expert-input-to-capacity")) {
    if (!t.contains("token_drop"))
      f_.fail("--moe-pad-expert-input-to-capacity",
              "pads to the capacity --moe-expert-capacity-factor sets, which is absent");
    t["token_drop"]["pad"] = true;
  }
  sc["training"] = t;
}

std::int64_t Importer::dp_size() const {
  const std::int64_t mp = f_.integer_or("--tensor-model-parallel-size", 1) *
                          f_.integer_or("--pipeline-model-parallel-size", 1) *
                          f_.integer_or("--context-parallel-size", 1);
  return mp > 0 && opts_.gpus % mp == 0 ? opts_.gpus / mp : 1;
}

void Importer::parallelism(Json& sc) {
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
              fmt::format("{} layers do not split into {} ranks of {}-layer virtual stages", layers,
                          pp, *per));
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
  // --cp-comm-type (Megatron: p2p by default; one value for every layer here): a2a
  // exchanges q, k, v by all-to-alls; a2a+p2p and allgather are not modeled.
  if (f_.has("--cp-comm-type") && p["cp"].get<std::int64_t>() > 1)
    p["cp_comm_type"] = f_.choice("--cp-comm-type", "p2p", {"p2p", "a2a"});
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
  // Several distributed-optimizer instances (arguments.py 3034 at cd4afffa): HSDP under
  // Megatron-FSDP, with its outer strategy (3011, default no_shard); the distributed
  // optimizer's per-bucket all-reduce across instances otherwise.
  if (f_.has("--num-distributed-optimizer-instances"))
    p["optimizer_instances"] = f_.integer_or("--num-distributed-optimizer-instances", 1);
  if (f_.has("--outer-dp-sharding-strategy")) {
    p["outer_dp_sharding"] =
        f_.choice("--outer-dp-sharding-strategy", "no_shard", {"no_shard", "optim"});
    if (!f_.has("--use-megatron-fsdp"))
      f_.fail("--outer-dp-sharding-strategy", "acts only with --use-megatron-fsdp");
  }
  sc["parallelism"] = p;
}

// --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split
// (Megatron-Core transformer_block.py, get_num_layers_to_build): the embedding and the
// loss count as a layer each, so the L + e + l units split evenly over the pp x vpp
// virtual stages, the first one building a decoder layer fewer (e) and the last one
// (l). Megatron requires the units to divide evenly (its config check); written here as
// the equivalent pp_layout.
void Importer::account_split(Json& p, std::int64_t pp, std::int64_t vpp) {
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

}  // namespace detail

namespace {

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
  if (auto recipe = read_moe_recipe(text, opts.source, opts.environment)) {
    MegatronImportOptions o = opts;
    o.source = opts.source + " (ARGS)";
    o.no_launcher = true;
    o.environment = recipe->environment;
    MegatronImport out = import_megatron(recipe->flags, o);
    out.notes.insert(
        out.notes.begin(),
        fmt::format("{}: a Megatron-LM MoE recipe: ARGS read as the flags named after them, "
                    "ENV_VARS as the environment{}; its container{} is not read for library "
                    "versions (--release R gives them)",
                    opts.source, opts.environment.empty() ? "" : " (--env wins)",
                    recipe->image ? " (" + *recipe->image + ")" : std::string()));
    return out;
  }
  MegatronImport out;
  bool exited = false;
  auto runs = detail::script_runs(text, opts, out.notes, exited);
  const detail::Words w = detail::pick_run(std::move(runs), opts, exited);
  out.notes.insert(out.notes.end(), w.notes.begin(), w.notes.end());
  // Megatron-Bridge's performance or training launcher (importer/import_bridge.hpp).
  if (is_bridge_launcher(w.entry) || is_bridge_training_launcher(w.entry)) {
    MegatronImport bridge = is_bridge_launcher(w.entry) ? import_bridge(w.words, opts)
                                                        : import_bridge_training(w.words, opts);
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
  if (w.words.empty() && !detail::other_entry(w.entry))
    throw InputError(opts.source, w.entry,
                     "no Megatron flags (--name value ...) follow the program");
  if (const auto what = detail::other_entry(w.entry))
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
  detail::Importer(w, o, out).run();
  check_loads(out, opts);
  out.recorded = record_inert_settings(out.scenario, opts.source, "moesim import megatron");
  return out;
}

}  // namespace moesim::importer
