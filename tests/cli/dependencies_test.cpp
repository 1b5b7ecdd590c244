// The architecture's one-way dependencies, checked on the sources: a folder may include
// only itself and the folders below it in
//   cli -> reports -> predict -> config -> schedules -> workload -> hw_models -> sim_core
// (calibration sits beside them: it may evaluate the hardware models whose parameters it
// fits, hw_models and sim_core; config reads its measurement files into its structs,
// predict drives the fits that need predictions (the corpus fit, infer) over its parameter
// tables, reports prints them, and cli runs its fitters). The launch-script importer sits a
// floor above config and below cli: only cli and the Python module use it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "support/helpers.hpp"

TEST_CASE("Library folders include only the folders below them", "[architecture]") {
  const std::vector<std::string> chain = {"sim_core", "hw_models", "workload", "schedules",
                                          "config",   "predict",   "reports",  "cli"};
  std::map<std::string, std::set<std::string>> allowed;
  for (std::size_t i = 0; i < chain.size(); ++i)
    for (std::size_t j = 0; j <= i; ++j) allowed[chain[i]].insert(chain[j]);
  allowed["calibration"] = {"calibration", "hw_models", "sim_core"};
  allowed["cli"].insert("calibration");
  allowed["predict"].insert(
      "calibration");  // the corpus fit and infer (predict/corpus.cpp, infer.cpp)
  allowed["reports"].insert("calibration");  // their parameter tables, printed
  allowed["config"].insert("calibration");
  allowed["importer"] = allowed["config"];
  allowed["importer"].insert("importer");
  allowed["cli"].insert("importer");
  allowed["python"] = allowed["reports"];  // the Python module, beside cli
  allowed["python"].insert("python");
  allowed["python"].insert("importer");

  // `#include "folder/...`: the folder of a project include, or empty.
  const auto included_folder = [](const std::string& line) -> std::string {
    const std::string tag = "#include \"";
    if (line.rfind(tag, 0) != 0) return "";
    const auto slash = line.find('/', tag.size());
    return slash == std::string::npos ? "" : line.substr(tag.size(), slash - tag.size());
  };
  std::size_t checked = 0;
  for (const auto& [folder, ok] : allowed) {
    for (const auto& e :
         std::filesystem::recursive_directory_iterator(moesim::test::source_path(folder))) {
      const auto ext = e.path().extension();
      if (ext != ".hpp" && ext != ".cpp" && ext != ".cu") continue;
      std::ifstream in(e.path());
      std::string line;
      while (std::getline(in, line)) {
        const std::string dep = included_folder(line);
        if (dep.empty()) continue;
        INFO(e.path().string() << ": " << line);
        CHECK(ok.count(dep) == 1);
        ++checked;
      }
    }
  }
  CHECK(checked > 20);
}

// The formatting layer formats: no file in reports/ writes a model parameter (a system's
// fields are set where the parameter tables live, calibration/), builds a hardware or
// communication model, or simulates (predict/ does, and reports/ prints its results).
TEST_CASE("reports/ neither sets model parameters nor prices anything itself", "[architecture]") {
  const std::vector<std::string> forbidden = {
      "hw_models::SystemSpec&",  // a mutable system: only calibration/ and config/ write one
      "hw_models::Param{",       // a parameter value made here
      "SystemSpec& s, double",   // a setter of a fitted parameter
      "hw_models/collectives.hpp", "hw_models/ep_flows.hpp",    "hw_models/flow_comm.hpp",
      "hw_models/topology.hpp",    "hw_models/ep_dispatch.hpp",
      "hw_models/compute.hpp",  // pricing models
      "predict::predict(",         "calibrate_corpus(",         "simulate_step(",
  };
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(moesim::test::source_path("reports"))) {
    const auto ext = e.path().extension();
    if (ext != ".hpp" && ext != ".cpp") continue;
    ++files;
    std::ifstream in(e.path());
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      for (const auto& f : forbidden) {
        if (line.find(f) == std::string::npos) continue;
        // A const reference reads a system; only a mutable one writes it.
        if (f == "hw_models::SystemSpec&" &&
            line.find("const hw_models::SystemSpec&") != std::string::npos)
          continue;
        INFO(e.path().string() << ":" << n << ": " << line);
        CHECK(false);
      }
    }
  }
  CHECK(files > 10);
}
