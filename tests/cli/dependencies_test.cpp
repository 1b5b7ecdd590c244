// The architecture's one-way dependencies, checked on the sources: a folder may include
// only itself and the folders below it in
//   cli -> reports -> config -> schedules -> workload -> hw_models -> sim_core
// (calibration stands alone beside them and is used only by cli).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "support/helpers.hpp"

TEST_CASE("Library folders include only the folders below them", "[architecture]") {
  const std::vector<std::string> chain = {"sim_core", "hw_models", "workload", "schedules",
                                          "config",   "reports",   "cli"};
  std::map<std::string, std::set<std::string>> allowed;
  for (std::size_t i = 0; i < chain.size(); ++i)
    for (std::size_t j = 0; j <= i; ++j) allowed[chain[i]].insert(chain[j]);
  allowed["calibration"] = {"calibration"};
  allowed["cli"].insert("calibration");

  const std::regex include_re(R"re(#include\s+"([a-z_]+)/)re");
  std::size_t checked = 0;
  for (const auto& [folder, ok] : allowed) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(moesim::test::source_path(folder))) {
      const auto ext = e.path().extension();
      if (ext != ".hpp" && ext != ".cpp" && ext != ".cu") continue;
      std::ifstream in(e.path());
      std::string line;
      while (std::getline(in, line)) {
        std::smatch m;
        if (!std::regex_search(line, m, include_re)) continue;
        INFO(e.path().string() << ": " << line);
        CHECK(ok.count(m[1].str()) == 1);
        ++checked;
      }
    }
  }
  CHECK(checked > 20);
}
