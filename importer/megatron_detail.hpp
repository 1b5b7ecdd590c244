// importer/megatron_detail.hpp: the Megatron-LM importer's parts (importer/import.hpp),
// shared by its files and internal to them: the runs a launch script starts (importer/
// megatron_runs.cpp), the command's flags as Megatron's argument table reads them
// (importer/megatron_flags.cpp), and the importer, which writes the scenario's sections: the
// run, training and parallel layout (importer/import_megatron.cpp), the model (importer/
// megatron_model.cpp), the framework and the library stack (importer/megatron_framework.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/json_reader.hpp"
#include "importer/import.hpp"
#include "workload/model_config.hpp"

namespace moesim::importer::detail {

using config::InputError;
using config::Json;

// ---- the command line as words ------------------------------------------------------

struct Words {
  std::vector<std::string> words;          // the Megatron flags and their values
  std::map<std::string, std::string> env;  // NAME=VALUE before the command or exported
  bool numa_bound = false;                 // bindpcie or numactl in the launch command
  std::optional<std::int64_t> gpus;  // the world size the command states (torchrun, a wrapper)
  std::optional<std::int64_t> gpus_per_nvlink_domain;        // placement a wrapper asks for
  std::vector<std::pair<std::string, std::string>> derived;  // what a wrapper decided
  std::string label;  // the command as the script writes it, shortened
  std::string entry;  // the Python program (pretrain_gpt.py); empty when none is named
  std::optional<InputError>
      failure;  // why a wrapper could not build this run (raised if it is picked)
  std::vector<std::string> notes;  // what of its wrapper was not followed
};

// The training program's kind when it is one of Megatron-LM's programs other than GPT's
// (pretrain_bert.py, ...): what it trains, which moesim does not model.
std::optional<std::string_view> other_entry(const std::string& entry);

// The Megatron runs a launch script starts (importer/megatron_runs.cpp), and the one
// --run picks.
std::vector<Words> script_runs(const std::string& text, const MegatronImportOptions& opts,
                               std::vector<std::string>& notes, bool& exited);
Words pick_run(std::vector<Words> runs, const MegatronImportOptions& opts, bool exited);

// ---- the flag table and the parsed flags (importer/megatron_flags.cpp) ------------------

bool megatron_flag(std::string_view word);  // modeled or ignored (the flag table)

class Flags {
 public:
  Flags(const std::vector<std::string>& words, const std::string& source,
        std::vector<std::string>& ignored);
  bool has(std::string_view f) const { return values_.count(std::string(f)) != 0; }
  std::optional<std::string> str(std::string_view f) const;
  const std::vector<std::string>* list(std::string_view f) const;
  // Sizes and counts: at least 1, or at least 0 for the counts that may be none.
  std::optional<std::int64_t> integer(std::string_view f) const;
  std::int64_t positive(std::string_view f) const { return integer(f).value(); }
  std::int64_t integer_or(std::string_view f, std::int64_t def) const {
    return integer(f).value_or(def);
  }
  std::optional<double> number(std::string_view f) const;
  std::string choice(std::string_view f, std::string_view def,
                     std::initializer_list<std::string_view> known) const;
  [[noreturn]] void fail(std::string_view f, const std::string& why) const {
    throw InputError(source_, std::string(f), why);
  }

 private:
  std::string source_;
  std::map<std::string, std::vector<std::string>> values_;
};

// Learned attention sinks (--softmax-type learnable): GPT-OSS's (importer/megatron_model.cpp).
bool learned_sinks(const Flags& f);

// ---- the importer ---------------------------------------------------------------------------

class Importer {
 public:
  Importer(const Words& w, const MegatronImportOptions& opts, MegatronImport& out)
      : w_(w), opts_(opts), out_(out), f_(w.words, opts.source, out.ignored) {}

  void run();

 private:
  void assume(std::string key, std::string why) {
    out_.assumed.emplace_back(std::move(key), std::move(why));
  }

  // The run, training and parallel layout (importer/import_megatron.cpp).
  void unpriced();
  // routing: forced balance where the command forces it, else the trained router's own loads
  // from its balancing flags (importer/import_megatron.cpp).
  void routing(Json& sc);
  void training(Json& sc);
  std::int64_t dp_size() const;
  void parallelism(Json& sc);
  void account_split(Json& p, std::int64_t pp, std::int64_t vpp);

  // The model (importer/megatron_model.cpp).
  void model(Json& sc);
  void check_against_preset(const workload::ModelConfig& m);

  // The framework and the library stack (importer/megatron_framework.cpp).
  void framework(Json& sc);
  Json recompute() const;
  // --recompute-method block's --recompute-num-layers (framework.recompute_num_layers).
  std::optional<std::int64_t> recompute_num_layers() const;
  void stack(Json& sc);

  bool moe_ = false;         // the model has routed experts (model() decides)
  std::int64_t layers_ = 0;  // its decoder layers (model() decides)
  std::int64_t vocab_ = 0;   // the model's vocabulary before padding (model() decides)
  const Words& w_;
  const MegatronImportOptions& opts_;
  MegatronImport& out_;
  Flags f_;
};

}  // namespace moesim::importer::detail
