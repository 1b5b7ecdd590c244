// The end-to-end fuzz targets (issue #15 item 3, issue #46 item 5): N generated cases of one
// kind, each a folder of input files and the moesim commands that read them, run in
// subprocesses from that folder:
//   scenario  the seeded scenario generator (tests/support/scenario_gen.hpp): `run FILE --json`
//   sweep     sweep files (tests/support/sweep_gen.hpp): `sweep`, sometimes resumed
//   shell     Megatron launch scripts, built or mutated from the shipped ones
//             (tests/support/shell_gen.hpp): `import megatron`, then sometimes `run`
// A command passes when it exits 0 or 2 within the time limit, its stderr never says
// "internal error", an exit 2 says why ("moesim: error: ..."), no output shows a canary
// (a value of a file the importer must refuse unread) and no file a script's commands would
// create exists afterwards (nothing is executed). Exit 3, any other status, a signal or the
// time limit fail it, and the kind, seed, index and files are printed so the case can be
// replayed alone. A case's later commands run while the earlier ones exit 0.
//
// usage: moesim_fuzz KIND PATH/TO/moesim SOURCE_DIR
// environment: MOESIM_FUZZ_CASES (default 200; MOESIM_FUZZ_SCENARIOS too), MOESIM_FUZZ_SEED
//   (default 15), MOESIM_FUZZ_ONLY (run only this index), MOESIM_FUZZ_JOBS (default 2),
//   MOESIM_FUZZ_TIMEOUT_S (default 30 a command; sweeps 120), MOESIM_FUZZ_KEEP (a folder to
//   copy every case's folder to, for inspection), MOESIM_FUZZ_VERBOSE=1 (print every refusal).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/fuzz_case.hpp"
#include "support/scenario_gen.hpp"
#include "support/shell_gen.hpp"
#include "support/sweep_gen.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
using moesim::test::FuzzCase;

std::int64_t env_int(const char* name, std::int64_t def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  return std::stoll(v);
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// What a failure prints of a text: its start, at most 2,000 bytes.
std::string shown(const std::string& s) {
  return s.size() <= 2000
             ? s
             : s.substr(0, 2000) + "\n[... " + std::to_string(s.size() - 2000) + " more bytes]";
}

// One case in flight: its folder, the command running and when it started.
struct Job {
  FuzzCase c;
  fs::path dir;
  std::size_t command = 0;
  pid_t pid = -1;
  Clock::time_point start;
  bool killed = false;
};

pid_t spawn(const std::string& moesim, const Job& j) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (chdir(j.dir.c_str()) != 0) _exit(127);
  const int out_fd = open("_stdout", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err_fd = open("_stderr", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out_fd < 0 || err_fd < 0) _exit(127);
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  std::vector<std::string> args{moesim};
  for (const auto& a : j.c.commands[j.command])
    args.push_back(replace_all(a, moesim::test::kCaseFolder, j.dir.string()));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(moesim.c_str(), argv.data());
  _exit(127);
}

// A file under `dir` whose name starts with `prefix`, or "".
std::string created(const fs::path& dir, const std::string& prefix) {
  if (prefix.empty()) return "";
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().starts_with(prefix)) return it->path().string();
  return "";
}

