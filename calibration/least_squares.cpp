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

}  // namespace moesim::calibration
