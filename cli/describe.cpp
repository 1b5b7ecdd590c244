// cli/describe.cpp: `moesim describe`: what a scenario resolves to (reports/describe.hpp).
#include "cli/commands.hpp"

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "reports/describe.hpp"

namespace moesim::cli {
namespace {

class Describe final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("file", file_, "scenario JSON file (or a shipped scenario's name: dsv3-gb200)")
        ->required()
        ->transform(shipped_scenario_path, "", "shipped scenario");
    app.add_flag("--json", json_, "print one JSON object instead of the text summary");
    add_uncalibrated(app, uncalibrated_);
    add_system_set(app, set_);
  }
  int run(Io& io) override {
    const config::Scenario sc =
        config::load_scenario_file(file_, config::load_options(uncalibrated_, set_));
    if (json_)
      io.out << reports::describe_json(sc).dump(2) << "\n";
    else
      io.out << reports::describe_text(sc);
    return 0;
  }

 private:
  std::string file_;
  bool json_ = false, uncalibrated_ = false;
  std::vector<std::string> set_;
};

}  // namespace

std::unique_ptr<Command> make_describe_command() {
  return std::make_unique<Describe>();
}

}  // namespace moesim::cli
