// importer/bridge_overrides.cpp: steps 2-4 of the Megatron-Bridge import (importer/
// bridge_detail.hpp): the Hydra-style key=value overrides on the recipe's ConfigContainer
// paths (set_cli_overrides: each path's scenario key and conversion, or why it is ignored or
// refused), the launcher's own flags (set_user_overrides), and set_post_overrides.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "importer/bridge_detail.hpp"

namespace moesim::importer::detail {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;
namespace {

// ---- Hydra overrides: the recipe's ConfigContainer paths --------------------------------

// How a ConfigContainer path reaches the scenario: the scenario key and a conversion,
// or why it is ignored (no effect on step time or memory). Paths not here are refused.
struct HydraPath {
  std::string_view path;
  std::string_view key;   // scenario key ("" = ignored, see why)
  std::string_view kind;  // the conversion BridgeImporter::hydra() applies; redirect /
                          // unmodeled: refused (why)
  std::string_view why = {};
};

const std::vector<HydraPath>& hydra_paths() {
  static const std::vector<HydraPath> v{
      {"model.tensor_model_parallel_size", "parallelism.tp", "size"},
      {"model.pipeline_model_parallel_size", "parallelism.pp", "size"},
      {"model.context_parallel_size", "parallelism.cp", "size"},
      {"model.virtual_pipeline_model_parallel_size", "parallelism.vpp", "vpp"},
      {"model.expert_model_parallel_size", "parallelism.ep", "size"},
      {"model.expert_tensor_parallel_size", "bridge.etp", "size_or_null"},
      {"model.sequence_parallel", "parallelism.sequence_parallel", "bool"},
      {"model.pipeline_model_parallel_layout", "parallelism.pp_layout", "string"},
      {"model.seq_length", "training.seq_length", "size"},
      {"dataset.sequence_length", "bridge.dataset_seq_length", "size"},
      {"dataset.seq_length", "bridge.dataset_seq_length", "size"},
      {"train.global_batch_size", "training.global_batch_size", "size"},
      {"train.micro_batch_size", "training.micro_batch_size", "size"},
      {"model.mtp_num_layers", "training.mtp_layers", "int_or_zero"},
      {"model.moe_router_force_load_balancing", "bridge.force_balance", "bool"},
      {"model.moe_token_dispatcher_type", "framework.dispatcher", "dispatcher"},
      {"model.moe_flex_dispatcher_backend", "framework.dispatcher", "backend"},
      {"model.moe_hybridep_num_sms", "bridge.hybridep_sms", "size"},
      {"model.moe_deepep_num_sms", "bridge.deepep_sms", "size"},
      {"model.cuda_graph_impl", "bridge.cuda_graph_impl", "string"},
      {"model.cuda_graph_scope", "bridge.cuda_graph_scope", "scope"},
      {"model.recompute_modules", "framework.recompute_modules", "list"},
      {"model.moe_router_fusion", "stack.router_fusion", "bool"},
      {"model.batch_p2p_sync", "framework.batch_p2p_sync", "bool"},
      {"model.moe_shared_expert_overlap", "framework.moe_shared_expert_overlap", "bool"},
      {"model.moe_expert_capacity_factor", "training.token_drop", "capacity"},
      {"model.cross_entropy_fusion_impl", "framework.cross_entropy", "string"},
      {"comm_overlap.tp_comm_overlap", "framework.tp_comm_overlap", "bool"},
      {"comm_overlap.overlap_moe_expert_parallel_comm", "framework.moe_a2a_overlap", "bool"},
      {"comm_overlap.delay_wgrad_compute", "framework.delay_wgrad_compute", "bool"},
      {"comm_overlap.overlap_grad_reduce", "framework.overlap_grad_reduce", "bool"},
      {"comm_overlap.overlap_param_gather", "framework.overlap_param_gather", "bool"},
      {"comm_overlap.overlap_param_gather_with_optimizer_step",
       "framework.overlap_param_gather_with_optimizer_step", "bool"},
      // Unset, CommOverlapConfig aligns at PP > 1 and VP > 1 (comm_overlap.py
      // _get_optimizer_overlap_cfgs), as the loader does under the interleaved schedule.
      {"comm_overlap.align_param_gather", "framework.align_param_gather", "bool"},
      // Paths Bridge sets again at setup from another one: refused, naming the one to give.
      {"ddp.overlap_grad_reduce", "", "redirect",
       "comm_overlap.overlap_grad_reduce (CommOverlapConfig sets the DDP's at setup)"},
      {"ddp.overlap_param_gather", "", "redirect",
       "comm_overlap.overlap_param_gather (CommOverlapConfig sets the DDP's at setup)"},
      {"ddp.grad_reduce_in_fp32", "", "redirect",
       "mixed_precision.grad_reduce_in_fp32 (the mixed-precision config sets the DDP's at setup)"},
      {"optimizer.overlap_param_gather_with_optimizer_step", "", "redirect",
       "comm_overlap.overlap_param_gather_with_optimizer_step (CommOverlapConfig resets the "
       "optimizer's at setup)"},
      {"ddp.use_distributed_optimizer", "framework.distributed_optimizer", "bool"},
      {"optimizer.use_distributed_optimizer", "framework.distributed_optimizer", "bool"},
      {"mixed_precision.grad_reduce_in_fp32", "bridge.grad_reduce_in_fp32", "bool"},
      {"ddp.use_megatron_fsdp", "parallelism.fsdp", "bool"},
      {"ddp.bucket_size", "framework.ddp_bucket_size", "size_or_null"},
      {"optimizer.use_precision_aware_optimizer", "bridge.precision_aware_optimizer", "bool"},
      {"optimizer.main_grads_dtype", "", "unmodeled",
       "the optimizer's own main-gradient dtype is not modeled: moesim's follows the DDP gradient "
       "buffer, "
       "mixed_precision.grad_reduce_in_fp32"},
      {"optimizer.exp_avg_dtype", "bridge.exp_avg_dtype", "torch_dtype"},
      {"optimizer.exp_avg_sq_dtype", "bridge.exp_avg_sq_dtype", "torch_dtype"},
      {"mixed_precision.fp8_param_gather", "framework.fp8_param_gather", "bool"},
      {"mixed_precision.fp8_param", "framework.fp8_param_gather", "bool"},
      // no effect on step time or memory
      {"train.train_iters", "", "", "steps to run"},
      {"train.eval_iters", "", "", "evaluation"},
      {"train.eval_interval", "", "", "evaluation"},
      {"train.manual_gc", "", "", "garbage collection timing"},
      {"train.manual_gc_interval", "", "", "garbage collection timing"},
      {"logger.", "", "", "logging"},
      {"checkpoint.", "", "", "checkpoints"},
      {"scheduler.", "", "", "learning rate"},
      {"profiling.", "", "", "profiling"},
      {"rerun_state_machine.", "", "", "checks"},
      {"rng.", "", "", "seeds"},
      {"tokenizer.tokenizer_model", "", "", "the tokenizer's files"},
      {"dataset.num_workers", "", "", "data loading"},
      {"dataset.data_path", "", "", "data paths"},
      {"dataset.blend", "", "", "data"},
      {"dataset.split", "", "", "data"},
      {"optimizer.lr", "", "", "learning rate"},
      {"optimizer.min_lr", "", "", "learning rate"},
      {"optimizer.weight_decay", "", "", "regularization"},
      {"optimizer.clip_grad", "", "", "clipping threshold"},
      {"optimizer.adam_beta1", "", "", "Adam's constants"},
      {"optimizer.adam_beta2", "", "", "Adam's constants"},
      {"optimizer.adam_eps", "", "", "Adam's constants"},
      {"ddp.check_for_nan_in_grad", "", "", "checks"},
      {"ddp.check_for_large_grads", "", "", "checks"},
      {"model.apply_rope_fusion", "framework.rope_fusion", "bool"},
      {"dist.", "", "", "process group setup"},
  };
  return v;
}

const HydraPath* hydra_path(const std::string& key) {
  for (const auto& h : hydra_paths())
    if (h.path == key || (h.path.ends_with(".") && key.starts_with(h.path))) return &h;
  return nullptr;
}

// A Hydra value: null/None, true/false, a number, [a,b] or a string (quotes removed).
Json hydra_value(std::string t, const std::string& key, const std::string& source) {
  if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"') && t.back() == t.front())
    return Json(t.substr(1, t.size() - 2));
  const std::string l = lower(t);
  if (l == "null" || l == "none") return Json(nullptr);
  if (l == "true") return Json(true);
  if (l == "false") return Json(false);
  if (auto i = to_int(t)) return Json(*i);
  if (auto d = to_double(t)) return Json(*d);
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
    Json out = Json::array();
    const std::string inner = t.substr(1, t.size() - 2);
    if (inner.find_first_not_of(' ') == std::string::npos) return out;
    for (auto p : split(inner, ',')) {
      const auto a = p.find_first_not_of(' '), z = p.find_last_not_of(' ');
      if (a == std::string::npos)
        throw InputError(source, key, fmt::format("'{}': an empty element in the list", t));
      out.push_back(hydra_value(p.substr(a, z - a + 1), key, source));
    }
    return out;
  }
  return Json(t);
}

}  // namespace

