#include "calibration/sustained_fit.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace moesim::calibration {

std::vector<SustainedSummary> summarize_sustained(const Measurement& m) {
  std::vector<SustainedSummary> out;
  const auto same = [](const auto& a, const auto& b) {
    return a.dtype == b.dtype && a.m == b.m && a.n == b.n && a.k == b.k;
  };
  for (const auto& first : m.sustained_gemm) {
    if (std::any_of(out.begin(), out.end(), [&](const auto& s) { return same(s, first); }))
      continue;
    std::vector<SustainedPoint> bins;
    for (const auto& p : m.sustained_gemm)
      if (same(p, first)) bins.push_back(p);
    std::sort(bins.begin(), bins.end(), [](const auto& a, const auto& b) { return a.t_s < b.t_s; });
    SustainedSummary s{first.dtype, first.m, first.n, first.k};
    s.bins = static_cast<int>(bins.size());
    s.steady_bins = std::max(1, s.bins / 3);
    s.seconds = bins.back().t_s;
    s.first_clock_mhz = bins.front().sm_clock_mhz;
    for (auto it = bins.end() - s.steady_bins; it != bins.end(); ++it) {
      s.steady_tflops += it->tflops / s.steady_bins;
      s.steady_clock_mhz += it->sm_clock_mhz / s.steady_bins;
    }
    const auto ref = std::find_if(m.gemm.begin(), m.gemm.end(), [&](const GemmPoint& g) {
      return g.groups == 1 && same(g, first);
    });
    if (ref == m.gemm.end())
      throw std::invalid_argument(fmt::format(
          "{}: the sustained {} GEMM {}x{}x{} has no short benchmark of its shape in the file's "
          "gemm points, which its throughput is compared with",
          measurement_name(m), s.dtype, s.m, s.n, s.k));
    s.short_tflops = ref->tflops;
    out.push_back(s);
  }
  return out;
}

void sustained_observations(const std::vector<Measurement>& ms, double corpus_clock,
                            std::vector<Observation>& out) {
  for (const auto& m : ms)
    for (const auto& s : summarize_sustained(m)) {
      std::string note = fmt::format("{:.1f} TFLOPS over the last {} of {} bins, against {:.1f}",
                                     s.steady_tflops, s.steady_bins, s.bins, s.short_tflops);
      if (s.first_clock_mhz > 0 && s.steady_clock_mhz > 0)
        note += fmt::format("; SM clock {:.0f} MHz after the first bin, {:.0f} at the end",
                            s.first_clock_mhz, s.steady_clock_mhz);
      note += fmt::format(
          "; compare efficiency.sustained_clock_factor, fitted over whole training steps "
          "(calibration/profiles/corpus.json{}), which this bounds from below where the drop "
          "is the power cap's (calibration/sustained_fit.hpp)",
          corpus_clock > 0 ? fmt::format(": {:g} on this system", corpus_clock) : "");
      out.push_back({fmt::format("{} GEMM {}x{}x{} after {:.0f} s back to back over its short "
                                 "benchmark",
                                 s.dtype, s.m, s.n, s.k, s.seconds),
                     round_profile_value(s.kept()), "ratio", measurement_name(m), note});
    }
}

}  // namespace moesim::calibration
