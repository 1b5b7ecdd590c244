// cli/import.cpp: `moesim import megatron`: a Megatron launch command as a scenario
// (importer/import.hpp).
#include "cli/commands.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "importer/import.hpp"

namespace moesim::cli {
namespace {

// A Megatron command line as a scenario (importer/import.hpp).
class Import final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("kind", kind_,
                   "what to import: megatron (a Megatron-LM pretraining command or launch script, "
                   "or Megatron-Bridge's "
                   "performance launcher scripts/performance/setup_experiment.py)")
        ->required()
        ->check(CLI::IsMember({"megatron"}));
    app.add_option("script", script_,
                   "a launch script or command file, or a Megatron-LM MoE recipe (.yaml with "
                   "ARGS); - reads standard input");
    app.add_option("--args", args_, "the command line itself, instead of a script");
    app.add_option("--system", system_,
                   "system preset the command runs on (a Megatron-Bridge command's -g names "
                   "it: h100, b200, b300, gb200-nvl72, gb300-nvl72, vr200-nvl72, r100)");
    app.add_option("--gpus", gpus_,
                   "GPUs in the job (world size); default: the script's (torchrun --nnodes x "
                   "--nproc_per_node, a wrapper's NNODES)")
        ->check(CLI::Range(1, 1 << 22));
    app.add_option("--nodes", nodes_, "nodes in the job (with --gpus-per-node)")
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--gpus-per-node", per_node_, "GPUs per node (with --nodes)")
        ->check(CLI::Range(1, 1024));
    app.add_option("--model", model_, "model preset (shape flags given are checked against it)");
    app.add_option("--gpus-per-nvlink-domain", domain_, "GPUs per NVLink domain used (placement)")
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--release", release_,
                   "the software release the command ran on (NeMo / Megatron-Bridge container, "
                   "e.g. 26.02): the "
                   "library switches no flag shows are its, not the newest stack's");
    app.add_option("--env", env_,
                   "NAME=VALUE: a variable set before the script runs (repeatable); nothing else "
                   "of the real environment is read");
    app.add_option("--run", run_,
                   "which run of a script that starts several (1-based; the error lists them)")
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--wrapper-root", wrapper_root_,
                   "the checkout of a wrapper the script calls (Megatron-MoE-ModelZoo's "
                   "sbatch_benchmarking.sh), "
                   "when it is not the script's folder or above it");
    app.add_option("--source-root", source_roots_,
                   "a folder whose files the script's `source` / `.` may read beside the script's "
                   "own folder tree "
                   "(repeatable); any other sourced path is refused unread");
    app.add_option("-o,--output", out_, "write the scenario here (default: standard output)");
  }
  int run(Io& io) override {
    importer::MegatronImportOptions opt;
    if (!system_.empty())
      config::require_preset(config::PresetKind::system, system_, "<command line>", "--system");
    if (!model_.empty())
      config::require_preset(config::PresetKind::model, model_, "<command line>", "--model");
    opt.system = system_;
    if (gpus_ > 0 && nodes_ > 0)
      throw config::InputError("<command line>", "--gpus", "give --gpus or --nodes, not both");
    if (nodes_ > 0 && per_node_ == 0)
      throw config::InputError("<command line>", "--gpus-per-node", "needed with --nodes");
    if (per_node_ > 0 && nodes_ == 0)  // it would size nothing
      throw config::InputError("<command line>", "--gpus-per-node",
                               "only with --nodes (the job's GPUs are --nodes x --gpus-per-node)");
    opt.gpus = gpus_ > 0 ? gpus_ : nodes_ * per_node_;  // 0: the script's own (torchrun, a wrapper)
    if (run_ > 0) opt.run = run_;
    for (const auto& e : env_) {
      const auto eq = e.find('=');
      if (eq == std::string::npos || eq == 0)
        throw config::InputError("<command line>", "--env",
                                 fmt::format("'{}': expected NAME=VALUE", e));
      opt.environment[e.substr(0, eq)] = e.substr(eq + 1);
    }
    // A folder option names a folder: a path that is none (a typo, a file) is refused here,
    // not found wanting only if the script happens to reach it.
    const auto folder = [](const char* option, const std::string& dir) {
      std::error_code ec;
      if (!std::filesystem::is_directory(dir, ec))
        throw config::InputError("<command line>", option,
                                 fmt::format("'{}' is not a folder", dir));
    };
    if (!wrapper_root_.empty()) folder("--wrapper-root", wrapper_root_);
    for (const auto& r : source_roots_) folder("--source-root", r);
    if (!wrapper_root_.empty()) opt.wrapper_root = wrapper_root_;
    opt.source_roots = source_roots_;
    if (domain_ > 0) opt.gpus_per_nvlink_domain = domain_;
    if (!model_.empty()) opt.model = model_;
    if (!release_.empty()) opt.release = release_;
    std::string text;
    if (!args_.empty()) {
      if (!script_.empty())
        throw config::InputError("<command line>", "--args", "give a script or --args, not both");
      text = args_;
      opt.source = "<args>";
    } else if (script_ == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
      opt.source = "<stdin>";
    } else if (!script_.empty()) {
      text = config::read_text_file(script_);
      opt.source = script_;
    } else {
      throw config::InputError("<command line>", "script",
                               "give a script, - for standard input, or --args STR");
    }
    const importer::MegatronImport imp = importer::import_megatron(text, opt);
    config::Json sc = imp.scenario;
    const std::string doc = sc.dump(2) + "\n";
    if (out_.empty()) {
      io.out << doc;
    } else {
      std::ofstream f(out_, std::ios::binary);
      if (!f || !(f << doc)) throw config::InputError(out_, "", "cannot write the scenario");
      io.err << "moesim: wrote " << out_ << "\n";
    }
    if (!imp.ignored.empty())
      io.err << fmt::format("ignored ({} flags without an effect on performance): {}\n",
                            imp.ignored.size(), fmt::join(imp.ignored, " "));
    if (!imp.derived.empty()) {
      io.err << "from the launcher (what the script's wrapper, torchrun or Megatron-Bridge's "
                "recipe decides, and where):\n";
      for (const auto& [key, why] : imp.derived) io.err << fmt::format("  {}: {}\n", key, why);
    }
    if (!imp.recorded.empty())
      io.err << fmt::format(
          "recorded as the command gives them, changing nothing in this scenario (recorded.inert): "
          "{}\n",
          fmt::join(imp.recorded, ", "));
    io.err << "assumed (settings no flag states):\n";
    for (const auto& [key, why] : imp.assumed) io.err << fmt::format("  {}: {}\n", key, why);
    if (!imp.notes.empty()) {
      io.err << "not evaluated in the script (nothing is run):\n";
      for (const auto& n : imp.notes) io.err << "  " << n << "\n";
    }
    return 0;
  }

 private:
  std::string kind_, script_, args_, system_, model_, release_, out_, wrapper_root_;
  std::int64_t gpus_ = 0, nodes_ = 0, per_node_ = 0, domain_ = 0, run_ = 0;
  std::vector<std::string> env_, source_roots_;
};

}  // namespace

std::unique_ptr<Command> make_import_command() {
  return std::make_unique<Import>();
}

}  // namespace moesim::cli
