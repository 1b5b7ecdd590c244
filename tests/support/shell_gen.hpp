// A seeded, structure-aware generator of Megatron launch scripts for the end-to-end fuzz
// target (issue #46 item 5), as `moesim import megatron` reads them (importer/shell_eval.hpp,
// importer/import.hpp, importer/launch_wrapper.hpp).
//
// Two kinds of draw:
// - built: a small MoE pretraining command whose flags (valid, edited to hostile values,
//   dropped, duplicated, unknown, refused) reach the command through the constructs
//   launch scripts use: variables and their defaults, arithmetic, arrays, flag strings split
//   on blanks, `if` on tests, exports, prefix assignments, sourced files (inside the script's
//   tree, outside it, absolute, a device, missing, itself), launchers (torchrun, srun,
//   bindpcie, numactl, the Megatron-Bridge launcher); beside them constructs that are not
//   evaluated (loops, `case`, functions, command substitution) carrying commands that would
//   create files if anything ran, and hostile ones (expansions and arithmetic nested past the
//   limit, values that double, unbalanced quotes, arithmetic overflow, odd bytes);
// - mutated: a shipped script (tests/data/megatron, ModelZoo's with its wrapper, YAMLs and
//   runtime tables, and Megatron-LM's MoE recipe YAMLs) with lines deleted, duplicated,
//   swapped or replaced, numbers made hostile, bytes inserted; for a ModelZoo draw sometimes
//   the wrapper's YAML or table instead.
// Values of a file outside the script's tree are canaries: no output may show them. Then the
// text is sometimes cut or corrupted byte by byte.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/fuzz_case.hpp"

namespace moesim::test {

struct ShellSeeds {
  // Shipped scripts: path under tests/data/megatron -> text.
  std::vector<std::pair<std::string, std::string>> scripts;
  // ModelZoo's wrapper and its tables: path under tests/data/megatron/modelzoo -> text.
  std::vector<std::pair<std::string, std::string>> zoo;
};
// The seeds under SOURCE_DIR/tests/data/megatron.
ShellSeeds read_shell_seeds(const std::string& source_dir);

// The prefix of every file name a script's commands would create if any ran.
inline constexpr const char* kExecutedPrefix = "EXECUTED";

FuzzCase generate_shell_case(std::uint64_t seed, int index, const ShellSeeds& seeds);

}  // namespace moesim::test
