#include "reports/trace.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace moesim::reports {
namespace {

std::string error_text(double measured, double predicted) {
  return measured > 0 ? fmt::format("{:+.1f}%", 100 * (predicted - measured) / measured) : "-";
}

std::string window(const TraceReport& r) {
  if (!r.predicted) return "";
  if (!r.predicted->microbatches) return fmt::format("the whole step, rank {}", r.predicted->rank);
  return fmt::format(
      "{} microbatch(es): the increase from {} to {} simulated microbatches, rank {}",
      *r.predicted->microbatches, r.predicted->m1, r.predicted->m2, r.predicted->rank);
}

// The host's table: every node the trace marks, then the simulation's other nodes.
std::string host_text(const TraceReport& r) {
  const std::vector<calibration::HostNode> none;
  const auto& pred = r.predicted ? r.predicted->host_nodes : none;
  if (r.measured_host.empty() && pred.empty()) return "";
  std::string o =
      "\nhost time by schedule node: the trace's ranges (wall time on the host thread, waits "
      "included) against the simulated host thread's CPU time\n";
  const bool p = r.predicted.has_value();
  o += p ? fmt::format("{:<22} {:>7} {:>11} {:>11} {:>9}\n", "node", "ranges", "measured",
                       "predicted", "error")
         : fmt::format("{:<22} {:>7} {:>11}\n", "node", "ranges", "ms");
  if (p) o += fmt::format("{:<22} {:>7} {:>11} {:>11}\n", "", "", "ms", "ms");
  for (const auto& m : r.measured_host) {
    const auto* q = calibration::find_host_node(pred, m.node);
    o += p ? fmt::format("{:<22} {:>7.0f} {:>11.3f} {:>11.3f} {:>9}\n", m.node, m.count,
                         m.seconds * 1e3, q ? q->seconds * 1e3 : 0.0,
                         error_text(m.seconds, q ? q->seconds : 0.0))
           : fmt::format("{:<22} {:>7.0f} {:>11.3f}\n", m.node, m.count, m.seconds * 1e3);
  }
  for (const auto& q : pred)
    if (!calibration::find_host_node(r.measured_host, q.node))
      o += fmt::format("{:<22} {:>7} {:>11} {:>11.3f} {:>9}\n", q.node, "-", "-", q.seconds * 1e3,
                       "");
  return o;
}

}  // namespace

std::string trace_text(const TraceReport& r) {
  const auto& m = r.measured;
  std::string o = fmt::format("{}: {:.0f} GPU kernels\n", r.file, m.kernels);
  if (r.predicted) o += fmt::format("against {}: {}\n", *r.scenario, window(r));
  o += "\n";
  const bool p = r.predicted.has_value();
  o += p ? fmt::format("{:<15} {:>8} {:>11} {:>10} {:>11} {:>9}\n", "class", "kernels", "measured",
                       "predicted", "predicted", "error")
         : fmt::format("{:<15} {:>8} {:>11}\n", "class", "kernels", "ms");
  if (p)
    o += fmt::format("{:<15} {:>8} {:>11} {:>10} {:>11}\n", "", "measured", "ms", "kernels", "ms");
  for (const auto& e : calibration::trace_class_names().entries()) {
    const auto i = static_cast<std::size_t>(e.value);
    const auto& mc = m.by_class[i];
    if (!p) {
      if (mc.count > 0)
        o += fmt::format("{:<15} {:>8.0f} {:>11.3f}\n", e.name, mc.count, mc.seconds * 1e3);
      continue;
    }
    const auto& pc = r.predicted->totals.by_class[i];
    if (mc.count == 0 && pc.count == 0) continue;
    o += fmt::format("{:<15} {:>8.0f} {:>11.3f} {:>10.1f} {:>11.3f} {:>9}\n", e.name, mc.count,
                     mc.seconds * 1e3, pc.count, pc.seconds * 1e3,
                     error_text(mc.seconds, pc.seconds));
  }
  if (p) {
    // Which GEMMs a framework groups differs (DeepSeek runs each expert's weight gradient
    // as a GEMM of its own; moesim prices the experts' as grouped): the two together.
    const auto gemms = [](const calibration::TraceTotals& t) {
      const auto& a = t.by_class[static_cast<std::size_t>(calibration::TraceClass::gemm)];
      const auto& b = t.by_class[static_cast<std::size_t>(calibration::TraceClass::grouped_gemm)];
      return std::pair{a.count + b.count, a.seconds + b.seconds};
    };
    const auto [mn, ms] = gemms(m);
    const auto [pn, ps] = gemms(r.predicted->totals);
    o += fmt::format("{:<15} {:>8.0f} {:>11.3f} {:>10.1f} {:>11.3f} {:>9}\n", "(all GEMMs)", mn,
                     ms * 1e3, pn, ps * 1e3, error_text(ms, ps));
  }
  // A total, measured and (with a scenario) predicted.
  const auto row = [&](const char* what, double (*get)(const calibration::TraceTotals&)) {
    const double mv = get(m);
    o += p ? fmt::format("{:<34} {:>11.3f} {:>11.3f} {:>9}\n", what, mv * 1e3,
                         get(r.predicted->totals) * 1e3, error_text(mv, get(r.predicted->totals)))
           : fmt::format("{:<34} {:>11.3f}\n", what, mv * 1e3);
  };
  o += "\n";
  row("kernel time (ms)", [](const calibration::TraceTotals& t) { return t.kernel_s; });
  row("busy: union of the kernels (ms)",
      [](const calibration::TraceTotals& t) { return t.busy_s; });
  row("overlapped: kernel time - busy (ms)",
      [](const calibration::TraceTotals& t) { return t.overlapped_s(); });
  row("span: first start to last end (ms)",
      [](const calibration::TraceTotals& t) { return t.span_s; });
  o += host_text(r);
  return o;
}

nlohmann::json trace_json(const TraceReport& r) {
  using nlohmann::json;
  const auto totals = [](const calibration::TraceTotals& t) {
    json classes = json::object();
    for (const auto& e : calibration::trace_class_names().entries()) {
      const auto& c = t.by_class[static_cast<std::size_t>(e.value)];
      classes[std::string(e.name)] = {{"kernels", c.count}, {"seconds", c.seconds}};
    }
    return json{{"kernels", t.kernels}, {"kernel_s", t.kernel_s},           {"busy_s", t.busy_s},
                {"span_s", t.span_s},   {"overlapped_s", t.overlapped_s()}, {"classes", classes}};
  };
  // Measured: the node's ranges; predicted: the host ops (launches and host work) in it.
  const auto nodes = [](const std::vector<calibration::HostNode>& v, const char* count) {
    json o = json::object();
    for (const auto& h : v) o[h.node] = {{count, h.count}, {"seconds", h.seconds}};
    return o;
  };
  json j{{"file", r.file}, {"measured", totals(r.measured)}};
  j["measured"]["host_nodes"] = nodes(r.measured_host, "ranges");
  if (r.predicted) {
    j["scenario"] = *r.scenario;
    j["predicted"] = totals(r.predicted->totals);
    j["predicted"]["host_nodes"] = nodes(r.predicted->host_nodes, "host_ops");
    j["window"] = r.predicted->microbatches ? json{{"microbatches", *r.predicted->microbatches},
                                                   {"m1", r.predicted->m1},
                                                   {"m2", r.predicted->m2},
                                                   {"rank", r.predicted->rank}}
                                            : json{{"step", true}, {"rank", r.predicted->rank}};
  }
  return j;
}

}  // namespace moesim::reports
