// importer/shell_eval.cpp: what a launch script computes, evaluated as bash would
// (importer/shell_eval.hpp): evaluate_shell, and the evaluator's statements and commands
// (importer/shell_detail.hpp): `if` blocks and their tests, the blocks skipped (loops,
// `case`, functions), assignments, export and unset, `source`, and each command recorded
// with its expanded words. The lexer is importer/shell_lexer.cpp; the expansions are
// importer/shell_expand.cpp.
#include "importer/shell_eval.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "config/json_reader.hpp"  // InputError
#include "importer/shell_detail.hpp"

namespace moesim::importer {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;

namespace detail {

void Shell::run_text(const std::string& text, const std::string& file) {
  const std::vector<Token> toks = tokenize(text, file);
  std::size_t i = 0;
  file_ = file;
  while (i < toks.size() && !exited_) i = statement(toks, i, true);
}

void Shell::finish() {
  for (const auto& [k, v] : vars_) {
    out_.variables[k] = join(v);
    if (exported_.count(k)) out_.exported[k] = join(v);
  }
}

// One statement from toks[i]; returns where the next starts. `run`: false inside a
// branch not taken (parsed, not evaluated).
// An and-or list runs its next command after && only when the last succeeded, after ||
// only when it failed (status_); a command not run leaves the status as it was.
std::size_t Shell::statement(const Tokens& t, std::size_t i, bool run) {
  std::string joined;  // the && or || before this command, if any
  while (i < t.size() && t[i].op &&
         (t[i].text == "\n" || t[i].text == ";" || t[i].text == "&" || t[i].text == "&&" ||
          t[i].text == "||" || t[i].text == "|" || t[i].text == ")")) {
    if (t[i].text == "&&" || t[i].text == "||")
      joined = t[i].text;
    else if (t[i].text != "\n")
      joined.clear();
    ++i;
  }
  if (i >= t.size()) return i;
  if ((joined == "&&" && status_ != 0) || (joined == "||" && status_ == 0)) run = false;
  if (is_word(t, i, "{")) {  // a group: its commands inline, or skipped whole
    if (run) return i + 1;
    return skip_block(t, i, "{", "}");
  }
  if (is_word(t, i, "}")) return i + 1;
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
std::size_t Shell::skip_block(const Tokens& t, std::size_t i, std::string_view open,
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
std::size_t Shell::if_block(const Tokens& t, std::size_t i, bool run) {
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
std::size_t Shell::branch(const Tokens& t, std::size_t j, bool run) {
  while (true) {
    while (j < t.size() && t[j].op && (t[j].text == "\n" || t[j].text == ";")) ++j;
    if (j >= t.size()) fail("`if` without `fi`");
    if (is_word(t, j, "elif") || is_word(t, j, "else") || is_word(t, j, "fi")) return j;
    j = statement(t, j, run);
  }
}

// A test command: [ ... ], [[ ... ]], test ...; anything else cannot be decided.
bool Shell::condition(const Tokens& c) {
  std::vector<std::string> w;
  for (const auto& tok : c)
    if (!tok.op)
      for (auto& f : expand(tok.text, true)) w.push_back(std::move(f));
  return condition_words(std::move(w));
}
bool Shell::condition_words(std::vector<std::string> w) {
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

bool Shell::test(std::vector<std::string> w) {
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
std::size_t Shell::simple(const Tokens& t, std::size_t i, bool run) {
  std::vector<std::pair<std::string, std::vector<std::string>>> assigns;  // name (+= kept), values
  std::vector<bool> array_assign;
  std::vector<std::string> words;
  const std::string* here = nullptr;  // a here-document's operator (its body after a newline)
  for (; i < t.size() && !ends_command(t[i]); ++i) {
    if (t[i].op && t[i].text == "redir") {
      if (i + 1 < t.size() && !t[i + 1].op) ++i;
      continue;
    }
    if (t[i].op && t[i].text.starts_with("<<")) here = &t[i].text;
    if (t[i].op) continue;  // redir+, a here-document and a stray (
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
  status_ = 0;
  if (words.empty()) {
    for (std::size_t k = 0; k < assigns.size(); ++k)
      assign(assigns[k].first, assigns[k].second, array_assign[k]);
    return i;
  }
  // `! COMMAND`: the command's status inverted.
  bool negate = false;
  while (!words.empty() && words.front() == "!") {
    negate = !negate;
    words.erase(words.begin());
  }
  static const std::set<std::string> kTests{"[", "[[", "test", "true", ":", "false"};
  if (words.empty()) {
    status_ = negate ? 1 : 0;
  } else if (kTests.count(words[0])) {  // a test decides the status, and runs nothing
    status_ = condition_words(words) != negate ? 0 : 1;
  } else {
    std::map<std::string, std::string> prefix;
    for (const auto& [name, value] : assigns) prefix[name] = value.empty() ? "" : value[0];
    command(words, prefix);
    if (here && !exited_) here_document(words[0], *here);
    status_ = negate ? 1 : 0;
  }
  return i;
}

// A here-document read by a shell or by sbatch (`sbatch <<EOF`, the batch script) is the
// script it runs: evaluated here, after the expansion the outer shell gives an unquoted
// delimiter's body. Another program's input is data.
void Shell::here_document(const std::string& program, const std::string& op) {
  static const std::set<std::string> kRunners{"sbatch", "bash", "sh"};
  if (!kRunners.count(program)) return;
  const std::size_t nl = op.find('\n');
  const std::string body = op.substr(nl + 1);
  const std::string text = op.starts_with("<<'") ? body : expand_here_document(body);
  note(fmt::format("the here-document {} reads is evaluated as its script", program));
  const std::string outer = file_;
  const Nest nest(*this);
  run_text(text, outer + " (here-document)");
  file_ = outer;
}

// An unquoted here-document's body as the shell expands it: parameters, arithmetic and
// command substitutions ($...), a backslash escaping $, ` and itself; quotes are text.
std::string Shell::expand_here_document(const std::string& body) {
  std::string out;
  for (std::size_t k = 0; k < body.size();) {
    const char c = body[k];
    if (c == '\\' && k + 1 < body.size() &&
        std::string_view("$`\\\n").find(body[k + 1]) != std::string_view::npos) {
      if (body[k + 1] != '\n') out += body[k + 1];
      k += 2;
      continue;
    }
    if (c != '$' || k + 1 >= body.size()) {
      out += c;
      ++k;
      continue;
    }
    // The $ form's extent: ${...} and $(...) balanced, $NAME, or one special character.
    std::size_t e = k + 1;
    if (body[e] == '{' || body[e] == '(') {
      const char open = body[e], close = open == '{' ? '}' : ')';
      int depth = 0;
      for (; e < body.size(); ++e) {
        if (body[e] == open) ++depth;
        if (body[e] == close && --depth == 0) break;
      }
      if (e >= body.size()) fail(fmt::format("an unterminated '${}' in a here-document", open));
      ++e;
    } else if (name_start(body[e])) {
      while (e < body.size() && name_char(body[e])) ++e;
    } else if (std::isdigit(static_cast<unsigned char>(body[e])) ||
               std::string_view("@*#?$!-").find(body[e]) != std::string_view::npos) {
      ++e;
    } else {
      out += c;
      ++k;
      continue;
    }
    out += join(expand(body.substr(k, e - k), true));
    k = e;
  }
  return out;
}

void Shell::assign(std::string name, const std::vector<std::string>& value, bool array) {
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

void Shell::command(const std::vector<std::string>& w,
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

void Shell::source(const std::string& name) {
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

}  // namespace detail

ShellResult evaluate_shell(const std::string& text, const ShellOptions& opts) {
  if (text.size() > kMaxSourcedBytes)  // the bound of a sourced file: launch scripts are a few KiB
    throw InputError(
        opts.script_path, "",
        fmt::format("the script is larger than the {} KiB moesim reads of a launch script",
                    kMaxSourcedBytes >> 10));
  ShellResult out;
  detail::Shell sh(opts, out);
  sh.run_text(text, opts.script_path);
  sh.finish();
  return out;
}

}  // namespace moesim::importer
