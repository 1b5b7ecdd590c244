// A seeded, structure-aware generator of sweep files (docs/SWEEP_FORMAT.md) for the
// end-to-end fuzz target (issue #46 item 5): a base scenario, shipped or from the scenario
// generator (a file beside the sweep, inline, missing or not a scenario), a grid over real and
// mistyped dotted paths with values of every JSON type (lists nested past the reader's depth
// limit among them), layouts with valid and hostile degrees, splits, budgets and objectives,
// and the text itself sometimes cut or corrupted. Each case runs `moesim sweep` once or
// twice (a resume over the first run's CSV, or over a corrupted one), with or without
// --json, --top, --shard or --slurm-script. Grids that would run are kept small (a few
// rows); a hostile one describes more rows than a sweep may (refused before expanding).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/fuzz_case.hpp"

namespace moesim::test {

// Shipped scenarios a sweep may take as its base (name -> text): scenarios/examples, the
// default scenario and PAI's H800 layouts, whose rows mostly run.
std::vector<std::pair<std::string, std::string>> read_sweep_bases(const std::string& source_dir);

FuzzCase generate_sweep_case(std::uint64_t seed, int index,
                             const std::vector<std::pair<std::string, std::string>>& shipped);

}  // namespace moesim::test
