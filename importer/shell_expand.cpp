// importer/shell_expand.cpp: the launch-script evaluator's expansions (importer/
// shell_detail.hpp): variables and positional parameters, ${...} with its operators and
// array forms, $((arithmetic)), command substitution (not run: the script's folder for the
// idioms that compute it), quoting and word splitting, within the bounds of
// importer/shell_eval.hpp (kMaxShellNesting, kMaxShellValueBytes, kMaxShellExpandedBytes).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string_view>

#include <fmt/format.h>

#include "config/json_reader.hpp"  // InputError
#include "importer/shell_detail.hpp"

namespace moesim::importer::detail {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;

// ---- expansion --------------------------------------------------------------------------

std::string Shell::join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += (s.empty() ? "" : " ") + e;
  return s;
}

std::vector<std::string> Shell::value_of(const std::string& name) const {
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
std::vector<std::string> Shell::parameter(const std::string& in, bool& whole) {
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
std::int64_t Shell::arithmetic(const std::string& raw) {
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
std::string Shell::substitution(const std::string& inner) {
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
[[noreturn]] void Shell::too_large() const {
  fail(fmt::format(
      "an expansion grows past {} KiB (a variable that doubles itself?); moesim evaluates no "
      "larger values",
      kMaxShellValueBytes >> 10));
}

std::vector<std::string> Shell::expand(const std::string& w, bool single) {
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
          if (w[j + 1] != '\n') cur += w[j + 1];  // a backslash-newline continues the line: both go
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

}  // namespace moesim::importer::detail
