// calibration/corpus_fit.hpp: the few cross-run quantities that no microbenchmark pins,
// fitted over the validation corpus of measured end-to-end runs, with each run's
// leave-one-out error (issue #15, item 7).
//
// Run i has a prediction p_i(theta) and a measurement m_i; its residual is
//   r_i(theta) = ln(p_i(theta) / m_i)          (about the relative error when small),
// and the fit minimizes the Huber loss sum_i H(r_i) over x = ln(theta) inside the
// parameters' bounds, H(r) = r^2 / 2 for |r| <= d and d (|r| - d / 2) beyond (d =
// kCorpusHuber, 0.05): least squares among the runs the model explains within about 5%,
// least absolute deviations
// beyond, so that a run the model cannot explain pulls the shared parameters by its sign,
// not by its size. Each outer step linearizes the residuals with a forward-difference
// Jacobian J (one corpus evaluation per parameter) and solves
//   min_dx  sum_i w_i (r_i + J_i dx)^2 + lambda |dx|^2,   w_i = min(1, d / |r_i + J_i dx|)
// by iteratively reweighted least squares (Eigen), then evaluates the corpus at the new
// point, halving the step until the loss decreases.
// Leave-one-out: for run k, one Newton step of the loss without run k from the full fit
// (the M-estimator's influence of run k: its score removed, its curvature subtracted)
// gives x_-k, and run k is then simulated at theta_-k: its out-of-sample error. The same
// step without a set S of runs gives theta_-S (theta_without): a measured pair's
// out-of-sample ratio leaves out both its runs (issue #44).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace moesim::calibration {

// The Huber loss's threshold in ln units: quadratic within about 5%, linear beyond.
inline constexpr double kCorpusHuber = 0.05;

struct CorpusParam {
  std::string name;  // where the value lives in a system preset ("host.rank_contention")
  double initial = 1, lo = 0.1, hi = 10;
};

// Residuals r_i = ln(p_i / m_i) of runs[i] at thetas[i] (one per run, in order; the runs
// are independent, so an implementation may simulate them in parallel).
using CorpusEval = std::function<std::vector<double>(const std::vector<std::vector<double>>& thetas,
                                                     const std::vector<std::size_t>& runs)>;

struct CorpusFit {
  std::vector<double> theta;                   // fitted values, in the order of the parameters
  std::vector<double> in_sample;               // r_i at theta, every run
  std::vector<double> leave_one_out;           // r_k at theta_-k, every run
  std::vector<std::vector<double>> theta_loo;  // theta_-k per run
  std::vector<int> points;                     // per parameter: the runs whose prediction it moves
  int evaluations = 0;  // corpus passes (one per run for leave-one-out counts 1/n)
  int outer_steps = 0;
  // The optimum as theta_without needs it: ln theta, its bounds, every run's Jacobian row
  // J_i and Huber weight w_i there.
  std::vector<double> x, lo_x, hi_x;
  std::vector<std::vector<double>> jacobian;
  std::vector<double> weights;
};

// `runs` residuals; `max_outer` Gauss-Newton steps. Throws std::invalid_argument on an
// empty corpus or parameters with lo > hi or a non-positive bound.
CorpusFit fit_corpus(const std::vector<CorpusParam>& params, std::size_t runs,
                     const CorpusEval& eval, int max_outer = 6);

// theta_-S: the fitted values without the runs `left_out` (indices into the fit's runs),
// one Newton step of the Huber loss from the optimum (above): with H = sum_i w_i J_i^T J_i
// over the free parameters (those not at a bound) and g_S = sum_{k in S} w_k r_k J_k^T,
//   dx = (H - sum_{k in S} w_k J_k^T J_k)^-1 g_S,
// clamped to the bounds. An empty set gives theta. Throws std::out_of_range on an index
// beyond the runs.
std::vector<double> theta_without(const CorpusFit& fit, const std::vector<std::size_t>& left_out);

// The robust step of the linearized problem: dx minimizing sum_i H(r_i + J_i dx) (IRLS)
// over the runs with include[i], clamped to [lo_x, hi_x] - x.
std::vector<double> lad_step(const std::vector<std::vector<double>>& J,
                             const std::vector<double>& r, const std::vector<bool>& include,
                             const std::vector<double>& x, const std::vector<double>& lo_x,
                             const std::vector<double>& hi_x);

}  // namespace moesim::calibration
