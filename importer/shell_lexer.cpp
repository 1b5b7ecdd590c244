// importer/shell_lexer.cpp: the launch-script evaluator's lexer (importer/shell_detail.hpp):
// a script's text as words and operators, quotes and $ forms kept in the words for the
// expansion to read, line continuations and comments dropped, redirections marked and
// here-documents' bodies carried by their operator token (importer/shell_detail.hpp).
#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "config/json_reader.hpp"  // InputError
#include "importer/shell_detail.hpp"

namespace moesim::importer::detail {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;

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

namespace {

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
      const std::size_t start = i_;
      std::string word;
      while (i_ < t_.size() && !std::isspace(static_cast<unsigned char>(t_[i_])) &&
             std::string_view(";|&<>()").find(t_[i_]) == std::string_view::npos) {
        if (t_[i_] != '\'' && t_[i_] != '"' && t_[i_] != '\\') word += t_[i_];
        ++i_;
      }
      if (word.empty()) fail("a here-document without its delimiter");
      // A quoted delimiter (<<'EOF', <<"EOF", <<\EOF) leaves the body unexpanded.
      const bool quoted = t_.substr(start, i_ - start).find_first_of("'\"\\") != std::string::npos;
      op(quoted ? "<<'" : "<<");
      heredocs_.push_back({word, tabs, out_.size() - 1});
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
  // At a line's start after a line with here-documents: their bodies, each appended to
  // its operator token's text after a newline.
  void skip_heredocs() {
    for (const auto& [word, tabs, token] : heredocs_) {
      std::string body;
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
        body.append(line).push_back('\n');
      }
      out_[token].text += '\n' + body;
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
  struct HereDoc {
    std::string delimiter;
    bool strip_tabs;    // <<-
    std::size_t token;  // its operator in out_
  };
  std::vector<HereDoc> heredocs_;  // this line's here-documents
};

}  // namespace

std::vector<Token> tokenize(std::string_view text, const std::string& file) {
  return Lexer(text, file).run();
}

}  // namespace moesim::importer::detail
