// calibration/least_squares.hpp: linear least squares with residual statistics, the
// core of every fitter (GEMM efficiency, HBM efficiency, launch and graph costs).
//
// Solves min_c || X c - y ||_2 by column-pivoting Householder QR (Eigen), which is
// stable for the ill-conditioned design matrices that size sweeps produce. A profile
// records the residuals beside the coefficients so that a poor fit is visible.
#pragma once

#include <vector>

#include <Eigen/Dense>

namespace moesim::calibration {

struct LinearFit {
  Eigen::VectorXd coefficients;
  Eigen::VectorXd residuals;  // X c - y per observation
  double rms_residual = 0;
  double max_abs_residual = 0;
  long rank = 0;  // numerical rank of X; < columns means underdetermined
};

// Throws std::invalid_argument when X and y disagree in rows or there are no rows.
LinearFit fit_linear(const Eigen::MatrixXd& X, const Eigen::VectorXd& y);

// A straight line y = c0 + c1 x through the points (x, y).
LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace moesim::calibration
