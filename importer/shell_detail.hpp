// importer/shell_detail.hpp: the launch-script evaluator's parts (importer/shell_eval.hpp),
// shared by its files and internal to them: the tokens and the lexer (importer/
// shell_lexer.cpp), and the evaluator, whose statements and commands are in importer/
// shell_eval.cpp and whose expansions (parameters, arithmetic, command substitution,
// quoting and word splitting) are in importer/shell_expand.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "config/json_reader.hpp"  // InputError
#include "importer/shell_eval.hpp"

namespace moesim::importer::detail {

using config::InputError;

// ---- tokens (importer/shell_lexer.cpp) -----------------------------------------------------

// A word keeps its raw text (quotes and $ forms included): expansion reads it later. An
// operator is one of "\n" ; && || | & ( ) and "redir" (a redirection; "redir+" when its
// target came with it, as in 2>&1); a here-document is the operator "<<" ("<<'" when its
// delimiter is quoted, so that its body is not expanded), a newline and its body.
struct Token {
  bool op = false;
  std::string text;
};

bool name_char(char c);
bool name_start(char c);

// "NAME=" or "NAME+=" (an assignment's head), the array opening that may follow.
bool assignment_head(std::string_view w);

// The script's tokens, as the lexer reads them; InputError(file, "", why) for text bash
// would refuse (an unterminated quote, a here-document without its delimiter).
std::vector<Token> tokenize(std::string_view text, const std::string& file);

// ---- the evaluator -------------------------------------------------------------------------

class Shell {
 public:
  Shell(const ShellOptions& opts, ShellResult& out) : opts_(opts), out_(out) {
    for (const auto& [k, v] : opts.environment) vars_[k] = {v}, exported_[k] = true;
  }

  void run_text(const std::string& text, const std::string& file);
  void finish();

 private:
  using Tokens = std::vector<Token>;
  static bool is_op(const Tokens& t, std::size_t i, std::string_view s) {
    return i < t.size() && t[i].op && t[i].text == s;
  }
  static bool is_word(const Tokens& t, std::size_t i, std::string_view s) {
    return i < t.size() && !t[i].op && t[i].text == s;
  }
  static bool ends_command(const Token& t) {
    return t.op && (t.text == "\n" || t.text == ";" || t.text == "&&" || t.text == "||" ||
                    t.text == "|" || t.text == "&" || t.text == ")" || t.text == ";;");
  }
  void note(std::string s) { out_.notes.push_back(fmt::format("{}: {}", file_, std::move(s))); }
  // A message quotes the script's words; past kMaxMessageChars they are cut (a word may be
  // a megabyte of nested expansions).
  [[noreturn]] void fail(const std::string& why) const {
    constexpr std::size_t kMaxMessageChars = 400;
    throw InputError(
        file_, "", why.size() <= kMaxMessageChars ? why : why.substr(0, kMaxMessageChars) + " ...");
  }
  // One level deeper in expansions (expand, arithmetic's parentheses): refused past
  // kMaxShellNesting, so no input drives the recursion past the stack (issue #46 item 1).
  struct Nest {
    Shell& sh;
    explicit Nest(Shell& s) : sh(s) {
      if (++sh.nesting_ > kMaxShellNesting) {
        --sh.nesting_;  // the destructor does not run when the constructor throws
        sh.fail(fmt::format(
            "expansions nested more than {} deep (${{...}}, $((...)) or parentheses); moesim "
            "evaluates no deeper",
            kMaxShellNesting));
      }
    }
    ~Nest() { --sh.nesting_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
  };

  // Statements and commands (importer/shell_eval.cpp).
  std::size_t statement(const Tokens& t, std::size_t i, bool run);
  std::size_t skip_block(const Tokens& t, std::size_t i, std::string_view open,
                         std::string_view close);
  std::size_t if_block(const Tokens& t, std::size_t i, bool run);
  std::size_t branch(const Tokens& t, std::size_t j, bool run);
  bool condition(const Tokens& c);
  bool condition_words(std::vector<std::string> w);
  bool test(std::vector<std::string> w);
  void here_document(const std::string& program, const std::string& op);
  std::string expand_here_document(const std::string& body);
  std::size_t simple(const Tokens& t, std::size_t i, bool run);
  void assign(std::string name, const std::vector<std::string>& value, bool array);
  void command(const std::vector<std::string>& w, const std::map<std::string, std::string>& prefix);
  void source(const std::string& name);

  // Expansion (importer/shell_expand.cpp).
  static std::string join(const std::vector<std::string>& v);
  std::vector<std::string> value_of(const std::string& name) const;
  std::vector<std::string> parameter(const std::string& in, bool& whole);
  std::int64_t arithmetic(const std::string& raw);
  std::string substitution(const std::string& inner);
  [[noreturn]] void too_large() const;
  std::vector<std::string> expand(const std::string& w, bool single);

  const ShellOptions& opts_;
  ShellResult& out_;
  std::map<std::string, std::vector<std::string>> vars_;
  std::map<std::string, bool> exported_;
  std::string file_;
  int depth_ = 0;
  int nesting_ = 0;           // expansions open now (Nest)
  std::size_t expanded_ = 0;  // bytes all expansions have produced (kMaxShellExpandedBytes)
  bool exited_ = false;
  // The last command's exit status, for && and ||: nothing is run, so a command succeeds
  // (0, as `$?` reads) but a test that is false and `false` (1).
  int status_ = 0;
};

}  // namespace moesim::importer::detail
