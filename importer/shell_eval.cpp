#include "importer/shell_eval.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "config/json_reader.hpp"  // InputError

namespace moesim::importer {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;
namespace {

// ---- tokens -------------------------------------------------------------------------------

// A word keeps its raw text (quotes and $ forms included): expansion reads it later. An
// operator is one of "\n" ; && || | & ( ) and "redir" (a redirection; "redir+" when its
// target came with it, as in 2>&1).
struct Token {
  bool op = false;
  std::string text;
};

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

// "NAME=" or "NAME+=" (an assignment's head), the array opening that may follow.
bool assignment_head(std::string_view w) {
  if (w.empty() || w.back() != '=' || !name_start(w[0])) return false;
  std::size_t n = w.size() - 1;
  if (n > 0 && w[n - 1] == '+') --n;
  for (std::size_t i = 0; i < n; ++i)
    if (!name_char(w[i])) return false;
  return true;
}

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& file) : t_(text), file_(file) {}

  std::vector<Token> run() {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '\\' && i_ + 1 < t_.size() && t_[i_ + 1] == '\n') {
        i_ += 2;
        continue;
      }
      if (c == '\r') {
        ++i_;
        continue;
      }
      if (c == '#' && cur_.empty()) {
        while (i_ < t_.size() && t_[i_] != '\n') ++i_;
        continue;
      }
      if (c == ' ' || c == '\t') {
        end_word();
        ++i_;
        continue;
      }
      if (c == '\n') {
        end_word();
        op("\n");
        ++i_;
        skip_heredocs();
        continue;
      }
      if (c == '(' && assignment_head(cur_)) {  // NAME=( : an array's elements follow
        cur_ += '(';
        end_word();
        ++i_;
        continue;
      }
      // A parenthesis as an argument (`--moe-layer-freq ([0]*3+[1]*58)` as launch guides
      // print it; bash would refuse it): the balanced span is the word.
      if (c == '(' && cur_.empty() && !out_.empty() && !out_.back().op) {
        const std::size_t e = balanced(i_);
        cur_ += t_.substr(i_, e - i_);
        i_ = e;
        continue;
      }
      if (c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
        end_word();
        if ((c == '&' || c == '|') && i_ + 1 < t_.size() && t_[i_ + 1] == c) {
          op(std::string(2, c));
          i_ += 2;
        } else if (c == '&' && i_ + 1 < t_.size() && t_[i_ + 1] == '>') {
          ++i_;  // &> file
          redirection();
        } else if (c == ';' && i_ + 1 < t_.size() && t_[i_ + 1] == ';') {
          op(";;");
          i_ += 2;
        } else {
          op(std::string(1, c));
          ++i_;
        }
        continue;
      }
      if (c == '<' || c == '>') {
        // A file descriptor before it (2>) belongs to the redirection.
        if (!cur_.empty() && std::all_of(cur_.begin(), cur_.end(), [](char d) {
              return std::isdigit(static_cast<unsigned char>(d));
            }))
          cur_.clear();
        end_word();
        redirection();
        continue;
      }
      word_char();
    }
    end_word();
    op("\n");
    return std::move(out_);
  }

 private:
  // The error at the text's offset `at` (default: where the lexer is), by line.
  [[noreturn]] void fail(const std::string& why,
                         std::optional<std::size_t> at = std::nullopt) const {
    const std::size_t end = std::min(at.value_or(i_), t_.size());
    const auto line =
        1 + std::count(t_.begin(), t_.begin() + static_cast<std::ptrdiff_t>(end), '\n');
    throw InputError(file_, "", fmt::format("line {}: {}", line, why));
  }
  void op(std::string s) { out_.push_back({true, std::move(s)}); }
  void end_word() {
    if (!cur_.empty()) out_.push_back({false, std::move(cur_)});
    cur_.clear();
  }
  // At < or >: the operator, and a target given with it (>&2, <&0).
  void redirection() {
    // A here-document (<<WORD, <<-WORD, <<'WORD'): its body, the lines after this one up
    // to WORD alone, is text for the command's input, not commands.
    if (t_.substr(i_, 2) == "<<" && t_.substr(i_, 3) != "<<<") {
      i_ += 2;
      const bool tabs = i_ < t_.size() && t_[i_] == '-';
      if (tabs) ++i_;
      while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
      std::string word;
      while (i_ < t_.size() && !std::isspace(static_cast<unsigned char>(t_[i_])) &&
             std::string_view(";|&<>()").find(t_[i_]) == std::string_view::npos) {
        if (t_[i_] != '\'' && t_[i_] != '"' && t_[i_] != '\\') word += t_[i_];
        ++i_;
      }
      if (word.empty()) fail("a here-document without its delimiter");
      heredocs_.push_back({word, tabs});
      op("redir+");
      return;
    }
    while (i_ < t_.size() && (t_[i_] == '<' || t_[i_] == '>')) ++i_;
    if (i_ < t_.size() && t_[i_] == '&' && i_ + 1 < t_.size() &&
        (std::isdigit(static_cast<unsigned char>(t_[i_ + 1])) || t_[i_ + 1] == '-')) {
      i_ += 2;
      op("redir+");
      return;
    }
    op("redir");
  }
  // At a line's start after a line with here-documents: their bodies skipped.
  void skip_heredocs() {
    for (const auto& [word, tabs] : heredocs_) {
      while (true) {
        if (i_ >= t_.size()) fail(fmt::format("a here-document without its closing '{}'", word));
        const auto eol = t_.find('\n', i_);
        std::string_view line =
            t_.substr(i_, eol == std::string_view::npos ? std::string_view::npos : eol - i_);
        i_ = eol == std::string_view::npos ? t_.size() : eol + 1;
        if (tabs)
          while (!line.empty() && line.front() == '\t') line.remove_prefix(1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line == word) break;
      }
    }
    heredocs_.clear();
  }
  // Copies a quoted or $ span (balanced) into the word, or one character.
  void word_char() {
    const char c = t_[i_];
    if (c == '\\') {
      cur_ += t_.substr(i_, std::min<std::size_t>(2, t_.size() - i_));
      i_ += 2;
    } else if (c == '\'') {
      const auto e = t_.find('\'', i_ + 1);
      if (e == std::string_view::npos) fail("unterminated single quote");
      cur_ += t_.substr(i_, e + 1 - i_);
      i_ = e + 1;
    } else if (c == '"') {
      std::size_t j = i_ + 1;
      for (; j < t_.size() && t_[j] != '"'; ++j) {
        if (t_[j] == '\\')
          ++j;
        else if (t_[j] == '$' && j + 1 < t_.size() && (t_[j + 1] == '(' || t_[j + 1] == '{'))
          j = balanced(j + 1) - 1;
      }
      if (j >= t_.size()) fail("unterminated double quote");
      cur_ += t_.substr(i_, j + 1 - i_);
      i_ = j + 1;
    } else if (c == '`') {
      const auto e = t_.find('`', i_ + 1);
      if (e == std::string_view::npos) fail("unterminated backquote");
      cur_ += t_.substr(i_, e + 1 - i_);
      i_ = e + 1;
    } else if (c == '$' && i_ + 1 < t_.size() && (t_[i_ + 1] == '(' || t_[i_ + 1] == '{')) {
      const std::size_t e = balanced(i_ + 1);
      cur_ += t_.substr(i_, e - i_);
      i_ = e;
    } else {
      cur_ += c;
      ++i_;
    }
  }
  // The index after the bracket that closes the one at `at`, skipping quotes.
  std::size_t balanced(std::size_t at) const {
    const char open = t_[at], close = open == '(' ? ')' : '}';
    int depth = 0;
    for (std::size_t j = at; j < t_.size(); ++j) {
      const char d = t_[j];
      if (d == '\\') {
        ++j;
      } else if (d == '\'' && open == '(') {
        const auto e = t_.find('\'', j + 1);
        if (e == std::string_view::npos) break;
        j = e;
      } else if (d == open) {
        ++depth;
      } else if (d == close && --depth == 0) {
        return j + 1;
      }
    }
    fail(fmt::format("unterminated '{}'", open == '(' ? "$(" : "${"), at);
  }

  std::string_view t_;
  const std::string& file_;
  std::size_t i_ = 0;
  std::string cur_;
  std::vector<Token> out_;
  std::vector<std::pair<std::string, bool>>
      heredocs_;  // delimiters of this line's here-documents, <<- strips tabs
};