// ---- step 2: Hydra key=value -------------------------------------------------------------

void BridgeImporter::hydra() {
  recipe_seq_ = b_.integer("training.seq_length", 0);
  std::vector<std::string> unknown;
  for (const auto& [key, raw] : args_.hydra) {
    const HydraPath* h = hydra_path(key);
    if (!h) {
      unknown.push_back(key);
      continue;
    }
    const std::string src = fmt::format("{}={}", key, raw);
    const Json v = hydra_value(raw, key, opts_.source);
    // A family's "refused_hydra": a path's value its code cannot run with (each cites where).
    if (family_->contains("refused_hydra"))
      for (const auto& r : family_->at("refused_hydra"))
        if (r.at("path") == key && r.at("value") == v && rule_applies(r, q_))
          refuse(key, fmt::format("{}: {}", raw, r.at("why").get<std::string>()));
    if (h->kind == "redirect")
      refuse(key, fmt::format("Megatron-Bridge sets it again at setup: give {}", h->why));
    if (h->kind == "unmodeled") refuse(key, std::string(h->why));
    if (h->key.empty()) {
      out_.ignored.push_back(fmt::format("{} ({})", src, h->why));
      continue;
    }
    const std::string kind(h->kind), k(h->key);
    const auto bad = [&](const char* what) {
      refuse(key, fmt::format("'{}': expected {}", raw, what));
    };
    if (kind == "size") {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1) bad("a whole number, at least 1");
      b_.set(k, v, src);
    } else if (kind == "size_or_null") {
      if (!v.is_null() && (!v.is_number_integer() || v.get<std::int64_t>() < 1))
        bad("a whole number (at least 1) or null");
      if (v.is_null() && k != "bridge.etp")
        b_.erase(k);
      else
        b_.set(k, v, src);
    } else if (kind == "vpp" || kind == "int_or_zero") {
      if (!v.is_null() &&
          (!v.is_number_integer() || v.get<std::int64_t>() < (kind == "vpp" ? 1 : 0)))
        bad(kind == "vpp" ? "a whole number (at least 1) or null" : "a whole number or null");
      b_.set(k, v.is_null() ? Json(kind == "vpp" ? 1 : 0) : v, src);
    } else if (kind == "bool") {
      if (!v.is_boolean()) bad("true or false");
      b_.set(k, v, src);
    } else if (kind == "string") {
      if (v.is_null())
        b_.erase(k);
      else if (!v.is_string())
        bad("a string");
      else
        b_.set(k, v, src);
    } else if (kind == "list" || kind == "scope") {
      if (v.is_null())
        b_.set(k, Json::array(), src);
      else if (v.is_string())
        b_.set(k, Json::array({v}), src);
      else if (v.is_array() &&
               std::all_of(v.begin(), v.end(), [](const Json& x) { return x.is_string(); }))
        b_.set(k, v, src);
      else
        bad("a list of names");
    } else if (kind == "dispatcher") {
      if (!v.is_string() || (v != "alltoall" && v != "allgather" && v != "flex"))
        bad("alltoall, allgather or flex");
      if (v == "flex")  // the backend the model has; Megatron-Core's default is DeepEP
        dispatcher(b_.get("bridge.flex_backend") ? *b_.get("bridge.flex_backend") : Json("deepep"),
                   src, false);
      else
        b_.set(k, v, src);
    } else if (kind == "backend") {
      if (!v.is_string() || (v != "deepep" && v != "hybridep")) bad("deepep or hybridep");
      b_.set("bridge.flex_backend", v, src);
      const Json* d = b_.get(k);
      if (d && (*d == "deepep" || *d == "hybridep")) dispatcher(v, src, false);
    } else if (kind == "torch_dtype") {
      const std::string s = v.is_string() ? lower(v.get<std::string>()) : "";
      if (s == "torch.bfloat16" || s == "bf16" || s == "bfloat16")
        b_.set(k, "bf16", src);
      else if (s == "torch.float32" || s == "fp32" || s == "float32")
        b_.set(k, "fp32", src);
      else
        bad("torch.bfloat16 or torch.float32");
    } else if (kind == "capacity") {
      if (v.is_null() || (v.is_number() && v.get<double>() < 0))
        b_.erase(k);
      else if (v.is_number())
        b_.set(k, Json{{"capacity_factor", v}}, src);
      else
        bad("a number or null");
    }
  }
  if (!unknown.empty())
    refuse(unknown.front(),
           fmt::format("override{} of the recipe's configuration that moesim does not map: {} (the "
                       "paths it reads are listed in docs/COMMANDS.md)",
                       unknown.size() > 1 ? "s" : "", fmt::join(unknown, ", ")));
}

