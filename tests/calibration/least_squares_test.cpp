#include <catch2/catch.hpp>

#include "calibration/least_squares.hpp"

using moesim::calibration::fit_linear;

TEST_CASE("Least squares recovers an exact line", "[calibration]") {
  // y = 2 + 3 x at x = 0..4.
  Eigen::MatrixXd X(5, 2);
  Eigen::VectorXd y(5);
  for (int i = 0; i < 5; ++i) {
    X(i, 0) = 1;
    X(i, 1) = i;
    y(i) = 2 + 3 * i;
  }
  const auto f = fit_linear(X, y);
  CHECK(f.coefficients(0) == Approx(2));
  CHECK(f.coefficients(1) == Approx(3));
  CHECK(f.rms_residual == Approx(0).margin(1e-12));
  CHECK(f.rank == 2);
}

TEST_CASE("Least squares residuals of an overdetermined fit", "[calibration]") {
  // Fit a constant to {1, 2, 3, 6}: mean 3, residuals -2, -1, 0, 3; RMS sqrt(14/4).
  Eigen::MatrixXd X = Eigen::MatrixXd::Ones(4, 1);
  Eigen::VectorXd y(4);
  y << 1, 2, 3, 6;
  const auto f = fit_linear(X, y);
  CHECK(f.coefficients(0) == Approx(3));
  CHECK(f.rms_residual == Approx(std::sqrt(14.0 / 4)));
  CHECK(f.max_abs_residual == Approx(3));
  CHECK_THROWS_AS(fit_linear(Eigen::MatrixXd(0, 1), Eigen::VectorXd(0)), std::invalid_argument);
}
