// cli/schema.cpp: `moesim schema scenario|sweep`: the JSON Schema of the input formats
// (schema/*.schema.json, compiled in), for editors' completion and external checks. A
// test holds every shipped file to them and their keys to the loader's
// (tests/schema/check_schema.py).
#include "cli/commands.hpp"

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"

namespace moesim::cli {
namespace {

class Schema final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("format", format_, "scenario or sweep")
        ->required()
        ->check(CLI::IsMember({"scenario", "sweep"}));
    app.add_option("-o,--output", output_, "write it to this file instead of standard output");
  }
  int run(Io& io) override {
    const std::string_view text =
        config::preset_text(config::PresetKind::schema, format_ + ".schema", "moesim schema");
    if (output_.empty())
      io.out << text << (text.ends_with('\n') ? "" : "\n");
    else
      write_file(output_, std::string(text));
    return 0;
  }

 private:
  std::string format_, output_;
};

}  // namespace

std::unique_ptr<Command> make_schema_command() {
  return std::make_unique<Schema>();
}

}  // namespace moesim::cli
