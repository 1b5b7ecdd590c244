// What the end-to-end fuzz targets (tests/fuzz/fuzz_main.cpp, issue #15 item 3 and issue #46
// item 5) share: one generated case (the files it needs and the moesim commands that read
// them) and the seeded draws every generator makes.
//
// A case depends on (seed, index) alone, so a failing draw is replayed by its seed and index
// without the draws before it.
#pragma once

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace moesim::test {

struct FuzzCase {
  std::uint64_t seed = 0;
  int index = 0;
  std::string stratum;  // what the draw aimed at, counted in the summary
  // Files written under the case's own folder before its commands run (relative paths,
  // sub-folders created): the inputs and what they refer to. kCaseFolder in a file's text
  // or an argument stands for the case folder's absolute path.
  std::vector<std::pair<std::string, std::string>> files;
  // moesim's arguments, each run in order from the case's folder while the ones before exit
  // 0; each must exit 0 or 2.
  std::vector<std::vector<std::string>> commands;
  // Strings that no command may print (values of files the importer must refuse unread).
  std::vector<std::string> canaries;
  // No command may create a file whose name starts with this anywhere under the case's
  // folder ("": no check): what a script's commands would create if anything ran.
  std::string forbidden_prefix;
};
inline constexpr const char* kCaseFolder = "@CASE@";

// A file's bytes ("" where it cannot be read): the generators' seeds and the driver's
// captured outputs.
inline std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// SplitMix64 (Steele et al. 2014): decorrelates the per-draw seeds of (seed, index).
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Draws by plain modulo so the sequence is the same under every standard library.
class Rng {
 public:
  explicit Rng(std::uint64_t s) : g_(s) {}
  // The generator of draw `index` of `seed`.
  static Rng of(std::uint64_t seed, int index) {
    return Rng(mix(seed ^ mix(static_cast<std::uint64_t>(index))));
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : g_() % n; }
  bool chance(double p) { return static_cast<double>(g_() % 1'000'000) < p * 1e6; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }
  std::int64_t pick(std::initializer_list<std::int64_t> v) {
    return *(v.begin() + below(v.size()));
  }
  const char* pick(std::initializer_list<const char*> v) { return *(v.begin() + below(v.size())); }

 private:
  std::mt19937_64 g_;
};

}  // namespace moesim::test
