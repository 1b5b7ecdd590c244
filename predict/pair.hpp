// predict/pair.hpp: two predictions made at once on two threads (predict/parallel.hpp), as
// `diff`, `report` and the Python module's diff and report functions make them.
#pragma once

#include <array>

#include "config/scenario.hpp"
#include "predict/predict.hpp"

namespace moesim::predict {

// Scenarios a and b, each predicted as `run` predicts it.
std::array<Prediction, 2> predict_pair(const config::Scenario& a, const config::Scenario& b);

// One scenario: [0] its figures as `run` predicts them, [1] a traced simulation of every
// microbatch (run --trace's), whose timeline a report draws.
std::array<Prediction, 2> predict_with_trace(const config::Scenario& sc);

}  // namespace moesim::predict
