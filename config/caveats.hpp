// config/caveats.hpp: where a prediction prices something beyond what was measured, said
// in the output ("No silent paths": a component that cannot price a case from its own
// evidence says so; `moesim run` prints these under `caveats`, its JSON carries them).
//
// A system preset of `"status": "announced"` (hw_models::SystemStatus): every prediction on
// it is a projection from announced peaks and transferred efficiencies.
//
// A cross-run quantity of calibration/profiles/corpus.json is fitted on the runs whose
// prediction it moves (the profile's `fits[].cpus`: their host CPUs). Applied to a host
// outside that set it is an extrapolation:
//   host.numa_unbound_factor (stack.cpu_numa_binding off): every measured unbound run is
//     on the hosts listed there (today Grace: the GB200 journey's steps 1-7); an unbound
//     x86 process pays the same factor, unmeasured (docs/research/hopper-tp-mbs-gaps.md 1).
#pragma once

#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace moesim::config {

// The host CPUs of the runs the corpus fit measured `parameter` on ("host.numa_unbound_factor",
// as calibration::CorpusParamInfo::label() writes it); empty if the profile does not list it.
std::vector<std::string> corpus_fit_cpus(const std::string& parameter);

// The system's own caveats (an announced system's projection), which every prediction on it
// carries, the communication model's alone (`moesim comm`) included.
std::vector<std::string> system_caveats(const hw_models::SystemSpec& system);

// The scenario's caveats, in a fixed order (system_caveats first); empty when everything is
// priced from evidence that covers it.
std::vector<std::string> prediction_caveats(const Scenario& sc);

}  // namespace moesim::config
