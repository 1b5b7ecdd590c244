#include "cli/commands.hpp"

#include <array>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "config/load.hpp"
#include "reports/describe.hpp"

namespace moesim::cli {
namespace {

class Describe final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("file", file_, "scenario JSON file")->required();
    app.add_flag("--json", json_, "print one JSON object instead of the text summary");
  }
  int run(Io& io) override {
    const config::Scenario sc = config::load_scenario_file(file_);
    if (json_)
      io.out << reports::describe_json(sc).dump(2) << "\n";
    else
      io.out << reports::describe_text(sc);
    return 0;
  }

 private:
  std::string file_;
  bool json_ = false;
};

// A subcommand whose capability arrives with a later issue: it accepts the contract's
// arguments and says so plainly instead of pretending to work.
template <int Issue>
class NotYet final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.allow_extras();
    name_ = app.get_name();
  }
  int run(Io& io) override {
    io.err << fmt::format("moesim {}: not implemented yet (arrives with issue #{})\n", name_, Issue);
    return 1;
  }

 private:
  std::string name_;
};

template <class C>
std::unique_ptr<Command> make() {
  return std::make_unique<C>();
}

constexpr std::array<CommandInfo, 7> kCommands{{
    {"run", "predict one scenario: step time, TFLOPS/GPU, MFU, memory, breakdown [issue #3]", make<NotYet<3>>},
    {"describe", "what a scenario resolves to: parameters, FLOPs, layout, settings", make<Describe>},
    {"validate", "predicted vs measured over scenario files or folders [issue #3]", make<NotYet<3>>},
    {"comm", "the communication model alone (EP dispatch, collectives) [issue #5]", make<NotYet<5>>},
    {"pipeline", "a pipeline schedule alone with fixed chunk times [issue #6]", make<NotYet<6>>},
    {"sweep", "run many scenarios generated from a sweep file [issue #3]", make<NotYet<3>>},
    {"calibrate", "run calibration kernels or fit profiles from measurements [issue #7]", make<NotYet<7>>},
}};

}  // namespace

std::span<const CommandInfo> commands() { return kCommands; }

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
    app.exit(e, out, err);
    return 2;
  }
  try {
    for (auto& [sub, cmd] : subs)
      if (sub->parsed()) return cmd->run(io);
  } catch (const config::InputError& e) {
    err << "moesim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "moesim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 2;
}

}  // namespace moesim::cli
