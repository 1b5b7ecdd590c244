// `moesim report`'s HTML: the page's structure (the Vega runtime inlined, one spec per
// chart, nothing fetched from a network, text escaped), the timeline's aggregation of a
// traced step, the four pages through the CLI and its refusals. That the charts draw is
// checked in a browser (tests/browser/report_browser_test.sh).
#include <catch2/catch.hpp>

#include <regex>
#include <set>

#include <fmt/format.h>

#include "predict/predict.hpp"
#include "reports/html.hpp"
#include "reports/report.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using Json = nlohmann::ordered_json;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
    ++n;
  return n;
}

// The specs of a page, in order, parsed back (found by hand: std::regex recurses per
// character and overflows the stack on a timeline's spec).
std::vector<Json> specs_of(const std::string& html) {
  std::vector<Json> out;
  const std::string open =
      "<script type=\"application/json\" class=\"moesim-spec\" data-target=\"chart-";
  for (auto at = html.find(open); at != std::string::npos; at = html.find(open, at + 1)) {
    const auto id_end = html.find("-view\">", at);
    REQUIRE(id_end != std::string::npos);
    CHECK(html.substr(at + open.size(), id_end - at - open.size()) ==
          std::to_string(out.size() + 1));
    CHECK(count(html, fmt::format("<div class=\"vega\" id=\"chart-{}-view\"></div>",
                                  out.size() + 1)) == 1);
    const auto body = id_end + 7, end = html.find("</script>", body);
    REQUIRE(end != std::string::npos);
    out.push_back(Json::parse(html.substr(body, end - body)));
  }
  return out;
}