// ---- step 3: the launcher's flags (set_user_overrides) ------------------------------------
void BridgeImporter::user() {
  const auto has = [&](const char* d) {
    const Json* v = given(d);
    return v && !v->is_null();
  };
  const auto integer = [&](const char* d) { return given(d)->get<std::int64_t>(); };
  if (has("use_megatron_fsdp") && given("use_megatron_fsdp")->get<bool>())
    fsdp(flag("use_megatron_fsdp"));
  if (has("nccl_ub") && given("nccl_ub")->get<bool>()) nccl_ub(flag("nccl_ub"));
  if (given("cuda_graph_impl") || given("cuda_graph_scope"))
    cuda_graphs(given("cuda_graph_impl") ? *given("cuda_graph_impl") : Json(),
                given("cuda_graph_scope") ? *given("cuda_graph_scope") : Json(),
                "the command's CUDA graph flags");
  const auto value = [&](const char* d) { return given(d) ? *given(d) : Json(); };
  offload_layers(value("activation_offload_layers"), flag("activation_offload_layers"));
  recompute_layers(value("recompute_num_layers"), flag("recompute_num_layers"));
  recompute_modules(value("recompute_modules"), flag("recompute_modules"));
  if (has("moe_a2a_overlap") && given("moe_a2a_overlap")->get<bool>())
    a2a_overlap(flag("moe_a2a_overlap"));
  if (has("use_tokendrop")) {
    // apply_moe_token_drop asserts the all-to-all dispatcher (generic launcher, both values).
    const Json* d = b_.get("framework.dispatcher");
    if (d && *d != "alltoall")
      refuse(flag("use_tokendrop"),
             fmt::format("Megatron-Bridge's token-drop setting needs the all-to-all dispatcher "
                         "and the recipe has {} as the flag is read, before "
                         "--moe_flex_dispatcher_backend (the launcher would stop): "
                         "give model.moe_token_dispatcher_type=alltoall",
                         d->get<std::string>()));
    if (given("use_tokendrop")->get<bool>()) {
      // apply_moe_token_drop's defaults: capacity 1.0, inputs padded to it
      // (src/megatron/bridge/training/utils/moe_token_drop.py 25-29 at v0.6.0).
      b_.set("training.token_drop", Json{{"capacity_factor", 1.0}, {"pad", true}},
             flag("use_tokendrop") + ": apply_moe_token_drop");
      b_.set("bridge.force_balance", false, flag("use_tokendrop") + ": forced balance off");
    } else {
      b_.erase("training.token_drop");
      b_.set("bridge.force_balance", true, flag("use_tokendrop") + ": dropless, forced balance");
    }
  }
  // A size flag given: at least 1, onto its scenario key.
  const auto set_size = [&](const char* d, const char* key) {
    if (has(d)) b_.set(key, size_at_least(integer(d), 1, flag(d)), flag(d));
  };
  if (has("tensor_model_parallel_size"))
    set_tp(integer("tensor_model_parallel_size"), flag("tensor_model_parallel_size"));
  set_size("pipeline_model_parallel_size", "parallelism.pp");
  set_size("context_parallel_size", "parallelism.cp");
  bool vp_given = false;
  if (const Json* v = given("virtual_pipeline_model_parallel_size");
      v && !(v->is_number() && v->get<std::int64_t>() == -1)) {
    set_vpp(v->is_null() ? std::nullopt : std::optional<std::int64_t>(v->get<std::int64_t>()),
            flag("virtual_pipeline_model_parallel_size"));
    vp_given = true;
  }
  set_size("expert_model_parallel_size", "parallelism.ep");
  if (has("expert_tensor_parallel_size"))
    set_etp(integer("expert_tensor_parallel_size"), flag("expert_tensor_parallel_size"));
  set_size("global_batch_size", "training.global_batch_size");
  set_size("micro_batch_size", "training.micro_batch_size");
  if (has("seq_length") && integer("seq_length") != b_.integer("training.seq_length", 0))
    refuse(flag("seq_length"),
           fmt::format("{} sets the mock dataset's sequence length only; the model's stays {} and "
                       "Megatron-Bridge's config check stops the run: set model.seq_length={} "
                       "instead",
                       flag("seq_length"), b_.integer("training.seq_length", 0),
                       integer("seq_length")));
  if (has("hidden_size") || has("num_layers") || has("first_k_dense_replace"))
    refuse(has("hidden_size")  ? flag("hidden_size")
           : has("num_layers") ? flag("num_layers")
                               : flag("first_k_dense_replace"),
           "changes the model's shape: give the model as a scenario (moesim's model presets are "
           "the published "
           "shapes)");
  if (has("tokenizer_type") && text("tokenizer_type") == "NullTokenizer")
    refuse(flag("tokenizer_type"),
           "NullTokenizer sets the vocabulary to --vocab_size: give the model as a scenario");
  if (has("tokenizer_type"))
    out_.ignored.push_back(
        fmt::format("{} {} (the tokenizer's files: the model preset's vocabulary)",
                    flag("tokenizer_type"), text("tokenizer_type")));
  // --deterministic (v0.5.0 on): apply_determinism_overrides turns the fused cross-entropy and
  // TP communication overlap off (src/megatron/bridge/recipes/utils/determinism_utils.py:43-47).
  if (has("deterministic") && given("deterministic")->get<bool>()) {
    b_.set("framework.cross_entropy", "unfused",
           flag("deterministic") + ": cross_entropy_loss_fusion False");
    b_.set("framework.tp_comm_overlap", false,
           flag("deterministic") + ": comm_overlap.tp_comm_overlap False");
    out_.assumed.emplace_back(flag("deterministic"),
                              "deterministic kernels and NCCL's ring algorithm "
                              "(NCCL_ALGO=Ring, NVTE_ALLOW_NONDETERMINISTIC_ALGO=0): not priced");
  }
  if (has("pipeline_model_parallel_layout"))
    b_.set("parallelism.pp_layout", *given("pipeline_model_parallel_layout"),
           flag("pipeline_model_parallel_layout"));
  else if (has("pipeline_model_parallel_size") || vp_given)
    relayout();
  if (const Json* v = given("moe_flex_dispatcher_backend"))
    dispatcher(*v, flag("moe_flex_dispatcher_backend"), false);
}

