#include <catch2/catch.hpp>

#include "sim_core/time.hpp"

using moesim::sim_core::Time;

TEST_CASE("Time converts units exactly and rounds seconds to the picosecond", "[sim_core]") {
  CHECK(Time::us(3).count_ps() == 3'000'000);
  CHECK(Time::ms(2) == Time::us(2000));
  CHECK((Time::ns(1500) + Time::ns(500)) == Time::us(2));
  // 1.2345678e-6 s = 1234567.8 ps, rounds to 1234568 ps.
  CHECK(Time::from_seconds(1.2345678e-6).count_ps() == 1'234'568);
  CHECK(Time::from_seconds(8.44).seconds() == Approx(8.44));
  CHECK(Time::us(5) < Time::us(6));
  CHECK_THROWS_AS(Time::from_seconds(1e300), std::out_of_range);
  CHECK_THROWS_AS(Time::from_seconds(std::nan("")), std::out_of_range);
}
