// cli/commands.hpp: the `moesim` subcommands as a registry. Each subcommand is one Command
// in its own file (cli/<name>.cpp) with a factory; the table in commands.cpp lists them, so
// adding one is that file (added to cli/CMakeLists.txt's sources), its factory's declaration
// and its line in the table. The entry point knows none of them by name.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string_view>

namespace CLI {
class App;
}

namespace moesim::cli {

struct Io {
  std::ostream& out;
  std::ostream& err;
};

class Command {
 public:
  virtual ~Command() = default;
  // Adds the subcommand's options to `app` (the subcommand itself).
  virtual void configure(CLI::App& app) = 0;
  // Runs after a successful parse; returns the exit status.
  virtual int run(Io& io) = 0;
};

struct CommandInfo {
  std::string_view name;
  std::string_view help;
  std::unique_ptr<Command> (*make)();
};

std::span<const CommandInfo> commands();

// The whole program: parses argv, runs one subcommand. Exit status: 0 success,
// 1 a check failed (e.g. validate over tolerance) or not implemented yet, 2 bad input
// or usage. Never throws.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace moesim::cli
