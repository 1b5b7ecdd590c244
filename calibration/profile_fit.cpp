#include "calibration/profile_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "calibration/bisect.hpp"
#include "calibration/gemm_k_fit.hpp"
#include "calibration/least_squares.hpp"
#include "calibration/sustained_fit.hpp"
#include "hw_models/chunk_kernels.hpp"
#include "hw_models/compute.hpp"

namespace moesim::calibration {
namespace {

using Json = nlohmann::ordered_json;

double round1(double v) {
  return std::round(v * 10) / 10;
}

// rel: model / measured - 1 per point.
void set_residuals(ParameterFit& f, const std::vector<double>& rel) {
  double ss = 0, mx = 0;
  for (double r : rel) {
    ss += r * r;
    mx = std::max(mx, std::abs(r));
  }
  f.points = static_cast<int>(rel.size());
  f.rms_residual_pct =
      rel.empty() ? 0 : round1(100 * std::sqrt(ss / static_cast<double>(rel.size())));
  f.max_abs_residual_pct = round1(100 * mx);
}

std::vector<std::string> sorted_unique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// One compute-bound GEMM observation: efficiency with wave quantization divided out.
struct GemmObs {
  double e_over_q = 0, k = 0;
  bool grouped = false;
  std::string from;
  // Timed alone (Measurement::calls_timed_alone), shape known: the call's time at the peak
  // with its wave quantization and the measured time, seconds.
  double work_s = 0, time_s = 0;
};

class Fitter {
 public:
  Fitter(const std::vector<Measurement>& ms, const hw_models::SystemSpec& s)
      : ms_(ms), s_(s), cm_(s) {}

  std::vector<ParameterFit> gemm(std::vector<Observation>& notes) {
    std::map<std::string, std::vector<GemmObs>> by;
    for (const auto& m : ms_) {
      for (const auto& g : m.gemm) add(by, g, false, measurement_name(m), m.calls_timed_alone);
      for (const auto& g : m.grouped_gemm)
        add(by, g, true, measurement_name(m), m.calls_timed_alone);
    }
    std::vector<ParameterFit> out;
    for (const auto& [dtype, obs] : by) {
      if (timed_alone(dtype, obs)) {
        out_timed(out, notes, dtype, obs);
        continue;
      }
      // K0 per input type (a tile's fixed time over its K loop's time per unit of K grows
      // with the type's rate): dense and grouped share it, each with its own eta
      // (calibration::fit_k_overhead_shared). Too few K: the system's K0 for the type.
      std::vector<double> ks, es;
      std::vector<int> group;
      std::vector<std::string> from;
      for (const auto& o : obs) {
        ks.push_back(o.k);
        es.push_back(o.e_over_q);
        group.push_back(o.grouped ? 1 : 0);
        from.push_back(o.from);
      }
      const auto d = hw_models::dtype_names().find(dtype);
      const auto* given = d ? s_.efficiency.k_overhead(*d) : nullptr;
      double k0 = given ? given->value : 0;
      if (std::set<double>(ks.begin(), ks.end()).size() >= 2) {
        const SharedKFit kf = fit_k_overhead_shared(ks, es, group, 2);
        k0 = round_profile_value(kf.k0);
        ParameterFit f{fmt::format("efficiency.gemm_k_overhead_by_dtype.{}", dtype),
                       k0,
                       sorted_unique(from),
                       0,
                       0,
                       0,
                       fmt::format("per-tile fixed cost K0 in units of K: e / q = eta K / (K + K0) "
                                   "over the {} GEMMs, dense and grouped sharing K0 "
                                   "(calibration::fit_k_overhead_shared)",
                                   dtype)};
        set_residuals(f, kf.relative_error);
        out.push_back(f);
      }
      const auto f = [k0](double k) { return k / (k + k0); };
      const bool at_ref = s_.efficiency.grouped_gemm_k.has_value();
      const double ref = at_ref ? f(s_.efficiency.grouped_gemm_k->value) : 1.0;
      for (const bool grouped : {false, true}) {
        std::vector<double> k, e;
        std::vector<std::string> files;
        for (const auto& o : obs)
          if (o.grouped == grouped)
            k.push_back(o.k), e.push_back(o.e_over_q), files.push_back(o.from);
        if (k.empty()) continue;
        const double eta_inf = eta_for_k0(k, e, k0);
        std::vector<double> rel;
        for (std::size_t i = 0; i < k.size(); ++i) rel.push_back(eta_inf * f(k[i]) / e[i] - 1);
        const double value = round_profile_value(grouped ? eta_inf * ref : eta_inf);
        std::string model = grouped && at_ref ? fmt::format(
                                                    "grouped GEMM efficiency at K = {:g}: eta x "
                                                    "K_ref / (K_ref + K0), e / q = eta K / (K + "
                                                    "K0) fitted with K0 = {:g}",
                                                    s_.efficiency.grouped_gemm_k->value, k0)
                                              : fmt::format(
                                                    "{} GEMM efficiency, the large-K limit: e / q "
                                                    "= eta K / (K + K0) fitted with K0 = {:g}",
                                                    grouped ? "grouped" : "dense", k0);
        ParameterFit p{fmt::format("efficiency.{}.{}", grouped ? "grouped_gemm" : "gemm", dtype),
                       value,
                       sorted_unique(files),
                       0,
                       0,
                       0,
                       model};
        set_residuals(p, rel);
        out.push_back(p);
      }
    }
    return out;
  }

