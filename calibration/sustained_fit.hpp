// calibration/sustained_fit.hpp: how much of its Tensor Cores' throughput a GPU keeps under
// sustained load, from moesim-calib's sustained test (Measurement::sustained_gemm: one GEMM
// shape run back to back for 15 s (--quick) or 45 s, timed in bins, the SM clock read after
// each):
//
//   kept = mean TFLOPS of the last third of the bins (at least one)
//          / the same shape's short benchmark (the file's `gemm` point of that dtype and
//            shape: tens of calls after a warm-up, what the presets' GEMM efficiencies
//            come from)
//
// It is the component counterpart of efficiency.sustained_clock_factor, which the corpus fit
// (calibration/corpus_params.hpp) takes from whole training steps. A GEMM loop draws more
// power than a training step, whose communication, memory-bound kernels and host gaps leave
// the Tensor Cores idle part of the time, so where the clock drop is the power cap's, `kept`
// bounds the step's factor from below. The question it answers: is the corpus's Hopper factor
// (0.85) the clock (then a loop keeps about that or less), or does it absorb costs the corpus
// runs carry that moesim does not price (then a loop keeps more)?
// (docs/research/hopper-tp-mbs-gaps.md 10 and 16). It is reported as an observation, with the
// SM clock after the first bin and at the end, and never applied: the factor stays the
// corpus's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibration/measurement.hpp"
#include "calibration/profile_fit.hpp"

namespace moesim::calibration {

struct SustainedSummary {
  std::string dtype;
  std::int64_t m = 0, n = 0, k = 0;
  int bins = 0, steady_bins = 0;
  double seconds = 0;           // the last bin's end
  double steady_tflops = 0;     // mean of the last third of the bins
  double short_tflops = 0;      // the shape's short benchmark
  double first_clock_mhz = 0;   // after the first bin (0: not read)
  double steady_clock_mhz = 0;  // mean over the steady bins (0: not read)
  double kept() const { return steady_tflops / short_tflops; }
};

// One summary per dtype and shape of `m`'s sustained_gemm points, in the order they first
// appear. Throws std::invalid_argument (naming the file) when the file has no short
// benchmark of a sustained shape: the ratio needs it.
std::vector<SustainedSummary> summarize_sustained(const Measurement& m);

// The summaries of every file as observations of a profile; `corpus_clock`, where above 0,
// the system's efficiency.sustained_clock_factor as its profiles set it, named beside.
void sustained_observations(const std::vector<Measurement>& ms, double corpus_clock,
                            std::vector<Observation>& out);

}  // namespace moesim::calibration