// ---- the evaluator ---------------------------------------------------------------------------

class Shell {
 public:
  Shell(const ShellOptions& opts, ShellResult& out) : opts_(opts), out_(out) {
    for (const auto& [k, v] : opts.environment) vars_[k] = {v}, exported_[k] = true;
  }

  void run_text(const std::string& text, const std::string& file) {
    const std::vector<Token> toks = Lexer(text, file).run();
    std::size_t i = 0;
    file_ = file;
    while (i < toks.size() && !exited_) i = statement(toks, i, true);
  }

  void finish() {
    for (const auto& [k, v] : vars_) {
      out_.variables[k] = join(v);
      if (exported_.count(k)) out_.exported[k] = join(v);
    }
  }

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

  // One statement from toks[i]; returns where the next starts. `run`: false inside a
  // branch not taken (parsed, not evaluated).
  std::size_t statement(const Tokens& t, std::size_t i, bool run) {
    while (i < t.size() && t[i].op &&
           (t[i].text == "\n" || t[i].text == ";" || t[i].text == "&" || t[i].text == "&&" ||
            t[i].text == "||" || t[i].text == "|" || t[i].text == ")"))
      ++i;
    if (i >= t.size()) return i;
    if (is_word(t, i, "if")) return if_block(t, i, run);
    for (const auto& [open, close] : {std::pair<std::string_view, std::string_view>{"for", "done"},
                                      {"while", "done"},
                                      {"until", "done"},
                                      {"case", "esac"}}) {
      if (is_word(t, i, open)) {
        if (run) note(fmt::format("a `{}` block is not evaluated (its body skipped)", open));
        return skip_block(t, i, open, close);
      }
    }
    // A function definition: name() { ... } or function name { ... }.
    if ((i + 2 < t.size() && !t[i].op && is_op(t, i + 1, "(") && is_op(t, i + 2, ")")) ||
        is_word(t, i, "function")) {
      if (run)
        note(fmt::format("function '{}' is not evaluated",
                         is_word(t, i, "function") ? t[i + 1].text : t[i].text));
      std::size_t j = i;
      while (j < t.size() && !is_word(t, j, "{")) ++j;
      return skip_block(t, j, "{", "}");
    }
    if (is_op(t, i, "(")) {  // a subshell: evaluated as if inline
      return i + 1;
    }
    const std::size_t next = simple(t, i, run);
    // No progress: a token no statement starts with (`;;` outside a `case`, whose blocks are
    // skipped whole); bash refuses it as a syntax error. (A fuzzed script looped here.)
    if (next == i)
      fail(fmt::format("unexpected `{}` (a syntax error in bash)",
                       t[i].text == "\n" ? "newline" : t[i].text));
    return next;
  }

