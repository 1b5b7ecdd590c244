// cli/common.hpp: what several subcommands share: writing a file whole, output locks, the
// --uncalibrated flag, shipped scenarios by name (the scenario files under paths:
// config/scenario_files.hpp).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "config/scenario_files.hpp"
#include "config/sweep_file.hpp"
#include "reports/sweep.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace moesim::cli {

// Replaces a file's contents at once (a temporary beside it, renamed over it); InputError
// naming the file when it cannot be written.
void write_file(const std::string& path, const std::string& text);

// The right to write an output (`sweep -o`, `plan -o`) for as long as it lives (issue #46
// item 3): an exclusive flock(2) on OUTPUT.lock, which holds the writer's process id.
// A second run on the same output is refused at once (InputError naming the first's
// process); the lock goes with the process however it ends, so a killed run leaves none
// held, and a finished one removes the file.
class OutputLock {
 public:
  explicit OutputLock(const std::string& output);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

// A scenario named as shipped (issue #46 item 4): where `arg` is no file here and is a
// relative name, the shipped scenario of that name ("dsv3-gb200", "journey/04-deepep",
// with or without ".json") beside the running binary, installed (BIN/../share/moesim/
// scenarios) or in the build tree (build/../scenarios); else `arg` as given (the loader
// then says it cannot open it). For a scenario argument: add_option(...)->transform(...).
std::string shipped_scenario_path(const std::string& arg);

// A number option's check: finite and in [lo, hi] ((lo, hi] with `above_lo`). CLI11's
// Range, PositiveNumber and NonNegativeNumber let NaN through (every comparison with it is
// false) and Range lets an infinity through where its bound is the largest double.
void check_finite(CLI::Option* option, double lo, double hi, bool above_lo = false);

// --uncalibrated: system presets as written, without their calibration profiles.
void add_uncalibrated(CLI::App& app, bool& flag);
// --headroom GIB: memory held back on every GPU (config::LoadOptions::headroom_gib).
void add_headroom(CLI::App& app, double& gib);
// --set PATH=VALUE, repeatable (config::LoadOptions::system_set): the texts as given, parsed by
// config::load_options (InputError, exit 2, on one that is not PATH=VALUE).
void add_system_set(CLI::App& app, std::vector<std::string>& texts);

// The sweep rows `todo` (predict::run_sweep on `jobs` threads) appended to the CSV `out`
// as each finishes (`each` called after it), then `out` rewritten sorted by id, so the
// same rows give the same file; returns it. Once `stop` is requested no further row starts
// (cli/terminate.hpp); the file holds the rows that ran. Without `wall_times`
// (--deterministic) each row's sim_wall_s is left empty (reports::without_wall_time).
reports::SweepCsv append_rows_to_csv(std::span<const config::SweepPoint* const> todo,
                                     const std::string& base_file,
                                     std::optional<double> token_budget, int jobs,
                                     const config::LoadOptions& opts, const std::string& out,
                                     const std::function<void()>& each, std::stop_token stop = {},
                                     bool wall_times = true);

}  // namespace moesim::cli
