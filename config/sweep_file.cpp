// Reads sweep files and expands them into scenarios (config/sweep_file.hpp).
#include "config/sweep_file.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "config/load.hpp"
#include "config/presets.hpp"

namespace moesim::config {

const sim_core::NameTable<SweepObjective>& sweep_objective_names() {
  static constexpr std::array<sim_core::NameEntry<SweepObjective>, 11> kEntries{{
      {SweepObjective::tokens_per_s_per_gpu, "tokens_per_s_per_gpu",
       "tokens per second per GPU (higher is better)"},
      {SweepObjective::tflops_per_gpu, "tflops_per_gpu",
       "Megatron-accounted TFLOPS per GPU (higher is better)"},
      {SweepObjective::mfu, "mfu",
       "model FLOPs utilization of the dense BF16 peak (higher is better)"},
      {SweepObjective::step_time_s, "step_time_s", "seconds per training step (lower is better)"},
      {SweepObjective::peak_memory_gib, "peak_memory_gib",
       "memory of the fullest rank (lower is better)"},
      {SweepObjective::days, "days", "days to train the token budget (lower is better)"},
      {SweepObjective::gpu_hours, "gpu_hours",
       "GPU-hours to train the token budget (lower is better)"},
      {SweepObjective::days_with_goodput, "days_with_goodput",
       "days to train the token budget with interruptions, checkpoints and restarts (the "
       "scenario's goodput; "
       "lower is better)"},
      {SweepObjective::gpu_hours_with_goodput, "gpu_hours_with_goodput",
       "GPU-hours to train the token budget with interruptions, checkpoints and restarts (lower is "
       "better)"},
      {SweepObjective::energy_mwh, "energy_mwh",
       "MWh to train the token budget with goodput at the nodes' power (the scenario's cost block "
       "or the "
       "system's node.max_power_kW; lower is better)"},
      {SweepObjective::cost_usd, "cost_usd",
       "USD to train the token budget with goodput at cost.gpu_hour_usd (lower is better)"},
  }};
  static constexpr sim_core::NameTable<SweepObjective> kTable{kEntries};
  return kTable;
}

bool with_goodput(SweepObjective o) {
  return o == SweepObjective::days_with_goodput || o == SweepObjective::gpu_hours_with_goodput ||
         o == SweepObjective::energy_mwh || o == SweepObjective::cost_usd;
}

bool needs_token_budget(SweepObjective o) {
  return o == SweepObjective::days || o == SweepObjective::gpu_hours || with_goodput(o);
}

bool higher_is_better(SweepObjective o) {
  return o == SweepObjective::tokens_per_s_per_gpu || o == SweepObjective::tflops_per_gpu ||
         o == SweepObjective::mfu;
}

namespace {

// Steps `idx` over the lists (pairs of a key and its values) like an odometer, the last
// list fastest; false once every combination has been visited (idx is back at zero).
template <class Lists>
bool next_combination(std::vector<std::size_t>& idx, const Lists& lists) {
  for (std::size_t k = lists.size(); k-- > 0;) {
    if (++idx[k] < lists[k].second.size()) return true;
    idx[k] = 0;
  }
  return false;
}

constexpr std::int64_t kMaxRows = 1'000'000;

// The scenario's top-level keys (docs/SCENARIO_FORMAT.md), where a grid path
// may start.
constexpr std::array<std::string_view, 14> kScenarioKeys{
    "name",      "description", "system",  "gpus",     "model",     "training", "parallelism",
    "framework", "stack",       "routing", "measured", "placement", "goodput",  "cost"};

std::vector<std::string> split_dots(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t dot; (dot = path.find('.', start)) != std::string::npos; start = dot + 1)
    out.push_back(path.substr(start, dot - start));
  out.push_back(path.substr(start));
  return out;
}

// Sets `value` at a dotted path of a scenario, creating objects on the way. A preset
// name met on the way (`system`, `model`) becomes an inline object with that base, so
// "system.nvlink.bw_GBps" varies one number of the base's preset.
void set_dotted(Json& j, const std::vector<std::string>& keys, const Json& value, const Node& at) {
  Json* cur = &j;
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    Json& next = (*cur)[keys[i]];
    if (next.is_null()) next = Json::object();
    if (next.is_string() && i == 0 && (keys[0] == "system" || keys[0] == "model"))
      next = Json{{"base", next}};
    if (!next.is_object())
      at.fail(fmt::format(
          "'{}' is not an object in the scenario, so '{}' cannot be set inside it",
          fmt::join(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(i) + 1, "."),
          keys[i + 1]));
    cur = &next;
  }
  (*cur)[keys.back()] = value;
}

