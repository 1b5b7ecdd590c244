// cli/diff.cpp: `moesim diff`: two predictions and their difference by contribution
// (reports/diff.hpp).
#include "cli/commands.hpp"

#include <array>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "predict/pair.hpp"
#include "predict/predict.hpp"
#include "reports/diff.hpp"

namespace moesim::cli {
namespace {

// Two predictions and their difference explained (predict/diff.hpp).
class Diff final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("a", a_, "scenario A (the reference)")
        ->required()
        ->transform(shipped_scenario_path, "", "shipped scenario");
    app.add_option("b", b_, "scenario B (the what-if)")
        ->required()
        ->transform(shipped_scenario_path, "", "shipped scenario");
    app.add_flag("--json", json_, "print one JSON object instead of the text report");
    add_uncalibrated(app, uncalibrated_);
    add_system_set(app, set_);
  }
  int run(Io& io) override {
    const config::LoadOptions opts = config::load_options(uncalibrated_, set_);
    const std::array<config::Scenario, 2> sc{config::load_scenario_file(a_, opts),
                                             config::load_scenario_file(b_, opts)};
    const std::array<predict::Prediction, 2> p = predict::predict_pair(sc[0], sc[1]);
    const reports::DiffSide a{sc[0], p[0]}, b{sc[1], p[1]};
    if (json_)
      io.out << reports::diff_json(a, b).dump(2) << "\n";
    else
      io.out << reports::diff_text(a, b);
    return 0;
  }

 private:
  std::string a_, b_;
  std::vector<std::string> set_;
  bool json_ = false, uncalibrated_ = false;
};

}  // namespace

std::unique_ptr<Command> make_diff_command() {
  return std::make_unique<Diff>();
}

}  // namespace moesim::cli
