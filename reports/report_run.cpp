// reports/report_run.cpp: the page of one prediction (reports/report.hpp, run_report): the critical
// rank's breakdown, memory by part against the GPU's capacity, time per module, and the
// critical rank's timeline (timeline_bars).
#include "reports/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "reports/report_charts.hpp"
#include "reports/run.hpp"
#include "schedules/schedule_kind.hpp"

namespace moesim::reports {

using namespace charts;  // what the pages share (reports/report_charts.hpp)

namespace {

// Memory parts as `run --json`'s peak_memory_parts_gib names them.
constexpr Category kMemoryParts[] = {
    {"weights_grads", "weights and gradients", "#4c78a8", "white"},
    {"optimizer", "optimizer state", "#72b7b2", "#222"},
    {"activations", "activations", "#f58518", "white"},
    {"ep_buffers", "EP buffers", "#b279a2", "white"},
    {"graph_buffers", "CUDA graph buffers", "#9d755d", "white"},
};
constexpr const char* kFragmentationColor = "#dddddd";

// Fixed-precision numbers keep the specs small (the timeline has thousands of bars).
double rounded(double v, double quantum) {
  return std::round(v / quantum) * quantum;
}

HtmlChart memory_chart(const config::Scenario& sc, const predict::Prediction& p,
                       const Json& parts) {
  const double capacity_gib = sc.system.gpu.usable_GiB.value;
  Json values = Json::array();
  std::vector<std::string> labels, colors;
  int order = 0;
  for (const auto& c : kMemoryParts) {
    labels.push_back(c.label);
    colors.push_back(c.color);
    values.push_back({{"part", c.label}, {"gib", parts.value(c.key, 0.0)}, {"order", order++}});
  }
  const double fragmentation = p.reserved_memory_gib - p.peak_memory_gib;
  if (fragmentation > 0) {
    labels.push_back("fragmentation allowance");
    colors.push_back(kFragmentationColor);
    values.push_back(
        {{"part", "fragmentation allowance"}, {"gib", fragmentation}, {"order", order++}});
  }
  Json spec = vega_spec(R"json({
    "data": [
      {"name": "parts", "transform": [{"type": "stack", "sort": {"field": "order"}, "field": "gib"}]},
      {"name": "capacity"}],
    "scales": [
      {"name": "x", "type": "linear", "range": "width", "nice": false, "zero": true},
      {"name": "color", "type": "ordinal"}],
    "axes": [{"orient": "bottom", "scale": "x", "grid": true}],
    "legends": [{"fill": "color", "orient": "bottom", "direction": "horizontal"}],
    "marks": [
      {"type": "rect", "from": {"data": "parts"},
       "encode": {"enter": {
         "y": {"value": 14}, "y2": {"signal": "height"},
         "x": {"scale": "x", "field": "y0"}, "x2": {"scale": "x", "field": "y1"},
         "fill": {"scale": "color", "field": "part"},
         "tooltip": {"signal": "{'part': datum.part, 'GiB': format(datum.gib, '.2f')}"}}}},
      {"type": "rule", "from": {"data": "capacity"},
       "encode": {"enter": {
         "x": {"scale": "x", "field": "gib"}, "y": {"value": 0}, "y2": {"signal": "height + 4"},
         "stroke": {"value": "#b00020"}, "strokeWidth": {"value": 2}}}},
      {"type": "text", "from": {"data": "capacity"},
       "encode": {"enter": {
         "x": {"scale": "x", "field": "gib", "offset": -4}, "y": {"value": 10},
         "align": {"value": "right"}, "fill": {"value": "#b00020"}, "text": {"field": "label"}}}}]
  })json",
                        900, 60);
  spec["data"][0]["values"] = values;
  spec["data"][1]["values"] = Json::array(
      {{{"gib", capacity_gib},
        {"label", fmt::format("{} memory: {:.2f} GiB", sc.system.gpu.name, capacity_gib)}}});
  spec["scales"][0]["domain"] =
      Json::array({0, 1.08 * std::max(capacity_gib, p.reserved_memory_gib)});
  spec["scales"][1]["domain"] = string_list(labels);
  spec["scales"][1]["range"] = string_list(colors);
  spec["axes"][0]["title"] =
      fmt::format("GiB on the peak pipeline rank ({})", p.fits_in_memory ? "fits" : "does not fit");
  return {"Memory by part, against the GPU's capacity",
          fmt::format("The pipeline rank with the most memory: {:.1f} GiB at its peak{}; the red "
                      "rule is the GPU's "
                      "capacity. Run --json: peak_memory_parts_gib.",
                      p.peak_memory_gib,
                      fragmentation > 0
                          ? fmt::format(", {:.1f} GiB with the allocator's fragmentation allowance",
                                        p.reserved_memory_gib)
                          : std::string()),
          spec};
}

