// importer/bridge_scenario.cpp: the scenario of a Megatron-Bridge import (importer/
// bridge_detail.hpp): what Megatron-Core and Bridge's setup decide from the final settings
// (the CUDA graphs' scopes, the accounted pipeline split, the dataset's sequence length,
// expert TP, the dispatcher's SMs, recompute, TP overlap, the gradient and optimizer
// dtypes, routing), what is assumed or not modeled, and the scenario's own keys.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "config/load.hpp"
#include "importer/bridge_detail.hpp"
#include "importer/pipeline_split.hpp"

namespace moesim::importer::detail {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;
namespace {

// The system preset of the launcher's -g (argument_parser.py's GPU names): the presets
// moesim ships for those machines (scenarios/systems/).
const std::map<std::string_view, std::string_view>& gpu_systems() {
  static const std::map<std::string_view, std::string_view> m{
      {"h100", "h100"},         {"b200", "b200"},         {"b300", "b300"},
      {"gb200", "gb200-nvl72"}, {"gb300", "gb300-nvl72"}, {"vr200", "vr200-nvl72"},
      {"r100", "r100"}};
  return m;
}
}  // namespace

// ---- the scenario ----------------------------------------------------------------------

// Megatron-Core's account_for_embedding/loss_in_pipeline_split, where the recipe sets them:
// the layers plus the embedding and the loss split evenly over the final PP x VP stages.
void BridgeImporter::account_split() {
  const Json& r = family_->at("recipes").at(q_.recipe);
  if (!r.contains("account_split") || b_.origin.count("parallelism.pp_layout")) return;
  const Json& a = r.at("account_split");
  if (a.contains("tags") && !contains(a.at("tags"), q_.tag)) return;  // the recipe's tags
  const auto split = accounted_layout(
      a.at("layers").get<std::int64_t>(), b_.integer("parallelism.pp", 1),
      b_.integer("parallelism.vpp", 1), a.value("embedding", false), a.value("loss", false));
  if (!split.layout)
    refuse(b_.origin["parallelism.pp"],
           split.error + " (" + a.at("source").get<std::string>() + ")");
  b_.set("parallelism.pp_layout", *split.layout, a.at("source").get<std::string>());
}

// Full recompute, block method: each virtual stage's block recomputes its first N layers
// (Megatron-Core cd4afffa megatron/core/recompute.py:167-181): recompute_modules ["full"]
// with framework.recompute_num_layers N, left out where N covers every virtual stage of an
// even split (every layer; the loader applies N to a pp_layout's stages).
void BridgeImporter::full_recompute(const Json& n) {
  const std::string src = b_.origin["bridge.recompute_num_layers"];
  if (!n.is_number_integer() || n.get<std::int64_t>() < 1)
    refuse(src, fmt::format("recompute_num_layers {}: Megatron's block method recomputes a "
                            "positive number of layers",
                            n.dump()));
  const Json& model = family_->at("recipes").at(q_.recipe).at("model");
  const std::int64_t stages = b_.integer("parallelism.pp", 1) * b_.integer("parallelism.vpp", 1);
  std::int64_t per = 0;
  if (model.is_string() && !b_.get("parallelism.pp_layout")) {
    const std::int64_t layers = config::load_model_preset(model.get<std::string>()).num_layers;
    if (layers % stages == 0) per = layers / stages;
  }
  const std::int64_t k = n.get<std::int64_t>();
  b_.set("framework.recompute_modules", Json::array({"full"}),
         src + ": full recompute (block method, Megatron-Core recompute.py:167-181)");
  if (per == 0 || k < per)
    b_.set("framework.recompute_num_layers", k,
           fmt::format("{}: the first {} decoder layers of each virtual stage recomputed whole, "
                       "the rest kept",
                       src, k));
  b_.erase("bridge.recompute_num_layers");
}

void BridgeImporter::finish() {
  if (b_.get("bridge.te_precision_config_file")) {
    if (!b_.get("training.module_precision"))
      refuse(b_.origin["bridge.te_precision_config_file"],
             fmt::format("a TransformerEngine precision recipe file (te_precision_config_file "
                         "{}) whose per-module precisions the family rules do not tabulate",
                         b_.get("bridge.te_precision_config_file")->dump()));
    b_.erase("bridge.te_precision_config_file");
  }
  // CUDA graphs: the implementation decides what the scopes mean.
  const std::string impl = b_.get("bridge.cuda_graph_impl")
                               ? b_.get("bridge.cuda_graph_impl")->get<std::string>()
                               : "none";
  Json scope =
      b_.get("bridge.cuda_graph_scope") ? *b_.get("bridge.cuda_graph_scope") : Json::array();
  const std::string graph_src = b_.origin.count("bridge.cuda_graph_impl")
                                    ? b_.origin["bridge.cuda_graph_impl"]
                                    : "the recipe";
  const std::string scope_src =
      b_.origin.count("bridge.cuda_graph_scope") ? b_.origin["bridge.cuda_graph_scope"] : graph_src;
  if (impl == "none") {
    b_.set("framework.cuda_graph_scope", Json::array(), graph_src + ": cuda_graph_impl none");
  } else if (impl == "transformer_engine") {
    if (scope.empty() || contains(scope, "full_iteration"))
      refuse(scope_src,
             fmt::format("TransformerEngine CUDA graphs with scopes {}: moesim prices TE graphs "
                         "over attn, mlp, moe, moe_router, moe_preprocess and mamba",
                         scope.dump()));
    b_.set("framework.cuda_graph_scope", scope, graph_src);
  } else if (impl == "full_iteration") {  // Megatron-Core's newer name for the full-iteration graph
    b_.set("framework.cuda_graph_scope", Json::array({"full_iteration"}), graph_src);
  } else if (impl == "local") {
    if (scope != Json::array({"full_iteration"}))
      refuse(scope_src,
             fmt::format("Megatron-Core's local CUDA graphs with scopes {}: moesim prices the "
                         "local implementation over the full iteration only",
                         scope.dump()));
    b_.set("framework.cuda_graph_scope", scope, graph_src);
  } else {
    refuse(graph_src,
           fmt::format("cuda_graph_impl '{}': not a CUDA graph implementation moesim prices (none, "
                       "transformer_engine, local, full_iteration)",
                       impl));
  }
  apply(family_->at("rules"), "final");
  account_split();
  // The dataset's sequence length: rebuilt from the model's for mock data from v0.3.0
  // (set_user_overrides); at v0.2.x it stays the recipe's, and Bridge's config check stops a
  // run whose model and dataset lengths differ.
  if (const Json* ds = b_.get("bridge.dataset_seq_length");
      launcher().at("dataset_follows_model").get<bool>()) {
    if (ds)
      out_.ignored.push_back(fmt::format("{} (the mock dataset is rebuilt from model.seq_length)",
                                         b_.origin["bridge.dataset_seq_length"]));
  } else if (const std::int64_t dataset = ds ? ds->get<std::int64_t>() : recipe_seq_;
             dataset != b_.integer("training.seq_length", 0)) {
    refuse(
        "model.seq_length",
        fmt::format("the model's sequence length {} and the dataset's {} differ: Megatron-Bridge "
                    "{}'s config check stops the run; give model.seq_length and "
                    "dataset.sequence_length alike",
                    b_.integer("training.seq_length", 0), dataset, q_.tag));
  }
  {
    const Json* etp = b_.get("bridge.etp");
    if (etp && etp->is_number_integer())
      b_.set("parallelism.etp", *etp, b_.origin["bridge.etp"]);
    else
      b_.set("parallelism.etp", b_.integer("parallelism.tp", 1),
             "expert TP None is the final TP (Megatron-Core)");
  }
  // The SMs of the dispatcher that runs (HybridEP's set by the launcher or the recipe;
  // DeepEP's Megatron-Core default unless a Hydra override sets it).
  {
    const std::string d =
        b_.get("framework.dispatcher") ? b_.get("framework.dispatcher")->get<std::string>() : "";
    const std::string key = d == "hybridep" ? "bridge.hybridep_sms"
                            : d == "deepep" ? "bridge.deepep_sms"
                                            : "";
    if (!key.empty() && b_.get(key))
      b_.set("framework.dispatcher_sms", *b_.get(key), b_.origin[key]);
  }
  // Selective modules act only under the selective granularity (v0.2.0: the recipe's).
  if (b_.get("bridge.recompute_granularity") == nullptr ||
      *b_.get("bridge.recompute_granularity") != "selective") {
    if (const Json* m = b_.get("framework.recompute_modules");
        m && !m->empty() && !b_.get("bridge.recompute_num_layers")) {
      const std::string why = fmt::format(
          "none: {} asks for {}, but the recipe's recompute granularity is not "
          "selective, so Megatron-Core recomputes nothing (v0.2.0 "
          "scripts/performance/utils/helpers.py:178-179)",
          b_.origin["framework.recompute_modules"], m->dump());
      b_.set("framework.recompute_modules", Json::array(), why);
    }
  }
  // Bridge's CommOverlapConfig turns TP communication overlap off at setup below TP 2 or
  // without sequence parallelism (src/megatron/bridge/training/comm_overlap.py).
  if (b_.flag("framework.tp_comm_overlap", false) &&
      (b_.integer("parallelism.tp", 1) < 2 || !b_.flag("parallelism.sequence_parallel", false)))
    b_.set("framework.tp_comm_overlap", false,
           "CommOverlapConfig: no TP communication overlap below TP 2 or without "
           "sequence parallelism (src/megatron/bridge/training/comm_overlap.py)");
  if (const Json* n = b_.get("bridge.recompute_num_layers")) full_recompute(*n);
  // Gradients and the optimizer's dtypes (Megatron: the DDP buffer takes the parameters'
  // BF16 unless grad_reduce_in_fp32; the optimizer's main-gradient and moment dtypes act
  // only with the precision-aware optimizer).
  if (const Json* fp32 = b_.get("bridge.grad_reduce_in_fp32")) {
    const std::string d = fp32->get<bool>() ? "fp32" : "bf16";
    const std::string src = b_.origin["bridge.grad_reduce_in_fp32"];
    b_.set("framework.grad_reduce_dtype", d, src);
    b_.set("framework.main_grads_dtype", d, src);
  }
  if (b_.flag("bridge.precision_aware_optimizer", false)) {
    const Json* a = b_.get("bridge.exp_avg_dtype");
    const Json* a2 = b_.get("bridge.exp_avg_sq_dtype");
    if (a && a2 && *a != *a2)
      refuse("optimizer.exp_avg_dtype",
             "Adam's two moments in different dtypes: moesim has one optimizer_state_dtype");
    if (a) b_.set("framework.optimizer_state_dtype", *a, b_.origin["bridge.exp_avg_dtype"]);
  } else if (const Json* a = b_.get("bridge.exp_avg_dtype"); a && *a != "fp32") {
    out_.derived.emplace_back(
        "framework.optimizer_state_dtype",
        fmt::format("fp32: the recipe's {} moments act only with the precision-aware optimizer, "
                    "which is off",
                    a->get<std::string>()));
  }
  if (!b_.flag("bridge.force_balance", true))
    out_.assumed.emplace_back(
        "routing.balance",
        "forced balance: the recipe does not force it, and the real routing depends on the data; "
        "give a `routing` block (aux_loss, sampled or a histogram) to model it");
  if (const Json* rb = b_.get("routing.balance");
      !rb || *rb != "forced" || !b_.flag("bridge.force_balance", true))
    b_.set("routing.balance", "forced",
           b_.flag("bridge.force_balance", true)
               ? std::string("the recipe's forced balance")
               : "moesim's forced balance, for want of the data's routing");
  if (!nccl_ub_src_.empty())
    out_.assumed.emplace_back("nccl_ub",
                              nccl_ub_src_ +
                                  ": NCCL user-buffer registration (symmetric kernels) for the "
                                  "DP collectives, accepted, its speed-up not priced");
  // What the family's code sets that moesim does not model (the research behind the table).
  for (const auto& n : family_->value("not_modeled", Json::array()))
    if (rule_applies(n, q_) &&
        !n.value("setting", std::string()).starts_with("-"))  // not the launcher's names
      out_.assumed.emplace_back(
          "not modeled",
          fmt::format("{}: {}", n.value("setting", std::string()), n.value("why", std::string())));
  const bool moe = family_->at("recipes").at(q_.recipe).value("moe", true);
  if (!moe)
    for (const char* k :
         {"framework.dispatcher", "framework.dispatcher_sms", "framework.moe_a2a_overlap",
          "framework.delay_wgrad_compute", "parallelism.ep", "parallelism.etp", "routing.balance"})
      b_.erase(k);

  // The scenario.
  Json& sc = out_.scenario;
  const std::string system =
      opts_.system.empty()
          ? (gpu_systems().count(q_.gpu) ? std::string(gpu_systems().at(q_.gpu)) : std::string())
          : opts_.system;
  if (system.empty()) refuse("-g", fmt::format("no system preset for {}: give --system", q_.gpu));
  if (opts_.system.empty())
    out_.derived.emplace_back("system", fmt::format("{}: the preset for -g {}", system, q_.gpu));
  else if (gpu_systems().count(q_.gpu) && gpu_systems().at(q_.gpu) != opts_.system)
    out_.derived.emplace_back("system", fmt::format("{} as --system gives; the command's -g is {}",
                                                    opts_.system, q_.gpu));
  const bool pretrain = q_.task == "pretrain";
  sc["name"] = fmt::format("bridge-{}{}-{}-{}-{}", q_.recipe, pretrain ? "" : "-" + q_.task, q_.gpu,
                           q_.dtype, release_);
  sc["description"] = fmt::format(
      "Imported from a Megatron-Bridge performance command: {}{} on {} {} GPUs, compute dtype "
      "{}, Megatron-Bridge {} "
      "(NeMo {}, commit {}), workload config {}, the family settings of {}.",
      q_.recipe,
      pretrain ? ""
               : " full-parameter SFT (--task sft) on the launcher's mock data, "
                 "pretraining-shaped,",
      q_.gpus, q_.gpu, q_.dtype, q_.tag, release_, wl_.commit.substr(0, 10), wl_.config, kFamilies);
  sc["system"] = system;
  sc["gpus"] = q_.gpus;
  sc["model"] = family_->at("recipes").at(q_.recipe).at("model");
  if (opts_.model && (!sc["model"].is_string() || sc["model"].get<std::string>() != *opts_.model))
    refuse(
        "--model",
        fmt::format("the recipe {} names its model ({}); --model {} would contradict it", q_.recipe,
                    sc["model"].is_string() ? sc["model"].get<std::string>() : "an inline model",
                    *opts_.model));
  if (opts_.gpus_per_nvlink_domain) {  // the launcher's Slurm segments otherwise: moesim's default
                                       // placement
    sc["placement"] = {{"gpus_per_nvlink_domain", *opts_.gpus_per_nvlink_domain}};
    out_.derived.emplace_back(
        "placement.gpus_per_nvlink_domain",
        fmt::format("{}: --gpus-per-nvlink-domain", *opts_.gpus_per_nvlink_domain));
  }
  for (const char* sec : {"training", "parallelism", "framework", "routing", "stack"})
    if (b_.sc.contains(sec) && !b_.sc.at(sec).empty()) sc[sec] = b_.sc.at(sec);
  sc["stack"]["release"] = release_;
  out_.assumed.emplace_back(
      "stack", fmt::format("release {}'s library switches (stack.release): no launcher flag states "
                           "them",
                           release_));
  for (const auto& [key, why] : b_.origin)
    if (!key.starts_with("bridge.")) out_.derived.emplace_back(key, why);
}

}  // namespace moesim::importer::detail
