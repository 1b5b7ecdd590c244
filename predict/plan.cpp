// predict/plan.cpp: `moesim plan`'s request (plan()): the layouts and setting groups a plan
// varies, the scenario as given and its evidence, the smallest cluster that fits; the
// branch-and-bound search itself is predict/plan_search.cpp.
#include "predict/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw_models/dispatcher.hpp"
#include "predict/predict.hpp"

namespace moesim::predict {

namespace {

// The scenario as given leaves some of the plan's columns to the loader's defaults (an empty
// CSV value); for the evidence's comparison with the candidates each takes the value the
// loaded scenario has, written as the candidates' columns write it. One getter per column
// the plan varies (the layouts' and the setting groups'); a column without one stays empty,
// and then counts as differing.
std::vector<std::string> effective_values(const std::vector<std::string>& columns,
                                          const config::SweepPoint& given, const std::string& file,
                                          const config::LoadOptions& load) {
  std::vector<std::string> values = given.values;
  using Get = config::Json (*)(const config::Scenario&);
  static const std::vector<std::pair<std::string_view, Get>> kGetters{
      {"training.micro_batch_size",
       [](const config::Scenario& s) { return config::Json(s.training.micro_batch_size); }},
      {"parallelism.tp", [](const config::Scenario& s) { return config::Json(s.parallelism.tp); }},
      {"parallelism.pp", [](const config::Scenario& s) { return config::Json(s.parallelism.pp); }},
      {"parallelism.vpp",
       [](const config::Scenario& s) { return config::Json(s.parallelism.vpp); }},
      {"parallelism.ep", [](const config::Scenario& s) { return config::Json(s.parallelism.ep); }},
      {"parallelism.etp",
       [](const config::Scenario& s) { return config::Json(s.parallelism.etp); }},
      {"parallelism.cp", [](const config::Scenario& s) { return config::Json(s.parallelism.cp); }},
      {"parallelism.pp_layout",
       [](const config::Scenario& s) {  // unset: Megatron's even split, as the plan writes it
         return config::Json(config::default_layout_text(s.model.num_layers, s.training.mtp_layers,
                                                         static_cast<int>(s.parallelism.pp),
                                                         static_cast<int>(s.parallelism.vpp)));
       }},
      {"framework.dispatcher",
       [](const config::Scenario& s) {
         return config::Json(
             std::string(hw_models::dispatcher_names().name(s.framework.dispatcher)));
       }},
      {"framework.dispatcher_sms",
       [](const config::Scenario& s) { return config::Json(s.framework.dispatcher_sms); }},
      {"framework.moe_a2a_overlap",
       [](const config::Scenario& s) { return config::Json(s.framework.moe_a2a_overlap); }},
      {"framework.tp_comm_overlap",
       [](const config::Scenario& s) { return config::Json(s.framework.tp_comm_overlap); }},
      {"framework.cuda_graph_scope",
       [](const config::Scenario& s) {
         config::Json j = config::Json::array();
         for (auto c : s.framework.cuda_graph_scope)
           j.push_back(workload::cuda_graph_scope_names().name(c));
         return j;
       }},
      {"framework.recompute_modules",
       [](const config::Scenario& s) {
         config::Json j = config::Json::array();
         for (auto m : s.framework.recompute_modules)
           j.push_back(workload::recompute_module_names().name(m));
         return j;
       }},
  };
  if (std::none_of(values.begin(), values.end(), [](const std::string& v) { return v.empty(); }))
    return values;
  std::optional<config::Scenario> sc;
  try {
    sc = config::load_scenario_json(given.scenario, file, load);
  } catch (const config::InputError&) {
    return values;  // evaluate_point reports why; nothing to compare with
  }
  for (std::size_t i = 0; i < columns.size() && i < values.size(); ++i) {
    if (!values[i].empty()) continue;
    for (const auto& [path, get] : kGetters)
      if (path == columns[i]) values[i] = config::sweep_value_text(get(*sc));
  }
  return values;
}

std::vector<std::int64_t> powers_of_two(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = from; x <= to; x *= 2) v.push_back(x);
  return v;
}

config::Json list(std::initializer_list<const char*> xs) {
  config::Json j = config::Json::array();
  for (const char* x : xs) j.push_back(x);
  return j;
}

}  // namespace