HtmlChart module_chart(const Json& compute, const Json& host_bound) {
  std::map<std::string, double> total;
  for (const auto& [m, s] : compute.items()) total[m] += s.get<double>();
  for (const auto& [m, s] : host_bound.items()) total[m] += s.get<double>();
  std::vector<std::pair<std::string, double>> modules(total.begin(), total.end());
  std::stable_sort(modules.begin(), modules.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  std::vector<std::string> names;
  Json values = Json::array();
  for (const auto& [m, t] : modules) {
    if (t <= 0) continue;
    names.push_back(m);
    values.push_back(
        {{"module", m}, {"kind", "compute"}, {"seconds", compute.value(m, 0.0)}, {"order", 0}});
    values.push_back({{"module", m},
                      {"kind", "host-bound idle"},
                      {"seconds", host_bound.value(m, 0.0)},
                      {"order", 1}});
  }
  const Json spec = stacked_seconds_spec(
      "module", "kind",
      "{'module': datum.module, 'what': datum.kind, 'seconds': format(datum.seconds, '.3f')}", 0.2,
      std::max(60, 24 * static_cast<int>(names.size())), std::move(values), names,
      {"compute", "host-bound idle"}, {"#4c78a8", "#e45756"});
  return {"Time per module (critical rank)",
          "Seconds the critical rank's compute stream ran each module's kernels, and sat idle "
          "before them because "
          "the host had not launched them yet (host-bound idle). Run --json: compute_by_module, "
          "host_bound_idle_by_module; outside_layers holds pipeline transfers, DP collectives and "
          "the optimizer.",
          spec};
}

const std::map<std::string, std::string> kPassColors = {{"forward", "#4c78a8"},
                                                        {"backward", "#f58518"},
                                                        {"optimizer", "#54a24b"},
                                                        {"mixed", "#b279a2"}};

HtmlChart timeline_chart(const predict::Prediction& traced, std::size_t kernels) {
  const auto& step = traced.step;
  // Every simulated pipeline rank (issue #27 item 6), the critical one first; the bar
  // budget shared among them.
  const int ranks = static_cast<int>(step.rank_end_s.size());
  std::vector<TimelineBar> bars;
  std::vector<int> order{step.critical_rank};
  for (int r = 0; r < ranks; ++r)
    if (r != step.critical_rank) order.push_back(r);
  for (const int r : order)
    for (auto b : timeline_bars(
             step, r, std::max<std::size_t>(200, 4000 / static_cast<std::size_t>(ranks)))) {
      b.lane =
          fmt::format("rank {}{}: {}", r, r == step.critical_rank ? " (critical)" : "", b.lane);
      bars.push_back(std::move(b));
    }
  Json values = Json::array();
  std::vector<std::string> lanes, passes;
  double end = step.step_time_s;
  for (const auto& b : bars) {
    if (std::find(lanes.begin(), lanes.end(), b.lane) == lanes.end()) lanes.push_back(b.lane);
    if (std::find(passes.begin(), passes.end(), b.pass) == passes.end()) passes.push_back(b.pass);
    end = std::max(end, b.end_s);
    values.push_back({{"lane", b.lane},
                      {"pass", b.pass},
                      {"parts", b.parts},
                      {"s", rounded(b.start_s, 1e-7)},
                      {"e", rounded(b.end_s, 1e-7)},
                      {"busy", rounded(b.busy_s, 1e-7)},
                      {"k", b.kernels}});
  }
  std::vector<std::string> pass_order, pass_colors;
  for (const char* p : {"forward", "backward", "optimizer", "mixed"})
    if (std::find(passes.begin(), passes.end(), p) != passes.end()) {
      pass_order.push_back(p);
      pass_colors.push_back(kPassColors.at(p));
    }
  // Zoom (mouse wheel, about the pointer) and pan (drag) the time axis; a double click
  // shows the whole step again (after Vega's zoomable scatter plot example). WHOLE is
  // replaced by the step's extent.
  std::string text = R"json({
    "signals": [
      {"name": "down", "value": null,
       "on": [{"events": "touchend", "update": "null"}, {"events": "mousedown, touchstart", "update": "xy()"}]},
      {"name": "xcur", "value": null, "on": [{"events": "mousedown, touchstart, touchend", "update": "slice(xdom)"}]},
      {"name": "delta", "value": [0, 0],
       "on": [{"events": [{"source": "window", "type": "mousemove", "consume": true,
                           "between": [{"type": "mousedown"}, {"source": "window", "type": "mouseup"}]}],
               "update": "down ? [down[0] - x(), 0] : [0, 0]"}]},
      {"name": "anchor", "value": 0, "on": [{"events": "wheel", "update": "invert('x', x())"}]},
      {"name": "zoom", "value": 1,
       "on": [{"events": "wheel!", "force": true, "update": "pow(1.001, event.deltaY * pow(16, event.deltaMode))"}]},
      {"name": "xdom", "update": "WHOLE",
       "on": [{"events": {"signal": "delta"},
               "update": "[xcur[0] + span(xcur) * delta[0] / width, xcur[1] + span(xcur) * delta[0] / width]"},
              {"events": {"signal": "zoom"},
               "update": "[anchor + (xdom[0] - anchor) * zoom, anchor + (xdom[1] - anchor) * zoom]"},
              {"events": "dblclick", "update": "WHOLE"}]}],
    "data": [{"name": "bars"}],
    "scales": [
      {"name": "x", "type": "linear", "domain": {"signal": "xdom"}, "range": "width", "nice": false, "zero": false},
      {"name": "y", "type": "band", "range": "height", "padding": 0.15},
      {"name": "color", "type": "ordinal"}],
    "axes": [{"orient": "bottom", "scale": "x", "title": "seconds into the step", "grid": true, "tickCount": 10,
              "format": ".3~f", "labelOverlap": true, "labelFlush": true},
             {"orient": "left", "scale": "y", "title": "pipeline rank: stream", "labelLimit": 240, "labelOverlap": true}],
    "legends": [{"fill": "color", "orient": "bottom", "direction": "horizontal"}],
    "marks": [
      {"type": "rect", "from": {"data": "bars"}, "clip": true,
       "encode": {"update": {
         "y": {"scale": "y", "field": "lane"}, "height": {"scale": "y", "band": 1},
         "x": {"scale": "x", "field": "s"}, "x2": {"scale": "x", "field": "e"},
         "fill": {"scale": "color", "field": "pass"},
         "tooltip": {"signal": "{'pass': datum.pass, 'parts': datum.parts, 'start s': format(datum.s, '.4f'), 'end s': format(datum.e, '.4f'), 'kernels': datum.k, 'busy': format(datum.e > datum.s ? datum.busy / (datum.e - datum.s) : 1, '.0%')}"}}}}]
  })json";
  for (std::size_t at; (at = text.find("WHOLE")) != std::string::npos;)
    text.replace(at, 5, fmt::format("[0, {}]", end));
  Json spec = vega_spec(text, 1100, std::max(80, 36 * static_cast<int>(lanes.size())));
  spec["data"][0]["values"] = values;
  spec["scales"][1]["domain"] = string_list(lanes);
  spec["scales"][2]["domain"] = string_list(pass_order);
  spec["scales"][2]["range"] = string_list(pass_colors);
  return {
      "Pipeline timeline, one row per pipeline rank",
      fmt::format(
          "Each pipeline rank's compute stream over the step (the critical rank {} first), {} "
          "kernels "
          "drawn as {} bars: adjacent kernels of one pass and part merged, then the shortest gaps "
          "between bars of the same pass closed, so that bars are about chunks and the gaps left "
          "are "
          "idle time (pipeline bubble, exposed communication, host-bound idle). Scroll over it to "
          "zoom, drag to pan, double-click for the whole step. Simulated with every microbatch and "
          "kept spans (as run --trace): step {:.3f} s.",
          step.critical_rank, kernels, bars.size(), step.step_time_s),
      spec};
}