  std::vector<ParameterFit> attention() {
    std::vector<ParameterFit> out;
    const double peak = s_.gpu.peak_tflops(hw_models::Dtype::bf16);
    for (const char* pass : {"fwd", "bwd"}) {
      std::vector<double> t;
      std::vector<std::string> files;
      for (const auto& m : ms_)
        for (const auto& a : m.attention)
          if (a.pass == pass) t.push_back(a.tflops), files.push_back(measurement_name(m));
      if (t.empty()) continue;
      const double eta = round_profile_value(mean(t) / peak);
      std::vector<double> rel;
      for (double x : t) rel.push_back(eta * peak / x - 1);
      ParameterFit p{fmt::format("efficiency.attention_{}", pass),
                     eta,
                     sorted_unique(files),
                     0,
                     0,
                     0,
                     "attention TFLOPS (causal counted half) over the dense BF16 peak, mean"};
      set_residuals(p, rel);
      out.push_back(p);
    }
    return out;
  }

  std::vector<ParameterFit> memory(std::vector<Observation>& obs) {
    std::vector<ParameterFit> out;
    const double bw = s_.gpu.hbm_TBps.value * 1e6;  // bytes per microsecond
    for (const bool quantize : {false, true}) {
      std::vector<MemoryPoint> pts;
      std::vector<std::string> files;
      for (const auto& m : ms_)
        for (const auto& p : m.memory)
          if (p.kernel != "norm" && (p.kernel == "quantize") == quantize)
            pts.push_back(p), files.push_back(measurement_name(m));
      if (pts.empty()) continue;
      const bool timed =
          std::all_of(pts.begin(), pts.end(), [](const MemoryPoint& p) { return p.time_us > 0; });
      std::set<double> sizes;
      for (const auto& p : pts) sizes.insert(p.bytes);
      double eta = 0;
      std::vector<double> rel;
      std::string model;
      if (timed && sizes.size() >= 2) {
        std::vector<double> bytes, t;
        for (const auto& p : pts) bytes.push_back(p.bytes), t.push_back(p.time_us);
        const LinearFit lf = fit_line(bytes, t);
        eta = round_profile_value(1 / (lf.coefficients(1) * bw));
        for (std::size_t i = 0; i < pts.size(); ++i)
          rel.push_back((lf.coefficients(0) + pts[i].bytes / (eta * bw)) / pts[i].time_us - 1);
        model = "t = t0 + bytes / (eta x HBM peak), linear least squares over buffer sizes";
        obs.push_back(
            {quantize ? "quantize kernel fixed cost t0" : "streaming kernel fixed cost t0",
             round_profile_value(lf.coefficients(0)), "us",
             fmt::format("{}", fmt::join(sorted_unique(files), ", ")),
             "the intercept of the time-vs-bytes fit"});
      } else {
        std::vector<double> g;
        for (const auto& p : pts)
          if (p.bytes >= 64.0 * 1024 * 1024) g.push_back(p.GBps);
        if (g.empty()) continue;
        eta = round_profile_value(mean(g) * 1e3 / bw);
        for (double x : g) rel.push_back(eta * bw / 1e3 / x - 1);
        model = "mean achieved GB/s over buffers of 64 MiB and more, over the HBM peak";
      }
      ParameterFit p{quantize ? "efficiency.hbm_quantize" : "efficiency.hbm",
                     eta,
                     sorted_unique(files),
                     0,
                     0,
                     0,
                     model};
      set_residuals(p, rel);
      out.push_back(p);
    }
    return out;
  }

