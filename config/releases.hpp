// config/releases.hpp: stack.release, the software release a run used, resolved to the
// stack switches that release had and the Megatron features it could run.
//
// A release is a NeMo Framework / Megatron-Bridge container, "YY.MM" or "YY.MM.PP"
// (a patch release). The evidence is docs/research/releases.md: section 1 gives each
// container's Megatron-Core, Transformer Engine and cuDNN, section 2 the first release
// of each switch and feature, section 4 the table this file encodes (each row below
// names its commit, tag or document).
//
// Resolution, for the switches the scenario's `stack` object does not give (explicit keys
// win):
//   - a switch that first shipped in release F is on at F and after, off before;
//   - the launcher binds every rank with numactl in every release; on GB200 before 25.07
//     and GB300 before 26.02 its divisor puts all four ranks of a tray on NUMA node 0,
//     priced as bound, and `run` says that the remote ranks' path is not priced;
//   - a switch no release shipped (pdl_quant: reverted before TE 2.7) is off in every
//     release;
//   - a switch no source settles (deepep_tuned: "Tune DeepEP" is a row of NVIDIA's blog,
//     what changed is not published; te_host_slim from TE 2.12, whose upstream CPU work
//     may or may not equal the journey's unmerged PR 2146) takes the newest stack's
//     value, on, and is listed in `unsettled`: `run` warns where it acts, so the user
//     can decide.
// Features: a setting the scenario uses that its release did not ship (HybridEP before
// 25.11, EP overlap before 25.09, ...) is refused at the setting's JSON path with the
// release that first had it.
//
// "custom": a build of its own (a fork of TE, a Dockerfile of its own, DeepSeek's
// stack): nothing resolves and nothing is gated, and every switch that acts in the
// scenario must be given in `stack`.
// Absent: the newest stack moesim models, every switch on (the GB200 journey's end,
// which ran a TE fork: no shipped release has all of it).
#pragma once

#include <compare>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/scenario.hpp"

namespace moesim::config {

struct ReleaseVersion {
  int year = 0, month = 0, patch = 0;
  auto operator<=>(const ReleaseVersion&) const = default;
};

struct SoftwareRelease {
  std::string_view name;  // "26.04.01"
  ReleaseVersion version;
  std::string_view components;  // what the container shipped, as far as the evidence goes
  std::string_view source;
  std::string_view bridge = {};  // the Megatron-Bridge tag the container ships ("v0.4.0"), if any
};

// Every release moesim resolves, oldest first.
std::span<const SoftwareRelease> software_releases();
const SoftwareRelease* find_release(std::string_view name);
// "23.09, 24.04, ..., custom": for messages.
std::string known_release_names();
inline constexpr std::string_view kCustomRelease = "custom";
// Why `name` is no release moesim resolves ("unknown release ...; known: ..."), or nullopt.
std::optional<std::string> unknown_release(std::string_view name);

struct ReleaseResolution {
  workload::StackSwitches stack;
  std::vector<std::string> unsettled;  // switch names taken as on for want of evidence
};
// The switch values `release` had on `gpu` (hw_models GpuSpec::name).
ReleaseResolution resolve_release(const SoftwareRelease& release, std::string_view gpu);

// The first first-release rule the scenario breaks: the JSON path of the setting and
// why; nullopt when the release ran everything the scenario uses.
struct ReleaseRefusal {
  std::string path;
  std::string message;
};
std::optional<ReleaseRefusal> release_refusal(const SoftwareRelease& release, const Scenario& sc);

// The release's notes for `run`: the launcher's node-0 binding where the scenario takes
// its binding from the release, the unsettled switches that act in the scenario, and MLA at
// TP > 1 on a release whose Megatron-Core ran its down-projections otherwise.
std::vector<std::string> release_warnings(const Scenario& sc);

}  // namespace moesim::config
