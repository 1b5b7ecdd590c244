// A deterministic, seeded generator of scenario files for the end-to-end fuzz test
// (issue #15 item 3): every system preset, model preset, dispatcher and pipeline
// schedule, with layouts that are mostly valid (divisors of the model's heads, experts
// and the GPUs of a stage) and a share of invalid ones, malformed pp_layout strings,
// edge batch sizes, key typos and wrong types.
//
// Scenario i of seed s depends on (s, i) alone, so one failing draw is reproduced by
// its seed and index without the draws before it. The first draws are stratified:
// draw i takes combination i of systems x dispatchers x schedules (and model i mod the
// model count), so every combination appears once the count reaches their product;
// later draws are random.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/json_reader.hpp"

namespace moesim::test {

struct GeneratedScenario {
  std::uint64_t seed = 0;
  int index = 0;
  // What the draw aimed at (the JSON may have been perturbed away from it).
  std::string system, model, dispatcher, schedule;
  bool perturbed = false;  // a deliberate invalid change was applied
  config::Json json;
};

class ScenarioGenerator {
 public:
  explicit ScenarioGenerator(std::uint64_t seed);

  GeneratedScenario generate(int index) const;

  // systems x dispatchers x schedules: the draws that stratification covers.
  int combinations() const;
  const std::vector<std::string>& systems() const { return systems_; }
  const std::vector<std::string>& models() const { return models_; }
  const std::vector<std::string>& dispatchers() const { return dispatchers_; }
  const std::vector<std::string>& schedules() const { return schedules_; }

 private:
  std::uint64_t seed_;
  std::vector<std::string> systems_, models_, dispatchers_, schedules_;
};

}  // namespace moesim::test