  // The fixed part of a memory-bound kernel's duration (efficiency.memory_kernel_us) from
  // normalization kernels timed on the device: per implementation, t = t0 + bytes / B by
  // linear least squares over its sizes; t0 the median of the implementations' intercepts
  // (one op written several ways: the ramp and tail they share, not one library's). Each
  // implementation's B is reported, not fitted into efficiency.hbm (a norm reduces each row
  // before it writes it: not the streaming reference).
  std::vector<ParameterFit> kernel_intercept(std::vector<Observation>& obs) {
    std::map<std::string, std::vector<std::pair<double, double>>> by;  // bytes, time_us
    std::vector<std::string> files;
    for (const auto& m : ms_)
      for (const auto& p : m.memory)
        if (p.kernel == "norm")
          by[p.implementation].push_back({p.bytes, p.time_us}),
              files.push_back(measurement_name(m));
    files = sorted_unique(files);
    std::vector<double> t0s;
    std::map<std::string, double> slope;  // us a byte, by implementation
    for (const auto& [impl, pts] : by) {
      std::vector<double> b, t;
      for (const auto& [x, y] : pts) b.push_back(x), t.push_back(y);
      if (std::set<double>(b.begin(), b.end()).size() < 2)
        throw std::invalid_argument(fmt::format(
            "norm kernels of implementation '{}' at one size: no intercept to fit", impl));
      const LinearFit lf = fit_line(b, t);
      t0s.push_back(lf.coefficients(0));
      slope[impl] = lf.coefficients(1);
      obs.push_back({fmt::format("norm kernel '{}': time against bytes, intercept", impl),
                     round_profile_value(lf.coefficients(0)), "us",
                     fmt::format("{}", fmt::join(files, ", ")),
                     fmt::format("its slope {:.4g} TB/s", 1e-6 / lf.coefficients(1))});
    }
    if (t0s.empty()) return {};
    std::sort(t0s.begin(), t0s.end());
    const std::size_t n = t0s.size();
    const double t0 = round_profile_value(n % 2 ? t0s[n / 2] : (t0s[n / 2 - 1] + t0s[n / 2]) / 2);
    std::vector<double> rel;
    for (const auto& [impl, pts] : by)
      for (const auto& [x, y] : pts) rel.push_back((t0 + x * slope[impl]) / y - 1);
    ParameterFit p{"efficiency.memory_kernel_us",
                   t0,
                   files,
                   0,
                   0,
                   0,
                   fmt::format("a memory-bound kernel's fixed duration: the median over {} "
                               "implementations of the intercept of t = t0 + bytes / B, each "
                               "with its own B",
                               n)};
    set_residuals(p, rel);
    return {p};
  }

