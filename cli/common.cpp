#include "cli/common.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "config/json_reader.hpp"
#include "config/load.hpp"
#include "predict/sweep.hpp"

namespace moesim::cli {

// Replaces a file's contents at once (a temporary beside it, renamed over it).
void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!(f << text) || !f.flush()) {
      f.close();
      std::filesystem::remove(tmp, ec);  // no temporary left behind a failed write
      throw config::InputError(path, "", "cannot write the file");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    throw config::InputError(path, "", "cannot write the file: " + why);
  }
}

OutputLock::OutputLock(const std::string& output) : path_(output + ".lock") {
  for (int attempt = 0; attempt < 8; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw config::InputError(output, "", fmt::format("cannot create its lock file {}", path_));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = {};
      const auto n = ::pread(fd_, buf, sizeof buf - 1, 0);
      ::close(fd_);
      fd_ = -1;
      const std::string pid =
          n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("?");
      throw config::InputError(
          output, "",
          fmt::format("another moesim (process {}) is writing it now ({} is locked); wait for "
                      "it to finish or give another -o",
                      pid.substr(0, pid.find('\n')), path_));
    }
    // Locked; but if the holder before us removed the file in between, the lock is on a
    // file no one else will see: take the one at the path again.
    struct stat held {
    }, at{};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &at) == 0 && held.st_ino == at.st_ino &&
        held.st_dev == at.st_dev) {
      const std::string pid = fmt::format("{}\n", ::getpid());
      if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
        // The lock holds without the pid in it; the message then says "process ?".
      }
      return;
    }
    ::close(fd_);
    fd_ = -1;
  }
  throw config::InputError(output, "",
                           fmt::format("cannot lock {}: it keeps being replaced", path_));
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while held: a later run creates a fresh one
  ::close(fd_);
}

std::string shipped_scenario_path(const std::string& arg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (arg.empty() || fs::exists(arg, ec) || fs::path(arg).is_absolute() || arg.starts_with("."))
    return arg;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return arg;
  const fs::path bin = exe.parent_path();
  for (const fs::path& dir :
       {bin / ".." / "share" / "moesim" / "scenarios", bin / ".." / "scenarios"})
    for (const std::string& name : {arg, arg + ".json"})
      if (const fs::path p = (dir / name).lexically_normal(); fs::is_regular_file(p, ec))
        return p.string();
  return arg;
}

// --uncalibrated: system presets as written, without their calibration profiles.
void add_uncalibrated(CLI::App& app, bool& flag) {
  app.add_flag(
      "--uncalibrated", flag,
      "read the system presets without their calibration profiles (calibration/profiles/)");
}

void add_headroom(CLI::App& app, double& gib) {
  check_finite(app.add_option("--headroom", gib,
                              "GiB of every GPU to leave free (CUDA context, NCCL buffers, "
                              "safety): a layout fits when its peak is within the CUDA-reported "
                              "capacity less this"),
               0, 10000);
}

void add_system_set(CLI::App& app, std::vector<std::string>& texts) {
  app.add_option("--set", texts,
                 "PATH=VALUE: replace one number of the system (PATH as in the preset: "
                 "efficiency.sustained_clock_factor, host.launch_us, comm.alltoall_efficiency), "
                 "after its calibration profiles, on every scenario; repeatable. A what-if on "
                 "the calibrated model, which the output says (run's and diff's caveats, "
                 "validate's first line, a sweep's or plan's summary, describe's system, "
                 "report's page)");
}

void check_finite(CLI::Option* option, double lo, double hi, bool above_lo) {
  const std::string range = fmt::format("{}{:g} - {:g}]", above_lo ? "(" : "[", lo, hi);
  option->check(CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        try {
          std::size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) return fmt::format("{} is not a number", text);
        } catch (const std::out_of_range&) {
          return fmt::format("{} is out of a number's range", text);
        } catch (const std::exception&) {
          return fmt::format("{} is not a number", text);
        }
        if (!std::isfinite(v)) return fmt::format("{} is not a finite number", text);
        if ((above_lo ? !(v > lo) : !(v >= lo)) || !(v <= hi))
          return fmt::format("{} is not in {}", text, range);
        return {};
      },
      "FLOAT in " + range, "finite"));
}

reports::SweepCsv append_rows_to_csv(std::span<const config::SweepPoint* const> todo,
                                     const std::string& base_file,
                                     std::optional<double> token_budget, int jobs,
                                     const config::LoadOptions& opts, const std::string& out,
                                     const std::function<void()>& each, std::stop_token stop,
                                     bool wall_times) {
  const bool budget = token_budget.has_value();
  std::ofstream stream(out, std::ios::binary | std::ios::app);
  if (!stream) throw config::InputError(out, "", "cannot write the file");
  predict::run_sweep(
      todo, base_file, token_budget, jobs,
      [&](const config::SweepPoint& p, const predict::SweepResult& r) {
        auto fields = reports::sweep_csv_fields(p, r, budget);
        if (!wall_times) fields = reports::without_wall_time(std::move(fields));
        stream << reports::csv_line(fields) << std::flush;
        each();
      },
      opts, stop);
  stream.close();
  if (!stream) throw config::InputError(out, "", "cannot write the file");
  reports::SweepCsv all = reports::read_sweep_csv(out);
  write_file(out, reports::sweep_csv_text(all));
  return all;
}

}  // namespace moesim::cli