  // Skips from the keyword at i to its matching close keyword (nested alike; a loop's
  // `done` closes any of for, while and until).
  std::size_t skip_block(const Tokens& t, std::size_t i, std::string_view open,
                         std::string_view close) {
    const auto opens = [&](const std::string& w) {
      return close == "done" ? (w == "for" || w == "while" || w == "until") : w == open;
    };
    int depth = 0;
    for (std::size_t j = i; j < t.size(); ++j) {
      if (t[j].op) continue;
      if (opens(t[j].text))
        ++depth;
      else if (t[j].text == close && --depth == 0)
        return j + 1;
    }
    fail(fmt::format("`{}` without `{}`", open, close));
  }

  // if LIST then LIST [elif LIST then LIST]... [else LIST] fi
  std::size_t if_block(const Tokens& t, std::size_t i, bool run) {
    bool taken = false;
    std::size_t j = i + 1;
    while (true) {
      // The condition: commands up to `then`.
      std::vector<Tokens> conds(1);
      std::vector<std::string> joins;
      bool in_double = false;  // inside [[ ]]: && and || belong to the test
      for (; j < t.size() && !is_word(t, j, "then"); ++j) {
        if (is_word(t, j, "[[")) in_double = true;
        if (is_word(t, j, "]]")) in_double = false;
        if (t[j].op && (t[j].text == "&&" || t[j].text == "||") && in_double) {
          conds.back().push_back({false, t[j].text});
        } else if (t[j].op && (t[j].text == "&&" || t[j].text == "||")) {
          joins.push_back(t[j].text);
          conds.emplace_back();
        } else if (!(t[j].op && (t[j].text == "\n" || t[j].text == ";"))) {
          conds.back().push_back(t[j]);
        }
      }
      if (j >= t.size()) fail("`if` without `then`");
      bool value = !taken && run ? condition(conds[0]) : false;
      for (std::size_t k = 0; k < joins.size() && !taken && run; ++k)
        value =
            joins[k] == "&&" ? value && condition(conds[k + 1]) : value || condition(conds[k + 1]);
      j = branch(t, j + 1, run && !taken && value);
      taken = taken || value;
      if (is_word(t, j, "fi")) return j + 1;
      if (is_word(t, j, "else")) {
        j = branch(t, j + 1, run && !taken);
        if (!is_word(t, j, "fi")) fail("`else` without `fi`");
        return j + 1;
      }
      if (!is_word(t, j, "elif")) fail("`if` without `fi`");
      ++j;
    }
  }
  // Statements until elif, else or fi at this level.
  std::size_t branch(const Tokens& t, std::size_t j, bool run) {
    while (true) {
      while (j < t.size() && t[j].op && (t[j].text == "\n" || t[j].text == ";")) ++j;
      if (j >= t.size()) fail("`if` without `fi`");
      if (is_word(t, j, "elif") || is_word(t, j, "else") || is_word(t, j, "fi")) return j;
      j = statement(t, j, run);
    }
  }

