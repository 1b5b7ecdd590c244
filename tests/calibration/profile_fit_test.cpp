// Calibration profiles: the fitters on synthetic measurements with known answers, the
// committed profiles as exactly what `moesim calibrate fit` makes of their measurement
// files, provenance of every file, the strict measurement reader, and the presets'
// overlay of their profiles.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "calibration/profile_fit.hpp"
#include "config/load.hpp"
#include "config/load_measurement.hpp"
#include "hw_models/compute.hpp"
#include "reports/run.hpp"
#include "support/helpers.hpp"

using namespace moesim;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> json_files(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(test::source_path(dir)))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

const calibration::ParameterFit& fit_of(const calibration::Profile& p,
                                        const std::string& parameter) {
  for (const auto& f : p.parameters)
    if (f.parameter == parameter) return f;
  FAIL("no fit of " << parameter);
  return p.parameters.front();
}

}  // namespace

TEST_CASE("The fitters recover the parameters a synthetic H100 was given",
          "[calibration][profile]") {
  const auto sys = config::load_system_preset("h100", {false});
  const hw_models::ComputeModel cm(sys);
  calibration::Measurement m;
  m.file = "synthetic.json";
  m.device = "synthetic H100";
  // GEMMs at eta 0.75, K0 600 (wave quantization applied); grouped at 0.7 (H100 has no
  // grouped_gemm_k: the grouped efficiency is a large-K limit too).
  const auto tflops = [&](double eta, std::int64_t mm, std::int64_t n, std::int64_t k,
                          std::int64_t g) {
    return 1979 * eta * cm.wave_efficiency(mm, n, g) * static_cast<double>(k) /
           (static_cast<double>(k) + 600);
  };
  for (auto [mm, n, k] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{4096, 7168, 2048},
                          {4096, 4096, 7168},
                          {8192, 8192, 8192},
                          {4096, 2112, 7168},
                          {4096, 7168, 16384}})
    m.gemm.push_back({"fp8", mm, n, k, 1, tflops(0.75, mm, n, k, 1), 0});
  for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{4096, 7168}, {7168, 2048}})
    m.grouped_gemm.push_back({"fp8", 2048, n, k, 8, tflops(0.7, 2048, n, k, 8), 0});
  // Streaming kernels: t = 3 us + bytes / (0.8 x 3.35 TB/s); quantize at 0.6.
  for (double mib : {1.0, 16.0, 256.0, 1024.0}) {
    const double b = mib * 1024 * 1024;
    m.memory.push_back({"copy", b, 0, 3 + b / (0.8 * 3.35e6)});
    m.memory.push_back({"quantize", b, 0, 3 + b / (0.6 * 3.35e6)});
    for (auto& p : m.memory) p.GBps = p.bytes / (p.time_us * 1e3);
  }
  // Graph replay: 4 us + 0.9 us per kernel.
  for (int n : {1, 10, 100, 1000}) m.graph.push_back({n, 0, 0, 2.5, 4 + 0.9 * n});
  m.attention = {{"fwd", 0.6 * 989, ""}, {"bwd", 0.4 * 989, ""}};
  const auto p = calibration::fit_profile("synthetic", {m}, sys, "h100");
  CHECK(fit_of(p, "efficiency.gemm_k_overhead_by_dtype.fp8").value == Approx(600).epsilon(1e-3));
  CHECK(fit_of(p, "efficiency.gemm.fp8").value == Approx(0.75).epsilon(1e-3));
  CHECK(fit_of(p, "efficiency.grouped_gemm.fp8").value == Approx(0.7).epsilon(1e-3));
  CHECK(fit_of(p, "efficiency.gemm.fp8").max_abs_residual_pct < 0.1);
  CHECK(fit_of(p, "efficiency.hbm").value == Approx(0.8).epsilon(1e-3));
  CHECK(fit_of(p, "efficiency.hbm_quantize").value == Approx(0.6).epsilon(1e-3));
  CHECK(fit_of(p, "efficiency.kernel_device_us").value == Approx(0.9).epsilon(1e-3));
  CHECK(fit_of(p, "efficiency.attention_fwd").value == Approx(0.6).epsilon(1e-3));
  CHECK(fit_of(p, "efficiency.attention_bwd").value == Approx(0.4).epsilon(1e-3));
  // GEMMs too small to fill the GPU are left out: one more point at M 64 changes nothing.
  auto more = m;
  more.gemm.push_back({"fp8", 64, 7168, 2048, 1, 50, 0});
  CHECK(fit_of(calibration::fit_profile("synthetic", {more}, sys, "h100"), "efficiency.gemm.fp8")
            .points == 5);
  // Nothing to fit, or a dtype the GPU lacks: refused.
  calibration::Measurement empty;
  empty.device = "x";
  CHECK_THROWS_AS(calibration::fit_profile("x", {empty}, sys, "h100"), std::invalid_argument);
  auto fp4 = m;
  fp4.gemm.front().dtype = "mxfp8";
  CHECK_THROWS_WITH(calibration::fit_profile("x", {fp4}, sys, "h100"),
                    Catch::Contains("no mxfp8 peak"));
}