class SweepReader {
 public:
  SweepReader(const Json& j, const std::string& file)
      : file_(std::make_shared<const std::string>(file)), root_(j, "", file_) {}

  SweepFile read() {
    SweepFile f;
    f.file = *file_;
    read_object(root_, [&](Object& o) {
      f.name = o.req("name").as_string();
      f.description = o.string_or("description", "");
      base(o.req("base"), f);
      if (auto g = o.get("grid")) grid(*g, f);
      if (auto l = o.get("layouts")) layouts(*l, f);
      if (auto b = o.get("token_budget")) f.token_budget = b->as_number(1, 1e30);
      if (auto obj = o.get("objective")) {
        f.objective = obj->as_enum(sweep_objective_names(), "objective");
        if (needs_token_budget(f.objective) && !f.token_budget)
          obj->fail(
              fmt::format("'{}' needs a token_budget", sweep_objective_names().name(f.objective)));
      }
    });
    // `layouts` owns the degrees it lists and every layout's pp_layout.
    for (const auto& [key, values] : f.grid)
      for (const auto& [lk, lv] : f.layouts)
        if (key == "parallelism." + lk || key == "parallelism.pp_layout" || key == "parallelism")
          Node(root_.json().at("grid").at(key), "grid." + key, file_)
              .fail(fmt::format(
                  "`layouts` sets parallelism.{} and writes each layout's default pp_layout; the "
                  "grid cannot set {} too",
                  lk, key));
    std::int64_t rows = 1;
    for (const auto& [k, v] : f.grid)
      rows = std::min<std::int64_t>(kMaxRows + 1, rows * static_cast<std::int64_t>(v.size()));
    for (const auto& [k, v] : f.layouts)
      rows = std::min<std::int64_t>(kMaxRows + 1, rows * static_cast<std::int64_t>(v.size()));
    if (rows > kMaxRows)
      root_.fail(
          fmt::format("more than {} combinations; split the sweep into several files", kMaxRows));
    return f;
  }

 private:
  void base(const Node& n, SweepFile& f) {
    if (n.json().is_string()) {
      const std::filesystem::path rel = n.as_string();
      const auto dir = std::filesystem::path(*file_).parent_path();
      const std::string path = (rel.is_absolute() ? rel : dir / rel).lexically_normal().string();
      if (const auto problem = input_file_problem(path))
        n.fail(fmt::format("scenario file '{}' {}", path, *problem));
      f.base = read_json_file(path);
      f.base_file = path;
      if (!f.base.is_object()) throw InputError(path, "", "expected a scenario: one JSON object");
    } else if (n.json().is_object()) {
      f.base = n.json();
      f.base_file = *file_;
    } else {
      n.fail("expected a scenario file's path or an inline scenario object");
    }
  }

  void grid(const Node& n, SweepFile& f) {
    if (!n.json().is_object())
      n.fail("expected an object of dotted scenario paths to lists of values");
    for (const auto& [key, list] : n.json().items()) {
      const Node at = n.child_at(list, key);
      const auto keys = split_dots(key);
      if (std::any_of(keys.begin(), keys.end(), [](const std::string& k) { return k.empty(); }))
        at.fail("expected a dotted scenario path like \"framework.dispatcher\"");
      if (std::find(kScenarioKeys.begin(), kScenarioKeys.end(), keys.front()) ==
          kScenarioKeys.end())
        at.fail(fmt::format("'{}' is not a scenario key; valid first keys: {}", keys.front(),
                            fmt::join(kScenarioKeys, ", ")));
      if (!list.is_array() || list.empty()) at.fail("expected a non-empty list of values");
      std::vector<Json> values(list.begin(), list.end());
      for (std::size_t i = 0; i < values.size(); ++i)
        for (std::size_t k = 0; k < i; ++k)
          if (values[i] == values[k])
            at.child_at(values[i], std::to_string(i))
                .fail(fmt::format("{} is listed twice", values[i].dump()));
      f.grid.emplace_back(key, std::move(values));
    }
  }

