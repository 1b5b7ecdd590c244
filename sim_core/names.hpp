// sim_core/names.hpp: name <-> value tables for closed sets (dtypes, schedules, ...).
//
// One table per enum replaces string if/else chains: parsing, printing and the
// "known: a, b, c" list in error messages all come from the same entries.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace moesim::sim_core {

template <class E>
struct NameEntry {
  E value;
  std::string_view name;
  std::string_view help;  // one line, shown in --help and error messages
};

template <class E>
class NameTable {
 public:
  constexpr explicit NameTable(std::span<const NameEntry<E>> entries) : entries_(entries) {}

  std::optional<E> find(std::string_view name) const {
    for (const auto& e : entries_)
      if (e.name == name) return e.value;
    return std::nullopt;
  }
  std::string_view name(E v) const {
    for (const auto& e : entries_)
      if (e.value == v) return e.name;
    return "?";
  }
  // "a, b, c": for error messages listing what is valid.
  std::string known() const {
    std::string out;
    for (const auto& e : entries_) {
      if (!out.empty()) out += ", ";
      out += e.name;
    }
    return out;
  }
  std::span<const NameEntry<E>> entries() const { return entries_; }

 private:
  std::span<const NameEntry<E>> entries_;
};

}  // namespace moesim::sim_core
