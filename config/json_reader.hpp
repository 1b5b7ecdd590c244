// config/json_reader.hpp: strict, path-aware reading of JSON input.
//
// Every scenario and preset is read through Node and Object so that all input errors
// look the same: "FILE: JSON.PATH: what is wrong (what is valid)". Object demands the
// exact key set (Calculon's rule): a key nobody asked for is an error naming the valid
// keys and the closest one, so a typo never falls back silently to a default. Documents
// with duplicate keys are refused, since JSON parsers disagree on which one wins.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim_core/names.hpp"

namespace moesim::config {

using Json = nlohmann::ordered_json;

// Bad input: carries the file, the JSON path and the message separately for tests.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string path, std::string message);
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_, path_, message_;
};

// Bounds on what input may make moesim do (issue #46 item 1): nesting deeper than
// kMaxJsonDepth arrays and objects (no file of the formats nests past 8; the JSON writer
// recurses per level), and files over kMaxInputFileBytes (the largest the formats take
// are Chrome traces for `calibrate trace`, tens of MB).
inline constexpr int kMaxJsonDepth = 64;
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{1} << 30;

// Parses text as JSON, refusing malformed documents (with line and column), duplicate
// keys and nesting deeper than kMaxJsonDepth. `file` labels errors.
Json parse_json(std::string_view text, const std::string& file);
// Reads and parses a file; a missing or unreadable file is an InputError too.
Json read_json_file(const std::string& path);
// Why `path` is not a file moesim reads, in words ("does not exist", "is a folder, not a
// file", "is not a regular file (a device, a FIFO or a socket)", "is larger than ...");
// none when it is one.
std::optional<std::string> input_file_problem(const std::string& path);
// A file's bytes; InputError(path, "", ...) when input_file_problem names one, or it
// cannot be opened or read.
std::string read_text_file(const std::string& path);

// A JSON value at a path within a file.
class Node {
 public:
  Node(const Json& j, std::string path, std::shared_ptr<const std::string> file)
      : j_(&j), path_(std::move(path)), file_(std::move(file)) {}

  const Json& json() const { return *j_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  [[noreturn]] void fail(const std::string& message) const;

  std::int64_t as_int(std::int64_t min, std::int64_t max) const;
  double as_number(double min, double max) const;  // ints accepted
  bool as_bool() const;
  std::string as_string() const;
  template <class E>
  E as_enum(const sim_core::NameTable<E>& table, std::string_view what) const {
    const std::string s = as_string();
    if (auto v = table.find(s)) return *v;
    fail("unknown " + std::string(what) + " '" + s + "'; known: " + table.known());
  }
  // A list of distinct names from a table.
  template <class E>
  std::vector<E> as_enum_list(const sim_core::NameTable<E>& table, std::string_view what) const {
    std::vector<E> out;
    for_each_element([&](const Node& n) {
      const E v = n.as_enum(table, what);
      for (E seen : out)
        if (seen == v) n.fail("'" + n.as_string() + "' is listed twice");
      out.push_back(v);
    });
    return out;
  }
  void for_each_element(const std::function<void(const Node&)>& f) const;
  Node child_at(const Json& j, const std::string& key) const;

 private:
  const Json* j_;
  std::string path_;
  std::shared_ptr<const std::string> file_;
};

// Reads one JSON object. Call get/req for each key the schema knows; finish() then
// refuses any key left over. Use read_object() so that finish() is never forgotten.
class Object {
 public:
  explicit Object(const Node& node);

  const Node& node() const { return node_; }
  bool has(std::string_view key) const;
  std::optional<Node> get(std::string_view key);
  Node req(std::string_view key);
  // Keys the schema accepts and deliberately does not use (e.g. HF config.json fields
  // that do not affect performance).
  void ignore(std::initializer_list<std::string_view> keys);
  void finish() const;

  // Typed shorthands for optional keys with defaults.
  std::int64_t int_or(std::string_view key, std::int64_t def, std::int64_t min, std::int64_t max);
  double number_or(std::string_view key, double def, double min, double max);
  bool bool_or(std::string_view key, bool def);
  std::string string_or(std::string_view key, std::string def);

 private:
  Node node_;
  std::vector<std::string> known_;
};

template <class F>
void read_object(const Node& node, F&& f) {
  Object o(node);
  f(o);
  o.finish();
}

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace moesim::config
