// The EP libraries, one model each on every system: each library's parameters are the
// joint fit of all its published tables across systems (calibration/ep_library_fit.hpp),
// the compiled-in profiles (calibration/profiles/ep-<lib>.json) are that fit, and every
// row of the tables comes within 15% of the flow model applied through its system's
// links (printed). `moesim comm` prices DeepEP on H100 as on H800: the same NICs bind.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calibration/ep_library_fit.hpp"
#include "config/load.hpp"
#include "predict/comm.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {

using Files = std::vector<std::pair<std::string, nlohmann::json>>;

Files measurement_files() {
  namespace fs = std::filesystem;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(test::source_path("calibration/measurements"))) {
    const auto n = e.path().filename().string();
    if (n.rfind("ep-", 0) == 0 && e.path().extension() == ".json") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  Files files;
  for (const auto& p : paths) {
    std::ifstream in(p);
    files.emplace_back(p.filename().string(), nlohmann::json::parse(in));
  }
  return files;
}

std::optional<hw_models::EpLibrary>& slot(hw_models::SystemSpec& s, const std::string& lib) {
  return lib == "hybridep"    ? s.ep_dispatch.hybridep
         : lib == "deepep-ll" ? s.ep_dispatch.deepep_low_latency
                              : s.ep_dispatch.deepep;
}

// The presets with every profile but the library's own (as `moesim calibrate ep` reads them).
calibration::EpSystemLookup without(const std::string& lib) {
  return [lib](const std::string& name) {
    auto s = config::load_system_preset(name);
    slot(s, lib).reset();
    return s;
  };
}

// Every {"value"} leaf of `fit` equals the profile's within 0.5%, and no leaf is missing.
void same_values(const nlohmann::json& fit, const nlohmann::json& profile, const std::string& at) {
  if (fit.is_object() && fit.contains("value")) {
    INFO(at);
    REQUIRE(profile.is_object());
    REQUIRE(profile.contains("value"));
    CHECK(profile["value"].get<double>() == Approx(fit["value"].get<double>()).epsilon(0.005));
    return;
  }
  for (auto it = fit.begin(); it != fit.end(); ++it) {
    INFO(at + "." + it.key() + " is in the fit but not in the compiled-in profile");
    REQUIRE(profile.contains(it.key()));
    same_values(*it, profile[it.key()], at + "." + it.key());
  }
  for (auto it = profile.begin(); it != profile.end(); ++it) {
    INFO(at + "." + it.key() + " is in the profile but no longer fitted");
    CHECK(fit.contains(it.key()));
  }
}

void check_library(const std::string& lib) {
  const Files files = measurement_files();
  const auto fit = calibration::fit_ep_library(lib, files, without(lib));
  std::ifstream in(test::source_path("calibration/profiles/ep-" + lib + ".json"));
  const auto profile = nlohmann::json::parse(in);
  const auto fitted = nlohmann::json::parse(calibration::ep_profile_json(fit).dump());
  same_values(fitted["parameters"], profile["parameters"], "parameters");
  for (const auto& f : fit.fits)
    std::cout << fmt::format("ep fit: {} = {:.4g}\n", f.parameter, f.value);

  // The compiled-in profile against every row (the systems as presets load them).
  const auto sys = [](const std::string& name) { return config::load_system_preset(name); };
  auto h100 = config::load_system_preset("h100");
  REQUIRE(slot(h100, lib).has_value());
  const hw_models::EpLibrary lib_params = *slot(h100, lib);
  const auto rows = calibration::ep_library_rows(lib, files, sys, lib_params);
  std::string table = fmt::format("\n{}: measured vs moesim flows, every system\n", lib);
  for (const auto& r : rows) {
    table += fmt::format("  {:<24} {:<50} {:<6} {:>7.1f} {:>7.1f} {:>+6.1f}%  {}\n", r.file, r.what,
                         r.link_kind, r.measured, r.model, r.error_pct, r.role);
    INFO(r.file << ": " << r.what << ": measured " << r.measured << ", model " << r.model);
    if (r.role == "check" || r.role == "fit") CHECK(test::within_table_tolerance(r.error_pct));
    if (r.role == "fit-sm" || r.role == "fit-peer")
      CHECK(std::abs(r.error_pct) <= 2);  // single-row fits
    if (r.role == "gap") CHECK_FALSE(test::within_table_tolerance(r.error_pct));
  }
  std::cout << table;
}

}  // namespace

TEST_CASE("DeepEP's normal kernels: one parameter set from H800, B200 and GB200",
          "[calibration][ep][table]") {
  check_library("deepep");
}

TEST_CASE("DeepEP's low-latency kernels: one fixed cost at DeepEP's link fractions",
          "[calibration][ep][table]") {
  check_library("deepep-ll");
}

TEST_CASE("HybridEP: one parameter set from H100 over InfiniBand and GB200",
          "[calibration][ep][table]") {
  check_library("hybridep");
}

TEST_CASE("Every system preset names the EP libraries' profiles", "[calibration][ep]") {
  for (const auto& name : config::preset_names(config::PresetKind::system)) {
    const auto s = config::load_system_preset(name);
    INFO(name);
    for (const char* p : {"ep-deepep", "ep-deepep-ll", "ep-hybridep"})
      CHECK(std::find(s.profiles.begin(), s.profiles.end(), p) != s.profiles.end());
    CHECK(s.ep_dispatch.deepep.has_value());
    CHECK(s.ep_dispatch.hybridep.has_value());
  }
}

TEST_CASE("moesim comm: DeepEP on H100 as on H800, the same 400G NICs binding",
          "[calibration][ep][comm]") {
  const auto time = [](const std::string& system, int ep) {
    predict::CommQuery q;
    q.system = system;
    q.op = "ep-dispatch";
    q.dispatcher = "deepep";
    q.ep = ep;
    q.tokens = 4096;
    q.hidden = 7168;
    q.topk = 8;
    return predict::comm(q).time_us;
  };
  std::string table =
      "\ndeepep dispatch, 4096 tokens x 7168, top-8 (us)\n   EP     h800     h100  h100/h800\n";
  for (const int ep : {8, 16, 32, 64}) {
    const double h800 = time("h800", ep), h100 = time("h100", ep);
    table += fmt::format("  {:>3} {:>8.1f} {:>8.1f} {:>9.3f}\n", ep, h800, h100, h100 / h800);
    INFO("EP" << ep << ": h800 " << h800 << " us, h100 " << h100 << " us");
    if (ep >= 16) CHECK(h100 <= 1.05 * h800);
    if (ep >= 32) CHECK(std::abs(h100 / h800 - 1) <= 0.15);
  }
  std::cout << table;
}
