// reports/text.hpp: small text helpers the reports share.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace moesim::reports {

// "1 run", "3 runs": a count with its noun, plural when it is not one.
inline std::string counted(std::size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

}  // namespace moesim::reports