  // A chunked-recurrence family's rate R (TFLOP/s): each timed call is its kernels priced by
  // the compute model at R (hw_models/compute.hpp scan and delta_rule, hw_models/
  // chunk_kernels.hpp); R minimises the summed squared log ratios of model to measured time
  // (golden-section search over log R, 1 to 10,000 TFLOP/s: the ratio falls with R to the
  // bytes-bound plateau).
  std::vector<ParameterFit> ssd() {
    std::vector<RatePoint> pts;
    for (const auto& m : ms_)
      for (const auto& p : m.ssd_scan) {
        const hw_models::SsdShape shape{
            static_cast<double>(p.heads),  static_cast<double>(p.head_dim),
            static_cast<double>(p.groups), static_cast<double>(p.state),
            static_cast<double>(p.chunk),  false};
        pts.push_back({hw_models::ssd_forward(shape), static_cast<double>(p.batch * p.seqlen), 1,
                       p.time_us, measurement_name(m)});
      }
    return fit_rate(pts, hw_models::KernelClass::scan, "efficiency.ssd_scan_tflops",
                    "Mamba-2 SSD forward calls");
  }

  std::vector<ParameterFit> gdn() {
    std::vector<RatePoint> pts;
    for (const auto& m : ms_)
      for (const auto& p : m.gdn_chunk) {
        const hw_models::GdnShape shape{static_cast<double>(p.heads),
                                        static_cast<double>(p.key_dim),
                                        static_cast<double>(p.value_dim), 64};
        pts.push_back(
            {p.pass == "fwd" ? hw_models::gdn_forward(shape) : hw_models::gdn_backward(shape),
             static_cast<double>(p.seqs * p.seqlen), static_cast<double>(p.seqs), p.time_us,
             measurement_name(m)});
      }
    return fit_rate(pts, hw_models::KernelClass::delta_rule, "efficiency.gdn_chunk_tflops",
                    "Gated DeltaNet chunk_gated_delta_rule forward and backward calls");
  }

  std::vector<ParameterFit> graphs(std::vector<Observation>& obs) {
    std::vector<ParameterFit> out;
    std::vector<GraphPoint> pts;
    std::vector<std::string> files;
    for (const auto& m : ms_)
      for (const auto& g : m.graph) pts.push_back(g), files.push_back(measurement_name(m));
    std::set<int> nodes;
    for (const auto& g : pts) nodes.insert(g.nodes);
    if (nodes.size() < 2) return out;
    std::vector<double> n, t;
    for (const auto& g : pts) n.push_back(g.nodes), t.push_back(g.replay_us);
    const LinearFit lf = fit_line(n, t);
    const double per = round_profile_value(lf.coefficients(1));
    std::vector<double> rel;
    for (std::size_t i = 0; i < pts.size(); ++i)
      rel.push_back((lf.coefficients(0) + per * pts[i].nodes) / pts[i].replay_us - 1);
    ParameterFit p{
        "efficiency.kernel_device_us",
        per,
        sorted_unique(files),
        0,
        0,
        0,
        "device time per kernel: the slope of CUDA graph replay time over its number of kernels"};
    set_residuals(p, rel);
    out.push_back(p);
    const std::string from = fmt::format("{}", fmt::join(sorted_unique(files), ", "));
    obs.push_back({"CUDA graph replay fixed cost", round_profile_value(lf.coefficients(0)), "us",
                   from, "the intercept of replay time over kernels"});
    std::vector<double> host;
    for (const auto& g : pts)
      if (g.host_launch_us > 0) host.push_back(g.host_launch_us);
    if (!host.empty())
      obs.push_back(
          {"host CPU time of cudaGraphLaunch", round_profile_value(mean(host)), "us", from,
           "raw CUDA; the preset's host.graph_launch_us is the framework-level replay call"});
    return out;
  }

