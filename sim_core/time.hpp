// sim_core/time.hpp: the simulator's clock type.
//
// Time is an integer count of picoseconds (int64), so that event ordering is exact and
// identical on every machine: the same scenario always yields the same schedule, bit
// for bit. int64 picoseconds cover +/- 106 days, far beyond any training step.
// Conversion from and to floating-point seconds happens only at the edges (hardware
// models produce durations in seconds; reports print seconds), rounding to the nearest
// picosecond.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace moesim::sim_core {

class Time {
 public:
  using Rep = std::int64_t;
  static constexpr Rep kPerSecond = 1'000'000'000'000;  // ps per s

  constexpr Time() = default;
  static constexpr Time ps(Rep v) { return Time(v); }
  static constexpr Time ns(Rep v) { return Time(v * 1'000); }
  static constexpr Time us(Rep v) { return Time(v * 1'000'000); }
  static constexpr Time ms(Rep v) { return Time(v * 1'000'000'000); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<Rep>::max()); }

  // Rounds to the nearest picosecond; rejects NaN, negative infinity and values outside
  // the representable range rather than wrapping silently.
  // Half-way cases round away from zero, as std::round: the truncation is exact for a
  // double in range, and so is the fraction v - trunc(v) (the hot path of the engine, where
  // the library call costs more than the rest).
  static Time from_seconds(double s) {
    const double v = s * static_cast<double>(kPerSecond);
    if (!(v < 9.2e18 && v > -9.2e18))
      throw std::out_of_range("Time::from_seconds: value out of range");
    Rep r = static_cast<Rep>(v);
    const double frac = v - static_cast<double>(r);
    if (frac >= 0.5)
      ++r;
    else if (frac <= -0.5)
      --r;
    return Time(r);
  }

  constexpr Rep count_ps() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) / kPerSecond; }
  constexpr double micros() const { return static_cast<double>(ps_) / 1e6; }

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  constexpr Time operator*(Rep k) const { return Time(ps_ * k); }

 private:
  constexpr explicit Time(Rep v) : ps_(v) {}
  Rep ps_ = 0;
};

}  // namespace moesim::sim_core
