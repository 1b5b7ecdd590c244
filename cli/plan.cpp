// cli/plan.cpp: `moesim plan` (issue #26 item 1, first step): the best parallel layouts of
// a scenario's model on a cluster size, searched exhaustively over the layout space below
// as a sweep (config/sweep_file.hpp) the command builds itself; every candidate's row to a
// CSV and the top K by the objective, with the candidates counted by fate.
//
// The space: TP in {1, 2, 4, 8} (at most the NVLink domain), PP in {1, 2, 4, ..., 32} (at
// most the layers), VPP in {1, 2, 4, 8}, EP in {1, 2, 4, ...} up to the experts and the
// GPUs (MoE models; 1 for dense ones), ETP 1, CP in {1, 2} (and 4 from 16K tokens a
// sequence), micro-batch size in {1, 2}; each layout gets Megatron's default pipeline
// split. Megatron's layout rules drop combinations before they become rows
// (config::layout_rules), the memory estimate drops the rows that do not fit before they
// are simulated (predict/sweep.hpp), and every other row is simulated: the top K are exact
// for the space. Not yet (issue #26): recompute, offload, dispatcher, CUDA-graph and
// overlap choices, a lower bound that stops the search early.
#include "cli/commands.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "config/sweep_file.hpp"
#include "predict/sweep.hpp"
#include "reports/sweep.hpp"

namespace moesim::cli {
namespace {

std::vector<std::int64_t> powers_of_two(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = from; x <= to; x *= 2) v.push_back(x);
  return v;
}

class Plan final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("scenario", file_, "the scenario whose model, system and training settings are planned")->required();
    app.add_option("--gpus", gpus_, "the cluster size to plan for (default: the scenario's)")
        ->check(CLI::Range(1, 1 << 30));
    app.add_option("--objective", objective_,
                   "what to rank by: a sweep objective (docs/SWEEP_FORMAT.md; default tokens_per_s_per_gpu)");
    app.add_option("--token-budget", token_budget_, "tokens to train: rows gain days, GPU-hours, energy and cost")
        ->check(CLI::Range(1.0, 1e30));
    app.add_option("--top", top_, "candidates listed by the objective")->check(CLI::Range(0, 1000000));
    app.add_option("--jobs", jobs_, "scenarios simulated at once (default 0: all cores)")->check(CLI::Range(0, 1024));
    app.add_option("-o,--out", out_, "CSV of every candidate (default: plan-<scenario>.csv in this folder)");
    app.add_flag("--json", json_, "print the summary as one JSON object");
    add_uncalibrated(app, uncalibrated_);
    add_headroom(app, headroom_);
  }

  int run(Io& io) override {
    const config::LoadOptions opts{!uncalibrated_, headroom_};
    const config::Scenario sc = config::load_scenario_file(file_, opts);
    const std::int64_t gpus = gpus_ > 0 ? gpus_ : sc.gpus;

    config::SweepFile f;
    f.file = file_;
    f.name = "plan-" + sc.name;
    f.base = config::read_json_file(file_);
    f.base_file = file_;
    f.grid.push_back({"gpus", {config::Json(gpus)}});
    f.grid.push_back({"training.micro_batch_size", {config::Json(1), config::Json(2)}});
    const std::int64_t domain = std::max<std::int64_t>(1, static_cast<std::int64_t>(sc.system.nvlink.domain_gpus.value));
    f.layouts.push_back({"tp", powers_of_two(1, std::min<std::int64_t>({8, domain, gpus}))});
    f.layouts.push_back({"pp", powers_of_two(1, std::min<std::int64_t>({32, sc.model.num_layers, gpus}))});
    f.layouts.push_back({"vpp", powers_of_two(1, 8)});
    f.layouts.push_back({"ep", sc.model.is_moe() ? powers_of_two(1, std::min<std::int64_t>(sc.model.num_experts, gpus))
                                                 : std::vector<std::int64_t>{1}});
    f.layouts.push_back({"etp", {1}});
    f.layouts.push_back({"cp", powers_of_two(1, sc.training.seq_length >= 16384 ? 4 : 2)});
    f.token_budget = token_budget_ > 0 ? std::optional<double>(token_budget_) : std::nullopt;
    if (!objective_.empty()) {
      const auto o = config::sweep_objective_names().find(objective_);
      if (!o)
        throw config::InputError("--objective", "", fmt::format("unknown objective '{}'; known: {}", objective_,
                                                                config::sweep_objective_names().known()));
      f.objective = *o;
      if (config::needs_token_budget(f.objective) && !f.token_budget)
        throw config::InputError("--objective", "", fmt::format("'{}' needs --token-budget", objective_));
    }
    const config::SweepPlan plan = config::expand_sweep(f);
    const bool budget = f.token_budget.has_value();
    const std::string out = !out_.empty() ? out_ : f.name + ".csv";
    const auto header = reports::sweep_csv_header(plan, budget);
    write_file(out, reports::sweep_csv_text(reports::SweepCsv{header, {}, false}));
    std::vector<const config::SweepPoint*> todo;
    for (const auto& p : plan.points) todo.push_back(&p);
    const reports::SweepCsv all = append_rows_to_csv(todo, f.base_file, f.token_budget, jobs_, opts, out, [] {});
    reports::SweepSummaryInfo info{f.name, file_, out, static_cast<std::int64_t>(plan.points.size()),
                                   plan.combinations, plan.pruned, 0, 1, f.objective, budget, top_};
    if (json_) io.out << reports::sweep_summary_json(all, info).dump(2) << "\n";
    else io.out << reports::sweep_summary_text(all, info);
    return 0;
  }

 private:
  std::string file_, objective_, out_;
  std::int64_t gpus_ = 0;
  double token_budget_ = 0, headroom_ = 0;
  int top_ = 10, jobs_ = 0;
  bool json_ = false, uncalibrated_ = false;
};

}  // namespace

std::unique_ptr<Command> make_plan_command() { return std::make_unique<Plan>(); }

}  // namespace moesim::cli
