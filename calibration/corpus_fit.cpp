#include "calibration/corpus_fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <Eigen/Dense>

namespace moesim::calibration {
namespace {

// The Huber loss of the residuals: r^2 / 2 within kHuber, kHuber (|r| - kHuber / 2) beyond.
double l1(const std::vector<double>& r);

constexpr double kHuber = kCorpusHuber;
constexpr double kLambda = 1e-3;    // Levenberg damping (relative to the normal matrix's diagonal)
constexpr double kDiffStep = 0.03;  // forward-difference step in ln(theta)

double l1(const std::vector<double>& r) {
  double s = 0;
  for (double v : r) {
    const double a = std::abs(v);
    s += a <= kHuber ? a * a / 2 : kHuber * (a - kHuber / 2);
  }
  return s;
}

}  // namespace

std::vector<double> theta_without(const CorpusFit& fit, const std::vector<std::size_t>& left_out) {
  const std::size_t runs = fit.in_sample.size(), p = fit.x.size();
  for (std::size_t k : left_out)
    if (k >= runs) throw std::out_of_range("theta_without: run index beyond the fit's runs");
  // At the optimum the Huber scores psi(r_i) J_i (psi(r) = w r) sum to zero over the free
  // parameters; removing the runs of S leaves their scores as the gradient.
  std::vector<std::size_t> free;
  for (std::size_t j = 0; j < p; ++j)
    if (fit.x[j] > fit.lo_x[j] + 1e-9 && fit.x[j] < fit.hi_x[j] - 1e-9) free.push_back(j);
  const auto nf = static_cast<Eigen::Index>(free.size());
  const auto col = [&](std::size_t i, Eigen::Index a) {
    return fit.jacobian[i][free[static_cast<std::size_t>(a)]];
  };
  Eigen::MatrixXd H = Eigen::MatrixXd::Zero(nf, nf);
  for (std::size_t i = 0; i < runs; ++i)
    for (Eigen::Index a = 0; a < nf; ++a)
      for (Eigen::Index c = 0; c < nf; ++c) H(a, c) += fit.weights[i] * col(i, a) * col(i, c);
  for (Eigen::Index a = 0; a < nf; ++a) H(a, a) += kLambda * std::max(H(a, a), 1e-6);
  if (left_out.empty() || nf == 0) return fit.theta;
  Eigen::VectorXd g = Eigen::VectorXd::Zero(nf);
  for (std::size_t k : left_out)
    for (Eigen::Index a = 0; a < nf; ++a) {
      g[a] += fit.weights[k] * fit.in_sample[k] * col(k, a);
      for (Eigen::Index c = 0; c < nf; ++c) H(a, c) -= fit.weights[k] * col(k, a) * col(k, c);
    }
  const Eigen::VectorXd dx = H.colPivHouseholderQr().solve(g);
  std::vector<double> theta = fit.theta;
  for (Eigen::Index a = 0; a < nf; ++a) {
    const std::size_t j = free[static_cast<std::size_t>(a)];
    theta[j] = std::exp(std::clamp(fit.x[j] + dx[a], fit.lo_x[j], fit.hi_x[j]));
  }
  return theta;
}

std::vector<double> lad_step(const std::vector<std::vector<double>>& J,
                             const std::vector<double>& r, const std::vector<bool>& include,
                             const std::vector<double>& x, const std::vector<double>& lo_x,
                             const std::vector<double>& hi_x) {
  const std::size_t n = r.size(), p = x.size();
  Eigen::VectorXd dx = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(p));
  for (int it = 0; it < 50; ++it) {
    Eigen::MatrixXd A =
        Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(p), static_cast<Eigen::Index>(p));
    Eigen::VectorXd b = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(p));
    for (std::size_t i = 0; i < n; ++i) {
      if (!include[i]) continue;
      double lin = r[i];
      for (std::size_t j = 0; j < p; ++j) lin += J[i][j] * dx[static_cast<Eigen::Index>(j)];
      const double w = std::abs(lin) <= kHuber ? 1.0 : kHuber / std::abs(lin);
      for (std::size_t a = 0; a < p; ++a) {
        b[static_cast<Eigen::Index>(a)] -= w * J[i][a] * r[i];
        for (std::size_t c = 0; c < p; ++c)
          A(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(c)) += w * J[i][a] * J[i][c];
      }
    }
    for (std::size_t a = 0; a < p; ++a) {
      const auto k = static_cast<Eigen::Index>(a);
      A(k, k) += kLambda * std::max(A(k, k), 1e-6);
    }
    Eigen::VectorXd next = A.colPivHouseholderQr().solve(b);
    for (std::size_t a = 0; a < p; ++a) {
      const auto k = static_cast<Eigen::Index>(a);
      next[k] = std::clamp(next[k], lo_x[a] - x[a], hi_x[a] - x[a]);
    }
    const bool done = (next - dx).norm() < 1e-7;
    dx = next;
    if (done) break;
  }
  return {dx.data(), dx.data() + dx.size()};
}