  // A test command: [ ... ], [[ ... ]], test ...; anything else cannot be decided.
  bool condition(const Tokens& c) {
    std::vector<std::string> w;
    for (const auto& tok : c)
      if (!tok.op)
        for (auto& f : expand(tok.text, true)) w.push_back(std::move(f));
    bool negate = false;
    while (!w.empty() && w.front() == "!") negate = !negate, w.erase(w.begin());
    if (w.empty()) return negate;
    if (w.front() == "[" || w.front() == "[[") {
      const std::string close = w.front() == "[" ? "]" : "]]";
      if (w.size() < 2 || w.back() != close) {
        note(fmt::format("a test without its closing '{}': taken as false", close));
        return negate;
      }
      w.erase(w.begin());
      w.pop_back();
    } else if (w.front() == "test") {
      w.erase(w.begin());
    } else if (w.front() == "true" || w.front() == ":") {
      return !negate;
    } else if (w.front() == "false") {
      return negate;
    } else {
      note(fmt::format("the condition '{}' runs a command: taken as false", w.front()));
      return negate;
    }
    return test(w) != negate;
  }
  bool test(std::vector<std::string> w) {
    // [[ a && b || c ]]: || of && groups.
    if (std::find(w.begin(), w.end(), "&&") != w.end() ||
        std::find(w.begin(), w.end(), "||") != w.end()) {
      bool any = false, all = true;
      std::vector<std::string> seg;
      for (std::size_t k = 0; k <= w.size(); ++k) {
        if (k < w.size() && w[k] != "&&" && w[k] != "||") {
          seg.push_back(w[k]);
          continue;
        }
        all = all && test(seg);
        seg.clear();
        if (k == w.size() || w[k] == "||") any = any || all, all = true;
      }
      return any;
    }
    bool negate = false;
    while (!w.empty() && w.front() == "!") negate = !negate, w.erase(w.begin());
    // An unset variable's operand vanished in the splitting ([[ $N -eq 0 ]] with N unset):
    // [[ ]] compares it as arithmetic, where empty is 0 (`[ ]` would fail the test instead).
    static const std::set<std::string> kNumeric{"-eq", "-ne", "-lt", "-le", "-gt", "-ge"};
    if (w.size() == 2 && kNumeric.count(w[0])) w.insert(w.begin(), "");
    const auto number = [&](const std::string& s) -> std::optional<std::int64_t> {
      if (s.empty()) return 0;
      try {
        std::size_t used = 0;
        const auto v = std::stoll(s, &used);
        if (used == s.size()) return v;
      } catch (const std::exception&) {
      }
      return std::nullopt;
    };
    bool v = false;
    if (w.empty()) {
      v = false;
    } else if (w.size() == 1) {
      v = !w[0].empty();
    } else if (w.size() == 2 && (w[0] == "-n" || w[0] == "-z")) {
      v = (w[0] == "-n") == !w[1].empty();
    } else if (w.size() == 2 && w[0].size() == 2 && w[0][0] == '-') {
      // A launch script checks for its own files (the training script, a config) before
      // it runs: they are taken to be there, as where the script runs.
      note(fmt::format("the file test '{} {}' is not evaluated: taken as true", w[0], w[1]));
      v = true;
    } else if (w.size() == 3 && (w[1] == "=" || w[1] == "==")) {
      v = w[0] == w[2];
    } else if (w.size() == 3 && w[1] == "!=") {
      v = w[0] != w[2];
    } else if (w.size() == 3 && w[1].size() == 3 && w[1][0] == '-') {
      const auto a = number(w[0]), b = number(w[2]);
      if (!a || !b) {
        note(fmt::format("'{} {} {}' compares non-numbers: taken as false", w[0], w[1], w[2]));
        v = false;
      } else if (w[1] == "-eq")
        v = *a == *b;
      else if (w[1] == "-ne")
        v = *a != *b;
      else if (w[1] == "-lt")
        v = *a < *b;
      else if (w[1] == "-le")
        v = *a <= *b;
      else if (w[1] == "-gt")
        v = *a > *b;
      else if (w[1] == "-ge")
        v = *a >= *b;
      else
        note(fmt::format("the test operator '{}' is not evaluated: taken as false", w[1]));
    } else {
      std::string all;
      for (const auto& s : w) all += (all.empty() ? "" : " ") + s;
      note(fmt::format("the test '{}' is not evaluated: taken as false", all));
    }
    return v != negate;
  }

  // A simple command: assignments, then words; a redirection and its target dropped.
  std::size_t simple(const Tokens& t, std::size_t i, bool run) {
    std::vector<std::pair<std::string, std::vector<std::string>>>
        assigns;  // name (+= kept), values
    std::vector<bool> array_assign;
    std::vector<std::string> words;
    for (; i < t.size() && !ends_command(t[i]); ++i) {
      if (t[i].op && t[i].text == "redir") {
        if (i + 1 < t.size() && !t[i + 1].op) ++i;
        continue;
      }
      if (t[i].op) continue;  // redir+ and a stray (
      const std::string& w = t[i].text;
      if (words.empty() && assignment_head(w.substr(0, w.size() - (w.ends_with("=(") ? 1 : 0))) &&
          w.ends_with("=(")) {
        // NAME=( elements ) across lines, comments dropped by the lexer.
        std::vector<std::string> elems;
        std::size_t j = i + 1;
        for (; j < t.size() && !is_op(t, j, ")"); ++j)
          if (!t[j].op && run)
            for (auto& f : expand(t[j].text, false)) elems.push_back(std::move(f));
        if (j >= t.size())
          fail(fmt::format("array '{}' without its closing ')'", w.substr(0, w.size() - 2)));
        assigns.emplace_back(w.substr(0, w.size() - 2), std::move(elems));
        array_assign.push_back(true);
        i = j;
        continue;
      }
      if (words.empty()) {
        const auto eq = w.find('=');
        if (eq != std::string::npos && assignment_head(w.substr(0, eq + 1))) {
          std::vector<std::string> value;
          if (run) value = {join(expand(w.substr(eq + 1), true))};
          assigns.emplace_back(w.substr(0, eq), std::move(value));
          array_assign.push_back(false);
          continue;
        }
      }
      if (run)
        for (auto& f : expand(w, false)) words.push_back(std::move(f));
      else
        words.push_back(w);
    }
    if (!run) return i;
    if (words.empty()) {
      for (std::size_t k = 0; k < assigns.size(); ++k)
        assign(assigns[k].first, assigns[k].second, array_assign[k]);
      return i;
    }
    std::map<std::string, std::string> prefix;
    for (const auto& [name, value] : assigns) prefix[name] = value.empty() ? "" : value[0];
    command(words, prefix);
    return i;
  }