// ---- step 4: set_post_overrides ------------------------------------------------------------
// The families tabulated train with Adam (the Muon exceptions are the Kimi family's).
void BridgeImporter::bf16_precision_aware() {
  if (q_.dtype == "bf16")
    b_.set("bridge.precision_aware_optimizer", true,
           cite("set_post_overrides: the precision-aware optimizer under BF16 with Adam"));
}

void BridgeImporter::post() {
  const Json& l = launcher();
  bf16_precision_aware();
  const std::int64_t pp = b_.integer("parallelism.pp", 1), vp = b_.integer("parallelism.vpp", 1);
  if (dp() > 1 && pp > 1 && vp > 1 && !contains(l.at("opgwos_excluded_dtypes"), q_.dtype)) {
    if (b_.flag("framework.overlap_param_gather", true))
      b_.set("framework.overlap_param_gather_with_optimizer_step", true,
             cite("set_post_overrides: the parameter all-gather overlapped with the optimizer "
                  "step (DP, PP and VP > 1)"));
    else
      out_.derived.emplace_back(
          "framework.overlap_param_gather_with_optimizer_step",
          "false: the launcher asks for it (DP, PP and VP > 1), but the recipe does not overlap "
          "the parameter all-gather, so there is nothing to overlap");
  }
  const Json* user_gbs = given("global_batch_size");
  if (!user_gbs || user_gbs->is_null()) {
    const std::int64_t table_gpus = wl_.settings.at("num_gpus").get<std::int64_t>();
    const std::int64_t table_gbs = wl_.settings.at("global_batch_size").get<std::int64_t>();
    const bool only_table_gbs = l.at("gbs_scaling") == "when_ng_differs_and_gbs_is_the_table_s";
    if (l.at("gbs_scaling") == "dp_ratio") {
      if (b_.integer("training.global_batch_size", 0) == table_gbs)  // still the recipe's
        weak_scale(table_gpus, table_gbs);
    } else if (q_.gpus != table_gpus &&
               (!only_table_gbs || b_.integer("training.global_batch_size", 0) == table_gbs)) {
      const auto gbs =
          static_cast<std::int64_t>(static_cast<double>(table_gbs) /
                                    static_cast<double>(table_gpus) * static_cast<double>(q_.gpus));
      b_.set("training.global_batch_size", gbs,
             cite(fmt::format(
                 "set_post_overrides: the workload config's GBS {} x {} / {} GPUs (no -gb)",
                 table_gbs, q_.gpus, table_gpus)));
    }
  }
}

