// cli/infer.cpp: `moesim infer`: a journey step's one unpublished parameter inferred from that step
// (predict/infer.hpp; the parameters: calibration/infer_params.hpp).
#include "cli/commands.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "calibration/infer_params.hpp"
#include "cli/common.hpp"
#include "config/load.hpp"
#include "predict/infer.hpp"
#include "reports/infer.hpp"

namespace moesim::cli {
namespace {

// The one allowed parameter of a journey step without published mechanism detail,
// inferred from that step (predict/infer.hpp).
class Infer final : public Command {
 public:
  void configure(CLI::App& app) override {
    std::vector<std::string> names, described;
    for (const auto& p : calibration::inferable_params()) {
      names.emplace_back(p.name);
      described.push_back(fmt::format("{} ({})", p.name, p.help));
    }
    app.add_option("param", param_, fmt::format("the parameter: {}", fmt::join(described, "; ")))
        ->required()
        ->check(CLI::IsMember(names));
    app.add_option("before", before_,
                   "scenario before the step (its switch off), with a measured value")
        ->required();
    app.add_option("after", after_,
                   "scenario after the step (its switch on), with a measured value")
        ->required();
    app.add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    const auto* param = calibration::find_inferable(param_);
    const config::Scenario before = config::load_scenario_file(before_);
    const config::Scenario after = config::load_scenario_file(after_);
    const predict::Inference r = predict::infer(*param, before, after);
    io.out << (json_ ? reports::infer_json(*param, r).dump(2) + "\n"
                     : reports::infer_text(*param, r));
    return r.solved ? 0 : 1;
  }

 private:
  std::string param_, before_, after_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_infer_command() {
  return std::make_unique<Infer>();
}

}  // namespace moesim::cli
