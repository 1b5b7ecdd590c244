#include "predict/validate.hpp"

#include "config/json_reader.hpp"
#include "hw_models/dispatcher.hpp"
#include "predict/parallel.hpp"
#include "predict/predict.hpp"

namespace moesim::predict {

std::vector<ValidateRow> validate_files(const std::vector<std::string>& files,
                                        const config::LoadOptions& opts, int jobs) {
  std::vector<config::Scenario> scenarios;
  for (const auto& f : files) {
    scenarios.push_back(config::load_scenario_file(f, opts));
    if (!scenarios.back().measured)
      throw config::InputError(f, "measured", "no measured block to validate against");
  }
  // Independent simulations on `jobs` threads; rows keep the files' order.
  std::vector<ValidateRow> rows(scenarios.size());
  run_parallel(scenarios.size(), jobs, [&](std::size_t i) {
    const auto& sc = scenarios[i];
    const auto p = predict(sc);
    ValidateRow& r = rows[i];
    r.file = files[i];
    r.name = sc.name;
    r.system = sc.system.name;
    r.dispatcher = sc.model.is_moe()
                       ? std::string(hw_models::dispatcher_names().name(sc.framework.dispatcher))
                       : "-";
    r.metric = config::measured_metric_names().name(sc.measured->metric);
    r.measured = sc.measured->value;
    r.predicted = predicted_metric(*sc.measured, p);
    r.error_pct = 100 * (r.predicted - r.measured) / r.measured;
    r.tolerance_pct = sc.measured->tolerance_pct;
    r.ok = std::abs(r.error_pct) <= r.tolerance_pct;
    r.wall_s = p.wall_s;
  });
  return rows;
}

ValidateSummary summarize(const std::vector<ValidateRow>& rows) {
  ValidateSummary s;
  for (const auto& r : rows) {
    s.all.add(r);
    s.by_system[r.system].add(r);
    s.by_dispatcher[r.dispatcher].add(r);
    s.failed += r.ok ? 0 : 1;
  }
  return s;
}

}  // namespace moesim::predict