  void layouts(const Node& n, SweepFile& f) {
    read_object(n, [&](Object& o) {
      if (auto s = o.get("pp_split")) {
        f.pp_splits.clear();
        s->for_each_element([&](const Node& e) {
          f.pp_splits.push_back(e.as_enum(pipeline_split_names(), "pp_split"));
          if (std::count(f.pp_splits.begin(), f.pp_splits.end(), f.pp_splits.back()) > 1)
            e.fail(fmt::format("'{}' is listed twice",
                               pipeline_split_names().name(f.pp_splits.back())));
        });
        if (f.pp_splits.empty()) s->fail("expected a non-empty list of splits");
      }
      for (const auto key : kLayoutKeys) {
        const auto l = o.get(key);
        if (!l) continue;
        std::vector<std::int64_t> values;
        l->for_each_element([&](const Node& e) {
          values.push_back(e.as_int(1, 65536));
          if (std::count(values.begin(), values.end(), values.back()) > 1)
            e.fail(fmt::format("{} is listed twice", values.back()));
        });
        if (values.empty()) l->fail("expected a non-empty list of degrees");
        f.layouts.emplace_back(std::string(key), std::move(values));
      }
    });
  }

  std::shared_ptr<const std::string> file_;
  Node root_;
};

// An integer at a key of an object, or `def` when absent; nullopt when it is there but
// not an integer (then the loader reports it in the row).
std::optional<std::int64_t> int_at(const Json& o, const char* key, std::int64_t def) {
  if (!o.is_object()) return std::nullopt;
  const auto it = o.find(key);
  if (it == o.end()) return def;
  if (!it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

// The inputs of the layout rules for one grid point (its layout degrees are set per
// combination), or nullopt where the grid point does not get that far (an unknown
// model, a non-integer gpus): the loader then reports it in every row.
std::optional<LayoutCase> layout_case(const Json& sc, const std::string& file, std::int64_t& mtp) {
  LayoutCase c;
  try {
    if (!sc.is_object() || !sc.contains("model")) return std::nullopt;
    const auto f = std::make_shared<const std::string>(file);
    const Node root(sc, "", f);
    const auto r =
        detail::resolve_preset_or_inline(root.child_at(sc["model"], "model"), PresetKind::model);
    const auto m = read_model(*r.node);
    c.layers = m.num_layers;
    c.experts = m.num_experts;
    c.heads = m.num_heads;
    c.kv_heads = m.num_kv_heads;
    c.gqa = m.attention == workload::AttentionKind::gqa;
    c.ffn = m.ffn_hidden_size;
    c.moe_ffn = m.moe_ffn_hidden_size;
    c.dense_layers = m.num_dense_layers();
  } catch (const InputError&) {
    return std::nullopt;
  }
  const auto gpus = int_at(sc, "gpus", 0);
  const Json tr = sc.value("training", Json::object());
  const auto seq = int_at(tr, "seq_length", 0), mbs = int_at(tr, "micro_batch_size", 0),
             gbs = int_at(tr, "global_batch_size", 0), m = int_at(tr, "mtp_layers", 0);
  if (!gpus || !seq || !mbs || !gbs || !m || *gpus < 1 || *seq < 1 || *mbs < 1 || *gbs < 1 ||
      *m < 0)
    return std::nullopt;
  c.gpus = *gpus;
  c.seq_length = *seq;
  c.micro_batch_size = *mbs;
  c.global_batch_size = *gbs;
  mtp = *m;
  return c;
}

bool moe(const LayoutCase& c) {
  return c.experts > 0;
}
std::int64_t dp(const LayoutCase& c) {
  return c.gpus / (c.tp * c.pp * c.cp);
}
std::int64_t microbatches(const LayoutCase& c) {
  return c.global_batch_size / (c.micro_batch_size * dp(c));
}
std::string schedule(const LayoutCase& c) {
  return !c.schedule.empty() ? c.schedule : c.vpp > 1 ? "interleaved-1f1b" : "1f1b";
}

constexpr std::array<LayoutRule, 14> kRules{{
    {"gpus_over_tp_pp_cp", "gpus not divisible by tp x pp x cp",
     [](const LayoutCase& c) { return c.gpus % (c.tp * c.pp * c.cp) != 0; }},
    {"ep_outside_stage", "ep x etp does not divide the GPUs of a pipeline stage (gpus / pp)",
     [](const LayoutCase& c) { return (c.gpus / c.pp) % (c.ep * c.etp) != 0; }},
    {"ep_without_experts", "ep or etp above 1 for a model without experts",
     [](const LayoutCase& c) { return !moe(c) && (c.ep > 1 || c.etp > 1); }},
    {"experts_over_ep", "routed experts not divisible by ep",
     [](const LayoutCase& c) { return moe(c) && c.experts % c.ep != 0; }},
    {"etp_not_1_or_tp", "etp neither 1 nor tp",
     [](const LayoutCase& c) { return c.etp > 1 && c.etp != c.tp; }},
    {"expert_ffn_over_etp", "expert FFN size not divisible by etp",
     [](const LayoutCase& c) { return moe(c) && c.moe_ffn % c.etp != 0; }},
    {"heads_over_tp", "attention heads, key-value groups or dense FFN size not divisible by tp",
     [](const LayoutCase& c) {
       return c.heads % c.tp != 0 || (c.gqa && c.kv_heads % c.tp != 0) ||
              (c.dense_layers > 0 && c.ffn % c.tp != 0);
     }},
    {"seq_over_2cp", "seq_length not divisible by 2 x cp",
     [](const LayoutCase& c) { return c.cp > 1 && c.seq_length % (2 * c.cp) != 0; }},
    {"batch_over_dp", "global_batch_size not divisible by micro_batch_size x dp",
     [](const LayoutCase& c) { return c.global_batch_size % (c.micro_batch_size * dp(c)) != 0; }},
    {"stages_over_layers", "more virtual stages (pp x vpp) than decoder layers",
     [](const LayoutCase& c) { return c.layers < c.pp * c.vpp; }},
    {"vpp_without_pp", "vpp above 1 with pp 1",
     [](const LayoutCase& c) { return c.vpp > 1 && c.pp == 1; }},
    {"interleaved_microbatches", "interleaved-1f1b: microbatches per step not a multiple of pp",
     [](const LayoutCase& c) {
       return schedule(c) == "interleaved-1f1b" && microbatches(c) % c.pp != 0;
     }},
    {"schedule_layout",
     "the pipeline schedule's vpp, pp or microbatch needs (zb-h1, DualPipe, DualPipeV)",
     [](const LayoutCase& c) {
       const std::string s = schedule(c);
       if (s == "zb-h1" || s == "1f1b") return c.vpp != 1;
       if (s == "dualpipe")
         return c.vpp != 1 || c.pp % 2 != 0 || microbatches(c) < 2 * c.pp ||
                microbatches(c) % 2 != 0;
       if (s == "dualpipev") return c.vpp != 2 || microbatches(c) < 2 * c.pp;
       return false;
     }},
    {"split_repeats_even", "a layouts.pp_split other than even gives the even split's stages here",
     [](const LayoutCase& c) {
       const auto text = [&](PipelineSplit s) {
         return layout_text(s, c.layers, c.mtp, static_cast<int>(c.pp), static_cast<int>(c.vpp));
       };
       return c.split != PipelineSplit::even && text(c.split) == text(PipelineSplit::even);
     }},
}};

}  // namespace

std::span<const LayoutRule> layout_rules() {
  return kRules;
}

const sim_core::NameTable<PipelineSplit>& pipeline_split_names() {
  static constexpr std::array<sim_core::NameEntry<PipelineSplit>, 2> kEntries{{
      {PipelineSplit::even, "even",
       "the decoder layers as even as possible (the contract's default)"},
      {PipelineSplit::embedding_loss, "embedding_loss",
       "the embedding, the loss and each MTP layer counted as one layer (Megatron's "
       "account-for-embedding and "
       "-loss split)"},
  }};
  static constexpr sim_core::NameTable<PipelineSplit> kTable{kEntries};
  return kTable;
}

std::string default_layout_text(std::int64_t layers, std::int64_t mtp, int pp, int vpp) {
  return layout_text(PipelineSplit::even, layers, mtp, pp, vpp);
}

std::string layout_text(PipelineSplit split, std::int64_t layers, std::int64_t mtp, int pp,
                        int vpp) {
  const std::int64_t n = static_cast<std::int64_t>(pp) * vpp;
  std::vector<std::string> stages;
  // A stage's text: `e` embedding, `t` decoder layers, `m` MTP layers, `l` the loss.
  const auto stage = [](bool e, std::int64_t t, std::int64_t m, bool l) {
    std::string st = e ? "E" : "";
    if (t == 1)
      st += "t";
    else if (t > 1)
      st += fmt::format("t*{}", t);
    return st + std::string(static_cast<std::size_t>(m), 'm') + (l ? "L" : "");
  };
  if (split == PipelineSplit::even) {
    for (std::int64_t s = 0; s < n; ++s)
      stages.push_back(
          stage(s == 0, layers / n + (s < layers % n ? 1 : 0), s == n - 1 ? mtp : 0, s == n - 1));
  } else {
    // Units 0 .. U-1: E, the layers, the MTP layers, L; stage s takes the next share.
    const std::int64_t units = layers + mtp + 2;
    std::int64_t next = 0;
    for (std::int64_t s = 0; s < n; ++s) {
      const std::int64_t take = units / n + (s < units % n ? 1 : 0);
      const std::int64_t lo = next, hi = next + take;  // [lo, hi)
      next = hi;
      const auto count = [&](std::int64_t a, std::int64_t b) {
        return std::max<std::int64_t>(0, std::min(hi, b) - std::max(lo, a));
      };
      stages.push_back(stage(lo == 0 && hi > 0, count(1, 1 + layers),
                             count(1 + layers, 1 + layers + mtp), hi == units && take > 0));
    }
  }
  // Runs of equal stages before the last as "(X|)*N".
  std::string out;
  for (std::size_t i = 0; i < stages.size();) {
    std::size_t j = i;
    while (j + 2 < stages.size() && stages[j + 1] == stages[i]) ++j;
    if (j > i)
      out += fmt::format("({}|)*{}", stages[i], j - i + 1);
    else
      out += stages[i] + (i + 1 == stages.size() ? "" : "|");
    i = j + 1;
  }
  return out;
}

SweepFile read_sweep_text(std::string_view text, const std::string& file) {
  const Json j = parse_json(text, file);
  return SweepReader(j, file).read();
}

SweepFile read_sweep_file(const std::string& path) {
  const Json j = read_json_file(path);
  return SweepReader(j, path).read();
}

SweepPlan expand_sweep(const SweepFile& f) {
  SweepPlan plan;
  const bool layouts = !f.layouts.empty();
  plan.columns.push_back("gpus");
  for (const auto& [key, v] : f.grid)
    if (key != "gpus") plan.columns.push_back(key);
  for (const auto& [key, v] : f.layouts) plan.columns.push_back("parallelism." + key);
  if (layouts) plan.columns.push_back("parallelism.pp_layout");

  std::vector<std::int64_t> pruned(kRules.size(), 0);
  const auto file = std::make_shared<const std::string>(f.file);
  const Json sweep_json = Json::object();
  const Node grid_node(sweep_json, "grid", file);
  std::vector<std::size_t> g(f.grid.size(), 0);
  for (bool more = true; more;) {
    Json sc = f.base;
    std::vector<std::string> values;
    std::string gpus_text = sc.contains("gpus") ? sweep_value_text(sc["gpus"]) : "";
    for (std::size_t k = 0; k < f.grid.size(); ++k) {
      const auto& [key, list] = f.grid[k];
      set_dotted(sc, split_dots(key), list[g[k]], grid_node.child_at(list[g[k]], key));
      if (key == "gpus")
        gpus_text = sweep_value_text(list[g[k]]);
      else
        values.push_back(sweep_value_text(list[g[k]]));
    }
    values.insert(values.begin(), gpus_text);
    if (!layouts) {
      ++plan.combinations;
      plan.points.push_back({static_cast<std::int64_t>(plan.points.size()), values, std::move(sc)});
    } else {
      // The layout degrees replace the base's; each layout gets the default split and,
      // unless the scenario asks for another schedule, the default one for its vpp.
      if (!sc["parallelism"].is_object()) sc["parallelism"] = Json::object();
      Json& par = sc["parallelism"];
      par.erase("pp_layout");
      if (const auto s = par.find("pipeline_schedule");
          s != par.end() && (*s == "1f1b" || *s == "interleaved-1f1b"))
        par.erase(s);
      std::int64_t mtp = 0;
      const auto base_case = layout_case(sc, f.base_file, mtp);
      std::vector<std::size_t> l(f.layouts.size(), 0);
      std::size_t split_index = 0;
      for (bool lmore = true; lmore;) {
        const PipelineSplit split = f.pp_splits[split_index];
        ++plan.combinations;
        Json point = sc;
        Json& pp = point["parallelism"];
        std::vector<std::string> lvalues = values;
        for (std::size_t k = 0; k < f.layouts.size(); ++k) {
          pp[f.layouts[k].first] = f.layouts[k].second[l[k]];
          lvalues.push_back(std::to_string(f.layouts[k].second[l[k]]));
        }
        bool keep = true;
        std::string layout_text;
        if (!base_case &&
            split != PipelineSplit::even) {  // no layers to split: the even row's twin
          ++pruned[kRules.size() - 1];
          keep = false;
        } else if (base_case) {
          LayoutCase c = *base_case;
          c.mtp = mtp;
          c.split = split;
          bool ints = true;
          const auto deg = [&](const char* key, std::int64_t& out) {
            if (const auto v = int_at(pp, key, 1))
              out = *v;
            else
              ints = false;
          };
          deg("tp", c.tp), deg("pp", c.pp), deg("vpp", c.vpp), deg("ep", c.ep), deg("etp", c.etp),
              deg("cp", c.cp);
          if (const auto s = pp.find("pipeline_schedule"); s != pp.end() && s->is_string())
            c.schedule = *s;
          const bool degrees_ok =
              ints && c.tp >= 1 && c.pp >= 1 && c.vpp >= 1 && c.ep >= 1 && c.etp >= 1 && c.cp >= 1;
          for (std::size_t r = 0; degrees_ok && r < kRules.size(); ++r)
            if (kRules[r].broken(c)) {
              ++pruned[r];
              keep = false;
              break;
            }
          if (keep && degrees_ok)
            layout_text = config::layout_text(split, c.layers, mtp, static_cast<int>(c.pp),
                                              static_cast<int>(c.vpp));
        }
        if (keep) {
          if (!layout_text.empty()) pp["pp_layout"] = layout_text;
          lvalues.push_back(layout_text);
          plan.points.push_back({static_cast<std::int64_t>(plan.points.size()), std::move(lvalues),
                                 std::move(point)});
        }
        // Each layout in every split listed, the split fastest.
        if (++split_index < f.pp_splits.size()) continue;
        split_index = 0;
        lmore = next_combination(l, f.layouts);
      }
    }
    more = next_combination(g, f.grid);
  }
  for (std::size_t r = 0; r < kRules.size(); ++r)
    if (pruned[r]) plan.pruned.emplace_back(std::string(kRules[r].name), pruned[r]);
  return plan;
}

std::string sweep_value_text(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace moesim::config
