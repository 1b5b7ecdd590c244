#include "calibration/least_squares.hpp"

#include <cmath>
#include <stdexcept>

namespace moesim::calibration {

LinearFit fit_linear(const Eigen::MatrixXd& X, const Eigen::VectorXd& y) {
  if (X.rows() == 0 || X.rows() != y.rows())
    throw std::invalid_argument("fit_linear: X and y need the same, non-zero number of rows");
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(X);
  LinearFit f;
  f.coefficients = qr.solve(y);
  f.rank = qr.rank();
  f.residuals = X * f.coefficients - y;
  f.rms_residual = std::sqrt(f.residuals.squaredNorm() / static_cast<double>(X.rows()));
  f.max_abs_residual = f.residuals.cwiseAbs().maxCoeff();
  return f;
}

LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size())
    throw std::invalid_argument("fit_line: x and y need the same number of points");
  const auto n = static_cast<Eigen::Index>(x.size());
  Eigen::MatrixXd X(n, 2);
  Eigen::VectorXd v(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    X(i, 0) = 1;
    X(i, 1) = x[static_cast<std::size_t>(i)];
    v(i) = y[static_cast<std::size_t>(i)];
  }
  return fit_linear(X, v);
}

}  // namespace moesim::calibration