std::string layout_text(const config::Scenario& sc) {
  const auto& par = sc.parallelism;
  std::string s = fmt::format("TP{} PP{}", par.tp, par.pp);
  if (par.vpp > 1) s += fmt::format(" VPP{}", par.vpp);
  if (par.ep > 1) s += fmt::format(" EP{}", par.ep);
  if (par.cp > 1) s += fmt::format(" CP{}", par.cp);
  s += fmt::format(" DP{}, {}, {} microbatches", par.dp,
                   schedules::schedule_names().name(sc.pipeline_schedule), par.num_microbatches);
  return s;
}

}  // namespace

std::vector<TimelineBar> timeline_bars(const schedules::StepResult& step, int rank,
                                       std::size_t max_bars) {
  enum Pass : int { kUnknown, kForward, kBackward, kOptimizer, kMixed };
  static const char* const kPassNames[] = {"other", "forward", "backward", "optimizer", "mixed"};
  const auto ends_with = [](std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
  };
  std::vector<int> label_pass(step.labels.size(), kUnknown);
  std::vector<std::string_view> label_part(step.labels.size());
  for (std::size_t i = 0; i < step.labels.size(); ++i) {
    std::string_view name = step.labels[i];
    label_part[i] = name.substr(0, name.find('.'));
    if (name.rfind("optimizer", 0) == 0)
      label_pass[i] = kOptimizer;
    else if (ends_with(name, ".recompute") || name.find(".grad_quant") != std::string_view::npos)
      label_pass[i] = kBackward;
    else if (ends_with(name, ".fwd") || ends_with(name, ".fprop"))
      label_pass[i] = kForward;
    else if (ends_with(name, ".bwd") || ends_with(name, ".dgrad") || ends_with(name, ".wgrad"))
      label_pass[i] = kBackward;
  }

  struct Bar {
    int pass;
    double s, e, busy;
    std::int64_t kernels;
    std::vector<std::string_view> parts;
    bool more_parts = false;
  };
  const auto absorb = [](Bar& a, const Bar& b) {
    a.pass = a.pass == b.pass ? a.pass : kMixed;
    a.e = std::max(a.e, b.e);
    a.busy += b.busy;
    a.kernels += b.kernels;
    a.more_parts = a.more_parts || b.more_parts;
    for (const auto part : b.parts) {
      if (std::find(a.parts.begin(), a.parts.end(), part) != a.parts.end()) continue;
      if (a.parts.size() < 4)
        a.parts.push_back(part);
      else
        a.more_parts = true;
    }
  };

  std::vector<std::string> lane_names;
  std::vector<std::vector<Bar>> lanes;
  for (std::size_t t = 0; t < step.streams.size(); ++t) {
    if (step.streams[t].rfind("compute", 0) != 0) continue;
    std::vector<const schedules::TraceSpan*> spans;
    for (const auto& s : step.trace)
      if (s.rank == rank && s.track == static_cast<int>(t)) spans.push_back(&s);
    if (spans.empty()) continue;
    std::stable_sort(spans.begin(), spans.end(),
                     [](const auto* x, const auto* y) { return x->start_s < y->start_s; });
    // Kernels of no pass of their own (quantize, swizzle) take the previous kernel's, or
    // the first known one's before any.
    std::vector<int> pass(spans.size());
    int last = kUnknown;
    for (std::size_t i = 0; i < spans.size(); ++i) pass[i] = label_pass[spans[i]->label];
    for (std::size_t i = 0; i < spans.size(); ++i) {
      if (pass[i] == kUnknown)
        pass[i] = last;
      else
        last = pass[i];
    }
    for (std::size_t i = spans.size(); i-- > 0;) {
      if (pass[i] == kUnknown)
        pass[i] = last;
      else
        last = pass[i];
    }
    std::vector<Bar> bars;
    constexpr double kTouch_s = 1e-9;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const auto& s = *spans[i];
      const std::string_view part = label_part[s.label];
      if (!bars.empty() && bars.back().pass == pass[i] && bars.back().parts.front() == part &&
          s.start_s <= bars.back().e + kTouch_s) {
        bars.back().e = std::max(bars.back().e, s.end_s);
        bars.back().busy += s.end_s - s.start_s;
        ++bars.back().kernels;
        continue;
      }
      bars.push_back({pass[i], s.start_s, s.end_s, s.end_s - s.start_s, 1, {part}});
    }
    lane_names.push_back(step.streams[t]);
    lanes.push_back(std::move(bars));
  }

  // Closes the `count` smallest gaps between neighbours (of the same pass only, or any),
  // earlier ones first among equal gaps.
  const auto close_gaps = [&](std::size_t count, bool same_pass) {
    struct Gap {
      double seconds;
      std::size_t lane, index;
    };
    std::vector<Gap> gaps;
    for (std::size_t l = 0; l < lanes.size(); ++l)
      for (std::size_t i = 0; i + 1 < lanes[l].size(); ++i)
        if (!same_pass || lanes[l][i].pass == lanes[l][i + 1].pass)
          gaps.push_back({lanes[l][i + 1].s - lanes[l][i].e, l, i});
    std::stable_sort(gaps.begin(), gaps.end(),
                     [](const Gap& x, const Gap& y) { return x.seconds < y.seconds; });
    gaps.resize(std::min(gaps.size(), count));
    std::vector<std::vector<bool>> join(lanes.size());
    for (std::size_t l = 0; l < lanes.size(); ++l) join[l].assign(lanes[l].size(), false);
    for (const auto& g : gaps) join[g.lane][g.index] = true;
    for (std::size_t l = 0; l < lanes.size(); ++l) {
      std::vector<Bar> merged;
      for (std::size_t i = 0; i < lanes[l].size(); ++i) {
        if (i > 0 && join[l][i - 1])
          absorb(merged.back(), lanes[l][i]);
        else
          merged.push_back(std::move(lanes[l][i]));
      }
      lanes[l] = std::move(merged);
    }
  };
  const auto total = [&] {
    std::size_t n = 0;
    for (const auto& l : lanes) n += l.size();
    return n;
  };
  if (total() > max_bars) close_gaps(total() - max_bars, true);
  if (total() > max_bars) close_gaps(total() - max_bars, false);

  std::vector<TimelineBar> out;
  for (std::size_t l = 0; l < lanes.size(); ++l)
    for (const auto& b : lanes[l]) {
      std::string parts;
      for (const auto part : b.parts) parts += (parts.empty() ? "" : ", ") + std::string(part);
      if (b.more_parts) parts += ", ...";
      out.push_back({lane_names[l], kPassNames[b.pass], parts, b.s, b.e, b.busy, b.kernels});
    }
  return out;
}

