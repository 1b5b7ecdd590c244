// calibration/ep_library_fit.hpp: one EP library's parameters, fitted jointly from all of
// its published tables across systems (calibration/measurements/ep-*.json), written as a
// calibration profile (calibration/profiles/ep-<lib>.json) that every system preset names.
//
// The parameters are physical and the same on every system (hw_models::EpLinkParams, per
// link kind: NVLink inside a node, NVLink across NVL72 trays, RDMA); the flow model of
// the kernels (hw_models::ep_library_time) applies them through each system's own links.
// A row's link kind follows from its system and placement (hw_models::ep_nvlink_kind;
// RDMA rows across domains). Roles of the rows:
//   fit       (link nvlink | network): the link kind's fraction (combine rows: combine's
//             own), jointly over every fit row of that parameter on every system:
//             argmin_x sum_rows ln^2(model(x) / measured), golden section on [0.05, 1];
//   fit-sm    with the file's "sm_fit" pair: per token copy a fixed time plus its bytes
//             at a per-SM rate (calibration::fit_ep_sm); else (sm_by_ranks files) the
//             per-SM rate of the row's EP size and payload (calibration::fit_ep_sm_rate);
//   fit-peer  one RDMA peer connection's share of the NIC line rate;
//   check     must come within 15%; gap rows are known misses with their reasons.
// Link fractions and SM rates depend on each other (a row is bound by the links, the SMs
// or both), so the fits alternate until they settle (8 rounds). A link kind with SM rows
// but no link-bound row (DeepEP across GB200 trays) takes the library's NVLink fractions:
// the same kernels on the same NVLink ports. The low-latency kernels ("deepep-ll") fit
// their fixed cost alone, at DeepEP's fitted link fractions.
// Values are rounded to four significant digits, so that the profile file is the same
// bytes on every run.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/ep_fit.hpp"
#include "hw_models/system.hpp"

namespace moesim::calibration {

// The system preset a measurement file names, with every calibration profile applied
// but the one being fitted (the library's parameters are replaced during the fit).
using EpSystemLookup = std::function<hw_models::SystemSpec(const std::string&)>;

struct EpRowResult {
  std::string file, what, role, system, link_kind;
  double measured = 0, model = 0, error_pct = 0;
  std::string unit;  // GB/s or us
};

struct EpParameterFit {
  std::string parameter;  // ep_libraries.deepep.nvlink.link_fraction
  double value = 0;
  std::vector<std::string> rows;  // "file: what"
  std::string model;
};

struct EpLibraryFit {
  std::string library;  // deepep, deepep-ll, hybridep
  std::vector<std::string> files;
  hw_models::EpLibrary params;
  std::vector<EpParameterFit> fits;
  std::vector<EpRowResult> rows;
};

// The measurement files of `library` among `files` (name, parsed JSON): dispatcher
// "deepep" without low-latency rows for deepep, with them for deepep-ll, "hybridep".
EpLibraryFit fit_ep_library(const std::string& library,
                            const std::vector<std::pair<std::string, nlohmann::json>>& files,
                            const EpSystemLookup& systems);

// Every row of the library's files against the model with parameters `params` (the
// compiled-in profile's, or a fit's).
std::vector<EpRowResult> ep_library_rows(
    const std::string& library, const std::vector<std::pair<std::string, nlohmann::json>>& files,
    const EpSystemLookup& systems, const hw_models::EpLibrary& params);

nlohmann::ordered_json ep_profile_json(const EpLibraryFit& f);

// The names the profiles use: "deepep" -> ep_libraries.deepep, "deepep-ll" ->
// ep_libraries.deepep_low_latency.
std::vector<std::string> ep_library_names();

}  // namespace moesim::calibration
