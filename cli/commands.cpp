// cli/commands.cpp: the command table and the program's entry (run_cli). Each subcommand
// is a Command in its own file, cli/<name>.cpp, which defines its factory below; adding one
// is that file and its line in the table (with the factory's declaration beside it).
#include "cli/commands.hpp"

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/json_reader.hpp"
#include "schedules/pipeline_order.hpp"
#include "sim_core/engine.hpp"

namespace moesim::cli {

// The subcommands' factories (cli/<name>.cpp).
std::unique_ptr<Command> make_run_command();
std::unique_ptr<Command> make_diff_command();
std::unique_ptr<Command> make_describe_command();
std::unique_ptr<Command> make_import_command();
std::unique_ptr<Command> make_validate_command();
std::unique_ptr<Command> make_bench_command();
std::unique_ptr<Command> make_comm_command();
std::unique_ptr<Command> make_pipeline_command();
std::unique_ptr<Command> make_infer_command();
std::unique_ptr<Command> make_sweep_command();
std::unique_ptr<Command> make_plan_command();
std::unique_ptr<Command> make_report_command();
std::unique_ptr<Command> make_calibrate_command();
std::unique_ptr<Command> make_eplb_command();
std::unique_ptr<Command> make_schema_command();

namespace {

constexpr std::array<CommandInfo, 15> kCommands{{
    {"run", "predict one scenario: step time, TFLOPS/GPU, MFU, memory, breakdown",
     make_run_command},
    {"diff", "two scenarios' predictions side by side, the step-time difference by contribution",
     make_diff_command},
    {"describe", "what a scenario resolves to: parameters, FLOPs, layout, settings",
     make_describe_command},
    {"import",
     "a Megatron-LM pretraining command line as a scenario (flags ignored and settings assumed "
     "listed)",
     make_import_command},
    {"validate", "predicted vs measured over scenario files or folders", make_validate_command},
    {"bench",
     "time the simulation of one scenario (wall time, events/s, peak memory), or a sweep's rows "
     "(--sweep)",
     make_bench_command},
    {"comm", "the communication model alone: collectives as flows over the topology, EP dispatch",
     make_comm_command},
    {"pipeline", "a pipeline schedule alone with fixed chunk times", make_pipeline_command},
    {"infer", "infer a journey step's one unpublished parameter from that step",
     make_infer_command},
    {"eplb",
     "DeepSeek's expert-parallel load balancer on a load matrix: replicas and their placement",
     make_eplb_command},
    {"sweep", "run the scenarios of a sweep file to a CSV, ranked; merge shards",
     make_sweep_command},
    {"plan",
     "the best parallel layouts of a scenario's model on a cluster size (every candidate to a CSV)",
     make_plan_command},
    {"report", "one self-contained HTML page of charts: a scenario, a diff, validation or a sweep",
     make_report_command},
    {"schema", "print the JSON Schema of scenario or sweep files (for editors and checks)",
     make_schema_command},
    {"calibrate",
     "run the calibration kernels on a GPU, or fit a profile: measurement files, EP tables, step "
     "jitter, the corpus",
     make_calibrate_command},
}};

}  // namespace

std::span<const CommandInfo> commands() {
  return kCommands;
}

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"moesim: discrete-event performance model of Mixture-of-Experts training"};
  app.set_version_flag("--version", "moesim 0.1.0");
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, std::unique_ptr<Command>>> subs;
  for (const auto& c : commands()) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.help));
    subs.emplace_back(sub, c.make());
    subs.back().second->configure(*sub);
  }
  Io io{out, err};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    // A usage error (an unknown option, a missing value, an option that needs or excludes
    // another) is bad input on the command line, said as every input error is.
    err << "moesim: error: <command line>: " << e.what()
        << "\nRun with --help for more information.\n";
    return 2;
  }
  try {
    for (auto& [sub, cmd] : subs)
      if (sub->parsed()) return cmd->run(io);
  } catch (const config::InputError& e) {
    err << "moesim: error: " << e.what() << "\n";
    return 2;
  } catch (const sim_core::SimulationStuck& e) {
    err << "moesim: the simulation could not finish: " << e.what() << "\n";
    return 3;
  } catch (const schedules::NotSimulated& e) {
    err << "moesim: not simulated yet: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "moesim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 2;
}

}  // namespace moesim::cli
