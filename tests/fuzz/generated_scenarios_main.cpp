// The end-to-end scenario fuzz test (issue #15 item 3): N scenarios from the seeded
// generator (tests/support/scenario_gen.hpp), each run as `moesim run FILE --json` in a
// subprocess. A draw passes when it exits 0 (predicted) or 2 (refused as bad input)
// within the time limit, and its stderr never says "internal error". Exit 3, any
// other status, a signal or the time limit fail it, and the seed, index and JSON are
// printed so the draw can be replayed alone.
//
// usage: moesim_scenario_fuzz PATH/TO/moesim
// environment: MOESIM_FUZZ_SCENARIOS (default 200), MOESIM_FUZZ_SEED (default 15),
//   MOESIM_FUZZ_ONLY (run only this index), MOESIM_FUZZ_JOBS (default 2),
//   MOESIM_FUZZ_TIMEOUT_S (default 30), MOESIM_FUZZ_KEEP (a folder to write every
//   generated scenario to, for inspection), MOESIM_FUZZ_VERBOSE=1 (print every refusal).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/scenario_gen.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::int64_t env_int(const char* name, std::int64_t def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  return std::stoll(v);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Job {
  moesim::test::GeneratedScenario sc;
  pid_t pid = -1;
  Clock::time_point start;
  fs::path file, err;
  bool killed = false;
};

struct Outcome {
  int exit_status = -1;  // -1: killed by a signal
  int signal = 0;
  bool timed_out = false;
  double wall_s = 0;
  std::string err;
};

pid_t spawn(const std::string& moesim, const fs::path& file, const fs::path& err) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int null_fd = open("/dev/null", O_WRONLY);
  const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (null_fd < 0 || err_fd < 0) _exit(127);
  dup2(null_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  const char* argv[] = {moesim.c_str(), "run", file.c_str(), "--json", nullptr};
  execv(moesim.c_str(), const_cast<char* const*>(argv));
  _exit(127);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: moesim_scenario_fuzz PATH/TO/moesim\n";
    return 2;
  }
  const std::string moesim = argv[1];
  const auto count = static_cast<int>(env_int("MOESIM_FUZZ_SCENARIOS", 200));
  const auto seed = static_cast<std::uint64_t>(env_int("MOESIM_FUZZ_SEED", 15));
  const auto only = env_int("MOESIM_FUZZ_ONLY", -1);
  const auto jobs = std::max<std::int64_t>(1, env_int("MOESIM_FUZZ_JOBS", 2));
  const double timeout_s = static_cast<double>(env_int("MOESIM_FUZZ_TIMEOUT_S", 30));
  const char* keep = std::getenv("MOESIM_FUZZ_KEEP");
  const bool verbose = env_int("MOESIM_FUZZ_VERBOSE", 0) != 0;

  const moesim::test::ScenarioGenerator gen(seed);
  std::vector<int> todo;
  if (only >= 0)
    todo.push_back(static_cast<int>(only));
  else
    for (int i = 0; i < count; ++i) todo.push_back(i);

  const fs::path dir = fs::temp_directory_path() / ("moesim-fuzz-" + std::to_string(getpid()));
  fs::create_directories(dir);
  if (keep) fs::create_directories(keep);

  std::vector<Job> running;
  std::size_t next = 0;
  int ok = 0, refused = 0, failed = 0;
  double slowest = 0;
  int slowest_index = -1;
  std::set<std::string> combos_run;
  std::map<std::string, int> refusals;  // first line of the error, by JSON path
  const auto t0 = Clock::now();

  const auto finish = [&](Job& j, int status) {
    Outcome o;
    o.wall_s = std::chrono::duration<double>(Clock::now() - j.start).count();
    o.timed_out = j.killed;
    if (WIFEXITED(status))
      o.exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
      o.signal = WTERMSIG(status);
    o.err = read_text(j.err);
    const bool internal = o.err.find("internal error") != std::string::npos;
    const bool pass = !o.timed_out && !internal && (o.exit_status == 0 || o.exit_status == 2);
    combos_run.insert(j.sc.system + "/" + j.sc.dispatcher + "/" + j.sc.schedule);
    if (o.wall_s > slowest) {
      slowest = o.wall_s;
      slowest_index = j.sc.index;
    }
    if (pass) {
      (o.exit_status == 0 ? ok : refused)++;
      if (o.exit_status == 2) {
        // "moesim: error: FILE: PATH: ..." -> PATH
        std::string path = o.err;
        const auto a = path.find(j.file.string() + ": ");
        path = a == std::string::npos ? "?" : path.substr(a + j.file.string().size() + 2);
        path = path.substr(0, path.find(':'));
        ++refusals[path];
        if (verbose) std::cout << "refused " << j.sc.index << ": " << o.err;
      }
    } else {
      ++failed;
      std::cout << "FAIL scenario " << j.sc.index << " (seed " << j.sc.seed << "): ";
      if (o.timed_out)
        std::cout << "no exit within " << timeout_s << " s";
      else if (o.signal)
        std::cout << "killed by signal " << o.signal;
      else
        std::cout << "exit status " << o.exit_status;
      std::cout << " after " << o.wall_s << " s\n  replay: MOESIM_FUZZ_SEED=" << j.sc.seed
                << " MOESIM_FUZZ_ONLY=" << j.sc.index << " " << argv[0] << " " << moesim
                << "\n  stderr: " << o.err << "\n  scenario:\n"
                << j.sc.json.dump(2) << "\n\n";
    }
    std::error_code ec;
    fs::remove(j.file, ec);
    fs::remove(j.err, ec);
  };

  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && static_cast<std::int64_t>(running.size()) < jobs) {
      Job j;
      j.sc = gen.generate(todo[next++]);
      const std::string stem = std::to_string(j.sc.index);
      j.file = dir / (stem + ".json");
      j.err = dir / (stem + ".err");
      std::ofstream(j.file) << j.sc.json.dump(2) << "\n";
      if (keep) std::ofstream(fs::path(keep) / (stem + ".json")) << j.sc.json.dump(2) << "\n";
      j.start = Clock::now();
      j.pid = spawn(moesim, j.file, j.err);
      if (j.pid < 0) {
        std::cerr << "fork failed\n";
        return 1;
      }
      running.push_back(std::move(j));
    }
    bool progressed = false;
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t r = waitpid(it->pid, &status, WNOHANG);
      if (r == it->pid) {
        finish(*it, status);
        it = running.erase(it);
        progressed = true;
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
  fs::remove_all(dir, ec);

  const double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::cout << todo.size() << " generated scenarios (seed " << seed << "): " << ok << " predicted, "
            << refused << " refused as bad input, " << failed << " failed; " << total_s
            << " s in all, slowest " << slowest << " s (scenario " << slowest_index << ")\n";
  std::cout << "system x dispatcher x schedule combinations drawn: " << combos_run.size() << " of "
            << gen.combinations() << "\nrefusals by JSON path:";
  for (const auto& [path, n] : refusals) std::cout << " " << path << "=" << n;
  std::cout << "\n";
  return failed == 0 ? 0 : 1;
}