  void launches(std::vector<Observation>& obs) {
    for (const auto& m : ms_) {
      if (!m.launch) continue;
      const auto& l = *m.launch;
      const std::string f = measurement_name(m);
      obs.push_back(
          {"host CPU time of cudaLaunchKernel", round_profile_value(l.host_launch_us), "us", f,
           "raw CUDA, an empty kernel; the preset's host.launch_us is a framework-level op"});
      obs.push_back({"empty kernel, device side", round_profile_value(l.device_kernel_us), "us", f,
                     "back to back in a graph"});
      obs.push_back({"launch to completion on an idle GPU",
                     round_profile_value(l.launch_to_complete_us), "us", f,
                     "launch plus stream synchronize of an empty kernel"});
      obs.push_back({"device-to-host sync round trip", round_profile_value(l.sync_round_trip_us),
                     "us", f, "4-byte copy plus stream synchronize"});
    }
    for (const auto& m : ms_)
      for (const auto& p : m.p2p)
        obs.push_back({fmt::format("peer copy GPU {} -> {}", p.src, p.dst),
                       round_profile_value(p.GBps), "GB/s", measurement_name(m),
                       fmt::format("one direction; the preset's NVLink is {:g} GB/s",
                                   s_.nvlink.bw_GBps.value)});
  }

 private:
  // Whether the type's points were timed one call at a time (then every one must be: dense,
  // its shape known, at two distinct K or more); a mix would fit the timed points' fixed
  // time per call as tile overhead, so it is refused.
  static bool timed_alone(const std::string& dtype, const std::vector<GemmObs>& obs) {
    const auto timed =
        std::count_if(obs.begin(), obs.end(), [](const GemmObs& o) { return o.time_s > 0; });
    if (timed == 0) return false;
    std::set<double> ks;
    for (const auto& o : obs) {
      if (o.grouped || !(o.time_s > 0))
        throw std::invalid_argument(fmt::format(
            "{}: {} GEMMs timed one call at a time (calls_timed_alone) beside {}: the fixed "
            "time per call cannot be taken out of them; fit the timed file alone",
            o.from, dtype,
            o.grouped ? "grouped points" : "points of another file or without a shape"));
      ks.insert(o.k);
    }
    if (ks.size() < 2)
      throw std::invalid_argument(fmt::format(
          "{} GEMMs timed one call at a time: fewer than two distinct K to fit K0 from", dtype));
    return true;
  }

  // K0 and the dense efficiency of one input type from calls timed alone, the fixed time
  // per call taken out (calibration::fit_k_overhead_timed) and reported as an observation.
  static void out_timed(std::vector<ParameterFit>& out, std::vector<Observation>& notes,
                        const std::string& dtype, const std::vector<GemmObs>& obs) {
    std::vector<double> w, k, t;
    std::vector<std::string> from;
    for (const auto& o : obs)
      w.push_back(o.work_s), k.push_back(o.k), t.push_back(o.time_s), from.push_back(o.from);
    const TimedKFit kf = fit_k_overhead_timed(w, k, t);
    const auto files = sorted_unique(from);
    ParameterFit k0{
        fmt::format("efficiency.gemm_k_overhead_by_dtype.{}", dtype),
        round_profile_value(kf.k0),
        files,
        0,
        0,
        0,
        fmt::format("per-tile fixed cost K0 in units of K over the {} GEMMs timed one call at a "
                    "time: T = t0 + w / eta + (w / K) K0 / eta, w the call at the peak with its "
                    "wave quantization (calibration::fit_k_overhead_timed)",
                    dtype)};
    set_residuals(k0, kf.relative_error);
    ParameterFit eta{fmt::format("efficiency.gemm.{}", dtype),
                     round_profile_value(kf.eta_inf),
                     files,
                     0,
                     0,
                     0,
                     fmt::format("dense GEMM efficiency, the large-K limit, from the same fit "
                                 "(K0 = {:g}, the fixed time per call taken out)",
                                 round_profile_value(kf.k0))};
    set_residuals(eta, kf.relative_error);
    out.push_back(k0);
    out.push_back(eta);
    notes.push_back({fmt::format("{} GEMM: fixed time per call timed alone (t0)", dtype),
                     round_profile_value(kf.t0_s * 1e6), "us",
                     fmt::format("{}", fmt::join(files, ", ")),
                     "launch, the event pair, prologue and tail; overlapped in a stream of "
                     "kernels, so not a kernel_device_us"});
  }

