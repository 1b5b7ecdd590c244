#include "config/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace moesim::config {

InputError::InputError(std::string file, std::string path, std::string message)
    : std::runtime_error(fmt::format("{}: {}: {}", file.empty() ? "''" : file,
                                     path.empty() ? "(top level)" : path, message)),
      file_(std::move(file)),
      path_(std::move(path)),
      message_(std::move(message)) {}

namespace {

// 1-based line and column of a byte offset, for parse errors.
std::pair<std::size_t, std::size_t> line_col(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

std::string type_name(const Json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  return std::string(j.is_object() ? "an object" : j.is_array() ? "an array" : j.type_name());
}

}  // namespace

Json parse_json(std::string_view text, const std::string& file) {
  // Duplicate keys: track the keys of each open object during parsing.
  std::vector<std::set<std::string>> open;
  std::string duplicate;
  auto cb = [&](int depth, Json::parse_event_t ev, Json& parsed) {
    if ((ev == Json::parse_event_t::object_start || ev == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw InputError(
          file, "",
          fmt::format("JSON nested deeper than {} arrays and objects; no moesim format "
                      "nests so deep",
                      kMaxJsonDepth));
    switch (ev) {
      case Json::parse_event_t::object_start:
        open.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open.empty()) open.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!open.empty() && !open.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default:
        break;
    }
    return true;
  };
  try {
    Json j = Json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true,
                         /*ignore_comments=*/false);
    if (!duplicate.empty())
      throw InputError(file, "", fmt::format("key '{}' appears twice in one object", duplicate));
    return j;
  } catch (const Json::parse_error& e) {
    const auto [line, col] = line_col(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line L, column C: ".
    if (auto p = what.find(": "); p != std::string::npos && what.rfind("[json.", 0) == 0)
      what = what.substr(p + 2);
    throw InputError(file, "",
                     fmt::format("malformed JSON at line {}, column {}: {}", line, col, what));
  } catch (const Json::out_of_range& e) {  // a number beyond a double's range (1e400)
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos && what.rfind("[json.", 0) == 0)
      what = what.substr(p + 2);
    throw InputError(file, "", "malformed JSON: " + what);
  }
}

std::optional<std::string> input_file_problem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return "does not exist";
  if (fs::is_directory(st)) return "is a folder, not a file";
  if (!fs::is_regular_file(st))
    return "is not a regular file (a device, a FIFO or a socket): moesim reads files only";
  if (const auto size = fs::file_size(path, ec); !ec && size > kMaxInputFileBytes)
    return fmt::format("is larger than the {} GiB moesim reads", kMaxInputFileBytes >> 30);
  return std::nullopt;
}

std::string read_text_file(const std::string& path) {
  if (const auto problem = input_file_problem(path); problem && *problem != "does not exist")
    throw InputError(path, "", *problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "cannot read the file");
  return ss.str();
}

Json read_json_file(const std::string& path) {
  return parse_json(read_text_file(path), path);
}

void Node::fail(const std::string& message) const {
  throw InputError(*file_, path_, message);
}

std::int64_t Node::as_int(std::int64_t min, std::int64_t max) const {
  std::int64_t v = 0;
  if (j_->is_number_float()) {
    // 256.0, as some tools write integers: accepted when integral and in range.
    const double d = j_->get<double>();
    if (!std::isfinite(d) || d != std::floor(d))
      fail(fmt::format("expected an integer, got {}", j_->dump()));
    if (d < static_cast<double>(min) || d > static_cast<double>(max))
      fail(fmt::format("{} is outside the valid range [{}, {}]", j_->dump(), min, max));
    return static_cast<std::int64_t>(d);
  }
  if (!j_->is_number_integer()) fail("expected an integer, got " + type_name(*j_));
  if (j_->is_number_unsigned()) {
    const auto u = j_->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max))
      fail(fmt::format("{} is outside the valid range [{}, {}]", u, min, max));
    v = static_cast<std::int64_t>(u);
  } else {
    v = j_->get<std::int64_t>();
  }
  if (v < min || v > max) fail(fmt::format("{} is outside the valid range [{}, {}]", v, min, max));
  return v;
}

double Node::as_number(double min, double max) const {
  if (!j_->is_number()) fail("expected a number, got " + type_name(*j_));
  const double v = j_->get<double>();
  if (!std::isfinite(v) || v < min || v > max)
    fail(fmt::format("{} is outside the valid range [{}, {}]", v, min, max));
  return v;
}

bool Node::as_bool() const {
  if (!j_->is_boolean()) fail("expected true or false, got " + type_name(*j_));
  return j_->get<bool>();
}

std::string Node::as_string() const {
  if (!j_->is_string()) fail("expected a string, got " + type_name(*j_));
  return j_->get<std::string>();
}

void Node::for_each_element(const std::function<void(const Node&)>& f) const {
  if (!j_->is_array()) fail("expected a list, got " + type_name(*j_));
  for (std::size_t i = 0; i < j_->size(); ++i)
    f(Node((*j_)[i], fmt::format("{}[{}]", path_, i), file_));
}

Node Node::child_at(const Json& j, const std::string& key) const {
  return Node(j, path_.empty() ? key : path_ + "." + key, file_);
}

Object::Object(const Node& node) : node_(node) {
  if (!node.json().is_object()) node.fail("expected an object, got " + type_name(node.json()));
}

bool Object::has(std::string_view key) const {
  return node_.json().contains(key);
}

std::optional<Node> Object::get(std::string_view key) {
  known_.emplace_back(key);
  auto it = node_.json().find(key);
  if (it == node_.json().end()) return std::nullopt;
  return node_.child_at(*it, std::string(key));
}

Node Object::req(std::string_view key) {
  if (auto n = get(key)) return *n;
  node_.fail(fmt::format("missing required key '{}'", key));
}

void Object::ignore(std::initializer_list<std::string_view> keys) {
  for (auto k : keys) known_.emplace_back(k);
}

void Object::finish() const {
  for (const auto& [key, value] : node_.json().items()) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string best;
    std::size_t best_d = 3;  // suggest only near misses
    for (const auto& k : known_) {
      const std::size_t d = edit_distance(key, k);
      if (d < best_d) best_d = d, best = k;
    }
    std::vector<std::string> sorted = known_;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    node_.child_at(value, key)
        .fail(fmt::format("unknown key '{}'{}; valid keys here: {}", key,
                          best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best),
                          fmt::join(sorted, ", ")));
  }
}

std::int64_t Object::int_or(std::string_view key, std::int64_t def, std::int64_t min,
                            std::int64_t max) {
  auto n = get(key);
  return n ? n->as_int(min, max) : def;
}

double Object::number_or(std::string_view key, double def, double min, double max) {
  auto n = get(key);
  return n ? n->as_number(min, max) : def;
}

bool Object::bool_or(std::string_view key, bool def) {
  auto n = get(key);
  return n ? n->as_bool() : def;
}

std::string Object::string_or(std::string_view key, std::string def) {
  auto n = get(key);
  return n ? n->as_string() : def;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace moesim::config
