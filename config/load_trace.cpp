#include "config/load_trace.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "config/json_reader.hpp"

namespace moesim::config {

calibration::KinetoTrace load_kineto_trace(const std::string& path) {
  const Json j = read_json_file(path);
  const Json* events = &j;
  std::string where = "";
  if (j.is_object()) {
    const auto it = j.find("traceEvents");
    if (it == j.end() || !it->is_array())
      throw InputError(path, "traceEvents",
                       "expected the Chrome trace format's traceEvents array (torch.profiler "
                       "export_chrome_trace)");
    events = &*it;
    where = "traceEvents";
  } else if (!j.is_array()) {
    throw InputError(path, "",
                     "expected a Chrome trace: an object with traceEvents, or an array of events");
  }
  // A string member or "" (Kineto writes numbers for some keys in some versions).
  const auto text = [](const Json& e, const char* key) {
    const auto it = e.find(key);
    return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  struct Raw {
    calibration::TraceClass cls;
    double ts, dur;
  };
  std::vector<Raw> raw;
  calibration::KinetoTrace trace;
  std::optional<Json> device;  // the first kernel's pid: one device per trace
  for (std::size_t i = 0; i < events->size(); ++i) {
    const Json& e = (*events)[i];
    if (!e.is_object() || text(e, "ph") != "X") continue;
    const std::string cat = text(e, "cat");
    const auto at = [&](const char* key) { return fmt::format("{}[{}].{}", where, i, key); };
    const auto num = [&](const char* key) {
      const auto it = e.find(key);
      if (it == e.end() || !it->is_number())
        throw InputError(path, at(key), fmt::format("a {} event needs a number here", cat));
      return it->get<double>();
    };
    if (cat == "user_annotation" && calibration::is_host_node_name(text(e, "name"))) {
      const std::string node = text(e, "name");
      const double dur = num("dur");
      if (dur < 0) throw InputError(path, at("dur"), "a host range cannot last less than nothing");
      auto& h = calibration::host_node(trace.host_nodes, node);
      h.count += 1;
      h.seconds += dur * 1e-6;
      continue;
    }
    if (cat != "kernel" && cat != "Kernel") continue;
    const std::string name = text(e, "name");
    if (name.empty()) throw InputError(path, at("name"), "a kernel event needs its name");
    const Json pid = e.value("pid", Json());
    if (!device)
      device = pid;
    else if (pid != *device)
      throw InputError(path, at("pid"),
                       fmt::format("kernels of more than one device (pid {} and {}): export one "
                                   "rank's trace",
                                   device->dump(), pid.dump()));
    const double dur = num("dur");
    if (dur < 0) throw InputError(path, at("dur"), "a kernel cannot last less than nothing");
    raw.push_back({calibration::classify_kernel(name), num("ts"), dur});
  }
  // Seconds from the first kernel: microsecond timestamps since the epoch keep their
  // sub-microsecond digits only as differences.
  double t0 = raw.empty() ? 0 : raw.front().ts;
  for (const auto& r : raw) t0 = std::min(t0, r.ts);
  for (const auto& r : raw)
    trace.kernels.push_back({r.cls, (r.ts - t0) * 1e-6, (r.ts - t0 + r.dur) * 1e-6});
  if (trace.kernels.empty())
    throw InputError(path, where,
                     "no GPU kernels (events with \"cat\": \"kernel\"): record with "
                     "torch.profiler.ProfilerActivity.CUDA");
  return trace;
}

}  // namespace moesim::config
