// reports/plan_summary.cpp: `moesim plan`'s summary (reports/sweep.hpp): a plan's candidates
// as a sweep's rows (plan_csv, plan_summary_info), and the summary as JSON (with what backs
// each claimed gain) and as text (the search's counts, the top, the token budget's cost,
// `--given`, and where nothing fits the smallest cluster that does).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "predict/bands.hpp"
#include "reports/evidence.hpp"
#include "reports/sweep.hpp"
#include "reports/sweep_detail.hpp"

namespace moesim::reports {
namespace {

using Json = nlohmann::ordered_json;

using detail::analyse;
using detail::Analysis;
using detail::column;
using detail::gain_band;
using detail::predicted_with;
using detail::predicted_with_text;
using detail::pruned_text;
using detail::row_json;
using detail::rows_caveats;
using detail::rows_caveats_json;
using detail::rows_caveats_text;
using detail::rows_table;
using detail::table_columns;
using detail::within_band_of_best;
using detail::within_band_text;

// What the top K's predictions are priced beyond (their caveats, config/caveats.hpp: an
// announced system's projection, say), in rank order.
detail::RowsCaveats top_caveats(const Analysis& a) {
  std::vector<const SweepCsv::Row*> rows;
  for (const auto& k : a.top) rows.push_back(k.row);
  return rows_caveats(rows);
}

// Claimed gains (predict::PlanEvidence) as the summary's JSON: claim_json's fields, the
// candidate's id, the columns that differ, the gain's 80% band and whether it reaches 0.
Json evidence_json(const std::vector<predict::PlanEvidence>& evidence) {
  Json out = Json::array();
  for (const auto& e : evidence) {
    Json x = claim_json(e.gain_pct, e.claim);
    x["id"] = e.id;
    x["columns"] = e.columns;
    if (const auto b = gain_band(e.gain_pct); b.pool > 0) {
      x["band_pct"] = {100 * (b.lo - 1), 100 * (b.hi - 1)};
      x["within_band"] = b.lo <= 1;
    }
    out.push_back(std::move(x));
  }
  return out;
}

// A priced budget's cost per million tokens.
double usd_per_million_tokens(double cost_usd, double token_budget) {
  return cost_usd / (token_budget / 1e6);
}

// The breakdown a plan's top table adds to the figures.
const std::vector<std::string> kPlanBreakdown = {
    "breakdown.compute", "breakdown.exposed_communication", "breakdown.pipeline_bubble",
    "breakdown.host_bound_idle"};
std::int64_t status_count(const Analysis& a, std::string_view name) {
  for (const auto& [s, n] : a.status)
    if (s == name) return n;
  return 0;
}
}  // namespace

SweepCsv plan_csv(const predict::Plan& plan) {
  config::SweepPlan columns;
  columns.columns = plan.layouts.columns;
  for (const auto& d : plan.dims) columns.columns.push_back(d.path);
  const bool budget = plan.token_budget.has_value();
  SweepCsv csv{sweep_csv_header(columns, budget), {}, false};
  for (const auto& c : plan.outcome.candidates)
    csv.rows.push_back({c.point.id, sweep_csv_fields(c.point, c.row, budget), c.row});
  return csv;
}

PlanSummaryInfo plan_summary_info(const predict::Plan& plan, const std::string& scenario_file,
                                  const std::string& output, int top) {
  const auto& o = plan.outcome;
  auto pruned = plan.layouts.pruned;
  for (auto& [rule, n] : pruned) n *= plan.per_layout;
  PlanSummaryInfo info{
      {plan.name, scenario_file, output, static_cast<std::int64_t>(o.candidates.size()),
       plan.layouts.combinations * plan.per_layout, pruned, 0, 1, plan.objective,
       plan.token_budget.has_value(), top},
      plan.gpus,
      o.layouts,
      o.layouts_expanded,
      o.simulated,
      o.bounded_unexpanded,
      o.violations,
      o.bound_wall_s,
      o.simulate_wall_s,
      plan.wall_s,
      {},
      std::nullopt,
      std::nullopt,
      true,
      o.reference_simulated,
      {}};
  info.smallest_fitting_gpus = plan.smallest_fitting_gpus;
  info.token_budget = plan.token_budget;
  info.fit_searched_to = plan.fit_searched_to;
  info.per_layout = plan.per_layout;
  for (const auto& d : plan.dims) info.settings.push_back(d.path);
  for (const auto& c : o.candidates)
    if (c.bound &&
        (c.row.status == predict::SweepStatus::ok || c.row.status == predict::SweepStatus::error))
      info.bounds.emplace_back(c.point.id, *c.bound);
  if (plan.given) {
    info.given = SweepCsv::Row{
        plan.given->point.id,
        sweep_csv_fields(plan.given->point, plan.given->row, plan.token_budget.has_value()),
        plan.given->row};
    info.given_rank = plan.given->rank;
    info.given_rank_exact = plan.given->rank_exact;
    info.given_evidence = plan.given->evidence;
  }
  info.runner_ups = plan.runner_ups;
  info.gpu = plan.gpu;
  info.model = plan.model;
  return info;
}

Json plan_summary_json(const SweepCsv& csv, const PlanSummaryInfo& info) {
  const Analysis a = analyse(csv, info.sweep);
  Json pruned = Json::object();
  std::int64_t rule = 0;
  for (const auto& [r, n] : info.sweep.pruned) pruned[r] = n, rule += n;
  Json top = Json::array();
  const auto within = within_band_of_best(a, info.sweep.objective);
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    const auto& k = a.top[i];
    Json r = row_json(csv, *k.row);
    r["within_band_of_best"] = within[i];
    if (info.token_budget && r.contains("cost_usd") && r["cost_usd"].is_number())
      r["usd_per_million_tokens"] =
          usd_per_million_tokens(r["cost_usd"].get<double>(), *info.token_budget);
    top.push_back(std::move(r));
  }
  Json j{
      {"name", info.sweep.name},
      {"scenario", info.sweep.sweep_file},
      {"gpus", info.gpus},
      {"output", info.sweep.output},
      {"objective", config::sweep_objective_names().name(info.sweep.objective)},
      {"combinations", info.sweep.combinations},
      {"layouts", {{"kept", info.layouts}, {"expanded", info.layouts_expanded}}},
      {"settings", info.settings},
      {"evaluated", info.sweep.rows},
      {"simulated", info.simulated},
      {"predicted_with", predicted_with(csv)},
      {"caveats", rows_caveats_json(top_caveats(a))},
      {"fates",
       {{"rule", rule},
        {"invalid", status_count(a, "invalid")},
        {"memory", status_count(a, "does_not_fit")},
        {"duplicate", status_count(a, "duplicate")},
        {"dominated", status_count(a, "dominated")},
        {"bound", status_count(a, "bound") + info.bounded_unexpanded},
        {"simulated", status_count(a, "ok")},
        {"error", status_count(a, "error")}}},
      {"pruned_layouts", pruned},
      {"bound_violations", info.violations},
      {"top_exact", info.violations.empty() && status_count(a, "error") == 0},
      {"wall_s",
       {{"bound", info.bound_wall_s}, {"simulate", info.simulate_wall_s}, {"total", info.wall_s}}},
      {"top", top}};
  if (info.fit_searched_to > 0)
    j["smallest_fitting_gpus"] =
        info.smallest_fitting_gpus ? Json(*info.smallest_fitting_gpus) : Json(nullptr);
  if (info.given) {
    Json g = sweep_row_json(csv.header, *info.given);
    g.erase("id");
    g["rank"] = info.given_rank ? Json(*info.given_rank) : Json(nullptr);
    g["rank_exact"] = info.given_rank_exact;
    g["simulated_for_rank"] = info.given_simulated;
    g["evidence"] = evidence_json(info.given_evidence);
    j["given"] = std::move(g);
  }
  if (!info.runner_ups.empty() && !a.top.empty())
    j["winner"] = {{"id", a.top.front().row->id}, {"over", evidence_json(info.runner_ups)}};
  return j;
}