// No script, style sheet or image is fetched: no src or href naming a network address.
void check_self_contained(const std::string& html) {
  CHECK_FALSE(std::regex_search(
      html, std::regex(R"((src|href)\s*=\s*["']?\s*(https?:)?//)", std::regex::icase)));
  CHECK(count(html, "<script src") == 0);
  CHECK(count(html, "<link") == 0);
  // Every <script> element closes where it should: the runtime and the specs hold no
  // "</script".
  CHECK(count(html, "<script") == count(html, "</script>"));
}

// A small DeepSeek-like scenario (tests/reports/run_test.cpp's): 16 H100, TP2 PP2 VPP2 EP4.
std::string small_scenario(const std::string& name = "small-dsv3",
                           const std::string& dispatcher = "deepep") {
  return fmt::format(R"({{
    "name": "{}", "system": {{"base": "h100", "host": {{"load_factor": 1}}}}, "gpus": 16,
    "model": {{"base": "deepseek-v3", "num_hidden_layers": 4, "first_k_dense_replace": 1}},
    "training": {{"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 16, "precision": "fp8-blockwise"}},
    "parallelism": {{"tp": 2, "pp": 2, "vpp": 2, "ep": 4}},
    "framework": {{"dispatcher": "{}", "dispatcher_sms": 20, "cuda_graph_scope": []}}
  }})",
                     name, dispatcher);
}

}  // namespace

TEST_CASE("The HTML page inlines the Vega runtime and holds one spec per chart",
          "[reports][html]") {
  reports::HtmlPage page;
  page.title = "a <b>title</b> & more";
  page.subtitle = "it's \"quoted\"";
  page.facts = {{"step time", "1.000 s"}, {"<key>", "<value>"}};
  for (int i = 0; i < 3; ++i) {
    Json spec{{"width", 100 + i}, {"height", 50}};
    // Text a scenario name could carry must not end the <script> element.
    spec["data"] = Json::array(
        {{{"name", "t"}, {"values", Json::array({{{"label", "</script><!-- & <b>"}}})}}});
    page.charts.push_back({fmt::format("chart {}", i), "caption <i>", spec});
  }
  const std::string html = reports::html_page(page);

  CHECK(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  CHECK(html.find("<meta charset=\"utf-8\">") != std::string::npos);
  REQUIRE(html.size() > 10);
  CHECK(html.substr(html.size() - 8) == "</html>\n");
  CHECK(count(html, "<body>") == 1);
  CHECK(count(html, "</body>") == 1);
  CHECK(count(html, "<section class=\"chart\"") == 3);

  // The runtime, whole and once, before the charts; it is Vega 5 and defines `vega`.
  const std::string_view js = reports::vega_runtime_js();
  CHECK(js.size() > 300'000);
  CHECK(count(html, std::string(js)) == 1);
  CHECK(html.find(std::string(js)) < html.find("<section"));
  CHECK(reports::vega_version().substr(0, 2) == "5.");
  CHECK(js.find("root.vega = vega") != std::string_view::npos);
  CHECK(js.find("</script") == std::string_view::npos);
  CHECK(js.find("sourceMappingURL") == std::string_view::npos);

  // One spec per chart, read back as written.
  const auto specs = specs_of(html);
  REQUIRE(specs.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(specs[i] == page.charts[i].spec);
  // The runner draws each spec with the SVG renderer and marks the page.
  CHECK(html.find("new vega.View(vega.parse(JSON.parse(s.textContent))") != std::string::npos);
  CHECK(html.find("renderer: 'svg'") != std::string::npos);
  CHECK(html.find("body.dataset.charts = drawn === specs.length") != std::string::npos);

  // Text escaped: no markup from the title, facts or captions.
  CHECK(html.find("a &lt;b&gt;title&lt;/b&gt; &amp; more") != std::string::npos);
  CHECK(html.find("it&#39;s &quot;quoted&quot;") != std::string::npos);
  CHECK(html.find("<th>&lt;key&gt;</th><td>&lt;value&gt;</td>") != std::string::npos);
  CHECK(html.find("<b>") == std::string::npos);
  check_self_contained(html);
}

TEST_CASE("script_json escapes what could end a script element", "[reports][html]") {
  const Json j{{"a", "</script><!-- x & y >"}};
  const std::string s = reports::script_json(j);
  CHECK(s.find('<') == std::string::npos);
  CHECK(s.find('>') == std::string::npos);
  CHECK(s.find('&') == std::string::npos);
  CHECK(Json::parse(s) == j);
}

TEST_CASE("The timeline merges a traced step's kernels into bars within the budget",
          "[reports][html]") {
  const config::Scenario sc = config::load_scenario_text(small_scenario(), "test.json");
  const predict::Prediction p = predict::predict(sc, {true, false});
  const auto& step = p.step;
  const int rank = step.critical_rank;
  std::int64_t kernels = 0;
  for (const auto& s : step.trace)
    if (s.rank == rank && s.track >= 0 &&
        step.streams[static_cast<std::size_t>(s.track)].rfind("compute", 0) == 0)
      ++kernels;
  REQUIRE(kernels > 100);

  for (const std::size_t budget :
       {std::size_t{1000000}, std::size_t{200}, std::size_t{20}, std::size_t{1}}) {
    INFO("budget " << budget);
    const auto bars = reports::timeline_bars(step, rank, budget);
    REQUIRE_FALSE(bars.empty());
    // Past the budget, bars merge down to it (one per lane at least).
    if (budget < 1000000) CHECK(bars.size() <= std::max<std::size_t>(budget, 1));
    std::int64_t drawn = 0;
    for (std::size_t i = 0; i < bars.size(); ++i) {
      const auto& b = bars[i];
      drawn += b.kernels;
      CHECK(b.lane == "compute");
      CHECK(b.end_s >= b.start_s);
      CHECK(b.busy_s <= b.end_s - b.start_s + 1e-12);
      CHECK(b.kernels >= 1);
      CHECK((b.pass == "forward" || b.pass == "backward" || b.pass == "optimizer" ||
             b.pass == "mixed"));
      CHECK_FALSE(b.parts.empty());
      if (i > 0) CHECK(b.start_s >= bars[i - 1].end_s - 1e-12);  // in time order, not overlapping
    }
    CHECK(drawn == kernels);  // every kernel in exactly one bar
    CHECK(bars.back().end_s <= step.step_time_s + 1e-9);
    if (budget == 1000000) {
      // Unmerged: forward and backward bars, the optimizer last.
      std::set<std::string> passes;
      for (const auto& b : bars) passes.insert(b.pass);
      CHECK(passes.count("forward") == 1);
      CHECK(passes.count("backward") == 1);
      CHECK(passes.count("mixed") == 0);
    }
  }
}

TEST_CASE("moesim report writes the four pages", "[reports][html][cli]") {
  const test::TempFile a(small_scenario("small-a", "deepep"), "a.json");
  const test::TempFile b(small_scenario("small-b", "alltoall"), "b.json");
  const test::TempFile out("", "report.html");
  const auto page = [&](std::vector<std::string> args, std::size_t charts) {
    args.insert(args.begin(), "report");
    args.insert(args.end(), {"-o", out.path()});
    const auto r = test::run_moesim(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find(fmt::format("({} charts,", charts)) != std::string::npos);
    const std::string html = test::read_text(out.path());
    check_self_contained(html);
    CHECK(html.size() < 2'000'000 + reports::vega_runtime_js().size());
    const auto specs = specs_of(html);
    CHECK(specs.size() == charts);
    return specs;
  };

  SECTION("one scenario: breakdown, memory, modules, timeline") {
    const auto specs = page({a.path()}, 4);
    // The breakdown's seven categories add up to the step time.
    double sum = 0;
    for (const auto& v : specs[0]["data"][0]["values"]) sum += v["seconds"].get<double>();
    const config::Scenario sc = config::load_scenario_file(a.path());
    CHECK(sum == Approx(predict::predict(sc).step.step_time_s).epsilon(1e-9));
    CHECK(specs[0]["data"][0]["values"].size() == 7);
    CHECK(specs[3]["data"][0]["values"].size() > 10);
    // The timeline has a row per pipeline rank, the critical one first.
    std::set<std::string> lanes;
    for (const auto& v : specs[3]["data"][0]["values"]) lanes.insert(v["lane"].get<std::string>());
    CHECK(lanes.size() >= 2);
    CHECK(lanes.count("rank 0 (critical): compute") + lanes.count("rank 1 (critical): compute") ==
          1);
    CHECK(specs[3]["axes"][0]["labelOverlap"] == true);
  }
  SECTION("--diff: breakdowns side by side, contributions") {
    const auto specs = page({"--diff", a.path(), b.path()}, 2);
    CHECK(specs[0]["data"][0]["values"].size() == 14);  // two runs, seven categories
    CHECK_FALSE(specs[1]["data"][0]["values"].empty());
  }
  SECTION("--validate: error bars and predicted against measured") {
    const auto specs =
        page({"--validate", test::source_path("scenarios/journey/13-norm-quant-fusion.json")}, 2);
    CHECK(specs[0]["data"][0]["values"].size() == 1);
  }
  SECTION("--sweep: the objective against GPUs, the front") {
    const test::TempFile csv(
        "id,gpus,status,message,step_time_s,tflops_per_gpu,tokens_per_s_per_gpu,mfu,peak_memory_"
        "gib,"
        "reserved_memory_gib,fits_in_memory,breakdown.compute,breakdown.exposed_communication,"
        "breakdown.pipeline_bubble,breakdown.host_bound_idle,breakdown.other,sim_wall_s\n"
        "0,8,ok,,1,100,1000,0.1,50,50,true,1,0,0,0,0,0.1\n"
        "1,16,ok,,1,100,900,0.1,50,50,true,1,0,0,0,0,0.1\n"
        "2,16,does_not_fit,too big,,,,,90,90,false,,,,,,0.1\n"
        "3,32,ok,,1,100,400,0.1,50,50,true,1,0,0,0,0,0.1\n",
        "sweep.csv");
    const auto specs = page({"--sweep", csv.path()}, 1);
    const auto& rows = specs[0]["data"][0]["values"];
    REQUIRE(rows.size() == 3);  // the ok rows
    // Cluster throughput 8000, 14400, 12800: rows 0 and 1 are the front.
    CHECK(rows[0]["front"] == "Pareto front");
    CHECK(rows[1]["front"] == "Pareto front");
    CHECK(rows[2]["front"] == "other rows");
    CHECK_FALSE(rows[0].contains("colour"));  // nothing varies but the cluster size
  }
  SECTION("--sweep: the points coloured by the setting that varies") {
    const test::TempFile csv(
        "id,framework.dispatcher,gpus,status,message,step_time_s,tflops_per_gpu,tokens_per_s_per_"
        "gpu\n"
        "0,deepep,8,ok,,1,100,1000\n"
        "1,hybridep,8,ok,,1,100,1100\n"
        "2,deepep,16,ok,,1,100,900\n",
        "sweep2.csv");
    const auto specs = page({"--sweep", csv.path()}, 1);
    const auto& rows = specs[0]["data"][0]["values"];
    REQUIRE(rows.size() == 3);
    CHECK(rows[0]["colour"] == "deepep");
    CHECK(rows[1]["colour"] == "hybridep");
    bool legend = false;
    for (const auto& l : specs[0]["legends"])
      legend = legend || l.value("title", "") == "framework.dispatcher";
    CHECK(legend);
  }
}

TEST_CASE("moesim report refuses bad input with exit 2 and one line", "[reports][html][cli]") {
  const test::TempFile a(small_scenario(), "a.json");
  const auto refused = [](std::vector<std::string> args, const std::string& says) {
    args.insert(args.begin(), "report");
    const auto r = test::run_moesim(args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(says) != std::string::npos);
    CHECK(r.out.empty());
  };
  refused({a.path()}, "-o: give the HTML file to write");
  refused({"/nonexistent/x.json", "-o", "/tmp/x.html"}, "/nonexistent/x.json");
  refused({a.path(), "--bogus", "-o", "/tmp/x.html"}, "--bogus");
  refused({"--diff", a.path(), "-o", "/tmp/x.html"}, "give two scenarios");
  refused({"--diff", "--sweep", a.path(), a.path(), "-o", "/tmp/x.html"},
          "give one of --diff, --validate, --sweep");
  refused({"--sweep", a.path(), "--objective", "speed", "-o", "/tmp/x.html"},
          "unknown objective 'speed'");
  refused({"--sweep", a.path(), "-o", "/tmp/x.html"}, "not a moesim sweep CSV");
  const test::TempFile other("id,foo\n0,1\n", "other.csv");
  refused({"--sweep", other.path(), "-o", "/tmp/x.html"}, "not a CSV written by moesim sweep");
  refused({"--validate", test::source_path("scenarios/systems"), "-o", "/tmp/x.html"},
          "no scenario with a measured block");
  refused({a.path(), "-o", "/nonexistent/dir/x.html"}, "cannot write the file");
  // Options a page would ignore: a sweep's CSV is predicted already, --jobs is --validate's.
  refused({"--sweep", other.path(), "--uncalibrated", "-o", "/tmp/x.html"},
          "--uncalibrated: not with --sweep");
  refused({"--sweep", other.path(), "--set", "host.launch_us=1", "-o", "/tmp/x.html"},
          "--set: not with --sweep");
  refused({a.path(), "--jobs", "2", "-o", "/tmp/x.html"}, "--jobs: only with --validate");
  refused({a.path(), "--set", "host.nope=1", "-o", "/tmp/x.html"}, "has no number at host.nope");
}

TEST_CASE("moesim report --set: the page says it is a what-if", "[reports][html][cli]") {
  const test::TempFile out("", "what-if.html");
  const std::string run = test::source_path("scenarios/pairs/pr3868-qwen3-30b-h100-a2a-eager.json");
  for (const std::vector<std::string>& form :
       {std::vector<std::string>{run}, {"--validate", run, "--jobs", "1"}}) {
    std::vector<std::string> args{"report"};
    args.insert(args.end(), form.begin(), form.end());
    args.insert(args.end(), {"--set", "host.rank_contention=2", "-o", out.path()});
    const auto r = test::run_moesim(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    const std::string html = test::read_text(out.path());
    CHECK(html.find("host.rank_contention") != std::string::npos);
    CHECK(html.find("set on the command line (--set)") != std::string::npos);
  }
}