  void assign(std::string name, const std::vector<std::string>& value, bool array) {
    const bool append = name.ends_with('+');
    if (append) name.pop_back();
    auto& v = vars_[name];
    if (array) {
      if (!append) v.clear();
      v.insert(v.end(), value.begin(), value.end());
    } else {
      const std::string s = value.empty() ? "" : value[0];
      if (append && !v.empty())
        v[0] += s;
      else
        v = {s};
    }
  }

  void command(const std::vector<std::string>& w,
               const std::map<std::string, std::string>& prefix) {
    const std::string& c = w[0];
    if (c == "export" || c == "declare" || c == "local" || c == "readonly" || c == "typeset") {
      for (std::size_t k = 1; k < w.size(); ++k) {
        if (w[k].rfind('-', 0) == 0) continue;
        const auto eq = w[k].find('=');
        const std::string name = w[k].substr(0, eq);
        if (eq != std::string::npos) vars_[name] = {w[k].substr(eq + 1)};
        if (c == "export") exported_[name] = true;
      }
      return;
    }
    if (c == "unset") {
      for (std::size_t k = 1; k < w.size(); ++k) vars_.erase(w[k]), exported_.erase(w[k]);
      return;
    }
    if (c == "exit") {
      exited_ = true;
      out_.exited = true;
      return;
    }
    if ((c == "source" || c == ".") && w.size() >= 2) return source(w[1]);
    std::map<std::string, std::string> env;
    for (const auto& [k, on] : exported_) {
      if (!on) continue;
      const auto v = vars_.find(k);
      if (v != vars_.end()) env[k] = join(v->second);
    }
    for (const auto& [k, v] : prefix) env[k] = v;
    out_.commands.push_back({w, prefix, std::move(env)});
  }

  void source(const std::string& name) {
    namespace fs = std::filesystem;
    fs::path p(name);
    std::error_code ec;
    const fs::path dir =
        opts_.script_path.empty() || fs::path(opts_.script_path).parent_path().empty()
            ? fs::current_path(ec)
            : fs::path(opts_.script_path).parent_path();
    if (p.is_relative()) p = dir / p;
    const fs::path real = fs::weakly_canonical(p, ec);
    const auto inside = [&](const fs::path& root) {
      std::error_code e;
      const fs::path rel = real.lexically_relative(fs::weakly_canonical(root, e));
      return !e && !rel.empty() && *rel.begin() != "..";
    };
    if (ec || (!inside(dir) && std::none_of(opts_.source_roots.begin(), opts_.source_roots.end(),
                                            [&](const std::string& r) { return inside(r); })))
      fail(
          fmt::format("`source {}`: {} is outside the script's folder {}; moesim reads sourced "
                      "files only inside "
                      "it (import --source-root DIR adds a folder)",
                      name, real.string(), fs::weakly_canonical(dir, ec).string()));
    if (const auto problem = input_file_problem(real.string()))
      fail(fmt::format("`source {}`: {} {}", name, real.string(), *problem));
    if (fs::file_size(real, ec) > kMaxSourcedBytes)
      fail(fmt::format("`source {}`: {} is larger than the {} KiB moesim reads of a sourced file",
                       name, real.string(), kMaxSourcedBytes >> 10));
    std::ifstream f(real);
    if (!f) fail(fmt::format("`source {}`: cannot read {}", name, p.string()));
    std::stringstream ss;
    ss << f.rdbuf();
    if (++depth_ > 16) fail("`source` nested more than 16 deep");
    const std::string saved = file_;
    run_text(ss.str(), p.string());
    file_ = saved;
    --depth_;
  }