namespace {

// `plan --given`'s lines: the scenario as given, its figures, rank and distance to the best.
std::string given_text(const SweepCsv& csv, const PlanSummaryInfo& info, const Analysis& a) {
  const auto& h = csv.header;
  const auto& g = *info.given;
  const std::size_t first_result = column(h, "status");
  std::vector<std::string> set;
  for (std::size_t i = 2; i < first_result; ++i)  // past id and gpus
    if (!g.fields[i].empty())
      set.push_back(fmt::format("{} {}", h[i].substr(h[i].rfind('.') + 1), g.fields[i]));
  std::string o = fmt::format("\nthe scenario as given ({}): ", fmt::join(set, ", "));
  const predict::SweepResult& r = g.result;
  if (r.status != predict::SweepStatus::ok)
    return o + fmt::format("{}: {}\n", predict::sweep_status_names().name(r.status), r.message);
  const std::string obj(config::sweep_objective_names().name(info.sweep.objective));
  const auto value = predict::objective_value(r, info.sweep.objective);
  o += fmt::format("{} {:.4g}, step {:.3g} s, {:.0f} TFLOPS/GPU, peak {:.1f} GiB", obj,
                   value.value_or(0), r.step_time_s, r.tflops_per_gpu, r.peak_memory_gib);
  if (info.given_rank && info.given_rank_exact)
    o += fmt::format("; rank {} (exact: every candidate whose bound beats it was simulated)",
                     *info.given_rank);
  else if (info.given_rank)
    o += fmt::format("; rank at least {} (the ranking stopped after {} simulations: --given-limit)",
                     *info.given_rank, info.given_simulated);
  if (value && !a.top.empty() && *value != 0)
    o += fmt::format("; the best: {} {:+.1f}%", obj, 100 * (a.top.front().objective / *value - 1));
  o += "\n";
  // What backs each claimed gain (config/decisions.hpp): the decisions behind it and the
  // what-if corpus's record on each.
  if (!info.given_evidence.empty())
    o += "evidence for the candidates above it (the what-if corpus's measured pairs per "
         "decision):\n";
  for (const auto& e : info.given_evidence) {
    o += fmt::format("  id {:<8} {:+6.1f}%  {}", e.id, e.gain_pct, claim_text(e.claim));
    if (const auto b = gain_band(e.gain_pct); b.pool > 0)
      o += fmt::format("; the model's {:.0f}% band {:+.1f}% to {:+.1f}%{}", 100 * b.level,
                       100 * (b.lo - 1), 100 * (b.hi - 1),
                       b.lo <= 1 ? ": within it of the scenario as given" : "");
    o += "\n";
  }
  return o;
}

}  // namespace

