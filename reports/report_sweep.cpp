// reports/report_sweep.cpp: the page of a sweep CSV (reports/report.hpp, sweep_report): the
// objective against cluster size with the Pareto front (reports::sweep_summary_json)
// highlighted.
#include "reports/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "config/json_reader.hpp"
#include "reports/report_charts.hpp"
#include "reports/text.hpp"

namespace moesim::reports {

using namespace charts;  // what the pages share (reports/report_charts.hpp)

namespace {

// The sweep charts' points over the data sets "rows" and "front" and the ordinal scales
// "front" and (with `coloured`) "colour": every ok row, filled by the value of the setting
// that varies most (its field "colour") or else by the front; the Pareto front's larger,
// outlined, opaque and drawn on top, and each front row labelled (`label`, a Vega
// expression) beside it.
Json pareto_marks(const std::string& x, const std::string& y, const std::string& label,
                  const std::string& tooltip, bool coloured) {
  const auto front = [](const char* yes, const char* no) {
    return Json{{"signal", fmt::format("datum.front == 'Pareto front' ? {} : {}", yes, no)}};
  };
  Json symbol = {{"type", "symbol"}, {"from", {{"data", "rows"}}}};
  symbol["encode"]["enter"] = {
      {"x", {{"scale", "x"}, {"field", x}}},
      {"y", {{"scale", "y"}, {"field", y}}},
      {"size", front("110", "50")},
      {"fill",
       {{"scale", coloured ? "colour" : "front"}, {"field", coloured ? "colour" : "front"}}},
      {"stroke", {{"scale", "front"}, {"field", "front"}}},
      {"strokeWidth", front("2", "0")},
      {"fillOpacity", front("1", "0.55")},
      {"zindex", front("1", "0")},
      {"tooltip", {{"signal", tooltip}}}};
  Json text = {{"type", "text"}, {"from", {{"data", "front"}}}};
  text["encode"]["enter"] = {{"x", {{"scale", "x"}, {"field", x}, {"offset", 8}}},
                             {"y", {{"scale", "y"}, {"field", y}}},
                             {"baseline", {{"value", "middle"}}},
                             {"fill", {{"value", "#b00020"}}},
                             {"text", {{"signal", label}}}};
  return Json::array({std::move(symbol), std::move(text)});
}

}  // namespace

HtmlPage sweep_report(const SweepCsv& csv, const std::string& file,
                      config::SweepObjective objective) {
  const auto& h = csv.header;
  const auto column = [&](const std::string& name) {
    const auto it = std::find(h.begin(), h.end(), name);
    return it == h.end() ? h.size() : static_cast<std::size_t>(it - h.begin());
  };
  const std::string objective_name(config::sweep_objective_names().name(objective));
  const std::size_t status = column("status"), gpus = column("gpus"), obj = column(objective_name),
                    days = column("days"), gpu_hours = column("gpu_hours");
  if (status == h.size() || gpus == h.size())
    throw config::InputError(file, "line 1",
                             "no 'status' or 'gpus' column: not a CSV written by moesim sweep");
  if (obj == h.size())
    throw config::InputError(file, "line 1",
                             fmt::format("no '{}' column for the objective", objective_name));
  const bool budget = days < h.size() && gpu_hours < h.size();

  SweepSummaryInfo info;
  info.name = std::filesystem::path(file).stem().string();
  info.sweep_file = file;
  info.output = file;
  info.rows = static_cast<std::int64_t>(csv.rows.size());
  info.objective = objective;
  info.token_budget = budget;
  info.top = 1;
  const Json summary = sweep_summary_json(csv, info);
  std::set<std::int64_t> front;
  for (const auto& r : summary["pareto"]["rows"]) front.insert(r["id"].get<std::int64_t>());

  // The varied values: the columns between `id` and `status`.
  const auto varied = [&](const SweepCsv::Row& r) {
    std::string s;
    for (std::size_t c = 1; c < status && c < r.fields.size(); ++c) {
      const auto dot = h[c].rfind('.');
      s += fmt::format("{}{}={}", s.empty() ? "" : " ",
                       dot == std::string::npos ? h[c] : h[c].substr(dot + 1), r.fields[c]);
    }
    return s;
  };
  // The setting that varies most besides the cluster size (at most 12 values, so that
  // its colours can be told apart): the points are coloured by it.
  std::size_t colour = status;
  std::size_t colour_values = 1;
  for (std::size_t c = 1; c < status; ++c) {
    if (c == gpus) continue;
    std::set<std::string> seen;
    for (const auto& r : csv.rows)
      if (r.result.status == predict::SweepStatus::ok) seen.insert(r.fields[c]);
    if (seen.size() > colour_values && seen.size() <= 12) colour = c, colour_values = seen.size();
  }
  const bool coloured = colour < status;
  Json values = Json::array();
  double min_gpus = 0, max_gpus = 0;
  for (const auto& r : csv.rows) {
    if (r.result.status != predict::SweepStatus::ok || r.result.gpus <= 0) continue;
    const auto y = predict::objective_value(r.result, objective);
    if (!y) continue;
    const auto g = static_cast<double>(r.result.gpus);
    Json v{{"id", r.id},
           {"gpus", g},
           {"y", *y},
           {"front", front.count(r.id) ? "Pareto front" : "other rows"},
           {"setting", varied(r)}};
    if (coloured) v["colour"] = colour < r.fields.size() ? r.fields[colour] : "";
    if (budget) {
      v["days"] = r.result.days.value_or(0);
      v["gpu_hours"] = r.result.gpu_hours.value_or(0);
    }
    values.push_back(v);
    min_gpus = min_gpus == 0 ? g : std::min(min_gpus, g);
    max_gpus = std::max(max_gpus, g);
  }

  HtmlPage page;
  page.title = fmt::format("moesim report: sweep {}", info.name);
  page.subtitle = fmt::format("{} rows read from {}.", csv.rows.size(), file);
  std::string statuses;
  for (const auto& [s, n] : summary["status"].items())
    statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", n.get<std::int64_t>(), s);
  page.facts = {
      {"rows", statuses},
      {"objective", fmt::format("{} ({} is better)", objective_name,
                                config::higher_is_better(objective) ? "higher" : "lower")},
      {"Pareto front", fmt::format("{}: {}", counted(front.size(), "row"),
                                   budget ? "GPU-hours against days to train the token budget"
                                          : "cluster throughput (tokens/s) against GPUs")}};
  add_predicted_with_fact(page, summary);
  add_caveat_facts(page, summary);
  if (!summary["top"].empty()) {
    const auto& best = summary["top"][0];
    const auto& value = best[objective_name];
    page.facts.emplace_back(
        "best by the objective",
        fmt::format("row {}: {} = {}", best["id"].dump(), objective_name,
                    value.is_number() ? fmt::format("{:.6g}", value.get<double>()) : value.dump()));
  }

  const std::string tooltip = fmt::format(
      "{{'id': datum.id, 'GPUs': datum.gpus, '{}': format(datum.y, '.4~g'), 'settings': "
      "datum.setting, "
      "'Pareto front': datum.front == 'Pareto front' ? 'yes' : 'no'}}",
      objective_name);
  // Every ok row, the front's larger, red and labelled with its id.
  Json spec = vega_spec(R"json({
    "data": [
      {"name": "rows"},
      {"name": "front", "source": "rows", "transform": [{"type": "filter", "expr": "datum.front == 'Pareto front'"}]}],
    "scales": [
      {"name": "x", "range": "width"},
      {"name": "y", "type": "linear", "domain": {"data": "rows", "field": "y"}, "range": "height", "nice": true,
       "zero": false, "padding": 12},
      {"name": "front", "type": "ordinal", "domain": ["Pareto front", "other rows"], "range": ["#e45756", "#4c78a8"]}],
    "axes": [{"orient": "bottom", "scale": "x", "title": "GPUs (cluster size)", "grid": true},
             {"orient": "left", "scale": "y", "grid": true}],
    "legends": [{"fill": "front", "orient": "right"}],
    "marks": []
  })json",
                        800, 420);
  spec["data"][0]["values"] = values;
  // Cluster sizes over a wide range on a log2 axis.
  const bool log_x = min_gpus > 0 && max_gpus / min_gpus >= 4;
  Json& x = spec["scales"][0];
  if (log_x) {
    x.update({{"type", "log"},
              {"base", 2},
              {"domain", Json::array({min_gpus / 1.3, max_gpus * 1.3})},
              {"nice", false}});
    spec["axes"][0]["format"] = "d";
  } else {
    x.update({{"type", "linear"},
              {"domain", {{"data", "rows"}, {"field", "gpus"}}},
              {"nice", true},
              {"zero", false},
              {"padding", 24}});
  }
  spec["axes"][1]["title"] = objective_name;
  spec["marks"] = pareto_marks("gpus", "y", "'#' + datum.id", tooltip, coloured);
  // The colour legend names the setting that varies.
  const auto add_colour = [&](Json& chart) {
    if (!coloured) return;
    chart["scales"].push_back({{"name", "colour"},
                               {"type", "ordinal"},
                               {"domain", {{"data", "rows"}, {"field", "colour"}, {"sort", true}}},
                               {"range", "category"}});
    chart["legends"].push_back({{"fill", "colour"}, {"orient", "right"}, {"title", h[colour]}});
    chart["legends"][0]["title"] = "outline";
    chart["legends"][0].erase("fill");
    chart["legends"][0]["stroke"] = "front";
  };
  add_colour(spec);
  page.charts.push_back(
      {fmt::format("{} against cluster size", objective_name),
       fmt::format(
           "Every simulated row (status ok) of the sweep{}; rows on the Pareto front ({}) outlined "
           "in red "
           "with their ids.",
           coloured ? fmt::format(", coloured by {}, the setting that varies most", h[colour])
                    : std::string(),
           budget ? "no other row needs both fewer GPU-hours and fewer days for the token budget"
                  : "no other row has both fewer GPUs and more tokens/s for the whole cluster"),
       spec});

  if (budget) {
    Json frontier = vega_spec(R"json({
      "data": [
        {"name": "rows"},
        {"name": "front", "source": "rows",
         "transform": [{"type": "filter", "expr": "datum.front == 'Pareto front'"},
                       {"type": "collect", "sort": {"field": "gpu_hours"}}]}],
      "scales": [
        {"name": "x", "type": "linear", "domain": {"data": "rows", "field": "gpu_hours"}, "range": "width",
         "nice": true, "zero": false, "padding": 12},
        {"name": "y", "type": "linear", "domain": {"data": "rows", "field": "days"}, "range": "height",
         "nice": true, "zero": false, "padding": 12},
        {"name": "front", "type": "ordinal", "domain": ["Pareto front", "other rows"],
         "range": ["#e45756", "#4c78a8"]}],
      "axes": [{"orient": "bottom", "scale": "x", "title": "GPU-hours for the token budget", "grid": true,
                "format": "~s"},
               {"orient": "left", "scale": "y", "title": "days to train the token budget", "grid": true}],
      "legends": [{"fill": "front", "orient": "right"}],
      "marks": [
        {"type": "line", "from": {"data": "front"},
         "encode": {"enter": {"x": {"scale": "x", "field": "gpu_hours"}, "y": {"scale": "y", "field": "days"},
                              "stroke": {"value": "#e45756"}, "strokeWidth": {"value": 2}}}}]
    })json",
                              800, 420);
    frontier["data"][0]["values"] = values;
    for (auto& m :
         pareto_marks("gpu_hours", "days", "'#' + datum.id + ' (' + datum.gpus + ' GPUs)'",
                      "{'id': datum.id, 'GPUs': datum.gpus, 'days': format(datum.days, '.1f'), "
                      "'GPU-hours': format(datum.gpu_hours, ',.0f'), 'settings': datum.setting}",
                      coloured))
      frontier["marks"].push_back(std::move(m));
    add_colour(frontier);
    page.charts.push_back(
        {"Days against GPU-hours for the token budget",
         "The sweep's Pareto front as moesim sweep reports it: lower left is better on both; the "
         "red line joins the rows no other row beats in both.",
         frontier});
  }
  return page;
}

}  // namespace moesim::reports