const std::vector<PlanSettingGroup>& plan_setting_groups() {
  static const std::vector<PlanSettingGroup> groups{
      {"dispatcher", "framework.dispatcher: alltoall, deepep, hybridep (MoE models)", true,
       [](const config::Scenario& sc) -> std::vector<PlanDimension> {
         if (!sc.model.is_moe()) return {};
         return {{"framework.dispatcher", {"alltoall", "deepep", "hybridep"}, 0, true, false}};
       }},
      {"dispatcher_sms",
       "framework.dispatcher_sms: 16, 24, 32, 48 (MoE models; DeepEP's and HybridEP's SMs)", false,
       [](const config::Scenario& sc) -> std::vector<PlanDimension> {
         if (!sc.model.is_moe()) return {};
         // Device: the SMs speed the EP kernels and leave fewer to the computation beside
         // them; inert under the NCCL dispatchers (those candidates are duplicates).
         return {{"framework.dispatcher_sms", {16, 24, 32, 48}, 0, true, false}};
       }},
      {"a2a_overlap", "framework.moe_a2a_overlap: false, true (MoE models but hybrid ones)", true,
       [](const config::Scenario& sc) -> std::vector<PlanDimension> {
         // A hybrid model has no combined 1F1B schedule (the loader says why).
         if (!sc.model.is_moe() || sc.model.hybrid()) return {};
         return {{"framework.moe_a2a_overlap", {false, true}, 1, false, false}};
       }},
      {"tp_overlap", "framework.tp_comm_overlap: false, true", false,
       [](const config::Scenario&) -> std::vector<PlanDimension> {
         // Device: TE's pipelined reduce-scatter slows its GEMM by the SMs it takes, so the
         // overlap does not only take work off the serial sum.
         return {{"framework.tp_comm_overlap", {false, true}, 1, true, false}};
       }},
      {"cuda_graphs",
       "framework.cuda_graph_scope: none, attention, attention and the MoE router and preprocess "
       "(MoE) or MLP (dense); a hybrid model's Mamba mixers with the attention",
       false,
       [](const config::Scenario& sc) -> std::vector<PlanDimension> {
         if (sc.model.count_hybrid(workload::HybridLayer::mamba) > 0)
           return {{"framework.cuda_graph_scope",
                    {config::Json::array(), list({"attn", "mamba"}),
                     sc.model.is_moe() ? list({"attn", "mamba", "moe_router", "moe_preprocess"})
                                       : list({"attn", "mamba", "mlp"})},
                    2,
                    true}};
         return {{"framework.cuda_graph_scope",
                  {config::Json::array(), list({"attn"}),
                   sc.model.is_moe() ? list({"attn", "moe_router", "moe_preprocess"})
                                     : list({"attn", "mlp"})},
                  2,
                  true}};
       }},
      {"recompute",
       "framework.recompute_modules: a ladder, each rung adding modules, to full; the first rung "
       "that fits is the candidate",
       true,
       [](const config::Scenario& sc) -> std::vector<PlanDimension> {
         const char* attn =
             sc.model.attention == workload::AttentionKind::mla ? "mla_up_proj" : "core_attn";
         std::vector<config::Json> ladder{config::Json::array()};
         if (sc.model.is_moe()) {
           ladder.push_back(list({"moe_act"}));
           ladder.push_back(list({"moe_act", "layernorm"}));
           ladder.push_back(list({"moe_act", "layernorm", attn}));
         } else {
           ladder.push_back(list({"layernorm"}));
           ladder.push_back(list({"layernorm", attn}));
           ladder.push_back(list({"layernorm", attn, "mlp"}));
         }
         ladder.push_back(list({"full"}));
         return {{"framework.recompute_modules", ladder, 0, false, true}};
       }},
  };
  return groups;
}