// 2213404.4 -> "2,213,404".
static std::string with_thousands(double v) {
  std::string d = fmt::format("{:.0f}", std::abs(v)), o;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0) o += ',';
    o += d[i];
  }
  return (v < 0 ? "-" : "") + o;
}

// With a token budget: the best's days and, priced, its cost and cost per million tokens.
static std::string budget_text(const PlanSummaryInfo& info, const SweepCsv::Row& best) {
  if (!info.token_budget) return "";
  std::string o = fmt::format("the best (id {}) trains {:.3g} tokens", best.id, *info.token_budget);
  if (const auto d = best.result.days_with_goodput) o += fmt::format(" in {:.1f} days", *d);
  if (const auto c = best.result.cost_usd)
    o += fmt::format(" for ${} (${:.2f} per million tokens)", with_thousands(*c),
                     usd_per_million_tokens(*c, *info.token_budget));
  return o + "\n";
}

// Nothing fit (issue #45 item 4): the least memory a candidate needs, and the smallest
// cluster where one fits.
static std::string fit_text(const SweepCsv& csv, const PlanSummaryInfo& info) {
  if (info.fit_searched_to == 0) return "";
  std::string o;
  std::optional<std::pair<double, std::int64_t>> least;
  for (const auto& r : csv.rows)
    if (r.result.status == predict::SweepStatus::does_not_fit && r.result.has_memory &&
        (!least || r.result.peak_memory_gib < least->first))
      least = std::pair{r.result.peak_memory_gib, r.id};
  if (least)
    o += fmt::format(
        "nothing fits on {} GPUs: the least memory a candidate needs is {:.1f} GiB a GPU (id {})\n",
        info.gpus, least->first, least->second);
  o += info.smallest_fitting_gpus
           ? fmt::format(
                 "the smallest cluster where a candidate fits: {} GPUs (planned at 2, 4, ... times "
                 "{}; plan "
                 "again with --gpus {})\n",
                 *info.smallest_fitting_gpus, info.gpus, *info.smallest_fitting_gpus)
           : fmt::format(
                 "no candidate fits up to {} GPUs either: a larger system, offload or a shorter "
                 "sequence\n",
                 info.fit_searched_to);
  return o;
}

