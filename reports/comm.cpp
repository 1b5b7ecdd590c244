#include "reports/comm.hpp"

#include <fmt/format.h>

#include "reports/run.hpp"

namespace moesim::reports {

nlohmann::ordered_json comm_json(const predict::CommAnswer& a) {
  return {{"system", a.system},         {"op", a.op},
          {"ranks", a.ranks},           {"bytes", a.bytes},
          {"time_us", a.time_us},       {"latency_us", a.latency_us},
          {"algbw_GBps", a.algbw_GBps}, {"busbw_GBps", a.busbw_GBps},
          {"flows", a.flows},           {"algorithm", a.algorithm},
          {"protocol", a.protocol},     {"model", a.model},
          {"caveats", a.caveats}};
}

std::string comm_text(const predict::CommAnswer& a) {
  std::string o = fmt::format(
      "{} on {} x {} ({:.4g} bytes)\n"
      "  time      {:.2f} us  (latency {:.2f} us)\n"
      "  algbw     {:.1f} GB/s\n"
      "  busbw     {:.1f} GB/s\n"
      "  model     {}\n",
      a.op, a.ranks, a.system, a.bytes, a.time_us, a.latency_us, a.algbw_GBps, a.busbw_GBps,
      a.model);
  if (const auto caveats = caveats_text(a.caveats); !caveats.empty())
    o += fmt::format("\n{}", caveats);
  return o;
}

}  // namespace moesim::reports
