// importer/bridge_perf_recipe.cpp: step 1 of the Megatron-Bridge import (importer/
// bridge_detail.hpp), the performance recipe: the stages in the tag's launcher order, the
// families' rules (Megatron-Bridge's defaults, the precision, the family's code) where they
// hold, the workload config applied as set_workload_base_configs does, and the setters the
// launcher's flags share with it (parallel sizes, Megatron-FSDP, CUDA graphs, recompute,
// the flex dispatcher, the family's pipeline layouts).
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>

#include "importer/bridge_detail.hpp"

namespace moesim::importer::detail {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;

// ---- step 1: the performance recipe (family function + workload config) ------------------

// The tag's launcher behaviour (importer/recipes/megatron-bridge-families.json "launcher").
const Json& BridgeImporter::launcher() const {
  for (const auto& l : families().at("launcher"))
    if (contains(l.at("tags"), q_.tag)) return l;
  refuse("--release",
         fmt::format("Megatron-Bridge {}: the launcher's behaviour at this tag is not tabulated",
                     q_.tag));
}

void BridgeImporter::build() {
  const Json& l = launcher();
  // A family's "refused_flags": a launcher flag its code reads with a value whose path is
  // not tabulated (Kimi's --optimizer_type adam).
  if (family_->contains("refused_flags"))
    for (const auto& r : family_->at("refused_flags"))
      if (const Json* v = given(r.at("dest").get<std::string>()); v && rule_applies(r, q_)) {
        const std::string value = v->is_string() ? v->get<std::string>() : v->dump();
        if (!contains(r.at("allowed"), value))
          refuse(flag(r.at("dest").get<std::string>()),
                 fmt::format("{}: {}", value, r.at("why").get<std::string>()));
      }
  // A family's "refuse" rules: a configuration Megatron-Bridge or Megatron-Core stops at, or
  // whose run moesim cannot price (each rule's "why" says which and cites where).
  for (const auto& r : family_->at("rules"))
    if (r.value("stage", std::string()) == "refuse" && rule_applies(r, q_))
      refuse(wl_.config,
             fmt::format("{} at {}: {}", wl_.config, q_.tag, r.at("why").get<std::string>()));
  for (const auto& stage : l.at("order")) {
    if (stage == "recipe") {
      // Megatron-Bridge's defaults under every recipe, the precision of -c, the family's code.
      apply(families().at("defaults"), "recipe");
      apply(families().at("precision"), "recipe");
      if (!b_.get("training.precision"))
        refuse(flag("compute_dtype"),
               fmt::format("compute dtype '{}' at {}: no precision tabulated", q_.dtype, q_.tag));
      apply(family_->at("rules"), "recipe");
    } else if (stage == "table") {
      table();
      apply(family_->at("rules"), "after_table");
    } else if (stage == "hydra") {
      hydra();
    } else if (stage == "user") {
      user();
    } else if (stage == "post") {
      if (training_world_) {
        // run_recipe.py (scripts/training at v0.6.0, :478-525): the recipe on the job's
        // world, its GBS weak-scaled by DP unless train.global_batch_size was given.
        bf16_precision_aware();
        q_.gpus = *training_world_;
        if (!training_gbs_given_)
          weak_scale(wl_.settings.at("num_gpus").get<std::int64_t>(),
                     wl_.settings.at("global_batch_size").get<std::int64_t>());
      } else if (l.value("post_when", std::string("always")) == "not_exact_gpus" &&
                 wl_.exact_gpus) {
        // v0.6.0 on: set_post_overrides only for a recipe of another GPU count, weak-scaled;
        // the exact one keeps its values but the BF16 precision-aware optimizer
        // (scripts/performance/run_script.py _prepare_perf_recipe).
        bf16_precision_aware();
      } else {
        post();
      }
      apply(family_->at("rules"), "post");
    }
  }
}

// Data-parallel size as the launcher computes it: -ng / (TP x PP x CP).
std::int64_t BridgeImporter::dp() const {
  return q_.gpus / (b_.integer("parallelism.tp", 1) * b_.integer("parallelism.pp", 1) *
                    b_.integer("parallelism.cp", 1));
}

// A rule's "when": conditions on the run beyond tag, recipe, GPU and dtype.
//   tp_gt_1 / dp_gt_1: the final TP / DP above 1 (Bridge's CommOverlapConfig decides at setup);
//   cp_gt_1: the final CP above 1 (settings that act only with context parallelism);
//   table_full_iteration: the workload config captures the full iteration in a CUDA graph;
//   mbs_gt_1: the micro-batch above 1 (Megatron-Core's mRoPE fusion serves batch 1 only);
//   fsdp: Megatron-FSDP on (cfg.ddp.use_megatron_fsdp, as the table or an override left it);
//   dispatcher_alltoall: the dispatcher as the run left it is Megatron's NCCL all-to-all;
//   a2a_overlap: the 1F1B all-to-all overlap as the run left it;
//   shared_expert_overlap_given: an override gave model.moe_shared_expert_overlap.
bool BridgeImporter::when_holds(const Json& r) const {
  if (!r.contains("when")) return true;
  for (const auto& [k, v] : r.at("when").items()) {
    bool have = false;
    if (k == "tp_gt_1") {
      have = b_.integer("parallelism.tp", 1) > 1;
    } else if (k == "dp_gt_1") {
      have = dp() > 1;
    } else if (k == "cp_gt_1") {
      have = b_.integer("parallelism.cp", 1) > 1;
    } else if (k == "fsdp") {
      const Json* f = b_.get("parallelism.fsdp");
      have = f && f->is_boolean() && f->get<bool>();
    } else if (k == "dispatcher_alltoall") {
      const Json* d = b_.get("framework.dispatcher");
      have = d && *d == "alltoall";
    } else if (k == "a2a_overlap") {
      have = b_.flag("framework.moe_a2a_overlap", false);
    } else if (k == "shared_expert_overlap_given") {
      have = b_.get("framework.moe_shared_expert_overlap") != nullptr;
    } else if (k == "mbs_gt_1") {
      have = b_.integer("training.micro_batch_size", 1) > 1;
    } else if (k == "table_full_iteration") {
      const Json& impl = wl_.settings.at("cuda_graph_impl");
      Json scope = wl_.settings.at("cuda_graph_scope");
      if (scope.is_string()) scope = Json::array({scope});
      have = impl == "full_iteration" || (impl == "local" && contains(scope, "full_iteration"));
    } else {
      refuse(kFamilies, fmt::format("a rule's condition '{}' is unknown", k));
    }
    if (have != v.get<bool>()) return false;
  }
  return true;
}
void BridgeImporter::apply(const Json& rules, const std::string& stage) {
  for (const auto& r : rules) {
    if (r.value("stage", std::string("recipe")) != stage || !rule_applies(r, q_) || !when_holds(r))
      continue;
    const std::string src = r.at("source").get<std::string>();
    for (const auto& [k, v] : r.at("set").items()) {
      if (v.is_null())
        b_.erase(k);
      else
        b_.set(k, v, src);
    }
  }
}

// utils/overrides.py set_workload_base_configs: the workload config onto the recipe.
void BridgeImporter::table() {
  const Json& s = wl_.settings;
  static const std::set<std::string> known{
      "family", "num_gpus", "tensor_model_parallel_size", "pipeline_model_parallel_size",
      "context_parallel_size", "virtual_pipeline_model_parallel_size", "expert_model_parallel_size",
      "expert_tensor_parallel_size", "global_batch_size", "micro_batch_size", "use_megatron_fsdp",
      "nccl_ub", "cuda_graph_impl", "cuda_graph_scope", "cpu_offloading_num_layers",
      "recompute_num_layers", "recompute_modules", "moe_flex_dispatcher_backend", "moe_a2a_overlap",
      "peft", "pp_layout", "fp8_dot_product_attention", "cutedsl_fused_grouped_mlp",
      "te_precision_config_file",
      // v0.6.0's flat recipes (utils/utils.py _workload_base_config_from_recipe)
      "fine_grained_activation_offloading", "offload_modules", "outer_dp_sharding_strategy",
      "num_distributed_optimizer_instances", "gtp_weight_remat_size",
      "expert_gtp_weight_remat_size"};
  for (const auto& [k, v] : s.items())
    if (!known.count(k))
      refuse(wl_.config,
             fmt::format("the workload config's field '{}' ({}): moesim does not know its effect",
                         k, v.dump()));
  // The workload config's PEFT scheme: LoRA under --task lora/peft (the family's rules set
  // training.lora), none otherwise.
  const bool peft = s.contains("peft") && !s.at("peft").is_null() && s.at("peft") != Json("none");
  const bool lora_task = q_.task == "lora" || q_.task == "peft";
  if (peft != lora_task || (peft && s.at("peft") != Json("lora")))
    refuse(wl_.config,
           fmt::format("the workload config's peft {} under --task {}: not a combination the "
                       "launcher builds",
                       s.value("peft", Json()).dump(), q_.task));
  const std::string src = cite(fmt::format("{} (set_workload_base_configs)", wl_.config));
  const auto num = [&](const char* k) {
    return s.at(k).is_null() ? std::optional<std::int64_t>() : s.at(k).get<std::int64_t>();
  };
  set_tp(num("tensor_model_parallel_size").value_or(1), src);
  b_.set("parallelism.pp", num("pipeline_model_parallel_size").value_or(1), src);
  b_.set("parallelism.cp", num("context_parallel_size").value_or(1), src);
  set_vpp(num("virtual_pipeline_model_parallel_size"), src);
  b_.set("parallelism.ep", num("expert_model_parallel_size").value_or(1), src);
  set_etp(num("expert_tensor_parallel_size"), src);
  b_.set("training.global_batch_size", num("global_batch_size").value_or(1), src);
  b_.set("training.micro_batch_size", num("micro_batch_size").value_or(1), src);
  if (s.value("use_megatron_fsdp", Json()).is_boolean() && s.at("use_megatron_fsdp").get<bool>())
    fsdp(src);
  if (s.contains("nccl_ub") && s.at("nccl_ub").is_boolean() && s.at("nccl_ub").get<bool>())
    nccl_ub(src + " (_set_nccl_ub_overrides)");
  cuda_graphs(s.at("cuda_graph_impl"), s.at("cuda_graph_scope"), src);
  if (s.value("moe_a2a_overlap", false)) a2a_overlap(src);
  offload_layers(s.at("cpu_offloading_num_layers"), src + " (cpu_offloading_num_layers)");
  flat_fields(src);
  recompute_layers(s.at("recompute_num_layers"), src);
  recompute_modules(s.at("recompute_modules"), src);
  // v0.5.0 on: FP8 core attention (mixed_precision.fp8_dot_product_attention) and the
  // CuTe DSL fused grouped MLP (scripts/performance/utils/overrides.py:238-245 at v0.5.0).
  if (s.value("fp8_dot_product_attention", Json()) == Json(true))
    b_.set("framework.fp8_dot_product_attention", true, src);
  // The override turns the op fuser on (overrides.py 238-243 at v0.5.0) and the performance
  // launcher sets NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 (perf_plugins.py 309 at v0.5.0).
  // cuDNN's CUDNNFE_CLUSTER_OVERLAP_MARGIN, in two-SM clusters: a flat recipe's env_vars
  // give it (v0.6.0); before, the launcher sets 8 with moe_a2a_overlap (perf_plugins.py
  // 311-312 at v0.5.0).
  if (s.value("cutedsl_fused_grouped_mlp", Json()) == Json(true)) {
    b_.set("framework.te_op_fuser", true, src + " (cutedsl_fused_grouped_mlp)");
    b_.set("framework.fused_grouped_mlp", true, src + " (cutedsl_fused_grouped_mlp)");
    const Json margin = wl_.flat ? wl_.env.value("CUDNNFE_CLUSTER_OVERLAP_MARGIN", Json())
                        : s.value("moe_a2a_overlap", false) ? Json(8)
                                                            : Json();
    if (margin.is_number_integer())
      b_.set("framework.fused_grouped_mlp_sm_margin", 2 * margin.get<int>(),
             src + " (CUDNNFE_CLUSTER_OVERLAP_MARGIN=" + margin.dump() + ")");
  }
  // A TransformerEngine precision recipe file: the family rules state what it sets
  // (training.module_precision); BridgeImporter::finish refuses one they do not.
  if (const Json& file = s.value("te_precision_config_file", Json()); !file.is_null())
    b_.set("bridge.te_precision_config_file", file, src);
  // The dispatcher: v0.4.0 on, set_workload_base_configs applies the table's backend (None: the
  // all-to-all); before, the family hands it to the model recipe, and None leaves the recipe's.
  const Json& backend = s.at("moe_flex_dispatcher_backend");
  if (!backend.is_null() || launcher().at("generic_dispatcher").get<bool>())
    dispatcher(backend, src, true);
  table_layout(src);
}

// The fields v0.6.0's flat recipes added: fine-grained activation offloading (the modules
// Megatron-Core's --offload-modules names, as framework.offload), Megatron-FSDP's HSDP and
// the GTP weight rematerialisation, the last two refused (not modeled).
void BridgeImporter::flat_fields(const std::string& src) {
  const Json& s = wl_.settings;
  if (s.value("fine_grained_activation_offloading", Json()) == Json(true)) {
    Json modules = Json::array();
    for (const auto& m : s.value("offload_modules", Json::array())) {
      if (m != "fused_group_mlp") {
        modules.push_back(m);
        continue;
      }
      // Megatron-Core offloads every tensor the fused grouped MLP saves of at least the
      // recipe's min_offloaded_tensor_size elements (moe/experts.py 662-670,
      // fine_grained_activation_offload.py 986-1000 at cd4afffa). The recipes that name it,
      // Nemotron 3 Ultra's, set that size between FC1's input and its output under moe_act
      // recompute, so FC1's output alone moves: moesim's expert_fc1_act
      // (docs/research/nemotron3/ultra.md 3).
      modules.push_back("expert_fc1_act");
      out_.assumed.emplace_back(
          "framework.offload",
          "offload_modules 'fused_group_mlp' as expert_fc1_act: of the tensors the fused grouped "
          "MLP saves, FC1's output alone reaches the recipe's min_offloaded_tensor_size (Nemotron "
          "3 Ultra's 500 M / 350 M elements; the table does not carry the size)");
    }
    b_.set("framework.offload", modules, src + " (fine_grained_activation_offloading)");
    out_.assumed.emplace_back("framework.offload",
                              "the offloaded activations' copies are not priced in the step "
                              "(Megatron overlaps them on a side stream)");
  }
  // Megatron-FSDP's hybrid sharding (perf_recipes/nemotronh/common.py 149-184,
  // deepseek/common.py 88-121 at v0.6.0): the DDP config's instances and outer strategy; the
  // strategy acts only across several instances (megatron-fsdp-hsdp.md 1).
  const Json& instances = s.value("num_distributed_optimizer_instances", Json());
  if (instances.is_number_integer() && instances.get<std::int64_t>() > 1) {
    b_.set("parallelism.optimizer_instances", instances, src);
    const Json& outer = s.value("outer_dp_sharding_strategy", Json());
    if (outer.is_string())
      b_.set("parallelism.outer_dp_sharding", outer, src + " (outer_dp_sharding_strategy)");
  }
  for (const char* k : {"gtp_weight_remat_size", "expert_gtp_weight_remat_size"})
    if (const Json& v = s.value(k, Json()); !v.is_null() && v != Json(1))
      refuse(src, fmt::format("{} {}: GTP weight rematerialisation is not modeled", k, v.dump()));
}

void BridgeImporter::set_tp(std::int64_t tp, const std::string& src) {
  b_.set("parallelism.tp", size_at_least(tp, 1, src), src);
  b_.set("parallelism.sequence_parallel", tp > 1, src + ": sequence parallel when TP > 1");
}
std::int64_t BridgeImporter::size_at_least(std::int64_t v, std::int64_t least,
                                           const std::string& at) const {
  if (v < least) refuse(at, fmt::format("{}: a parallel size is at least {}", v, least));
  return v;
}
void BridgeImporter::set_vpp(std::optional<std::int64_t> vpp, const std::string& src) {
  b_.set("parallelism.vpp", size_at_least(vpp.value_or(1), 1, src), src);
}
// Expert TP None is the final TP (Megatron-Core's model_parallel_config): resolved in finish().
void BridgeImporter::set_etp(std::optional<std::int64_t> etp, const std::string& src) {
  b_.set("bridge.etp", etp ? Json(size_at_least(*etp, 1, src)) : Json(nullptr), src);
}
void BridgeImporter::fsdp(const std::string& src) {
  b_.set("parallelism.fsdp", true, src + " (_set_megatron_fsdp_overrides)");
  // Until v0.5.1 the override turns the precision-aware optimizer off; v0.6.0 keeps it
  // (scripts/performance/utils/overrides.py:94-114 at v0.6.0).
  if (launcher().value("fsdp_disables_precision_aware", true))
    b_.set("bridge.precision_aware_optimizer", false,
           src + ": Megatron-FSDP turns the precision-aware optimizer off");
}
void BridgeImporter::nccl_ub(const std::string& src) {
  nccl_ub_src_ = src;
}
// _set_cuda_graph_overrides: the implementation, then the scopes (a string is one scope).
void BridgeImporter::cuda_graphs(const Json& impl, Json scope, const std::string& src) {
  if (scope.is_string()) scope = Json::array({scope});
  if (impl.is_string()) b_.set("bridge.cuda_graph_impl", impl, src);
  if (scope.is_array()) b_.set("bridge.cuda_graph_scope", scope, src);
}
void BridgeImporter::a2a_overlap(const std::string& src) {
  const std::string why = src + " (_set_moe_a2a_overlap_overrides)";
  b_.set("framework.moe_a2a_overlap", true, why);
  b_.set("framework.delay_wgrad_compute", true, why);
}
// _set_recompute_overrides: full recompute of N layers (block method), or the selective
// modules; from v0.2.1 the modules also make the granularity selective, at v0.2.0 they act
// only where the recipe already is (utils/helpers.py:178-180).
// The workload config and the flags go through the same function in Bridge; so here.
// Megatron-Core's layer offloading (model.cpu_offloading with cpu_offloading_num_layers N,
// activations only: Bridge's _set_recompute_overrides, scripts/performance/utils/
// overrides.py 126-136 at v0.3.0, 163-173 at v0.6.0; docs/research/cpu-layer-offloading.md 1).
// Up to v0.4.x the launcher switches it on for N = 0 too, which offloads nothing.
void BridgeImporter::offload_layers(const Json& layers, const std::string& at) {
  if (layers.is_null() || !layers.is_number_integer() || layers.get<std::int64_t>() <= 0) return;
  b_.set("framework.offload_layers", layers.get<std::int64_t>(), at);
}
void BridgeImporter::recompute_layers(const Json& layers, const std::string& src) {
  if (layers.is_null()) return;
  b_.set("bridge.recompute_num_layers", layers, src + ": full recompute, block method");
  b_.set("bridge.recompute_granularity", "full", src);
}
void BridgeImporter::recompute_modules(const Json& modules, const std::string& src) {
  if (!modules.is_array()) return;
  b_.set("framework.recompute_modules", modules, src);
  if (launcher().at("recompute_sets_selective").get<bool>()) {
    b_.set("bridge.recompute_granularity", "selective", src);
    b_.erase("bridge.recompute_num_layers");
  }
}
// apply_flex_dispatcher_backend: deepep / hybridep where the GPU supports them (DeepEP:
// Ampere, Hopper, B200, B300; HybridEP: compute capability 8-10), else left as it was;
// None: the NCCL all-to-all (the workload config's path); the launcher's -1: unchanged.
void BridgeImporter::dispatcher(const Json& backend, const std::string& src, bool from_table) {
  if (backend.is_null()) {
    b_.set("framework.dispatcher", "alltoall",
           src + ": no flex backend, the all-to-all dispatcher");
    return;
  }
  const std::string be = backend.get<std::string>();
  const Json& gpus = launcher().at(be == "deepep" ? "deepep_gpus" : "hybridep_gpus");
  if ((be != "deepep" && be != "hybridep") || !contains(gpus, q_.gpu)) {
    out_.derived.emplace_back(
        "framework.dispatcher",
        fmt::format("{} not applied on {}: apply_flex_dispatcher_backend skips it (src/megatron/"
                    "bridge/training/flex_dispatcher_backend.py)",
                    be, q_.gpu));
    return;
  }
  b_.set("framework.dispatcher", be, src);
  b_.set("bridge.flex_backend", be, src);
  if (be != "hybridep") return;
  // _set_common_perf_overrides gives HybridEP 32 SMs when the model has it as it runs: the
  // table's backend (the families set it first); chosen later, Megatron-Core's default stands.
  if (from_table) {
    apply(families().at("defaults"), "hybridep");
  } else {
    b_.set("bridge.hybridep_sms", launcher().at("hybridep_default_sms"),
           src +
               ": HybridEP chosen after the common overrides keeps the SMs the model had "
               "(Megatron-Core's 16; "
               "the recipes set 16 themselves from v0.3.1)");
  }
}

// The family's pipeline-layout function (e.g. set_deepseek_v3_pipeline_model_parallel_layout):
// the layout its map holds for (PP, VP) and the MTP layers at the time; a pair the map
// lacks leaves the layout as it was. Returns whether the map held the pair.
bool BridgeImporter::map_layout(std::int64_t pp, std::int64_t vp) {
  if (!family_->contains("layouts")) return false;
  const std::int64_t mtp = b_.integer("training.mtp_layers", 0);
  for (const auto& l : family_->at("layouts")) {
    if (!rule_applies(l, q_) || l.at("pp").get<std::int64_t>() != pp ||
        l.value("vp", std::int64_t{1}) != vp)
      continue;
    const Json& text = mtp == 0 && l.contains("layout_mtp0") ? l.at("layout_mtp0") : l.at("layout");
    if (text.is_null())
      b_.erase("parallelism.pp_layout");
    else
      b_.set("parallelism.pp_layout", text, l.at("source").get<std::string>());
    return true;
  }
  return false;
}
const Json* BridgeImporter::layout_policy() const {
  if (!family_->contains("layout_policy")) return nullptr;
  for (const auto& p : family_->at("layout_policy"))
    if (rule_applies(p, q_)) return &p;
  return nullptr;
}
// The layout after the performance recipe: the table's pp_layout where the family takes it,
// else the family's map on the table's PP and VP (a stale layout where the map misses).
void BridgeImporter::table_layout(const std::string& src) {
  const Json& given_layout =
      wl_.settings.contains("pp_layout") ? wl_.settings.at("pp_layout") : Json();
  const Json* p = layout_policy();
  if (!p) {
    if (given_layout.is_string()) b_.set("parallelism.pp_layout", given_layout, src);
    return;
  }
  if (p->contains("initial"))
    map_layout(p->at("initial").at(0).get<std::int64_t>(),
               p->at("initial").at(1).get<std::int64_t>());
  if (given_layout.is_string() && contains(p->value("table_layout_gpus", Json::array()), q_.gpu)) {
    b_.set("parallelism.pp_layout", given_layout, src);
    return;
  }
  if (contains(p->value("map_gpus", Json::array()), q_.gpu))
    map_layout(b_.integer("parallelism.pp", 1), b_.integer("parallelism.vpp", 1));
}
// set_user_overrides: -pp, -vp or --pipeline_model_parallel_layout run the family's layout
// function again on the final sizes (v0.3.0 on).
void BridgeImporter::relayout() {
  const Json* p = layout_policy();
  if (!p || !p->value("cli_relayout", false)) return;
  map_layout(b_.integer("parallelism.pp", 1), b_.integer("parallelism.vpp", 1));
}

}  // namespace moesim::importer::detail
