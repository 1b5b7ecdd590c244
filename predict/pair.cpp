#include "predict/pair.hpp"

#include "predict/parallel.hpp"

namespace moesim::predict {

std::array<Prediction, 2> predict_pair(const config::Scenario& a, const config::Scenario& b) {
  std::array<Prediction, 2> p;
  run_parallel(2, 2, [&](std::size_t i) { p[i] = predict(i == 0 ? a : b); });
  return p;
}

std::array<Prediction, 2> predict_with_trace(const config::Scenario& sc) {
  std::array<Prediction, 2> p;
  run_parallel(2, 2, [&](std::size_t i) { p[i] = predict(sc, {i == 1, false}); });
  return p;
}

}  // namespace moesim::predict
