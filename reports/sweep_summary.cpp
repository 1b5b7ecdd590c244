// reports/sweep_summary.cpp: a sweep's summary (reports/sweep.hpp): the ranking the sweep's and
// the plan's summaries share (reports/sweep_detail.hpp: the top K by the objective, the
// Pareto front, the model's band around the best, the rows as a table), and
// sweep_summary_json and sweep_summary_text.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "predict/bands.hpp"
#include "reports/run.hpp"
#include "reports/sweep.hpp"
#include "reports/sweep_detail.hpp"

namespace moesim::reports {
namespace {

using Json = nlohmann::ordered_json;

using detail::analyse;
using detail::Analysis;
using detail::predicted_with;
using detail::predicted_with_text;
using detail::pruned_text;
using detail::row_json;
using detail::rows_by_id;
using detail::rows_caveats;
using detail::rows_caveats_json;
using detail::rows_caveats_text;
using detail::rows_table;
using detail::table_columns;
using detail::within_band_of_best;
using detail::within_band_text;

// The budget's columns: with goodput under a goodput objective.
std::string budget_days(const SweepSummaryInfo& info) {
  return config::with_goodput(info.objective) ? "days_with_goodput" : "days";
}
std::string budget_gpu_hours(const SweepSummaryInfo& info) {
  return config::with_goodput(info.objective) ? "gpu_hours_with_goodput" : "gpu_hours";
}

}  // namespace

namespace detail {

Analysis analyse(const SweepCsv& csv, const SweepSummaryInfo& info) {
  Analysis a;
  for (const auto& s : predict::sweep_status_names().entries()) a.status.emplace_back(s.name, 0);
  a.sweep_statuses = 4;  // ok, invalid, does_not_fit, error; the others are plan's
  const bool goodput = config::with_goodput(info.objective);
  std::vector<Ranked> ok;
  for (const auto& row : csv.rows) {
    const predict::SweepResult& r = row.result;
    for (auto& [name, n] : a.status)
      if (name == predict::sweep_status_names().name(r.status)) ++n;
    if (r.status != predict::SweepStatus::ok) continue;
    const auto o = predict::objective_value(r, info.objective);
    if (!o) continue;
    Ranked k{&row, *o, 0, 0};
    if (info.token_budget) {
      const auto gh = goodput ? r.gpu_hours_with_goodput : r.gpu_hours;
      const auto d = goodput ? r.days_with_goodput : r.days;
      if (!gh || !d) continue;
      k.x = *gh;
      k.y = -*d;
    } else {
      if (r.gpus <= 0 || !r.has_timing) continue;
      k.x = static_cast<double>(r.gpus);
      k.y = r.tokens_per_s_per_gpu * k.x;
    }
    ok.push_back(k);
  }
  const bool higher = config::higher_is_better(info.objective);
  a.top = ok;
  std::stable_sort(a.top.begin(), a.top.end(), [&](const Ranked& p, const Ranked& q) {
    if (p.objective != q.objective)
      return higher ? p.objective > q.objective : p.objective < q.objective;
    return p.row->id < q.row->id;
  });
  if (a.top.size() > static_cast<std::size_t>(std::max(0, info.top)))
    a.top.resize(static_cast<std::size_t>(info.top));
  std::vector<Ranked> by_x = ok;
  std::stable_sort(by_x.begin(), by_x.end(), [](const Ranked& p, const Ranked& q) {
    if (p.x != q.x) return p.x < q.x;
    if (p.y != q.y) return p.y > q.y;
    return p.row->id < q.row->id;
  });
  for (const auto& k : by_x)
    if (a.pareto.empty() || k.y > a.pareto.back().y) a.pareto.push_back(k);
  a.x_name = info.token_budget ? budget_gpu_hours(info) : "gpus";
  a.y_name = info.token_budget ? budget_days(info) : "tokens_per_s";
  return a;
}

// The summary table's columns: id, the varied values, then the figures (and `extra`).
std::vector<std::size_t> table_columns(const std::vector<std::string>& h,
                                       const SweepSummaryInfo& info,
                                       const std::vector<std::string>& extra) {
  const std::size_t first_result = column(h, "status");
  std::vector<std::size_t> cols;
  for (std::size_t i = 1; i < first_result; ++i) cols.push_back(i);
  std::vector<std::string> figures = {"tokens_per_s_per_gpu", "tflops_per_gpu", "mfu",
                                      "step_time_s", "peak_memory_gib"};
  figures.push_back("goodput.ettr");
  if (info.token_budget) figures.insert(figures.end(), {budget_days(info), budget_gpu_hours(info)});
  if (info.objective == config::SweepObjective::energy_mwh ||
      info.objective == config::SweepObjective::cost_usd)
    figures.emplace_back(config::sweep_objective_names().name(info.objective));
  figures.insert(figures.end(), extra.begin(), extra.end());
  for (const auto& f : figures)
    if (column(h, f) < h.size()) cols.push_back(column(h, f));
  return cols;
}

// Ranked rows as an aligned text table of `cols`, headed by the columns' last path part.
std::string rows_table(const SweepCsv& csv, const std::vector<Ranked>& rows,
                       const std::vector<std::size_t>& cols) {
  const auto& h = csv.header;
  const std::size_t first_result = column(h, "status");
  const auto short_name = [](const std::string& path) {
    const auto dot = path.rfind('.');
    return dot == std::string::npos ? path : path.substr(dot + 1);
  };
  const auto cell = [&](const SweepCsv::Row& r, std::size_t c) {
    if (c >= first_result) {
      if (const auto d = sweep_figure(r.result, h[c])) {
        if (h[c] == "mfu") return fmt::format("{:.1f}%", 100 * *d);
        return std::abs(*d) >= 100 ? fmt::format("{:.0f}", *d) : fmt::format("{:.3g}", *d);
      }
    }
    const std::string& s = r.fields[c];
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
  };
  std::vector<std::size_t> width;
  width.push_back(2);
  for (const auto& r : rows) width[0] = std::max(width[0], std::to_string(r.row->id).size());
  for (std::size_t c : cols) {
    std::size_t w = short_name(h[c]).size();
    for (const auto& r : rows) w = std::max(w, cell(*r.row, c).size());
    width.push_back(w);
  }
  std::string t = fmt::format("  {:>{}}", "id", width[0]);
  for (std::size_t k = 0; k < cols.size(); ++k)
    t += fmt::format("  {:>{}}", short_name(h[cols[k]]), width[k + 1]);
  t += "\n";
  for (const auto& r : rows) {
    t += fmt::format("  {:>{}}", r.row->id, width[0]);
    for (std::size_t k = 0; k < cols.size(); ++k)
      t += fmt::format("  {:>{}}", cell(*r.row, cols[k]), width[k + 1]);
    t += "\n";
  }
  return t;
}

Json row_json(const SweepCsv& csv, const SweepCsv::Row& r) {
  return sweep_row_json(csv.header, r);
}

// The band of a claimed gain over the scenario as given (predict/bands.hpp: the measured
// pairs' out-of-sample ratio errors on the ratio 1 + gain).
predict::Band gain_band(double gain_pct) {
  return predict::ratio_band(1 + gain_pct / 100, predict::corpus_pair_residuals());
}

// The top candidates the model cannot order against the best: B / A's 80% ratio band (the
// pairs' out-of-sample ratio errors, predict/bands.hpp) around best / candidate reaches 1.
std::vector<bool> within_band_of_best(const Analysis& a, config::SweepObjective objective) {
  std::vector<bool> out;
  for (const auto& k : a.top) {
    const double best = a.top.front().objective, v = k.objective;
    if (!(best > 0) || !(v > 0)) {
      out.push_back(false);
      continue;
    }
    const double gain = 100 * (config::higher_is_better(objective) ? best / v - 1 : v / best - 1);
    const auto b = gain_band(gain);
    out.push_back(b.pool > 0 && b.lo <= 1);
  }
  return out;
}

std::string predicted_with(const SweepCsv& csv) {
  return csv.rows.empty() ? std::string() : csv.rows.front().result.predicted_with;
}

std::string pruned_text(const std::vector<std::pair<std::string, std::int64_t>>& pruned) {
  std::vector<std::string> parts;
  for (const auto& [rule, n] : pruned) parts.push_back(fmt::format("{} {}", rule, n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string predicted_with_text(const SweepCsv& csv) {
  const std::string with = predicted_with(csv);
  if (predict::predicted_as_shipped(with)) return "";
  const bool what_if =
      with.find("uncalibrated") != std::string::npos || with.find("; set ") != std::string::npos;
  return fmt::format("predicted with: {}{}\n", with,
                     what_if ? " (a what-if: the bands and the evidence behind gains describe the "
                               "calibrated model)"
                             : "");
}

RowsCaveats rows_caveats(const std::vector<const SweepCsv::Row*>& rows) {
  RowsCaveats out;
  for (const auto* row : rows) {
    const auto& r = row->result;
    if (r.status != predict::SweepStatus::ok && r.status != predict::SweepStatus::does_not_fit)
      continue;
    ++out.of;
    for (const auto& c : r.caveats) {
      auto it = std::find_if(out.caveats.begin(), out.caveats.end(),
                             [&](const RowsCaveat& k) { return k.text == c; });
      if (it == out.caveats.end()) it = out.caveats.insert(it, RowsCaveat{c, {}});
      it->ids.push_back(row->id);
    }
  }
  return out;
}

std::string caveat_rows_text(const std::vector<std::int64_t>& ids, std::int64_t of) {
  constexpr std::size_t kListed = 8;  // ids named before "..."
  const auto n = static_cast<std::int64_t>(ids.size());
  if (n == of) return "every row";
  const std::vector<std::int64_t> first(ids.begin(), ids.begin() + std::min(ids.size(), kListed));
  if (ids.size() <= kListed)
    return fmt::format("row{} {} ({} of {})", n == 1 ? "" : "s", fmt::join(first, ", "), n, of);
  return fmt::format("{} of {} rows (ids {}, ...)", n, of, fmt::join(first, ", "));
}

std::string rows_caveats_text(const RowsCaveats& all, const std::string& heading) {
  std::vector<std::string> labelled;
  for (const auto& c : all.caveats)
    labelled.push_back(fmt::format("{}: {}", caveat_rows_text(c.ids, all.of), c.text));
  return caveats_text(labelled, heading);
}

Json rows_caveats_json(const RowsCaveats& all) {
  Json j = Json::array();
  for (const auto& c : all.caveats)
    j.push_back(Json{{"caveat", c.text},
                     {"rows", static_cast<std::int64_t>(c.ids.size())},
                     {"of", all.of},
                     {"ids", c.ids}});
  return j;
}

// The line under a top table naming the rows within_band_of_best (the best aside).
std::string within_band_text(const Analysis& a, config::SweepObjective objective) {
  const auto within = within_band_of_best(a, objective);
  std::vector<std::int64_t> ids;
  for (std::size_t i = 1; i < a.top.size(); ++i)
    if (within[i]) ids.push_back(a.top[i].row->id);
  if (ids.empty()) return "";
  return fmt::format(
      "within the model's 80% band of the best (the measured pairs' out-of-sample ratio errors): "
      "ids {}; "
      "the model does not order them against it\n",
      fmt::join(ids, ", "));
}

}  // namespace detail

Json sweep_summary_json(const SweepCsv& csv, const SweepSummaryInfo& info) {
  const Analysis a = analyse(csv, info);
  Json pruned = Json::object();
  for (const auto& [rule, n] : info.pruned) pruned[rule] = n;
  Json status = Json::object();
  for (const auto& [s, n] : a.listed()) status[s] = n;
  Json top = Json::array(), front = Json::array();
  const auto within = within_band_of_best(a, info.objective);
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    Json r = row_json(csv, *a.top[i].row);
    r["within_band_of_best"] = within[i];
    top.push_back(std::move(r));
  }
  for (const auto& k : a.pareto) front.push_back(row_json(csv, *k.row));
  return Json{{"name", info.name},
              {"sweep_file", info.sweep_file},
              {"output", info.output},
              {"rows", info.rows},
              {"combinations", info.combinations},
              {"pruned_layouts", pruned},
              {"shard", {{"index", info.shard_index}, {"count", info.shard_count}}},
              {"rows_in_output", static_cast<std::int64_t>(csv.rows.size())},
              {"predicted_with", predicted_with(csv)},
              {"caveats", rows_caveats_json(rows_caveats(rows_by_id(csv)))},
              {"status", status},
              {"objective", config::sweep_objective_names().name(info.objective)},
              {"top", top},
              {"pareto", {{"x", a.x_name}, {"y", a.y_name}, {"rows", front}}}};
}

std::string sweep_summary_text(const SweepCsv& csv, const SweepSummaryInfo& info) {
  const Analysis a = analyse(csv, info);
  std::string o = fmt::format("sweep {} ({}): {} rows", info.name, info.sweep_file, info.rows);
  if (info.shard_count > 1) o += fmt::format(", shard {}/{}", info.shard_index, info.shard_count);
  o += fmt::format("; {} in {}:", csv.rows.size(), info.output);
  std::string sep = " ";
  for (const auto& [s, n] : a.listed()) {
    o += fmt::format("{}{} {}", sep, n, s);
    sep = ", ";
  }
  o +=
      "\n" + predicted_with_text(csv) + rows_caveats_text(rows_caveats(rows_by_id(csv)), "caveats");
  if (info.combinations > info.rows) {
    o += fmt::format("layouts: {} of {} combinations break a layout rule and are not rows: {}\n",
                     info.combinations - info.rows, info.combinations, pruned_text(info.pruned));
  }
  const std::vector<std::size_t> cols = table_columns(csv.header, info, {});
  const std::string obj(config::sweep_objective_names().name(info.objective));
  if (a.pareto.empty()) {
    o += "no row simulated (status ok): nothing to rank\n";
    return o;
  }
  if (!a.top.empty()) {
    o += fmt::format("\ntop {} by {} ({} is better):\n", a.top.size(), obj,
                     config::higher_is_better(info.objective) ? "higher" : "lower");
    o += rows_table(csv, a.top, cols);
    o += within_band_text(a, info.objective);
  }
  o += info.token_budget ? "\nPareto front, GPU-hours against days to train the budget (neither "
                           "beaten by another row):\n"
                         : "\nPareto front, cluster throughput (tokens/s) against GPUs (more "
                           "throughput needs more GPUs):\n";
  o += rows_table(csv, a.pareto, cols);
  return o;
}

}  // namespace moesim::reports