  // ---- expansion --------------------------------------------------------------------------

  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : " ") + e;
    return s;
  }
  std::vector<std::string> value_of(const std::string& name) const {
    if (!name.empty() && std::all_of(name.begin(), name.end(), [](char d) {
          return std::isdigit(static_cast<unsigned char>(d));
        })) {
      if (name.size() > 9) return {};  // ${99999999999}: no such argument
      const auto n = std::stoul(name);
      if (n == 0) return {opts_.script_path};
      return n <= opts_.arguments.size() ? std::vector<std::string>{opts_.arguments[n - 1]}
                                         : std::vector<std::string>{};
    }
    if (name == "@" || name == "*") return opts_.arguments;
    if (name == "#") return {std::to_string(opts_.arguments.size())};
    if (name == "BASH_SOURCE") return {file_};
    const auto it = vars_.find(name);
    return it == vars_.end() ? std::vector<std::string>{} : it->second;
  }

  // ${...}'s inside: NAME, NAME[@], NAME[i], #NAME, NAME:-word and the other operators.
  // `whole`: every element as its own field ([@] in double quotes).
  std::vector<std::string> parameter(const std::string& in, bool& whole) {
    whole = false;
    if (in.size() > 1 && in[0] == '#') {
      std::string n = in.substr(1);
      if (n.ends_with("[@]") || n.ends_with("[*]"))
        return {std::to_string(value_of(n.substr(0, n.size() - 3)).size())};
      return {std::to_string(join(value_of(n)).size())};
    }
    std::size_t k = 0;
    while (k < in.size() &&
           (name_char(in[k]) || (k == 0 && (in[k] == '@' || in[k] == '*' || in[k] == '#'))))
      ++k;
    std::string name = in.substr(0, k);
    std::vector<std::string> v;
    if (k < in.size() && in[k] == '[') {
      const auto close = in.find(']', k);
      if (close == std::string::npos) fail(fmt::format("'${{{}}}': no closing ']'", in));
      const std::string index = in.substr(k + 1, close - k - 1);
      const auto all = value_of(name);
      if (index == "@" || index == "*") {
        v = all;
        whole = index == "@";
      } else {
        const auto n = arithmetic(index);
        if (n >= 0 && static_cast<std::size_t>(n) < all.size())
          v = {all[static_cast<std::size_t>(n)]};
      }
      k = close + 1;
    } else {
      v = value_of(name);
      if (name == "@") whole = true;
      if (!v.empty() && v.size() > 1 && name != "@" && name != "*") v = {v[0]};  // $A is ${A[0]}
    }
    if (k == in.size()) return v;
    const bool colon = in[k] == ':';
    const std::size_t o = colon ? k + 1 : k;
    if (o >= in.size())
      fail(fmt::format("'${{{}}}': not a parameter expansion moesim evaluates", in));
    const char op = in[o];
    const std::string word = in.substr(o + 1);
    const bool unset = v.empty() || (colon && join(v).empty());
    const auto expanded = [&] { return std::vector<std::string>{join(expand(word, true))}; };
    switch (op) {
      case '-':
        return unset ? expanded() : v;
      case '=':
        if (unset) vars_[name] = expanded();
        return value_of(name);
      case '+':
        return unset ? std::vector<std::string>{} : expanded();
      case '?':
        if (unset) fail(fmt::format("'{}' is not set: {}", name, word));
        return v;
      default:
        note(fmt::format("'${{{}}}' is not evaluated: its value is the variable's", in));
        return v;
    }
  }

  // $((...)): integers, + - * / % and parentheses; names are variables. 64-bit and
  // wrapping on overflow as bash's does (two's complement; INT64_MIN / -1 is INT64_MIN and
  // INT64_MIN % -1 is 0, where C++ would trap); a literal too long for 64 bits wraps too.
  std::int64_t arithmetic(const std::string& raw) {
    const std::string e = join(expand(raw, true));
    std::size_t p = 0;
    const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    const auto wrap = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
    const auto skip = [&] {
      while (p < e.size() && std::isspace(static_cast<unsigned char>(e[p]))) ++p;
    };
    std::function<std::int64_t()> sum, atom;
    atom = [&]() -> std::int64_t {
      skip();
      if (p < e.size() && e[p] == '(') {
        const Nest nest(*this);
        ++p;
        const auto v = sum();
        skip();
        if (p >= e.size() || e[p] != ')') fail(fmt::format("$(({})): unbalanced parentheses", raw));
        ++p;
        return v;
      }
      if (p < e.size() && (e[p] == '-' || e[p] == '+')) {
        const Nest nest(*this);  // - - - ... 1 recurses too
        const bool neg = e[p++] == '-';
        const auto v = atom();
        return neg ? wrap(0 - u(v)) : v;
      }
      if (p < e.size() && std::isdigit(static_cast<unsigned char>(e[p]))) {
        std::int64_t v = 0;
        while (p < e.size() && std::isdigit(static_cast<unsigned char>(e[p])))
          v = wrap(u(v) * 10 + static_cast<std::uint64_t>(e[p++] - '0'));
        return v;
      }
      if (p < e.size() && name_start(e[p])) {
        std::string n;
        while (p < e.size() && name_char(e[p])) n += e[p++];
        const auto v = value_of(n);
        if (v.empty() || v[0].empty()) return 0;
        try {
          return std::stoll(v[0]);
        } catch (const std::exception&) {
          fail(fmt::format("$(({})): '{}' is '{}', not a number", raw, n, v[0]));
        }
      }
      fail(fmt::format("$(({})): not arithmetic moesim evaluates", raw));
    };
    const auto product = [&]() -> std::int64_t {
      std::int64_t v = atom();
      for (skip(); p < e.size() && (e[p] == '*' || e[p] == '/' || e[p] == '%'); skip()) {
        const char o = e[p++];
        const std::int64_t r = atom();
        if (o != '*' && r == 0) fail(fmt::format("$(({})): division by zero", raw));
        v = o == '*'   ? wrap(u(v) * u(r))
            : r == -1  ? (o == '/' ? wrap(0 - u(v)) : 0)
            : o == '/' ? v / r
                       : v % r;
      }
      return v;
    };
    sum = [&]() -> std::int64_t {
      std::int64_t v = product();
      for (skip(); p < e.size() && (e[p] == '+' || e[p] == '-'); skip()) {
        const char o = e[p++];
        const std::int64_t r = product();
        v = o == '+' ? wrap(u(v) + u(r)) : wrap(u(v) - u(r));
      }
      return v;
    };
    const auto v = sum();
    skip();
    if (p != e.size()) fail(fmt::format("$(({})): not arithmetic moesim evaluates", raw));
    return v;
  }

  // $(...) is not run: the script's folder for the usual idioms that compute it, else empty.
  std::string substitution(const std::string& inner) {
    if (inner.find("dirname") != std::string::npos || inner == "pwd" ||
        (inner.find("cd ") != std::string::npos && inner.find("pwd") != std::string::npos)) {
      // Absolute, as a script run from anywhere computes it: `source "$(dirname "$0")/x.sh"`
      // then names the file beside the script however the script's path was given.
      std::error_code ec;
      const auto dir = std::filesystem::path(opts_.script_path).parent_path();
      auto abs = std::filesystem::absolute(dir.empty() ? std::filesystem::path(".") : dir, ec)
                     .lexically_normal();
      if (!abs.has_filename() && abs.has_parent_path() && abs != abs.root_path())
        abs = abs.parent_path();  // "/a/b/" -> "/a/b"
      return ec ? (dir.empty() ? "." : dir.string()) : abs.string();
    }
    note(fmt::format("the command substitution $({}) is not run: empty", inner));
    return "";
  }

  // A raw word's fields: quotes removed, expansions made, unquoted expansions split on
  // blanks. `single`: one field whatever the splitting (assignments, [[ ]]).
  [[noreturn]] void too_large() const {
    fail(fmt::format(
        "an expansion grows past {} KiB (a variable that doubles itself?); moesim evaluates no "
        "larger values",
        kMaxShellValueBytes >> 10));
  }

  std::vector<std::string> expand(const std::string& w, bool single) {
    const Nest nest(*this);
    std::vector<std::string> fields;
    std::size_t field_bytes = 0;  // the sizes of `fields`
    std::string cur;
    bool have = false;  // cur is a field even if empty (quotes)
    const auto split_into = [&](const std::string& s) {
      if (single) {
        cur += s;
        have = true;
        return;
      }
      std::size_t a = 0;
      while (a < s.size()) {
        const bool blank = s[a] == ' ' || s[a] == '\t' || s[a] == '\n';
        if (blank) {
          if (have || !cur.empty()) field_bytes += cur.size(), fields.push_back(cur);
          cur.clear();
          have = false;
          while (a < s.size() && (s[a] == ' ' || s[a] == '\t' || s[a] == '\n')) ++a;
          continue;
        }
        cur += s[a++];
        have = true;
      }
    };
    // One $ form at w[k] (k at '$'); appends its value; returns the index after it.
    const auto dollar = [&](std::size_t k, bool quoted) -> std::size_t {
      if (k + 1 >= w.size()) {
        cur += '$';
        return k + 1;
      }
      const char n = w[k + 1];
      std::vector<std::string> v;
      bool whole = false;
      std::size_t end = k + 2;
      if (n == '(' && k + 2 < w.size() && w[k + 2] == '(') {
        // The "))" that balances this "$((" (not the word's last: `$((1))x$((2))`).
        std::size_t close = std::string::npos;
        for (std::size_t j = k + 1, depth = 0; j < w.size(); ++j) {
          if (w[j] == '(')
            ++depth;
          else if (w[j] == ')' && --depth == 0) {
            if (w[j - 1] == ')' && j - 1 > k + 2) close = j - 1;
            break;
          }
        }
        if (close == std::string::npos) fail(fmt::format("'{}': unterminated $((", w));
        end = close + 2;
        v = {std::to_string(arithmetic(w.substr(k + 3, close - k - 3)))};
      } else if (n == '(' || n == '{') {
        int depth = 0;
        std::size_t j = k + 1;
        const char close = n == '(' ? ')' : '}';
        for (; j < w.size(); ++j) {
          if (w[j] == '\\')
            ++j;
          else if (w[j] == n)
            ++depth;
          else if (w[j] == close && --depth == 0)
            break;
        }
        if (j >= w.size()) fail(fmt::format("'{}': unterminated ${}", w, n));
        end = j + 1;
        const std::string inner = w.substr(k + 2, j - k - 2);
        v = n == '(' ? std::vector<std::string>{substitution(inner)} : parameter(inner, whole);
      } else if (n == '?' || n == '$' || n == '!') {
        // Nothing runs: no exit status, no process id. Each is 0, said in the notes.
        note(fmt::format("'${}' is taken as 0 (nothing runs)", n));
        end = k + 2;
        v = {"0"};
      } else if (name_start(n) || std::isdigit(static_cast<unsigned char>(n)) || n == '@' ||
                 n == '*' || n == '#') {
        std::size_t j = k + 1;
        if (name_start(n)) {
          while (j < w.size() && name_char(w[j])) ++j;
        } else {
          j = k + 2;
        }
        end = j;
        const std::string name = w.substr(k + 1, j - k - 1);
        v = value_of(name);
        whole = name == "@";
        if (v.size() > 1 && !whole && name != "*") v = {v[0]};
      } else {
        cur += '$';
        return k + 1;
      }
      // Bounds (issue #46 item 1): this word's value, checked before it is built, and all
      // the script's expansions together (each refers to values of at most
      // kMaxShellValueBytes, so a script of many lines could otherwise copy without end).
      std::size_t add = v.empty() ? 0 : v.size() - 1;  // the separators a join adds
      for (const auto& e : v) add += e.size();
      if (cur.size() + field_bytes + add > kMaxShellValueBytes) too_large();
      if ((expanded_ += add) > kMaxShellExpandedBytes)
        fail(fmt::format(
            "the script's expansions add up to more than {} MiB; moesim evaluates no more",
            kMaxShellExpandedBytes >> 20));
      if (quoted && whole) {  // "${A[@]}": each element a field of its own
        for (std::size_t e = 0; e < v.size(); ++e) {
          cur += v[e];
          have = true;
          if (e + 1 < v.size() && !single)
            field_bytes += cur.size(), fields.push_back(cur), cur.clear();
          else if (e + 1 < v.size())
            cur += ' ';
        }
      } else if (quoted) {
        cur += join(v);
        have = true;
      } else {
        split_into(join(v));
      }
      return end;
    };
    for (std::size_t k = 0; k < w.size();) {
      const char c = w[k];
      if (c == '\\' && k + 1 < w.size()) {
        cur += w[k + 1];
        have = true;
        k += 2;
      } else if (c == '\'') {
        // Unterminated only inside a ${...} the lexer took whole (`${X:-'}`): bash refuses it.
        const auto e = w.find('\'', k + 1);
        if (e == std::string::npos) fail(fmt::format("unterminated single quote in {}", w));
        cur += w.substr(k + 1, e - k - 1);
        have = true;
        k = e + 1;
      } else if (c == '"') {
        have = true;
        std::size_t j = k + 1;
        while (j < w.size() && w[j] != '"') {
          if (w[j] == '\\' && j + 1 < w.size() &&
              std::string_view("$`\"\\\n").find(w[j + 1]) != std::string_view::npos) {
            if (w[j + 1] != '\n')
              cur += w[j + 1];  // a backslash-newline continues the line: both go
            j += 2;
          } else if (w[j] == '$') {
            j = dollar(j, true);
          } else if (w[j] == '`') {
            const auto e = w.find('`', j + 1);
            if (e == std::string::npos) fail(fmt::format("unterminated backquote in {}", w));
            cur += substitution(w.substr(j + 1, e - j - 1));
            j = e + 1;
          } else {
            cur += w[j++];
          }
        }
        k = j + 1;
      } else if (c == '`') {
        const auto e = w.find('`', k + 1);
        if (e == std::string::npos) fail(fmt::format("unterminated backquote in {}", w));
        split_into(substitution(w.substr(k + 1, e - k - 1)));
        k = e + 1;
      } else if (c == '$') {
        k = dollar(k, false);
      } else {
        cur += c;
        have = true;
        ++k;
      }
    }
    if (have || !cur.empty()) field_bytes += cur.size(), fields.push_back(cur);
    if (field_bytes > kMaxShellValueBytes) too_large();
    if (single && fields.size() > 1) return {join(fields)};
    return fields;
  }

  const ShellOptions& opts_;
  ShellResult& out_;
  std::map<std::string, std::vector<std::string>> vars_;
  std::map<std::string, bool> exported_;
  std::string file_;
  int depth_ = 0;
  int nesting_ = 0;           // expansions open now (Nest)
  std::size_t expanded_ = 0;  // bytes all expansions have produced (kMaxShellExpandedBytes)
  bool exited_ = false;
};

}  // namespace

ShellResult evaluate_shell(const std::string& text, const ShellOptions& opts) {
  if (text.size() > kMaxSourcedBytes)  // the bound of a sourced file: launch scripts are a few KiB
    throw InputError(
        opts.script_path, "",
        fmt::format("the script is larger than the {} KiB moesim reads of a launch script",
                    kMaxSourcedBytes >> 10));
  ShellResult out;
  Shell sh(opts, out);
  sh.run_text(text, opts.script_path);
  sh.finish();
  return out;
}

}  // namespace moesim::importer
