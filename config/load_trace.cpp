#include "config/load_trace.hpp"

#include <fmt/format.h>

#include "config/json_reader.hpp"

namespace moesim::config {

std::vector<calibration::TraceKernel> load_kineto_trace(const std::string& path) {
  const Json j = read_json_file(path);
  const Json* events = &j;
  std::string where = "";
  if (j.is_object()) {
    const auto it = j.find("traceEvents");
    if (it == j.end() || !it->is_array())
      throw InputError(path, "traceEvents", "expected the Chrome trace format's traceEvents array (torch.profiler "
                                            "export_chrome_trace)");
    events = &*it;
    where = "traceEvents";
  } else if (!j.is_array()) {
    throw InputError(path, "", "expected a Chrome trace: an object with traceEvents, or an array of events");
  }
  std::vector<calibration::TraceKernel> out;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const Json& e = (*events)[i];
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "Kernel") continue;
    const auto at = [&](const char* key) { return fmt::format("{}[{}].{}", where, i, key); };
    const auto num = [&](const char* key) {
      const auto it = e.find(key);
      if (it == e.end() || !it->is_number()) throw InputError(path, at(key), "a kernel event needs a number here");
      return it->get<double>();
    };
    const auto name = e.find("name");
    if (name == e.end() || !name->is_string()) throw InputError(path, at("name"), "a kernel event needs its name");
    const double ts = num("ts"), dur = num("dur");
    if (dur < 0) throw InputError(path, at("dur"), "a kernel cannot last less than nothing");
    std::int64_t stream = 0;
    if (const auto a = e.find("args"); a != e.end() && a->is_object() && a->contains("stream") &&
                                       (*a)["stream"].is_number_integer())
      stream = (*a)["stream"].get<std::int64_t>();
    else if (const auto t = e.find("tid"); t != e.end() && t->is_number_integer())
      stream = t->get<std::int64_t>();
    out.push_back({calibration::classify_kernel(name->get<std::string>()), ts * 1e-6, (ts + dur) * 1e-6, stream});
  }
  if (out.empty())
    throw InputError(path, where, "no GPU kernels (events with \"cat\": \"kernel\"): record with "
                                  "torch.profiler.ProfilerActivity.CUDA");
  return out;
}

}  // namespace moesim::config