// v0.6.0 on, a recipe of another GPU count: the global batch times DP(-ng) / DP(the
// recipe's count), DP = GPUs / (TP x PP x CP) with the sizes after the overrides, on the
// recipe's own count with its own sizes (utils/overrides.py set_post_overrides,
// scripts/common/benchmark_parallelism.py at v0.6.0); Bridge stops on a fraction.
void BridgeImporter::weak_scale(std::int64_t table_gpus, std::int64_t table_gbs) {
  const Json& s = wl_.settings;
  const auto size = [&](const char* k) {
    return s.at(k).is_null() ? std::int64_t{1} : s.at(k).get<std::int64_t>();
  };
  const std::int64_t model_parallel = size("tensor_model_parallel_size") *
                                      size("pipeline_model_parallel_size") *
                                      size("context_parallel_size");
  const std::int64_t table_dp = table_gpus / model_parallel, now_dp = dp();
  if (table_dp <= 0 || now_dp <= 0 || (table_gbs * now_dp) % table_dp != 0)
    refuse(flag("num_gpus"),
           fmt::format("weak scaling the recipe of {} GPUs (GBS {}, DP {}) to DP {} gives no whole "
                       "global batch; Megatron-Bridge stops there too (give -gb)",
                       table_gpus, table_gbs, table_dp, now_dp));
  if (now_dp == table_dp) return;
  b_.set("training.global_batch_size", table_gbs * now_dp / table_dp,
         cite(fmt::format("set_post_overrides: weak scaling, the recipe's GBS {} x DP {} / DP {} "
                          "(no -gb)",
                          table_gbs, now_dp, table_dp)));
}

}  // namespace moesim::importer::detail