  void add(std::map<std::string, std::vector<GemmObs>>& by, const GemmPoint& g, bool grouped,
           const std::string& from, bool timed) const {
    const auto d = hw_models::dtype_names().find(g.dtype);
    if (!d || !s_.gpu.supports(*d))
      throw std::invalid_argument(fmt::format("{}: {} GEMMs on a {}, which has no {} peak", from,
                                              g.dtype, s_.gpu.name, g.dtype));
    const double peak = s_.gpu.peak_tflops(*d);
    if (g.m == 0 || g.groups == 0) {  // shape not published: a large GEMM, q = 1
      by[g.dtype].push_back({g.tflops / peak, static_cast<double>(g.k), grouped, from});
      return;
    }
    const double eb = *d == hw_models::Dtype::bf16 ? 2 : 1;
    const double m = static_cast<double>(g.m), n = static_cast<double>(g.n),
                 k = static_cast<double>(g.k);
    const double groups = static_cast<double>(g.groups);
    const double flops = 2 * m * n * k * groups,
                 bytes = groups * (m * k * eb + k * n * eb + m * n * 2);
    // Shapes whose HBM traffic alone (at the preset's streaming efficiency) takes 80% of
    // the measured time or more are memory-bound: they say little of the Tensor Cores.
    const double measured_s = flops / (g.tflops * 1e12);
    if (bytes / (s_.gpu.hbm_TBps.value * 1e12 * s_.efficiency.hbm.value) >= 0.8 * measured_s)
      return;
    // Fewer output tiles than SMs: one partial wave, where split-K and latency, which the
    // model does not have, decide the time.
    const auto tiles = [](std::int64_t x) {
      return (x + hw_models::ComputeModel::kTile - 1) / hw_models::ComputeModel::kTile;
    };
    if (g.groups * tiles(g.m) * tiles(g.n) < cm_.sm_count()) return;
    const double q = cm_.wave_efficiency(g.m, g.n, g.groups);
    GemmObs o{g.tflops / peak / q, k, grouped, from};
    if (timed) o.work_s = flops / (peak * 1e12 * q), o.time_s = measured_s;
    by[g.dtype].push_back(o);
  }

  // One timed call of a chunked-recurrence function: its kernels (work a token), tokens,
  // sequences (the chunk-serial kernels' CTAs scale with them) and measured time.
  struct RatePoint {
    std::vector<hw_models::ChunkKernel> kernels;
    double tokens = 0, seqs = 1, time_us = 0;
    std::string from;
  };

  std::vector<ParameterFit> fit_rate(const std::vector<RatePoint>& pts, hw_models::KernelClass cls,
                                     const std::string& parameter, const std::string& what) const {
    if (pts.empty()) return {};
    const auto model_us = [&](double r, const RatePoint& p) {
      hw_models::SystemSpec sys = s_;
      (cls == hw_models::KernelClass::scan ? sys.efficiency.ssd_scan_tflops
                                           : sys.efficiency.gdn_chunk_tflops) =
          hw_models::Param{r, ""};
      return hw_models::chunk_call_seconds(hw_models::ComputeModel(sys), p.kernels, cls, p.tokens,
                                           p.seqs) *
             1e6;
    };
    const auto cost = [&](double log_r) {
      double c = 0;
      for (const auto& p : pts)
        c += std::pow(std::log(model_us(std::exp(log_r), p) / p.time_us), 2);
      return c;
    };
    // A tie is the bytes-bound plateau, right of the minimum: golden_min keeps the lower side.
    const double r = round_profile_value(std::exp(golden_min(cost, 0.0, std::log(1e4), 100)));
    std::vector<double> rel;
    std::vector<std::string> files;
    for (const auto& p : pts)
      rel.push_back(model_us(r, p) / p.time_us - 1), files.push_back(p.from);
    ParameterFit fit{parameter,
                     r,
                     sorted_unique(files),
                     0,
                     0,
                     0,
                     what +
                         ": each kernel the slower of its bytes at the HBM efficiency and its "
                         "FLOPs at R (the chunk-serial ones at their CTAs' share); R by least "
                         "squares in log time"};
    set_residuals(fit, rel);
    return {fit};
  }