HtmlPage run_report(const config::Scenario& sc, const predict::Prediction& p,
                    const predict::Prediction& traced) {
  const Json j = run_json(sc, p);
  HtmlPage page;
  page.title = fmt::format("moesim report: {}", sc.name);
  page.subtitle = sc.description;
  page.facts = {{"scenario", sc.file},
                {"system", fmt::format("{}: {} x {}", sc.system.name, sc.gpus, sc.system.gpu.name)},
                {"layout", layout_text(sc)},
                {"step time", fmt::format("{:.3f} s", p.step.step_time_s)},
                {"TFLOPS/GPU", fmt::format("{:.1f} (Megatron accounting)", p.tflops_per_gpu)},
                {"tokens/s/GPU", fmt::format("{:.1f}", p.tokens_per_s_per_gpu)},
                {"MFU", fmt::format("{:.1f}% of dense BF16", 100 * p.mfu)},
                {"peak memory", fmt::format("{:.1f} GiB of {:g} GiB usable ({})", p.peak_memory_gib,
                                            sc.system.gpu.usable_GiB.value,
                                            p.fits_in_memory ? "fits" : "does not fit")},
                {"critical rank", std::to_string(p.step.critical_rank)}};
  if (j.contains("measured")) {
    const auto& m = j["measured"];
    page.facts.emplace_back(
        "measured", fmt::format("{} {:g}, predicted {:.2f} ({:+.1f}%)",
                                m["metric"].get<std::string>(), m["value"].get<double>(),
                                m["predicted"].get<double>(), m["error_pct"].get<double>()));
  }
  // What the prediction is priced beyond (run --json's caveats: an announced system's
  // projection, a --set what-if, ...), one fact each.
  for (const auto& c : j["caveats"]) page.facts.emplace_back("caveat", c.get<std::string>());
  page.charts.push_back(
      breakdown_chart({{fmt::format("rank {}", p.step.critical_rank), j["breakdown"]}},
                      "Breakdown of the critical rank's step",
                      fmt::format("What the critical rank's compute stream did over the {:.3f} s "
                                  "step: compute, exposed communication, "
                                  "the pipeline bubble split into the schedule's own (the same "
                                  "schedule with every chunk at this "
                                  "rank's mean time) and waiting on slower stages (stage "
                                  "imbalance), host-bound idle and other. "
                                  "Run --json: breakdown.",
                                  p.step.step_time_s)));
  page.charts.push_back(memory_chart(sc, p, j["peak_memory_parts_gib"]));
  page.charts.push_back(module_chart(j["compute_by_module"], j["host_bound_idle_by_module"]));
  std::size_t kernels = 0;
  for (const auto& s : traced.step.trace)
    if (s.track >= 0 &&
        traced.step.streams[static_cast<std::size_t>(s.track)].rfind("compute", 0) == 0)
      ++kernels;
  page.charts.push_back(timeline_chart(traced, kernels));
  return page;
}

}  // namespace moesim::reports