namespace {

// PlanRequest::system: the base scenario on another system, and what that changed.
config::Json on_system(config::Json base, const std::string& system, const std::string& file,
                       const config::LoadOptions& load, std::vector<std::string>& notes) {
  config::require_preset(config::PresetKind::system, system, "<command line>", "--system");
  const auto spec = config::load_system_preset(system, load);
  base["system"] = system;
  for (const char* k : {"placement", "measured"})
    if (base.contains(k)) {
      base.erase(k);
      notes.push_back(fmt::format("{}: the scenario's, for its own system, left out", k));
    }
  if (base.contains("training") && base["training"].contains("precision")) {
    const std::string was = base["training"]["precision"].get<std::string>();
    if (const auto p = workload::precision_names().find(was);
        p && !spec.gpu.supports(workload::gemm_dtype(*p))) {
      const auto to = workload::Precision::fp8_blockwise;
      if (!spec.gpu.supports(workload::gemm_dtype(to)))
        throw config::InputError(
            file, "training.precision",
            fmt::format("{} has no Tensor Cores for {} nor FP8: plan it from a scenario at a "
                        "precision it runs",
                        system, was));
      base["training"]["precision"] = std::string(workload::precision_names().name(to));
      base["training"].erase("nvfp4");
      notes.push_back(fmt::format("training.precision: {} -> {} ({} has no {} Tensor Cores)", was,
                                  workload::precision_names().name(to), spec.gpu.name, was));
    }
  }
  return base;
}

}  // namespace