std::string command_text(const std::vector<std::string>& args) {
  std::string s = "moesim";
  for (const auto& a : args)
    s += " " + (a.find_first_of(" '\"") == std::string::npos && !a.empty() ? a : "'" + a + "'");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: moesim_fuzz scenario|sweep|shell PATH/TO/moesim SOURCE_DIR\n";
    return 2;
  }
  const std::string kind = argv[1], moesim = fs::absolute(argv[2]).string(), source = argv[3];
  const auto seed = static_cast<std::uint64_t>(env_int("MOESIM_FUZZ_SEED", 15));
  const moesim::test::ScenarioGenerator scenarios(seed);
  moesim::test::ShellSeeds seeds;
  std::vector<std::pair<std::string, std::string>> bases;
  std::function<FuzzCase(int)> generate;
  if (kind == "scenario") {
    generate = [&](int i) {
      const auto g = scenarios.generate(i);
      FuzzCase c;
      c.seed = g.seed;
      c.index = g.index;
      c.stratum = g.system + "/" + g.dispatcher + "/" + g.schedule;
      c.files.emplace_back("scenario.json", g.json.dump(2) + "\n");
      c.commands.push_back({"run", "scenario.json", "--json"});
      return c;
    };
  } else if (kind == "sweep") {
    bases = moesim::test::read_sweep_bases(source);
    generate = [&](int i) { return moesim::test::generate_sweep_case(seed, i, bases); };
  } else if (kind == "shell") {
    seeds = moesim::test::read_shell_seeds(source);
    if (seeds.scripts.empty()) {
      std::cerr << "moesim_fuzz: no launch scripts under " << source << "/tests/data/megatron\n";
      return 2;
    }
    generate = [&](int i) { return moesim::test::generate_shell_case(seed, i, seeds); };
  } else {
    std::cerr << "moesim_fuzz: unknown kind '" << kind << "' (scenario, sweep or shell)\n";
    return 2;
  }
  const auto count =
      static_cast<int>(env_int("MOESIM_FUZZ_CASES", env_int("MOESIM_FUZZ_SCENARIOS", 200)));
  const auto only = env_int("MOESIM_FUZZ_ONLY", -1);
  const auto jobs = std::max<std::int64_t>(1, env_int("MOESIM_FUZZ_JOBS", 2));
  const double timeout_s =
      static_cast<double>(env_int("MOESIM_FUZZ_TIMEOUT_S", kind == "sweep" ? 120 : 30));
  const char* keep = std::getenv("MOESIM_FUZZ_KEEP");
  const bool verbose = env_int("MOESIM_FUZZ_VERBOSE", 0) != 0;

  std::vector<int> todo;
  if (only >= 0)
    todo.push_back(static_cast<int>(only));
  else
    for (int i = 0; i < count; ++i) todo.push_back(i);

  const fs::path root =
      fs::temp_directory_path() / ("moesim-fuzz-" + kind + "-" + std::to_string(getpid()));
  fs::create_directories(root);
  if (keep) fs::create_directories(keep);

  std::vector<Job> running;
  std::size_t next = 0;
  int cases_ok = 0, failed = 0, commands_run = 0, exit0 = 0, exit2 = 0;
  double slowest = 0;
  int slowest_index = -1;
  std::map<std::string, int> strata;
  std::map<std::string, int> refusals;  // where each refusal points, its JSON path or flag
  const auto t0 = Clock::now();

  const auto start = [&](Job& j) {
    j.start = Clock::now();
    j.killed = false;
    j.pid = spawn(moesim, j);
    if (j.pid < 0) {
      std::cerr << "fork failed\n";
      std::exit(1);
    }
  };
  const auto fail = [&](const Job& j, const std::string& why, const std::string& err) {
    ++failed;
    std::cout << "FAIL " << kind << " case " << j.c.index << " (seed " << j.c.seed << ", "
              << j.c.stratum << "): " << why
              << "\n  command: " << command_text(j.c.commands[j.command])
              << "\n  replay: MOESIM_FUZZ_SEED=" << j.c.seed << " MOESIM_FUZZ_ONLY=" << j.c.index
              << " MOESIM_FUZZ_KEEP=DIR " << argv[0] << " " << kind << " " << moesim << " "
              << source << "\n  stderr: " << shown(err) << "\n";
    for (const auto& [path, text] : j.c.files)
      std::cout << "  file " << path << ":\n" << shown(text) << "\n";
    std::cout << "\n";
  };
  // Done with the command running: true when the case goes on to its next command.
  const auto finish = [&](Job& j, int status) -> bool {
    ++commands_run;
    const double wall = std::chrono::duration<double>(Clock::now() - j.start).count();
    if (wall > slowest) slowest = wall, slowest_index = j.c.index;
    const std::string out = moesim::test::read_file_text(j.dir / "_stdout"),
                      err = moesim::test::read_file_text(j.dir / "_stderr");
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::string why;
    if (j.killed)
      why = "no exit within " + std::to_string(timeout_s) + " s";
    else if (WIFSIGNALED(status))
      why = "killed by signal " + std::to_string(WTERMSIG(status));
    else if (code != 0 && code != 2)
      why = "exit status " + std::to_string(code);
    else if (err.find("internal error") != std::string::npos)
      why = "an internal error";
    else if (code == 2 && err.find("error") == std::string::npos)
      why = "exit 2 without saying why";
    for (const auto& canary : j.c.canaries)
      if (why.empty() &&
          (out.find(canary) != std::string::npos || err.find(canary) != std::string::npos))
        why = "a refused file's value '" + canary + "' reached the output";
    if (const std::string f = created(j.dir, j.c.forbidden_prefix); why.empty() && !f.empty())
      why = "something ran: " + f + " exists";
    if (!why.empty()) {
      fail(j, why, err);
      return false;
    }
    (code == 0 ? exit0 : exit2)++;
    if (code == 2) {
      // "moesim: error: FILE: WHERE: why" -> WHERE
      std::string where = err.substr(0, err.find('\n'));
      if (const auto a = where.find("error: "); a != std::string::npos) where = where.substr(a + 7);
      const auto colon = where.find(": ");
      where = colon == std::string::npos ? "?" : where.substr(colon + 2);
      where = where.substr(0, std::min<std::size_t>(where.find(':'), 48));
      ++refusals[where];
      if (verbose) std::cout << "refused " << j.c.index << " (" << j.c.stratum << "): " << err;
    }
    return code == 0 && j.command + 1 < j.c.commands.size();
  };
  const auto done = [&](Job& j, bool passed) {
    if (passed) ++cases_ok;
    ++strata[j.c.stratum];
    std::error_code ec;
    if (keep)
      fs::copy(j.dir, fs::path(keep) / std::to_string(j.c.index),
               fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    fs::remove_all(j.dir, ec);
  };

  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && static_cast<std::int64_t>(running.size()) < jobs) {
      Job j;
      j.c = generate(todo[next++]);
      j.dir = root / std::to_string(j.c.index);
      fs::create_directories(j.dir);
      for (const auto& [path, text] : j.c.files) {
        fs::create_directories((j.dir / path).parent_path());
        std::ofstream(j.dir / path, std::ios::binary)
            << replace_all(text, moesim::test::kCaseFolder, j.dir.string());
      }
      start(j);
      running.push_back(std::move(j));
    }
    bool progressed = false;
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      if (waitpid(it->pid, &status, WNOHANG) == it->pid) {
        progressed = true;
        const int before = failed;
        if (finish(*it, status)) {
          ++it->command;
          start(*it);
          ++it;
          continue;
        }
        done(*it, failed == before);
        it = running.erase(it);
        continue;
      }
      if (!it->killed &&
          std::chrono::duration<double>(Clock::now() - it->start).count() > timeout_s) {
        kill(it->pid, SIGKILL);  // only the child this test started
        it->killed = true;
      }
      ++it;
    }
    if (!progressed) usleep(2000);
  }
  std::error_code ec;
  fs::remove_all(root, ec);

  const double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::cout << todo.size() << " generated " << kind << " cases (seed " << seed << "): " << cases_ok
            << " passed, " << failed
            << " failed (crashes, internal errors, hangs, leaks, executions); " << commands_run
            << " commands: " << exit0 << " exit 0, " << exit2 << " refused as bad input (exit 2); "
            << total_s << " s in all, slowest command " << slowest << " s (case " << slowest_index
            << ")\n";
  std::cout << "strata drawn: " << strata.size();
  if (kind == "scenario")
    std::cout << " of " << scenarios.combinations() << " system x dispatcher x schedule";
  std::cout << "\n";
  if (kind != "scenario")
    for (const auto& [s, n] : strata) std::cout << "  " << s << ": " << n << "\n";
  std::cout << "refusals by where they point:";
  for (const auto& [where, n] : refusals) std::cout << " [" << where << "]=" << n;
  std::cout << "\n";
  return failed == 0 ? 0 : 1;
}
