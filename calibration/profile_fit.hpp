// calibration/profile_fit.hpp: from measurement files to a calibration profile: the
// system preset's parameters that the measurements determine, each fitted by least
// squares through the compute model's own equations (hw_models/compute.hpp), with the
// files it came from and its residuals.
//
//   GEMM (per dtype, compute-bound points: arithmetic intensity above the ridge
//   P_d / BW): measured efficiency e = TFLOPS / P_d, wave quantization q(m, n, groups)
//   of 128 x 128 tiles over the SMs divided out, then
//     e / q = eta x K / (K + K0)                             (calibration/gemm_k_fit.hpp)
//   K0 per dtype (efficiency.gemm_k_overhead_by_dtype; dense and grouped pooled, >= 2
//   distinct K; else the system's K0 for the dtype); with K0 fixed, eta (dense: the large-K
//   limit) and the grouped efficiency at the preset's grouped_gemm_k are the means of
//   e / (q K / (K + K0)) over their points, normalised as the compute model normalises them.
//   Points timed one call at a time (a file's calls_timed_alone): dense, shapes known, the
//   fixed time per call t0 fitted beside K0 and eta (calibration::fit_k_overhead_timed) and
//   reported as an observation; a dtype whose points mix timed and other points, or whose
//   timed points the fit cannot use, is refused rather than fitted with t0 left in.
//   Attention: eta_fwd, eta_bwd = mean TFLOPS / the BF16 peak.
//   HBM (copy and elementwise: hbm; quantize: hbm_quantize): with kernel times,
//     t = t0 + bytes / (eta x BW)   (linear least squares; t0 reported);
//   with bandwidths only, eta = mean GB/s / BW over buffers of 64 MiB and more.
//   Norm kernels timed on the device (kind norm, one op in several implementations): per
//   implementation t = t0 + bytes / B; memory_kernel_us the median t0 (the fixed part of a
//   memory-bound kernel's duration, its ramp and tail); each B reported.
//   CUDA graphs: replay time = a + b x nodes; b is the per-kernel device cost
//   (kernel_device_us), a and the host's launch costs are reported as observations.
//   Mamba-2 SSD and Gated DeltaNet: the rate R (ssd_scan_tflops, gdn_chunk_tflops) at which
//   the compute model's kernels (hw_models/chunk_kernels.hpp) best reproduce the timed calls,
//   in log time.
//   A GEMM run back to back (sustained_gemm): what it keeps of its short benchmark's
//   throughput, an observation (calibration/sustained_fit.hpp).
// Residuals are per point: model / measured - 1 (throughput or time), in percent.
// Values are rounded to four significant digits, so that the profile file is the same
// bytes on every run.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/measurement.hpp"
#include "hw_models/system.hpp"

namespace moesim::calibration {

struct ParameterFit {
  std::string parameter;  // the preset's JSON path: "efficiency.gemm.fp8"
  double value = 0;
  std::vector<std::string> from;  // measurement files (names)
  int points = 0;
  double rms_residual_pct = 0, max_abs_residual_pct = 0;
  std::string model;  // what was fitted, in words
};

struct Observation {
  std::string what;
  double value = 0;
  std::string unit;
  std::string from;
  std::string note;
};

struct Profile {
  std::string name, system, device, date;
  std::vector<std::string> measurements;
  std::vector<ParameterFit> parameters;
  std::vector<Observation> observations;
};

// `system` is the preset the measurements calibrate, read without profiles; `calibrated`,
// where given, the same preset with its profiles, whose fitted values the observations name
// beside what was measured (the sustained test's corpus factor). Throws
// std::invalid_argument when the measurements determine no parameter.
Profile fit_profile(const std::string& name, const std::vector<Measurement>& ms,
                    const hw_models::SystemSpec& system, const std::string& system_name,
                    const hw_models::SystemSpec* calibrated = nullptr);

// A fitted value or observation as the profile file holds it: four significant digits
// (0 stays 0), so that the file is the same bytes on every run.
double round_profile_value(double v);

// The profile file: header, "parameters" as a patch of the preset ({"value", "source"}
// leaves at the preset's paths), "fits" and "observations".
nlohmann::ordered_json profile_json(const Profile& p);

}  // namespace moesim::calibration
