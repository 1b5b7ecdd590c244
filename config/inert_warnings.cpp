// config/inert_warnings.cpp: the inert settings of one scenario (config/inert_settings.hpp):
// the warnings a prediction carries and the list an importer records in the file it writes.
#include <algorithm>

#include "config/inert_settings.hpp"
#include "config/load.hpp"

namespace moesim::config {

std::vector<SettingWarning> inert_setting_warnings(const Scenario& sc) {
  std::vector<SettingWarning> out;
  for (const auto& s : performance_settings())
    if (s.given(sc))
      if (auto why = s.inert(sc))
        out.push_back({s.name, *why,
                       std::find(sc.recorded_inert.begin(), sc.recorded_inert.end(), s.name) !=
                           sc.recorded_inert.end()});
  return out;
}

std::vector<std::string> record_inert_settings(Json& scenario, const std::string& file,
                                               const std::string& by) {
  std::vector<std::string> names;
  try {
    for (const auto& w : inert_setting_warnings(load_scenario_json(scenario, file)))
      names.push_back(w.setting);
  } catch (const InputError&) {
    return names;  // the caller's own load names what is wrong
  }
  if (!names.empty()) scenario["recorded"] = {{"by", by}, {"inert", names}};
  return names;
}

}  // namespace moesim::config