TEST_CASE("Each committed profile is exactly what `moesim calibrate fit` makes of its measurements",
          "[calibration][profile]") {
  const auto profiles = json_files("calibration/profiles");
  REQUIRE(profiles.size() >= 3);
  for (const auto& path : profiles) {
    // The corpus profile's fit simulates every measured run dozens of times (about ten
    // minutes): the next test checks it against today's model instead.
    if (path.stem() == "corpus") continue;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const auto prof = nlohmann::json::parse(text.str());
    // The global-batch router's dispersion: `moesim calibrate routing` over the measured runs'
    // pairs (about ten seconds: only the pairs' trained runs are simulated again), its profile
    // the same but for the day it ran.
    if (path.stem() == "routing") {
      const auto out = std::filesystem::temp_directory_path() / "moesim-routing-profile.json";
      const auto r = test::run_moesim(
          {"calibrate", "routing", test::source_path("scenarios"), "-o", out.string()});
      INFO(path.string() << ": " << r.err);
      REQUIRE(r.status == 0);
      std::ifstream made_in(out);
      auto made = nlohmann::json::parse(made_in), kept = prof;
      made.erase("date");
      kept.erase("date");
      CHECK(made == kept);
      continue;
    }
    std::vector<std::string> args{"calibrate", "fit", "--name", prof["name"].get<std::string>()};
    for (const auto& m : prof["measurements"])
      args.push_back(test::source_path("calibration/measurements/" + m.get<std::string>()));
    // An EP library's profile: `moesim calibrate ep LIB` over every ep-*.json table.
    if (const auto stem = path.stem().string(); stem.rfind("ep-", 0) == 0)
      args = {"calibrate", "ep", stem.substr(3), "--measurements",
              test::source_path("calibration/measurements")};
    // The per-process step delay: `moesim calibrate jitter` (the fit's date is the day it ran).
    const bool jitter = path.stem() == "step-jitter";
    if (jitter)
      args = {"calibrate", "jitter", "--measurements",
              test::source_path("calibration/measurements/" +
                                prof["measurements"][0].get<std::string>())};
    const auto r = test::run_moesim(args);
    INFO(path.string() << ": " << r.err);
    REQUIRE(r.status == 0);
    if (jitter) {
      auto made = nlohmann::json::parse(r.out), kept = prof;
      made.erase("date");
      kept.erase("date");
      CHECK(made == kept);
    } else {
      CHECK(r.out == text.str());
    }
    CHECK(prof["name"] == path.stem().string());
  }
}

TEST_CASE("Every measurement and profile names its device, date and source",
          "[calibration][profile]") {
  for (const auto& path : json_files("calibration/measurements")) {
    INFO(path.string());
    const auto m = config::load_measurement_file(path.string());  // the strict reader
    CHECK_FALSE(m.device.empty());
    CHECK_FALSE(m.date.empty());
    CHECK_FALSE(m.source.empty());
    CHECK_FALSE(m.tool.empty());
  }
  for (const auto& path : json_files("calibration/profiles")) {
    INFO(path.string());
    std::ifstream in(path);
    const auto j = nlohmann::json::parse(in);
    for (const char* k : {"device", "date", "source", "tool", "system"})
      CHECK_FALSE(j[k].get<std::string>().empty());
    for (const auto& f : j["fits"]) CHECK(f["points"].get<int>() > 0);
  }
}

