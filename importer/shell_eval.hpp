// importer/shell_eval.hpp: what a launch script computes, evaluated as bash would, without
// running anything (issue #27 item 1): `moesim import megatron` reads the command a
// script builds, not the script's text.
//
// Evaluated: variables and their expansions ($X, ${X}, ${X:-y}, ${X-y}, ${X:=y}, ${X:+y},
// ${#X}), positional parameters (given, else empty), $? $$ $! (0: nothing runs), arrays (A=(...),
// A+=(...),
// "${A[@]}", ${A[*]}, ${A[i]}, ${#A[@]}), `export`, `unset`, assignments before a
// command (its environment), $((arithmetic)) (+ - * / % and parentheses over integers),
// quoting and word splitting (unquoted expansions split on blanks), here-documents (their
// bodies are a command's input, skipped), `source FILE` / `.
// FILE` (read, relative to the script's folder, and evaluated the same way), and
// `if`/`elif`/`else` on `[ ]`, `[[ ]]` and `test` (-n -z = == != -eq -ne -lt -le -gt -ge,
// !, && and ||; a test of files, -f -d -e ..., is true: a script checks for the files it
// needs where it runs, and nothing outside the scripts is read).
// Not run, and said so in `notes`: command substitution ($(...) and backquotes; except
// `$(dirname ...)`, `$(pwd)` and `$(cd ... && pwd)`, which give the script's folder),
// loops (`for`, `while`, `until`: their bodies are skipped), `case`, function bodies, and
// every command itself (each is recorded with its expanded words instead). Nothing reads
// the real environment: a variable the script does not set is empty unless
// ShellOptions::environment gives it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace moesim::importer {

struct ShellOptions {
  std::string script_path;                         // $0; `source` paths are relative to its folder
  std::vector<std::string> arguments;              // $1, $2, ...
  std::map<std::string, std::string> environment;  // variables set before the script runs
  // `source FILE` / `. FILE` reads FILE only when it is a regular file of at most
  // kMaxSourcedBytes inside the script's folder tree (the working folder for a script
  // without a path) or one of these folders (`import --source-root`); any other is refused
  // by name, unread, so nothing of it reaches a message (issue #46 item 2).
  std::vector<std::string> source_roots = {};
};
inline constexpr std::uintmax_t kMaxSourcedBytes = std::uintmax_t{1} << 20;
// Bounds on evaluation (issue #46 item 1): expansions nested deeper than kMaxShellNesting
// (`${X:-${X:-...}}`, `$(( $(( ... )) ))`, parentheses in arithmetic) and any expansion
// whose value passes kMaxShellValueBytes are refused with an InputError. Launch scripts
// nest 2-3 deep and their longest values are a few KiB of flags; all of a script's
// expansions together come to well under a MiB.
// All expansions of a script together may produce at most kMaxShellExpandedBytes, which
// bounds the time too (a script of many lines each copying a large value).
inline constexpr int kMaxShellNesting = 64;
inline constexpr std::size_t kMaxShellValueBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxShellExpandedBytes = std::size_t{256} << 20;

struct ShellCommand {
  std::vector<std::string> words;                 // expanded, after the prefix assignments
  std::map<std::string, std::string> prefix_env;  // NAME=VALUE before the command
  // Its environment: the variables exported when it runs (arrays joined by spaces) and
  // the prefix assignments over them.
  std::map<std::string, std::string> environment;
};

struct ShellResult {
  std::vector<ShellCommand> commands;  // in the order they would run
  std::map<std::string, std::string>
      variables;  // every scalar set at the end (arrays joined by spaces)
  std::map<std::string, std::string> exported;  // those exported
  std::vector<std::string> notes;               // what was not evaluated, and why
  bool exited = false;  // an `exit` ran (a check on variables the script expects)
};

// Throws InputError(script_path, "", why) for text bash would refuse (an unterminated
// quote, `if` without `fi`), for a missing sourced file and for a script larger than
// kMaxSourcedBytes.
ShellResult evaluate_shell(const std::string& text, const ShellOptions& opts);

}  // namespace moesim::importer
