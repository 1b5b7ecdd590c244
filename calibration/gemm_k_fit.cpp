#include "calibration/gemm_k_fit.hpp"

#include <cmath>
#include <stdexcept>

#include "calibration/bisect.hpp"

namespace moesim::calibration {

KOverheadFit fit_k_overhead(const std::vector<double>& k, const std::vector<double>& efficiency) {
  if (k.size() != efficiency.size() || k.size() < 2)
    throw std::invalid_argument(
        "fit_k_overhead: need at least two (K, efficiency) points of equal count");
  const auto n = static_cast<Eigen::Index>(k.size());
  Eigen::MatrixXd X(n, 2);
  Eigen::VectorXd y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double e = efficiency[static_cast<std::size_t>(i)], kk = k[static_cast<std::size_t>(i)];
    if (!(e > 0 && e <= 1) || !(kk > 0))
      throw std::invalid_argument("fit_k_overhead: efficiency must be in (0, 1], K > 0");
    X(i, 0) = 1;
    X(i, 1) = 1 / kk;
    y(i) = 1 / e;
  }
  KOverheadFit r;
  r.fit = fit_linear(X, y);
  if (r.fit.rank < 2) throw std::invalid_argument("fit_k_overhead: all points share one K");
  r.eta_inf = 1 / r.fit.coefficients(0);
  r.k0 = r.fit.coefficients(1) * r.eta_inf;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double kk = k[static_cast<std::size_t>(i)];
    r.relative_error.push_back(
        r.eta_inf * kk / (kk + r.k0) / efficiency[static_cast<std::size_t>(i)] - 1);
  }
  return r;
}

TimedKFit fit_k_overhead_timed(const std::vector<double>& work_s, const std::vector<double>& k,
                               const std::vector<double>& time_s) {
  if (work_s.size() != k.size() || k.size() != time_s.size() || k.size() < 3)
    throw std::invalid_argument(
        "fit_k_overhead_timed: need at least three (work, K, time) points of equal count");
  const auto n = static_cast<Eigen::Index>(k.size());
  Eigen::MatrixXd X(n, 3);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto j = static_cast<std::size_t>(i);
    if (!(work_s[j] > 0) || !(k[j] > 0) || !(time_s[j] > 0))
      throw std::invalid_argument("fit_k_overhead_timed: work, K and time must be positive");
    X(i, 0) = 1 / time_s[j];
    X(i, 1) = work_s[j] / time_s[j];
    X(i, 2) = work_s[j] / k[j] / time_s[j];
  }
  const LinearFit f = fit_linear(X, y);
  if (f.rank < 3)
    throw std::invalid_argument("fit_k_overhead_timed: the points do not separate t0, eta and K0");
  TimedKFit r;
  r.t0_s = f.coefficients(0);
  r.eta_inf = 1 / f.coefficients(1);
  r.k0 = f.coefficients(2) * r.eta_inf;
  if (!(r.eta_inf > 0 && r.eta_inf <= 1) || r.k0 < 0 || r.t0_s < 0)
    throw std::invalid_argument(
        "fit_k_overhead_timed: the fit leaves the model's range (efficiency in (0, 1], K0 and "
        "the time per call not negative): the points do not time what they name");
  for (Eigen::Index i = 0; i < n; ++i) r.relative_error.push_back(f.residuals(i));
  return r;
}

double eta_for_k0(const std::vector<double>& k, const std::vector<double>& efficiency, double k0) {
  double yz = 0, zz = 0;
  for (std::size_t i = 0; i < k.size(); ++i) {
    const double z = 1 + k0 / k[i];
    yz += z / efficiency[i];
    zz += z * z;
  }
  return zz / yz;
}

SharedKFit fit_k_overhead_shared(const std::vector<double>& k,
                                 const std::vector<double>& efficiency,
                                 const std::vector<int>& group, int groups) {
  if (k.size() != efficiency.size() || k.size() != group.size() || k.size() < 2)
    throw std::invalid_argument(
        "fit_k_overhead_shared: need at least two points, each with K, efficiency and group");
  std::vector<std::vector<double>> gk(static_cast<std::size_t>(groups)),
      ge(static_cast<std::size_t>(groups));
  for (std::size_t i = 0; i < k.size(); ++i) {
    if (!(efficiency[i] > 0 && efficiency[i] <= 1) || !(k[i] > 0) || group[i] < 0 ||
        group[i] >= groups)
      throw std::invalid_argument(
          "fit_k_overhead_shared: efficiency must be in (0, 1], K > 0, group in range");
    gk[static_cast<std::size_t>(group[i])].push_back(k[i]);
    ge[static_cast<std::size_t>(group[i])].push_back(efficiency[i]);
  }
  // Summed squares in 1 / e with each group's best eta.
  const auto cost = [&](double k0) {
    double c = 0;
    for (std::size_t g = 0; g < gk.size(); ++g) {
      if (gk[g].empty()) continue;
      const double a = 1 / eta_for_k0(gk[g], ge[g], k0);
      for (std::size_t i = 0; i < gk[g].size(); ++i) {
        const double r = a * (1 + k0 / gk[g][i]) - 1 / ge[g][i];
        c += r * r;
      }
    }
    return c;
  };
  SharedKFit r;
  r.k0 = golden_min(cost, 0.0, 1e5, 200);
  for (std::size_t g = 0; g < gk.size(); ++g)
    r.eta_inf.push_back(gk[g].empty() ? 0 : eta_for_k0(gk[g], ge[g], r.k0));
  for (std::size_t i = 0; i < k.size(); ++i) {
    const double eta = r.eta_inf[static_cast<std::size_t>(group[i])];
    r.relative_error.push_back(eta * k[i] / (k[i] + r.k0) / efficiency[i] - 1);
  }
  return r;
}

}  // namespace moesim::calibration