  const std::vector<Measurement>& ms_;
  const hw_models::SystemSpec& s_;
  hw_models::ComputeModel cm_;
};

void set_path(Json& root, const std::string& dotted, Json leaf) {
  Json* at = &root;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = dotted.find('.', start);
    const std::string key =
        dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) {
      (*at)[key] = std::move(leaf);
      return;
    }
    at = &(*at)[key];
    start = dot + 1;
  }
}

}  // namespace

double round_profile_value(double v) {
  return v == 0 ? 0.0 : std::stod(fmt::format("{:.4g}", v));
}

Profile fit_profile(const std::string& name, const std::vector<Measurement>& ms,
                    const hw_models::SystemSpec& system, const std::string& system_name,
                    const hw_models::SystemSpec* calibrated) {
  if (ms.empty()) throw std::invalid_argument("no measurement files to fit");
  Profile p;
  p.name = name;
  p.system = system_name;
  std::vector<std::string> devices, dates;
  for (const auto& m : ms) {
    p.measurements.push_back(measurement_name(m));
    devices.push_back(m.device);
    dates.push_back(m.date);
  }
  p.device = fmt::format("{}", fmt::join(sorted_unique(devices), "; "));
  p.date = fmt::format("{}", fmt::join(sorted_unique(dates), "; "));
  Fitter f(ms, system);
  for (auto&& v : {f.gemm(p.observations), f.attention(), f.memory(p.observations),
                   f.kernel_intercept(p.observations), f.graphs(p.observations), f.ssd(), f.gdn()})
    p.parameters.insert(p.parameters.end(), v.begin(), v.end());
  f.launches(p.observations);
  double corpus_clock = 0;  // none named
  if (calibrated && calibrated->efficiency.sustained_clock_factor)
    corpus_clock = calibrated->efficiency.sustained_clock_factor->value;
  sustained_observations(ms, corpus_clock, p.observations);
  if (p.parameters.empty())
    throw std::invalid_argument(
        "the measurements determine no parameter of the preset (GEMM, attention, "
        "memory-kernel, CUDA-graph, SSD-scan or Gated DeltaNet points are needed)");
  return p;
}

Json profile_json(const Profile& p) {
  Json j;
  j["name"] = p.name;
  j["system"] = p.system;
  j["device"] = p.device;
  j["date"] = p.date;
  j["tool"] = "moesim calibrate fit (moesim 0.1.0)";
  j["source"] = fmt::format("fitted by `moesim calibrate fit` from {} (calibration/measurements/)",
                            fmt::join(p.measurements, ", "));
  j["measurements"] = p.measurements;
  Json params = Json::object();
  Json fits = Json::array();
  for (const auto& f : p.parameters) {
    const std::string src = fmt::format(
        "calibration/profiles/{}.json: {}; fitted by moesim calibrate fit from {} ({} points, "
        "residuals "
        "rms {:g}%, max {:g}%)",
        p.name, f.model, fmt::join(f.from, ", "), f.points, f.rms_residual_pct,
        f.max_abs_residual_pct);
    set_path(params, f.parameter, Json{{"value", f.value}, {"source", src}});
    fits.push_back({{"parameter", f.parameter},
                    {"value", f.value},
                    {"from", f.from},
                    {"points", f.points},
                    {"rms_residual_pct", f.rms_residual_pct},
                    {"max_abs_residual_pct", f.max_abs_residual_pct},
                    {"model", f.model}});
  }
  j["parameters"] = params;
  j["fits"] = fits;
  Json obs = Json::array();
  for (const auto& o : p.observations)
    obs.push_back({{"what", o.what},
                   {"value", o.value},
                   {"unit", o.unit},
                   {"from", o.from},
                   {"note", o.note}});
  j["observations"] = obs;
  return j;
}

}  // namespace moesim::calibration