Plan plan(const PlanRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> notes;
  config::Json base = config::read_json_file(req.scenario_file);
  if (req.system)
    base = on_system(std::move(base), *req.system, req.scenario_file, req.load, notes);
  if (req.gpu_hour_usd) base["cost"]["gpu_hour_usd"] = *req.gpu_hour_usd;
  const config::Scenario sc = config::load_scenario_json(base, req.scenario_file, req.load);
  // The description is text no prediction reads, and every layout and candidate would carry
  // a copy through the loader: loaded above, it is emptied for them (in its place: an
  // emitted candidate writes its own there, cli/plan.cpp), so a plan's memory and time do
  // not grow with it. An inline model's or system's own description stays (they are small).
  if (base.contains("description")) base["description"] = "";
  const std::int64_t gpus = req.gpus > 0 ? req.gpus : sc.gpus;

  config::SweepFile f;
  f.file = req.scenario_file;
  f.name = "plan-" + sc.name;
  f.base = std::move(base);
  f.base_file = req.scenario_file;
  f.grid.push_back({"gpus", {config::Json(gpus)}});
  // Micro-batch sizes 1 and 2, and the scenario's own (a recipe at MBS 8 is in its space).
  std::vector<config::Json> mbs{config::Json(1), config::Json(2)};
  if (sc.training.micro_batch_size > 2) mbs.emplace_back(sc.training.micro_batch_size);
  f.grid.push_back({"training.micro_batch_size", std::move(mbs)});
  const std::int64_t domain =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(sc.system.nvlink.domain_gpus.value));
  f.layouts.push_back({"tp", powers_of_two(1, std::min<std::int64_t>({8, domain, gpus}))});
  f.layouts.push_back(
      {"pp", powers_of_two(1, std::min<std::int64_t>({32, sc.model.num_layers, gpus}))});
  f.layouts.push_back({"vpp", powers_of_two(1, 8)});
  f.layouts.push_back({"ep", sc.model.is_moe() ? powers_of_two(1, std::min<std::int64_t>(
                                                                      sc.model.num_experts, gpus))
                                               : std::vector<std::int64_t>{1}});
  f.layouts.push_back({"etp", {1}});
  // A hybrid Mamba model or one with Gated DeltaNet layers takes no context parallelism
  // here (the loader refuses it).
  f.layouts.push_back({"cp", sc.model.hybrid() || sc.model.num_linear_layers() > 0
                                 ? std::vector<std::int64_t>{1}
                                 : powers_of_two(1, sc.training.seq_length >= 16384 ? 4 : 2)});
  // Both splits of the layers: even, and with the embedding and loss as a layer each (the
  // layouts NVIDIA's recipes pass by hand; config/sweep_file.hpp, PipelineSplit).
  f.pp_splits = {config::PipelineSplit::even, config::PipelineSplit::embedding_loss};
  // The token budget: the command line's, else the scenario's own (goodput.token_budget).
  f.token_budget = req.token_budget ? req.token_budget : sc.goodput.token_budget;
  if (!req.objective.empty()) {
    const auto o = config::sweep_objective_names().find(req.objective);
    if (!o)
      throw config::InputError("<command line>", "--objective",
                               fmt::format("unknown objective '{}'; known: {}", req.objective,
                                           config::sweep_objective_names().known()));
    f.objective = *o;
    if (config::needs_token_budget(f.objective) && !f.token_budget)
      throw config::InputError(
          "<command line>", "--objective",
          fmt::format("'{}' needs a token budget: --token-budget, or the scenario's "
                      "goodput.token_budget",
                      req.objective));
  }
  // The settings each layout varies.
  std::vector<PlanDimension> dims;
  std::vector<std::string> names = req.settings;
  if (names.empty())
    for (const auto& g : plan_setting_groups())
      if (g.by_default) names.emplace_back(g.name);
  if (names == std::vector<std::string>{"none"}) names.clear();
  for (const auto& n : names) {
    const auto g = std::find_if(plan_setting_groups().begin(), plan_setting_groups().end(),
                                [&](const PlanSettingGroup& x) { return n == x.name; });
    if (g == plan_setting_groups().end()) {
      std::vector<std::string> known{"none"};
      for (const auto& x : plan_setting_groups()) known.emplace_back(x.name);
      throw config::InputError(
          "<command line>", "--settings",
          fmt::format("unknown setting group '{}'; known: {}", n, fmt::join(known, ", ")));
    }
    for (auto& d : g->dims(sc)) dims.push_back(std::move(d));
  }
  Plan p;
  p.name = f.name;
  p.gpus = gpus;
  p.system = sc.system.name;
  p.gpu = sc.system.gpu.name;
  p.model = sc.model.name;
  p.notes = std::move(notes);
  p.layouts = config::expand_sweep(f);
  p.dims = std::move(dims);
  p.objective = f.objective;
  p.token_budget = f.token_budget;
  PlanSearch search{
      f.objective, req.top, req.jobs, f.token_budget, req.load, std::nullopt, req.given_limit,
      nullptr,     {},      {}};
  // The plan's CSV columns: the layouts', then the varied settings'.
  std::vector<std::string> columns = p.layouts.columns;
  for (const auto& d : p.dims) columns.push_back(d.path);
  const PlanColumns csv{columns, f.token_budget.has_value()};
  std::map<std::int64_t, SweepResult> kept;
  if (req.resume) {
    kept = req.resume(csv);
    search.resumed = &kept;
  }
  if (req.simulated) search.simulated = [&](const PlanCandidate& c) { req.simulated(csv, c); };
  search.stop = req.stop;
  if (req.given) {
    config::SweepPoint as_given{0, {}, f.base};
    as_given.scenario["gpus"] = gpus;
    // The CSV columns' values where the file sets them (empty: the loader's default).
    for (std::string c : columns) {
      std::replace(c.begin(), c.end(), '.', '/');
      const config::Json::json_pointer at("/" + c);
      as_given.values.push_back(
          as_given.scenario.contains(at) ? config::sweep_value_text(as_given.scenario.at(at)) : "");
    }
    SweepResult row = evaluate_point(as_given, f.base_file, f.token_budget, req.load);
    p.given = PlanGiven{std::move(as_given), std::move(row), std::nullopt, true, {}};
    search.reference = objective_value(p.given->row, f.objective);
  }
  p.outcome = search_plan(p.layouts.points, p.dims, f.base_file, search);
  // The simulated candidates best first (ties: the lower id, as the summary's top K).
  std::vector<const PlanCandidate*> ranked;
  for (const auto& c : p.outcome.candidates)
    if (c.row.status == SweepStatus::ok && objective_value(c.row, f.objective))
      ranked.push_back(&c);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const PlanCandidate* a, const PlanCandidate* b) {
                     return objective_better(f.objective, *objective_value(a->row, f.objective),
                                             *objective_value(b->row, f.objective));
                   });
  // Why the best wins over the rest of the top K: its evidence over each.
  for (std::size_t k = 1; k < ranked.size() && k < static_cast<std::size_t>(std::max(req.top, 1));
       ++k) {
    const auto* best = ranked.front();
    PlanEvidence e =
        plan_evidence(columns, ranked[k]->point, *objective_value(ranked[k]->row, f.objective),
                      best->point, *objective_value(best->row, f.objective), f.objective);
    e.id = ranked[k]->point.id;
    p.runner_ups.push_back(std::move(e));
  }
  if (p.given && search.reference) {
    std::int64_t better = 0;
    for (const auto& c : p.outcome.candidates)
      if (const auto v = objective_value(c.row, f.objective);
          c.row.status == SweepStatus::ok && v &&
          objective_better(f.objective, *v, *search.reference))
        ++better;
    p.given->rank = better + 1;
    p.given->rank_exact = !p.outcome.reference_capped;
    // The evidence for the top K that beat it, best first.
    std::vector<const PlanCandidate*> above;
    for (const auto* c : ranked)
      if (objective_better(f.objective, *objective_value(c->row, f.objective), *search.reference))
        above.push_back(c);
    if (req.top > 0 && above.size() > static_cast<std::size_t>(req.top))
      above.resize(static_cast<std::size_t>(req.top));
    config::SweepPoint effective = p.given->point;
    effective.values = effective_values(columns, p.given->point, f.base_file, req.load);
    for (const auto* c : above)
      p.given->evidence.push_back(plan_evidence(columns, effective, *search.reference, c->point,
                                                *objective_value(c->row, f.objective),
                                                f.objective));
  }
  p.per_layout = candidates_per_layout(p.dims);
  // Nothing fits: the smallest cluster, doubling the GPUs, on which a candidate does.
  const auto fits = [](const PlanOutcome& o) {
    return std::any_of(o.candidates.begin(), o.candidates.end(),
                       [](const PlanCandidate& c) { return c.row.status == SweepStatus::ok; });
  };
  const auto too_big =
      std::any_of(p.outcome.candidates.begin(), p.outcome.candidates.end(),
                  [](const PlanCandidate& c) { return c.row.status == SweepStatus::does_not_fit; });
  if (req.fit_search && !p.outcome.stopped && too_big && !fits(p.outcome)) {
    PlanRequest larger = req;
    larger.top = 1;
    larger.given = false;
    larger.fit_search = false;
    larger.resume = nullptr;
    larger.simulated = nullptr;
    for (std::int64_t g = 2 * gpus; g <= 64 * gpus && g <= (std::int64_t{1} << 20); g *= 2) {
      larger.gpus = g;
      const Plan q = plan(larger);
      if (q.outcome.stopped) break;
      if (fits(q.outcome)) {
        p.smallest_fitting_gpus = g;
        break;
      }
    }
    p.fit_searched_to = p.smallest_fitting_gpus.value_or(64 * gpus);
  }
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

PlanEvidence plan_evidence(const std::vector<std::string>& columns, const config::SweepPoint& given,
                           double given_value, const config::SweepPoint& candidate, double value,
                           config::SweepObjective objective) {
  PlanEvidence e;
  e.id = candidate.id;
  e.gain_pct = 100 * (config::higher_is_better(objective) ? value / given_value - 1
                                                          : given_value / value - 1);
  std::vector<config::Decision> decisions;
  for (std::size_t i = 0;
       i < columns.size() && i < given.values.size() && i < candidate.values.size(); ++i) {
    if (columns[i] == "gpus" || given.values[i] == candidate.values[i]) continue;
    e.columns.push_back(columns[i]);
    if (const auto d = config::decision_of_setting(columns[i])) decisions.push_back(*d);
  }
  e.claim = config::assess_claim(e.gain_pct, decisions);
  return e;
}

}  // namespace moesim::predict
