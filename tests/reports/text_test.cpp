// The reports' text helpers (reports/text.hpp): a count with its noun, "1 run" and "3 runs".
#include <catch2/catch.hpp>

#include "reports/text.hpp"

using namespace moesim;

TEST_CASE("counted: the noun in the singular for one, in the plural otherwise", "[reports]") {
  CHECK(reports::counted(1, "run") == "1 run");
  CHECK(reports::counted(0, "wrong direction") == "0 wrong directions");
  CHECK(reports::counted(3, "pair") == "3 pairs");
  CHECK(reports::counted(21, "memory point") == "21 memory points");
}