CorpusFit fit_corpus(const std::vector<CorpusParam>& params, std::size_t runs,
                     const CorpusEval& eval, int max_outer) {
  if (runs == 0) throw std::invalid_argument("fit_corpus: no runs");
  const std::size_t p = params.size();
  std::vector<double> x(p), lo(p), hi(p);
  for (std::size_t j = 0; j < p; ++j) {
    const auto& q = params[j];
    if (!(q.lo > 0) || !(q.hi >= q.lo) || q.initial < q.lo || q.initial > q.hi)
      throw std::invalid_argument("fit_corpus: parameter " + q.name +
                                  " needs 0 < lo <= initial <= hi");
    x[j] = std::log(q.initial);
    lo[j] = std::log(q.lo);
    hi[j] = std::log(q.hi);
  }
  std::vector<std::size_t> all(runs);
  for (std::size_t i = 0; i < runs; ++i) all[i] = i;
  const auto theta_of = [](const std::vector<double>& xs) {
    std::vector<double> t(xs.size());
    std::transform(xs.begin(), xs.end(), t.begin(), [](double v) { return std::exp(v); });
    return t;
  };

  CorpusFit out;
  const auto at = [&](const std::vector<double>& xs) {
    return eval(std::vector<std::vector<double>>(runs, theta_of(xs)), all);
  };
  std::vector<double> r = at(x);
  ++out.evaluations;
  std::vector<std::vector<double>> J(runs, std::vector<double>(p, 0.0));
  const std::vector<bool> every(runs, true);
  const auto jacobian = [&] {
    for (std::size_t j = 0; j < p; ++j) {
      std::vector<double> xp = x;
      // Step inwards at the upper bound.
      const double h = x[j] + kDiffStep <= hi[j] ? kDiffStep : -kDiffStep;
      xp[j] += h;
      const std::vector<double> rp = at(xp);
      ++out.evaluations;
      for (std::size_t i = 0; i < runs; ++i) J[i][j] = (rp[i] - r[i]) / h;
    }
  };
  for (int step = 0; step < max_outer && p > 0; ++step) {
    jacobian();
    ++out.outer_steps;
    std::vector<double> dx = lad_step(J, r, every, x, lo, hi);
    double cur = l1(r);
    bool improved = false;
    for (int halve = 0; halve < 4; ++halve) {
      std::vector<double> xn = x;
      for (std::size_t j = 0; j < p; ++j) xn[j] += dx[j];
      const std::vector<double> rn = at(xn);
      ++out.evaluations;
      if (l1(rn) < cur - 1e-9) {
        x = xn;
        r = rn;
        improved = true;
        break;
      }
      for (double& v : dx) v /= 2;
    }
    double moved = 0;
    for (double v : dx) moved = std::max(moved, std::abs(v));
    if (!improved || moved < 2e-3) break;
  }
  if (p > 0) jacobian();  // at the optimum, for leave-one-out
  out.points.assign(p, 0);
  for (std::size_t i = 0; i < runs; ++i)
    for (std::size_t j = 0; j < p; ++j) out.points[j] += std::abs(J[i][j]) > 1e-6 ? 1 : 0;
  out.theta = theta_of(x);
  out.in_sample = r;
  out.x = x;
  out.lo_x = lo;
  out.hi_x = hi;
  out.jacobian = J;
  out.weights.resize(runs);
  for (std::size_t i = 0; i < runs; ++i)
    out.weights[i] = std::abs(r[i]) <= kHuber ? 1.0 : kHuber / std::abs(r[i]);
  out.theta_loo.assign(runs, out.theta);
  for (std::size_t k = 0; k < runs && p > 0; ++k) out.theta_loo[k] = theta_without(out, {k});
  out.leave_one_out = p > 0 ? eval(out.theta_loo, all) : r;
  ++out.evaluations;
  return out;
}

}  // namespace moesim::calibration