TEST_CASE("Measurement files are read strictly", "[calibration][profile][errors]") {
  const auto err = [](const std::string& text) {
    try {
      config::load_measurement_text(text, "m.json");
    } catch (const config::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = R"("device": "d", "date": "2026", "tool": "t", "source": "s")";
  CHECK_THAT(
      err("{" + head + R"(, "gemm": [{"dtype": "fp16", "m": 1, "n": 1, "k": 1, "tflops": 1}]})"),
      Catch::Contains("m.json: gemm[0].dtype: unknown GEMM dtype 'fp16'"));
  CHECK_THAT(err(R"({"device": "d", "tool": "t", "source": "s"})"), Catch::Contains("date"));
  CHECK_THAT(err("{" + head + R"(, "memroy": []})"), Catch::Contains("memroy"));
  CHECK_THAT(err("{" + head + R"(, "graph": [{"nodes": 0, "replay_us": 1}]})"),
             Catch::Contains("graph[0].nodes"));
  CHECK(err("{" + head + "}") == "no error");
}

TEST_CASE("A preset's profiles replace the values they fit; uncalibrated reads it as written",
          "[calibration][profile][config]") {
  const auto cal = config::load_system_preset("h800");
  const auto raw = config::load_system_preset("h800", {false});
  const auto fp8 = hw_models::Dtype::fp8;
  CHECK(raw.efficiency.gemm.at(fp8).value == 0.7089);
  CHECK(cal.efficiency.gemm.at(fp8).value == 0.7783);
  CHECK_THAT(cal.efficiency.gemm.at(fp8).source,
             Catch::Contains("calibration/profiles/h800-deepgemm.json"));
  CHECK(cal.efficiency.grouped_gemm.at(fp8).value == 0.751);
  CHECK(cal.efficiency.attention_fwd.value ==
        raw.efficiency.attention_fwd.value);  // not in the profile
  // An inline system can drop or name profiles; an unknown one is refused with the list.
  auto j = nlohmann::json::parse(
      test::read_text(test::source_path("scenarios/h800/dsv3-production.json")));
  j["system"] = {{"base", "h800"}, {"profiles", nlohmann::json::array()}};
  CHECK(config::load_scenario_text(j.dump(), "test.json").system.efficiency.gemm.at(fp8).value ==
        0.7089);
  j["system"]["profiles"] = {"h800-deepgem"};
  const auto e = test::load_error(j);
  CHECK(e.path() == "system.profiles[0]");
  CHECK_THAT(e.message(),
             Catch::Contains("unknown system calibration profile 'h800-deepgem'; known:"));
  // The global-batch router's dispersion is a calibration profile, but not a system's.
  j["system"]["profiles"] = {"routing"};
  const auto r = test::load_error(j);
  CHECK_THAT(r.message(), Catch::Contains("'routing' (it applies to routing, not to a system)"));
  const std::string known = r.message().substr(r.message().find("known: "));
  CHECK_THAT(known, Catch::Contains("corpus") && !Catch::Contains("routing"));
}

TEST_CASE("calibrate: fit writes a profile, run explains what it needs", "[calibration][cli]") {
  test::TempFile out("", "p.json");
  const auto r = test::run_moesim(
      {"calibrate", "fit", test::source_path("calibration/measurements/attention-gb200.json"), "-o",
       out.path()});
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("2 parameters of gb200-nvl72"));
  std::ifstream in(out.path());
  CHECK(nlohmann::json::parse(in)["name"] == "p");
  // A measurement without a system needs --system; a bad file is input error 2.
  const auto bad = test::run_moesim(
      {"calibrate", "fit", test::source_path("calibration/measurements/nccl-busbw.json")});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("give --system"));
  // Here there is no GPU (and, in the test binary's folder, no moesim-calib): exit 1 and why.
  const auto run = test::run_moesim({"calibrate", "run", "-o", out.path()});
  CHECK(run.status == 1);
  CHECK_THAT(run.err, Catch::Contains("moesim calibrate run"));
}

// calibration/profiles/corpus.json records each run's in-sample error at its fitted values;
// the model must still predict them (re-run `moesim calibrate corpus -o
// calibration/profiles/corpus.json` after a model change), and every parameter must move
// some run.
TEST_CASE("The corpus profile records what the model predicts today",
          "[calibration][profile][corpus]") {
  std::ifstream in(test::source_path("calibration/profiles/corpus.json"));
  const auto prof = nlohmann::json::parse(in);
  REQUIRE(prof["runs"].size() >= 30);
  for (const auto& f : prof["fits"]) CHECK(f["points"].get<int>() > 0);
  for (const auto& row : prof["runs"]) {
    const auto sc = config::load_scenario_file(test::source_path(row["file"].get<std::string>()));
    const double pred = predict::predicted_metric(*sc.measured, predict::predict(sc));
    const double err = 100 * (pred / sc.measured->value - 1);
    INFO(row["run"].get<std::string>()
         << ": recorded " << row["in_sample_pct"] << "%, today " << err << "%");
    CHECK(err == Approx(row["in_sample_pct"].get<double>()).margin(0.5));
  }
}