// The best's step and the model's 80% band on it (predict/bands.hpp): the model's own
// measured runs where it has enough, so the days and costs of a model moesim misses one way
// are read with that lean.
static std::string best_band_text(const PlanSummaryInfo& info, const predict::SweepResult& best) {
  const auto b = predict::corpus_step_band(best.step_time_s, info.gpu, info.model);
  if (b.pool == 0 || best.step_time_s <= 0) return "";
  return fmt::format(
      "the best's step {:.3g} s: the model's {:.0f}% band {:.3g} - {:.3g} s, from {}\n",
      best.step_time_s, 100 * b.level, b.lo, b.hi, b.basis);
}

// The candidates each layout rule drops (config/sweep_file.hpp), as the sweep summary lists
// them; where no layout is left, each rule with what it asks, so the user sees why.
static std::string rules_text(const PlanSummaryInfo& info) {
  if (info.sweep.pruned.empty()) return "";
  if (info.layouts > 0) return fmt::format("  layout rules: {}\n", pruned_text(info.sweep.pruned));
  std::string o = fmt::format(
      "no layout of {} GPUs keeps to the rules; the candidates each drops:\n", info.gpus);
  const auto rules = config::layout_rules();
  for (const auto& [rule, n] : info.sweep.pruned) {
    const auto it = std::find_if(rules.begin(), rules.end(),
                                 [&](const config::LayoutRule& r) { return r.name == rule; });
    o += fmt::format("  {:>9} {}{}\n", n, rule,
                     it != rules.end() ? fmt::format(": {}", it->description) : std::string());
  }
  return o;
}

std::string plan_summary_text(const SweepCsv& csv, const PlanSummaryInfo& info) {
  const Analysis a = analyse(csv, info.sweep);
  std::int64_t rule = 0;
  for (const auto& [r, n] : info.sweep.pruned) rule += n;
  std::string o = fmt::format(
      "plan {} ({}) on {} GPUs: {} candidates ({} layouts kept by the rules x {} settings "
      "combinations",
      info.sweep.name, info.sweep.sweep_file, info.gpus, info.sweep.combinations, info.layouts,
      info.per_layout);
  o += info.settings.empty() ? ")\n" : fmt::format(" of {})\n", fmt::join(info.settings, ", "));
  o += fmt::format(
      "  {} break a layout rule, {} invalid, {} do not fit, {} duplicate (an inert setting), "
      "{} dominated (recompute more than a rung that fits), "
      "{} pruned by a bound ({} in {} layouts never expanded of {}), {} simulated",
      rule, status_count(a, "invalid"), status_count(a, "does_not_fit"),
      status_count(a, "duplicate"), status_count(a, "dominated"),
      status_count(a, "bound") + info.bounded_unexpanded, info.bounded_unexpanded,
      info.layouts - info.layouts_expanded, info.layouts, status_count(a, "ok"));
  if (const auto e = status_count(a, "error")) o += fmt::format(", {} failed", e);
  o += fmt::format(
      "\n  {:.1f} s (bounds {:.1f} s, simulations {:.1f} s); the {} evaluated candidates in {}\n",
      info.wall_s, info.bound_wall_s, info.simulate_wall_s, info.sweep.rows, info.sweep.output);
  o += rules_text(info);
  o += predicted_with_text(csv);
  if (!info.violations.empty())
    o += fmt::format(
        "warning: {} candidates beat a bound of theirs (ids {}): the top may not be exact; please "
        "report it\n",
        info.violations.size(), fmt::join(info.violations, ", "));
  if (a.top.empty())
    return o + "no candidate simulated (status ok): nothing to rank\n" + fit_text(csv, info);
  // Exact only while every bound held (predict/plan.hpp) and nothing failed unranked.
  const bool exact = info.violations.empty() && status_count(a, "error") == 0;
  o += fmt::format(
      "\ntop {} by {} ({} is better; {}):\n", a.top.size(),
      config::sweep_objective_names().name(info.sweep.objective),
      config::higher_is_better(info.sweep.objective) ? "higher" : "lower",
      exact ? "exact for the space"
            : "not shown exact: a bound failed or candidates failed unranked, see above");
  o += rows_table(csv, a.top, table_columns(csv.header, info.sweep, kPlanBreakdown));
  o += within_band_text(a, info.sweep.objective);
  o += rows_caveats_text(top_caveats(a), fmt::format("caveats of the top {}", a.top.size()));
  o += best_band_text(info, a.top.front().row->result);
  o += budget_text(info, *a.top.front().row);
  if (info.given) o += given_text(csv, info, a);
  return o;
}

}  // namespace moesim::reports
