#include "support/scenario_gen.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "config/load.hpp"
#include "hw_models/dispatcher.hpp"
#include "schedules/schedule_kind.hpp"
#include "support/fuzz_case.hpp"
#include "workload/options.hpp"

namespace moesim::test {
namespace {

using config::Json;

template <class E>
std::vector<std::string> names(const sim_core::NameTable<E>& t) {
  std::vector<std::string> out;
  for (const auto& e : t.entries()) out.emplace_back(e.name);
  return out;
}

std::vector<std::int64_t> divisors_of(std::int64_t n, std::int64_t cap) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d <= std::min(n, cap); ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// "E" + stages of decoder layers split as given + "L", written with repetitions where
// neighbours agree, so the parser's grammar is exercised the way users write layouts.
std::string layout_string(const std::vector<std::int64_t>& per_stage, std::int64_t mtp, Rng& rng) {
  std::vector<std::string> stages;
  for (std::size_t i = 0; i < per_stage.size(); ++i) {
    std::string s;
    if (i == 0) s += "E";
    if (per_stage[i] > 0)
      s += rng.chance(0.5) && per_stage[i] > 1
               ? "t*" + std::to_string(per_stage[i])
               : std::string(static_cast<std::size_t>(per_stage[i]), 't');
    if (i + 1 == per_stage.size()) s += std::string(static_cast<std::size_t>(mtp), 'm') + "L";
    stages.push_back(s);
  }
  // Collapse runs of equal middle stages into "(X|)*N".
  std::string out;
  for (std::size_t i = 0; i < stages.size();) {
    std::size_t j = i;
    while (j + 1 < stages.size() && stages[j + 1] == stages[i]) ++j;
    const std::size_t run = j - i + 1;
    const bool last = j + 1 == stages.size();
    if (run > 1 && !last && rng.chance(0.7)) {
      out += "(" + stages[i] + "|)*" + std::to_string(run);
    } else {
      for (std::size_t k = i; k <= j; ++k) out += stages[k] + (k + 1 == stages.size() ? "" : "|");
    }
    if (rng.chance(0.1)) out += ",";  // Megatron's cosmetic comma
    i = j + 1;
  }
  return out;
}

const std::vector<std::string> kMalformedLayouts = {"",
                                                    "E|",
                                                    "Et*3|(tt|)*29,m|L",
                                                    "(t",
                                                    "t)*2",
                                                    "t*",
                                                    "t*0",
                                                    "t*-1",
                                                    "(t|)*99999999999",
                                                    "EEt|L",
                                                    "Lt|E",
                                                    "tt||tt",
                                                    "|",
                                                    ",,,",
                                                    "m",
                                                    "E(t|)*0L",
                                                    "Ett*99999999999999999999",
                                                    "x",
                                                    "(t*999999)*999999",
                                                    "E|t*4|L",
                                                    "Et|tL|",
                                                    "()*3",
                                                    "E((t|)*2)*2L",
                                                    "t*2*3",
                                                    "Et|mL",
                                                    "EtL",
                                                    "E|(t|)*4tmL"};

// One random edit that makes a valid-looking scenario suspect: a key typo, a wrong
// type, an out-of-range or non-dividing number, an unknown name.
void perturb(Json& j, Rng& rng) {
  // Every (object, key) pair below the top level and the top level itself.
  std::vector<std::pair<Json*, std::string>> slots;
  const auto collect = [&](auto&& self, Json& o) -> void {
    if (!o.is_object()) return;
    for (auto& [k, v] : o.items()) {
      slots.emplace_back(&o, k);
      if (v.is_object()) self(self, v);
    }
  };
  collect(collect, j);
  if (slots.empty()) return;
  auto [obj, key] = slots[rng.below(slots.size())];
  switch (rng.below(7)) {
    case 0: {  // a typo in a key
      std::string typo = key;
      const std::size_t at = rng.below(typo.size());
      switch (rng.below(3)) {
        case 0:
          typo.erase(at, 1);
          break;
        case 1:
          typo.insert(at, 1, static_cast<char>('a' + rng.below(26)));
          break;
        default:
          typo[at] = typo[at] == '_' ? '-' : static_cast<char>(std::toupper(typo[at]));
          break;
      }
      if (typo.empty() || obj->contains(typo)) return;
      Json v = (*obj)[key];
      obj->erase(key);
      (*obj)[typo] = std::move(v);
      return;
    }
    case 1: {  // a wrong type
      const Json wrong[] = {Json("x"),     Json(1.5),     Json(true),
                            Json(nullptr), Json::array(), Json::object(),
                            Json("8"),     Json(-3),      Json::array({1, 2})};
      (*obj)[key] = wrong[rng.below(std::size(wrong))];
      return;
    }
    case 2: {  // a hostile number
      const Json nums[] = {Json(0),     Json(-1),    Json(3),
                           Json(7),     Json(65536), Json(1 << 20),
                           Json(1e300), Json(2),     Json(std::int64_t{1} << 40),
                           Json(0.0),   Json(1e-9)};
      (*obj)[key] = nums[rng.below(std::size(nums))];
      return;
    }
    case 3:  // a missing key
      obj->erase(key);
      return;
    case 4: {  // a parallel degree that divides nothing
      const char* deg[] = {"tp", "pp", "vpp", "ep", "etp", "cp"};
      if (!j["parallelism"].is_object()) return;  // an earlier edit changed its type
      j["parallelism"][deg[rng.below(6)]] =
          rng.pick({0, 3, 5, 6, 7, 12, 16, 24, 64, 128, 512, 65537});
      return;
    }
    case 5: {  // an unknown name in a closed set
      const char* where[][2] = {{"framework", "dispatcher"},
                                {"parallelism", "pipeline_schedule"},
                                {"training", "precision"},
                                {"framework", "optimizer"},
                                {"framework", "optimizer_state_dtype"},
                                {"routing", "balance"}};
      const auto& w = where[rng.below(std::size(where))];
      if (j.contains(w[0]) && !j[w[0]].is_object()) return;
      const char* bad[] = {"deep-ep", "1F1B", "fp4", "sgd", "", "zb-v", "hybrid_ep", "interleaved"};
      j[w[0]][w[1]] = bad[rng.below(std::size(bad))];
      return;
    }
    default: {  // an unknown key
      (*obj)[rng.chance(0.5) ? "extra" : key + "s"] = 1;
      return;
    }
  }
}

}  // namespace

ScenarioGenerator::ScenarioGenerator(std::uint64_t seed)
    : seed_(seed),
      systems_(config::preset_names(config::PresetKind::system)),
      models_(config::preset_names(config::PresetKind::model)),
      dispatchers_(names(hw_models::dispatcher_names())),
      schedules_(names(schedules::schedule_names())) {}

int ScenarioGenerator::combinations() const {
  return static_cast<int>(systems_.size() * dispatchers_.size() * schedules_.size());
}

GeneratedScenario ScenarioGenerator::generate(int index) const {
  Rng rng = Rng::of(seed_, index);
  GeneratedScenario g;
  g.seed = seed_;
  g.index = index;
  if (index < combinations()) {
    auto i = static_cast<std::size_t>(index);
    g.schedule = schedules_[i % schedules_.size()];
    i /= schedules_.size();
    g.dispatcher = dispatchers_[i % dispatchers_.size()];
    i /= dispatchers_.size();
    g.system = systems_[i % systems_.size()];
    g.model = models_[static_cast<std::size_t>(index) % models_.size()];
  } else {
    g.system = rng.pick(systems_);
    g.model = rng.pick(models_);
    g.dispatcher = rng.pick(dispatchers_);
    g.schedule = rng.pick(schedules_);
  }
  // DeepEP and HybridEP need experts: a dense model drawn beside them is mostly swapped
  // for the next MoE preset (the dense one is drawn with the NCCL dispatchers).
  if ((g.dispatcher == "deepep" || g.dispatcher == "hybridep") && rng.chance(0.85)) {
    for (std::size_t k = 0; k < models_.size() && !config::load_model_preset(g.model).is_moe();
         ++k) {
      const auto at = std::find(models_.begin(), models_.end(), g.model) - models_.begin();
      g.model = models_[(static_cast<std::size_t>(at) + 1) % models_.size()];
    }
  }
  const auto sys = config::load_system_preset(g.system);
  auto model = config::load_model_preset(g.model);
  const bool blackwell = sys.gpu.arch == hw_models::GpuArch::blackwell;
  const auto per_node = static_cast<std::int64_t>(sys.node.gpus_per_node.value);

  Json j = Json::object();
  j["name"] = "fuzz-" + std::to_string(seed_) + "-" + std::to_string(index);
  j["description"] = g.system + " " + g.model + " " + g.dispatcher + " " + g.schedule;
  if (rng.chance(0.15)) {  // what-if hardware from the preset
    Json s = {{"base", g.system}};
    switch (rng.below(7)) {
      case 0:
        s["nvlink"] = {{"bw_GBps", rng.pick({1, 100, 1800, 3600})}};
        break;
      case 1:
        s["gpu"] = {{"sm_count", rng.pick({8, 64, 132, 148, 200})}};
        break;
      case 2:
        s["network"] = {{"nic_Gbps", rng.pick({1, 100, 400, 800, 1600})}};
        break;
      case 3:
        s["network"] = {{"nics_per_gpu", rng.pick({0, 1, 2, 8})}, {"planes", rng.pick({1, 2, 8})}};
        break;
      case 4:
        s["nvlink"] = {{"domain_gpus", rng.pick({1, 4, 8, 36, 72, 576})}};
        break;
      case 5:
        s["node"] = {{"gpus_per_node", rng.pick({1, 2, 4, 8, 16})}};
        break;
      default:
        s["profiles"] = Json::array();
        break;
    }
    j["system"] = s;
  } else {
    j["system"] = g.system;
  }

  // Fewer layers keep valid draws fast; the full presets run too.
  if (rng.chance(0.5)) {
    const std::int64_t layers = rng.pick({2, 4, 6, 8, 12, 16, 24});
    const std::int64_t dense = model.num_dense_layers();
    Json m = {{"base", g.model}, {"num_hidden_layers", std::max(layers, dense + 1)}};
    model.num_layers = std::max(layers, dense + 1);
    // A per-layer attention pattern (GPT-OSS's layer_types) shrinks with the layers.
    if (model.any_windowed()) {
      Json types = Json::array();
      for (std::int64_t i = 0; i < model.num_layers; ++i)
        types.push_back(
            model.sliding_layer[static_cast<std::size_t>(i) % model.sliding_layer.size()]
                ? "sliding_attention"
                : "full_attention");
      m["layer_types"] = types;
    }
    // A hybrid model's pattern shrinks with the layers too (its first `layers` symbols,
    // which hold Mamba, MoE and attention layers from 5 on).
    if (model.hybrid()) {
      std::string pattern;
      for (std::int64_t i = 0; i < model.num_layers; ++i)
        pattern += workload::hybrid_layer_names().name(
            model.hybrid_layers[static_cast<std::size_t>(i) % model.hybrid_layers.size()]);
      m["hybrid_override_pattern"] = pattern;
    }
    j["model"] = m;
  } else {
    j["model"] = g.model;
  }
  const bool moe = model.is_moe();

  // The pipeline: the schedule decides pp and vpp.
  std::int64_t pp = 1, vpp = 1;
  if (g.schedule == "1f1b" || g.schedule == "zb-h1") {
    pp = rng.pick({1, 2, 2, 4, 4, 8});
  } else if (g.schedule == "interleaved-1f1b") {
    pp = rng.pick({2, 2, 4, 8});
    vpp = rng.pick({2, 2, 3, 4});
  } else if (g.schedule == "dualpipe") {
    pp = rng.pick({2, 2, 4, 8});
  } else {  // dualpipev
    pp = rng.pick({1, 2, 2, 4, 4, 8});
    vpp = 2;
  }
  // Not more virtual stages than layers (+ the embedding / loss stages a layout may add).
  while (pp * vpp > model.num_layers && pp > 2) pp /= 2;

  std::vector<std::int64_t> tps;
  for (std::int64_t t : {1, 1, 1, 2, 2, 4, 8})
    if (model.num_heads % t == 0 && model.num_kv_heads % t == 0 &&
        (model.num_dense_layers() == 0 || model.ffn_hidden_size % t == 0) &&
        model.gdn.key_heads % t == 0 && model.gdn.value_heads % t == 0 &&
        (!model.is_dsv4() || t == 1))  // DeepSeek-V4's attention runs at TP 1
      tps.push_back(t);
  const std::int64_t tp = rng.pick(tps);
  // Windowed attention and Gated DeltaNet layers have no ring CP in moesim (refused): such
  // models draw cp 1.
  const std::int64_t cp = !model.any_windowed() && !model.hybrid() && model.linear_layer.empty() &&
                                  !model.is_dsv4() && rng.chance(0.15)
                              ? 2
                              : 1;
  std::int64_t dp = rng.pick({1, 2, 2, 4, 8, 16, 32, 64});
  // Whole nodes once the job is larger than one; at most 1024 GPUs.
  while (tp * pp * cp * dp > per_node && (tp * pp * cp * dp) % per_node != 0) ++dp;
  while (tp * pp * cp * dp > 1024 && dp > 1) dp /= 2;
  const std::int64_t gpus = tp * pp * cp * dp;
  const std::int64_t etp = moe && tp > 1 && rng.chance(0.3) ? tp : 1;
  std::int64_t ep = 1;
  if (moe) {
    std::vector<std::int64_t> eps;
    for (auto d : divisors_of(gpus / pp / etp, 256))
      if (model.num_experts % d == 0) eps.push_back(d);
    ep = eps.back();
    if (rng.chance(0.4)) ep = rng.pick(eps);
  }

  // Batches: few microbatches, but enough for DualPipe (2 x pp).
  const std::int64_t mbs = rng.pick({1, 1, 1, 2, 4});
  std::int64_t micro = rng.pick({1, 2, 4, 8, 16, 32});
  if (g.schedule == "dualpipe" || g.schedule == "dualpipev") micro = std::max(micro, 2 * pp);
  if (g.schedule == "interleaved-1f1b" && rng.chance(0.8)) micro = (micro + pp - 1) / pp * pp;
  const std::int64_t seq = rng.pick({1024, 2048, 2048, 4096, 4096, 8192});

  Json tr = {
      {"seq_length", seq}, {"micro_batch_size", mbs}, {"global_batch_size", mbs * dp * micro}};
  const std::vector<std::string> precisions =
      blackwell ? std::vector<std::string>{"bf16",          "fp8-tensorwise", "fp8-delayed",
                                           "fp8-blockwise", "mxfp8",          "mxfp8"}
                : std::vector<std::string>{"bf16", "fp8-tensorwise", "fp8-delayed", "fp8-blockwise",
                                           "fp8-blockwise"};
  const std::string precision = rng.chance(0.05) ? "mxfp8" : rng.pick(precisions);
  tr["precision"] = precision;
  const std::int64_t mtp =
      rng.chance(0.2) && (!model.hybrid() || !model.mtp_pattern.empty()) ? 1 : 0;
  tr["mtp_layers"] = mtp;
  if (rng.chance(0.1)) tr["hidden_dropout"] = 0.1;
  if (rng.chance(0.1)) tr["make_vocab_size_divisible_by"] = rng.pick({128, 3232});
  const bool token_drop = moe && rng.chance(0.2);
  if (token_drop) tr["token_drop"] = {{"capacity_factor", rng.pick({1, 2})}};
  j["training"] = tr;

  Json par = {{"tp", tp}, {"pp", pp}, {"ep", ep}, {"etp", etp}, {"cp", cp}};
  if (vpp > 1 || rng.chance(0.3)) par["vpp"] = vpp;
  if (tp > 1 && rng.chance(0.5)) par["sequence_parallel"] = true;
  par["pipeline_schedule"] = g.schedule;
  if (rng.chance(0.1)) par["fsdp"] = true;
  if (rng.chance(0.35)) {
    // A layout string over pp x vpp virtual stages: even, or uneven, or malformed.
    const std::int64_t stages = pp * vpp;
    std::vector<std::int64_t> per(static_cast<std::size_t>(stages), model.num_layers / stages);
    for (std::int64_t r = 0; r < model.num_layers % stages; ++r) ++per[static_cast<std::size_t>(r)];
    if (rng.chance(0.3) && stages > 1) {  // move layers to the first stage
      const auto moved = per.back();
      per.back() = 0;
      per.front() += moved;
    }
    par["pp_layout"] =
        rng.chance(0.15) ? rng.pick(kMalformedLayouts) : layout_string(per, mtp, rng);
  }
  j["parallelism"] = par;

  Json fw = {{"dispatcher", g.dispatcher}};
  if ((g.dispatcher == "deepep" || g.dispatcher == "hybridep") && rng.chance(0.4))
    fw["dispatcher_sms"] = rng.pick({1, 8, 16, 20, 24, 32, 64});
  // No combined 1F1B for hybrids, nor for hash-routed layers (DeepSeek-V4).
  fw["moe_a2a_overlap"] = !model.hybrid() && model.dsv4.hash_layers == 0 && rng.chance(0.3);
  if (fw["moe_a2a_overlap"].get<bool>() && rng.chance(0.5)) fw["delay_wgrad_compute"] = true;
  const bool static_shapes = token_drop || (g.dispatcher == "hybridep" && rng.chance(0.3));
  if (static_shapes && !token_drop) fw["moe_expert_rank_capacity_factor"] = rng.pick({1, 2});
  // Graphs of the routed experts need static shapes (Megatron refuses them otherwise):
  // mostly drawn where the shapes are static, sometimes where they are not.
  switch (rng.below(static_shapes || !moe || rng.chance(0.2) ? 6 : 4)) {
    case 0:
      fw["cuda_graph_scope"] = Json::array();
      break;
    case 1:
      fw["cuda_graph_scope"] = {"attn"};
      break;
    case 2:
      fw["cuda_graph_scope"] = {"attn", "moe_router", "moe_preprocess"};
      break;
    case 4:
      fw["cuda_graph_scope"] = {"attn", "mlp", "moe"};
      break;
    case 5:
      fw["cuda_graph_scope"] = {"full_iteration"};
      break;
    default:
      break;  // the default scopes
  }
  if (fw.contains("cuda_graph_scope") &&
      fw["cuda_graph_scope"] == Json::array({"full_iteration"}) && static_shapes &&
      fw.contains("moe_expert_rank_capacity_factor") && rng.chance(0.5))
    fw["moe_paged_stash"] = true;
  const std::vector<std::string> recompute = names(workload::recompute_module_names());
  if (rng.chance(0.15)) {
    // Megatron refuses whole-layer recompute beside the all-to-all overlap (the loader too).
    if (!fw["moe_a2a_overlap"].get<bool>()) fw["recompute_modules"] = {"full"};
  } else if (rng.chance(0.6)) {
    Json list = Json::array();
    for (const auto& r : recompute)
      if (r != "full" && (r != "mhc" || model.is_dsv4()) && rng.chance(0.25)) list.push_back(r);
    fw["recompute_modules"] = list;
  }
  if (rng.chance(0.3)) {
    Json list = Json::array();
    for (const auto& o : names(workload::offload_target_names()))
      if (rng.chance(0.2)) list.push_back(o);
    fw["offload"] = list;
  }
  fw["distributed_optimizer"] = rng.chance(0.8);
  if (!fw["distributed_optimizer"].get<bool>()) fw["overlap_param_gather"] = false;
  fw["overlap_grad_reduce"] = rng.chance(0.8);
  if (precision != "bf16") fw["fp8_param_gather"] = rng.chance(0.5);
  fw["optimizer_state_dtype"] = rng.chance(0.5) ? "bf16" : "fp32";
  fw["optimizer"] = rng.chance(0.25) ? "muon" : "adam";
  if (rng.chance(0.2))
    fw["ep_fp8_dispatch"] = g.dispatcher == "deepep" || g.dispatcher == "hybridep";
  if (rng.chance(0.15)) {
    Json list = Json::array();
    for (const auto& a : names(workload::low_precision_activation_names()))
      if (rng.chance(0.5)) list.push_back(a);
    fw["low_precision_activations"] = list;
  }
  if (rng.chance(0.1)) fw["allocator_fragmentation"] = 0.1;
  if (rng.chance(0.1))
    fw["cross_entropy"] = rng.pick(std::vector<std::string>{"te", "native", "unfused"});
  // TE's unfused attention has no context parallelism (refused; draws stay loadable).
  if (cp == 1 && rng.chance(0.1))
    fw["attention_backend"] = rng.pick(std::vector<std::string>{"fused", "unfused"});
  if (rng.chance(0.1)) fw["ddp_bucket_size"] = rng.pick({1, 1000000, 40000000});
  j["framework"] = fw;

  if (rng.chance(0.5)) {
    j["routing"] = {{"balance", "forced"}};
  } else if (rng.chance(0.8)) {
    Json r = {{"balance", "sampled"}, {"seed", static_cast<std::int64_t>(rng.below(1000))}};
    if (rng.chance(0.5)) {
      r["distribution"] = "zipf";
      r["alpha"] = rng.pick({0, 1, 2}) * 0.6;
    } else {
      r["distribution"] = "uniform";
    }
    j["routing"] = r;
  } else if (rng.chance(0.5)) {
    j["routing"] = rng.chance(0.5) ? Json{{"balance", "loss_free"}}
                                   : Json{{"balance", "aux_loss"},
                                          {"coefficient", rng.pick({1, 10, 100}) * 1e-4}};
  }
  // EPLB: copies that split over EP or not (refused), either policy.
  if (rng.chance(0.1))
    j["parallelism"]["eplb"] = {{"redundant_experts", rng.pick({0, 8, 16, 32, 64, 7})},
                                {"policy", rng.chance(0.5) ? "hierarchical" : "global"}};
  if (rng.chance(0.2))
    j["placement"] = {{"gpus_per_nvlink_domain", rng.pick({per_node, per_node * 2, 32, 64, 72})}};
  if (rng.chance(0.1)) {
    Json st = Json::object();
    for (const auto& s : workload::stack_switches())
      if (rng.chance(0.3)) st[std::string(s.name)] = rng.chance(0.5);
    j["stack"] = st;
  }
  j["gpus"] = gpus;

  // Edge values, then deliberate breakage.
  if (rng.chance(0.05)) j["training"]["seq_length"] = rng.pick({1, 2, 3, 127, 131072});
  if (rng.chance(0.05)) j["training"]["micro_batch_size"] = rng.pick({3, 16, 64});
  if (rng.chance(0.05)) j["training"]["global_batch_size"] = rng.pick({1, 3, 1 << 20, 1 << 30});
  if (rng.chance(0.25)) {
    g.perturbed = true;
    const auto edits = 1 + rng.below(2);
    for (std::uint64_t e = 0; e < edits; ++e) perturb(j, rng);
  }
  g.json = std::move(j);
  return g;
}

}  // namespace moesim::test
