// The corpus fitter on problems with known answers: residuals linear in ln(theta) (the
// fit recovers theta exactly, and leave-one-out errors are the left-out runs' residuals
// at the others' fit), an outlier that the Huber loss down-weights, and bounds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "calibration/corpus_fit.hpp"

using namespace moesim::calibration;

namespace {

// Run i: p_i / m_i = theta_0^a_i theta_1^b_i e^{c_i}, i.e. r_i = a_i ln t0 + b_i ln t1 + c_i.
struct Linear {
  std::vector<double> a, b, c;
  int passes = 0;
  CorpusEval eval() {
    return
        [this](const std::vector<std::vector<double>>& th, const std::vector<std::size_t>& runs) {
          ++passes;
          std::vector<double> r;
          for (std::size_t k = 0; k < runs.size(); ++k) {
            const std::size_t i = runs[k];
            r.push_back(a[i] * std::log(th[k][0]) + b[i] * std::log(th[k][1]) + c[i]);
          }
          return r;
        };
  }
};

}  // namespace

TEST_CASE("Corpus fit: exact recovery where every run agrees", "[calibration][corpus]") {
  // Truth theta = (2.0, 0.8): c_i = -(a_i ln 2 + b_i ln 0.8), so every residual vanishes there.
  Linear f;
  f.a = {1.0, 0.5, 0.2, 0.8, 0.0, 0.3};
  f.b = {0.0, 0.4, 1.0, 0.3, 0.9, -0.5};
  for (std::size_t i = 0; i < f.a.size(); ++i)
    f.c.push_back(-(f.a[i] * std::log(2.0) + f.b[i] * std::log(0.8)));
  const auto fit = fit_corpus({{"t0", 1.0, 0.5, 5.0}, {"t1", 1.0, 0.5, 1.0}}, f.a.size(), f.eval());
  CHECK(fit.theta[0] == Approx(2.0).epsilon(1e-3));
  CHECK(fit.theta[1] == Approx(0.8).epsilon(1e-3));
  for (std::size_t i = 0; i < f.a.size(); ++i) {
    CHECK(fit.in_sample[i] == Approx(0).margin(1e-3));
    CHECK(fit.leave_one_out[i] == Approx(0).margin(1e-3));  // the others alone pin theta
  }
}

TEST_CASE("Corpus fit: an outlier does not drag the shared parameter; its left-out error shows it",
          "[calibration][corpus]") {
  // Five runs say theta = 1.5 (r = ln theta - ln 1.5); the sixth is off by +50% whatever theta.
  Linear f;
  f.a = {1, 1, 1, 1, 1, 1};
  f.b = {0, 0, 0, 0, 0, 0};
  for (int i = 0; i < 5; ++i) f.c.push_back(-std::log(1.5));
  f.c.push_back(-std::log(1.5) + std::log(1.5));
  const auto fit = fit_corpus({{"t0", 1.0, 0.5, 5.0}, {"t1", 1.0, 1.0, 1.0}}, 6, f.eval());
  // Huber's stationarity: 5 (ln t - ln 1.5) + d sign(r_6) = 0 (d = kCorpusHuber = 0.05),
  // so the outlier moves ln t by d / 5 (a mean would move it by ln 1.5 / 6 = 0.068).
  const double d = kCorpusHuber;
  CHECK(fit.theta[0] == Approx(1.5 * std::exp(-d / 5)).epsilon(1e-3));
  CHECK(std::exp(fit.in_sample[5]) == Approx(1.5 * std::exp(-d / 5)).epsilon(1e-3));
  // Left out, the outlier meets the five's own t = 1.5: +50%; a left-out inlier meets the
  // fit of four inliers and the outlier: ln t = ln 1.5 - d / 4.
  CHECK(std::exp(fit.leave_one_out[5]) - 1 == Approx(0.5).epsilon(2e-3));
  CHECK(fit.leave_one_out[0] == Approx(-d / 4).margin(1e-3));
}

TEST_CASE("Corpus fit: bounds hold and bad parameters are refused", "[calibration][corpus]") {
  Linear f;
  f.a = {1, 1};
  f.b = {0, 0};
  f.c = {-std::log(10.0), -std::log(10.0)};  // wants theta = 10, above the bound
  const auto fit = fit_corpus({{"t0", 1.0, 0.5, 4.0}, {"t1", 1.0, 1.0, 1.0}}, 2, f.eval());
  CHECK(fit.theta[0] == Approx(4.0).epsilon(1e-6));
  CHECK_THROWS_AS(fit_corpus({{"x", 1.0, 2.0, 1.0}}, 2, f.eval()), std::invalid_argument);
  CHECK_THROWS_AS(fit_corpus({{"x", 1.0, 0.5, 2.0}}, 0, f.eval()), std::invalid_argument);
}

TEST_CASE("Corpus fit: leaving a set of runs out is the fit without them",
          "[calibration][corpus]") {
  // r_i = ln t - m_i, every residual within the Huber loss's quadratic zone: the fit is the
  // mean of the m_i, and without a set S the mean of the others (one Newton step is exact
  // on a quadratic loss; the Levenberg damping, 1e-3 of the curvature, moves it slightly).
  const std::vector<double> dm = {0.01, -0.01, 0.02, -0.02, 0.03, 0.0};
  Linear f;
  for (double d : dm) {
    f.a.push_back(1);
    f.b.push_back(0);
    f.c.push_back(-(std::log(1.5) + d));
  }
  const auto fit = fit_corpus({{"t0", 1.0, 0.5, 5.0}, {"t1", 1.0, 1.0, 1.0}}, dm.size(), f.eval());
  const auto mean_without = [&](std::vector<std::size_t> s) {
    double sum = 0;
    int n = 0;
    for (std::size_t i = 0; i < dm.size(); ++i)
      if (std::find(s.begin(), s.end(), i) == s.end()) sum += dm[i], ++n;
    return 1.5 * std::exp(sum / n);
  };
  CHECK(fit.theta[0] == Approx(mean_without({})).epsilon(1e-4));
  CHECK(theta_without(fit, {})[0] == Approx(fit.theta[0]).epsilon(1e-12));
  CHECK(theta_without(fit, {4})[0] == Approx(fit.theta_loo[4][0]).epsilon(1e-12));
  CHECK(theta_without(fit, {4})[0] == Approx(mean_without({4})).epsilon(1e-4));
  CHECK(theta_without(fit, {2, 4})[0] == Approx(mean_without({2, 4})).epsilon(1e-4));
  CHECK(theta_without(fit, {2, 4})[1] == 1.0);  // held at its bounds
  CHECK_THROWS_AS(theta_without(fit, {6}), std::out_of_range);
}
