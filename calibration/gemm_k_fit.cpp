#include "calibration/gemm_k_fit.hpp"

#include <stdexcept>

namespace moesim::calibration {

KOverheadFit fit_k_overhead(const std::vector<double>& k, const std::vector<double>& efficiency) {
  if (k.size() != efficiency.size() || k.size() < 2)
    throw std::invalid_argument("fit_k_overhead: need at least two (K, efficiency) points of equal count");
  const auto n = static_cast<Eigen::Index>(k.size());
  Eigen::MatrixXd X(n, 2);
  Eigen::VectorXd y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double e = efficiency[static_cast<std::size_t>(i)], kk = k[static_cast<std::size_t>(i)];
    if (!(e > 0 && e <= 1) || !(kk > 0)) throw std::invalid_argument("fit_k_overhead: efficiency must be in (0, 1], K > 0");
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
    r.relative_error.push_back(r.eta_inf * kk / (kk + r.k0) / efficiency[static_cast<std::size_t>(i)] - 1);
  }
  return r;
}

}  // namespace moesim::calibration
