// `moesim plan` (issue #26 items 1-2) on Qwen3-30B-A3B at 8 H100: the space as
// cli/plan.cpp states it, every candidate accounted for, and the top K those of a
// brute-force sweep file over the same space: the branch and bound (predict/plan.hpp)
// and the recompute ladder's dominance prune nothing that belongs in the top.
#include <catch2/catch.hpp>

#include "config/decisions.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "reports/sweep.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;

namespace {
std::int64_t sum(const Json& j) {
  std::int64_t n = 0;
  for (const auto& [k, v] : j.items()) n += v.get<std::int64_t>();
  return n;
}
}  // namespace

TEST_CASE("plan: every candidate of the space accounted for, the top K exact", "[cli][plan]") {
  const std::string scenario = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");
  // The recompute ladder cli/plan.cpp gives an MoE model with GQA attention.
  const Json ladder = Json::parse(R"([[], ["moe_act"], ["moe_act", "layernorm"],
                                      ["moe_act", "layernorm", "core_attn"], ["full"]])");
  // The same space as a sweep file (below), in a folder that takes the CSVs too.
  const Json sweep{{"name", "brute"},
                   {"base", scenario},
                   {"grid",
                    {{"gpus", {8}},
                     {"training.micro_batch_size", {1, 2}},
                     {"framework.recompute_modules", ladder}}},
                   {"layouts",
                    {{"tp", {1, 2, 4, 8}},
                     {"pp", {1, 2, 4, 8}},
                     {"vpp", {1, 2, 4, 8}},
                     {"ep", {1, 2, 4, 8}},
                     {"etp", {1}},
                     {"cp", {1, 2}},
                     {"pp_split", Json::array({"even", "embedding_loss"})}}}};
  const test::TempFile brute_file(sweep.dump(2), "brute.json");
  const auto in_dir = [&](const char* name) {
    return (std::filesystem::path(brute_file.path()).parent_path() / name).string();
  };
  const auto run =
      test::run_moesim({"plan", scenario, "--gpus", "8", "--settings", "recompute", "--json",
                        "--top", "3", "-o", in_dir("plan.csv"), "--jobs", "2"});
  REQUIRE(run.status == 0);
  const auto j = Json::parse(run.out);
  // MBS {1, 2} x TP {1, 2, 4, 8} x PP {1, 2, 4, 8} x VPP {1, 2, 4, 8} x EP {1, 2, 4, 8} x
  // ETP {1} x CP {1, 2} (4K tokens a sequence) x the two splits of the layers: 2,048
  // layouts, x 5 recompute rungs; each candidate has one fate.
  CHECK(j["combinations"] == 2048 * 5);
  CHECK(j["fates"]["rule"] == sum(j["pruned_layouts"]));
  CHECK(j["pruned_layouts"]["split_repeats_even"].get<std::int64_t>() > 0);
  CHECK(sum(j["fates"]) == 2048 * 5);
  CHECK(j["simulated"] ==
        j["fates"]["simulated"].get<std::int64_t>() + j["fates"]["error"].get<std::int64_t>());
  // The bound and the ladder prune: most candidates that fit are never simulated, and
  // none beats a bound of its own.
  CHECK(j["fates"]["bound"].get<std::int64_t>() > 4 * j["simulated"].get<std::int64_t>());
  CHECK(j["bound_violations"].empty());
  CHECK(j["top_exact"] == (j["fates"]["error"] == 0));
  REQUIRE(j["top"].size() == 3);

  // The brute-force sweep: its top 3 values are the plan's. (Its top may hold costlier
  // rungs of the same layout only where they tie with the plan's; a costlier rung that
  // beats a cheaper one would break the ladder's dominance and show here.)
  const auto brute = test::run_moesim({"sweep", brute_file.path(), "-o", in_dir("brute.csv"),
                                       "--json", "--top", "20", "--jobs", "2"});
  REQUIRE(brute.status == 0);
  const auto b = Json::parse(brute.out);
  std::vector<double> values;
  for (const auto& r : b["top"]) {
    const double v = r["tokens_per_s_per_gpu"].get<double>();
    if (values.empty() || v != values.back()) values.push_back(v);
  }
  REQUIRE(values.size() >= 3);
  for (std::size_t k = 0; k < 3; ++k)
    CHECK(j["top"][k]["tokens_per_s_per_gpu"].get<double>() == values[k]);
  CHECK(b["top"][0]["parallelism.tp"] == j["top"][0]["parallelism.tp"]);
  CHECK(b["top"][0]["parallelism.ep"] == j["top"][0]["parallelism.ep"]);
  CHECK(b["top"][0]["framework.recompute_modules"] == j["top"][0]["framework.recompute_modules"]);

  // The CSV: every evaluated candidate, no simulated one above the top; every pruned one
  // says why; the same fates whatever the thread count.
  const auto csv = reports::read_sweep_csv(in_dir("plan.csv"));
  CHECK(static_cast<std::int64_t>(csv.rows.size()) == j["evaluated"].get<std::int64_t>());
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(csv.header.begin(), csv.header.end(), name) -
                                    csv.header.begin());
  };
  for (const auto& r : csv.rows) {
    const std::string& status = r.fields[col("status")];
    if (status == "ok")
      CHECK(std::stod(r.fields[col("tokens_per_s_per_gpu")]) <=
            j["top"][0]["tokens_per_s_per_gpu"].get<double>());
    if (status == "bound")
      CHECK_THAT(r.fields[col("message")], Catch::Contains("cannot beat the top 3's last"));
    if (status == "dominated")
      CHECK_THAT(r.fields[col("message")], Catch::Contains("fits and recomputes less"));
  }
  // The ladder: per layout and micro-batch size, the rungs below the first that fits do not
  // fit, and no rung above it is simulated (it is dominated, or pruned by its bound).
  std::map<std::string, std::vector<std::pair<std::size_t, std::string>>> by_layout;
  for (const auto& r : csv.rows) {
    std::string key;
    for (const char* c :
         {"training.micro_batch_size", "parallelism.tp", "parallelism.pp", "parallelism.vpp",
          "parallelism.ep", "parallelism.cp", "parallelism.pp_layout"})
      key += r.fields[col(c)] + "|";
    const auto rung = static_cast<std::size_t>(
        std::find(ladder.begin(), ladder.end(),
                  Json::parse(r.fields[col("framework.recompute_modules")])) -
        ladder.begin());
    REQUIRE(rung < ladder.size());
    by_layout[key].emplace_back(rung, r.fields[col("status")]);
  }
  int layouts_simulated = 0;
  for (const auto& [key, rungs] : by_layout) {
    std::size_t first_ok = ladder.size(), last_unfit = 0, oks = 0;
    bool unfit = false;
    for (const auto& [rung, status] : rungs) {
      if (status == "ok") ++oks, first_ok = std::min(first_ok, rung);
      if (status == "does_not_fit") unfit = true, last_unfit = std::max(last_unfit, rung);
    }
    INFO(key);
    CHECK(oks <= 1);
    if (oks == 1 && unfit) CHECK(last_unfit < first_ok);
    layouts_simulated += oks == 1 ? 1 : 0;
  }
  CHECK(layouts_simulated > 0);
  // --given: the scenario as given (here TP 2, PP 2, EP 4 at micro-batch size 1 on the 8
  // GPUs, recomputing whole layers, the ladder's last rung: Qwen3's trained routing loads the
  // hottest EP rank 1.27 x at EP 4, and the rungs below it do not fit) ranked among the
  // candidates. Its rank is 1 + the
  // brute-force rows better than it among those the plan's space holds: for each layout
  // and micro-batch size, the first rung of the ladder that simulated.
  Json given = Json::parse(test::read_text(scenario));
  given["gpus"] = 8;
  given["training"]["micro_batch_size"] = 1;
  given["parallelism"] = {{"tp", 2}, {"pp", 2}, {"ep", 4}};
  given["framework"]["recompute_modules"] = {"full"};
  const test::TempFile given_file(given.dump(2), "given.json");
  const auto ranked =
      test::run_moesim({"plan", given_file.path(), "--settings", "recompute", "--json", "--top",
                        "3", "-o", in_dir("plan-given.csv"), "--jobs", "2", "--given"});
  REQUIRE(ranked.status == 0);
  const auto g = Json::parse(ranked.out)["given"];
  REQUIRE(g["status"] == "ok");
  CHECK(g["parallelism.ep"] == 4);
  CHECK(g["framework.recompute_modules"] == Json::parse(R"(["full"])"));
  const double v = g["tokens_per_s_per_gpu"].get<double>();
  const auto brute_csv = reports::read_sweep_csv(in_dir("brute.csv"));
  const auto bcol = [&](const std::string& name) {
    return static_cast<std::size_t>(
        std::find(brute_csv.header.begin(), brute_csv.header.end(), name) -
        brute_csv.header.begin());
  };
  std::map<std::vector<std::string>, std::pair<std::size_t, double>>
      first_rung;  // layout -> rung, value
  for (const auto& r : brute_csv.rows) {
    if (r.fields[bcol("status")] != "ok") continue;
    const auto rung = static_cast<std::size_t>(
        std::find(ladder.begin(), ladder.end(),
                  Json::parse(r.fields[bcol("framework.recompute_modules")])) -
        ladder.begin());
    std::vector<std::string> key(r.fields.begin() + 1,
                                 r.fields.begin() + static_cast<long>(bcol("status")));
    key[bcol("framework.recompute_modules") - 1].clear();
    const double value = std::stod(r.fields[bcol("tokens_per_s_per_gpu")]);
    const auto [it, fresh] = first_rung.try_emplace(key, rung, value);
    if (!fresh && rung < it->second.first) it->second = {rung, value};
  }
  std::int64_t better = 0;
  for (const auto& [key, rv] : first_rung) better += rv.second > v;
  CHECK(g["rank"] == better + 1);
  CHECK(better > 3);  // below the top 3: the search went on past them to rank it
  CHECK(g["rank_exact"] == true);
  CHECK(g["simulated_for_rank"].get<std::int64_t>() > 0);
  // The evidence for the top 3, all above it (issue #44 item 4): each gain over the given
  // row, the columns that differ (the given's unset vpp, etp and cp at their defaults do not),
  // the decisions behind them and the corpus's verdict.
  REQUIRE(g["evidence"].size() == 3);
  for (const auto& e : g["evidence"]) {
    CHECK(e["gain_pct"].get<double>() > 0);
    for (const auto& c : e["columns"]) {
      CHECK(c != "parallelism.etp");
      CHECK(c != "parallelism.cp");
    }
    CHECK_FALSE(e["decisions"].empty());
    const std::string support = e["support"];
    CHECK(config::claim_support_names().find(support).has_value());
    // The model's band on the gain (predict/bands.hpp), around it.
    REQUIRE(e["band_pct"].size() == 2);
    CHECK(e["band_pct"][0].get<double>() < e["gain_pct"].get<double>());
    CHECK(e["band_pct"][1].get<double>() > e["gain_pct"].get<double>());
    CHECK(e["within_band"] == (e["band_pct"][0].get<double>() <= 0));
  }
  // Why the winner wins: its evidence over each other top row, the gain of the best's
  // objective over the other's, the columns where they differ, the band on it.
  const auto top3 = Json::parse(ranked.out)["top"];
  const auto winner = Json::parse(ranked.out)["winner"];
  CHECK(winner["id"] == top3[0]["id"]);
  REQUIRE(winner["over"].size() == 2);
  for (std::size_t k = 0; k < 2; ++k) {
    const auto& e = winner["over"][k];
    CHECK(e["id"] == top3[k + 1]["id"]);
    CHECK(e["gain_pct"].get<double>() ==
          Approx(100 * (top3[0]["tokens_per_s_per_gpu"].get<double>() /
                            top3[k + 1]["tokens_per_s_per_gpu"].get<double>() -
                        1)));
    CHECK(e["gain_pct"].get<double>() >= 0);
    for (const auto& c : e["columns"])
      CHECK(top3[0][c.get<std::string>()] != top3[k + 1][c.get<std::string>()]);
    CHECK(e["within_band"] == (e["band_pct"][0].get<double>() <= 0));
  }
  const auto text_given =
      test::run_moesim({"plan", given_file.path(), "--settings", "recompute", "--top", "3", "-o",
                        in_dir("plan-given-text.csv"), "--jobs", "2", "--given"});
  CHECK_THAT(text_given.out, Catch::Contains("evidence for the candidates above it"));
  CHECK_THAT(text_given.out, Catch::Contains("the model's 80% band"));
  // The best's own step band, from the measured runs of the scenario's model.
  CHECK_THAT(text_given.out, Catch::Contains("the best's step"));
  CHECK_THAT(text_given.out, Catch::Contains("s, from the out-of-sample errors of the"));
  CHECK_THAT(test::run_moesim({"plan", given_file.path(), "--settings", "recompute", "--top", "3",
                               "-o", in_dir("plan-given.csv"), "--jobs", "2", "--given", "--html",
                               in_dir("plan.html")})
                 .out,
             Catch::Contains(fmt::format("rank {} (exact", better + 1)));
  // The plan's page: the fates, the top 3 and the scenario as given with its rank, why the
  // winner wins (against the scenario as given and the other two, each decision's record,
  // the winner's band and how the bands hold), and four charts (the breakdowns, the
  // winner's step minus the given's by term, fates, simulated against the bound).
  const std::string page = test::read_text(in_dir("plan.html"));
  CHECK_THAT(page, Catch::Contains("Where the candidates went") &&
                       Catch::Contains("Simulated against the bound") &&
                       Catch::Contains(fmt::format("rank {}", better + 1)) &&
                       Catch::Contains("top 3"));
  CHECK_THAT(page, Catch::Contains("Why the winner wins") &&
                       Catch::Contains("How well the deciding decisions") &&
                       Catch::Contains("What the winner changes") &&
                       Catch::Contains("the winner&#39;s step") &&
                       Catch::Contains("how the bands hold"));
  CHECK_THAT(page,
             Catch::Contains("<td>the scenario as given</td>") &&
                 Catch::Contains(fmt::format("<td>#{}</td>", top3[1]["id"].get<std::int64_t>())) &&
                 Catch::Contains(fmt::format("<td>#{}</td>", top3[2]["id"].get<std::int64_t>())));
  std::size_t specs = 0;
  for (auto at = page.find("class=\"moesim-spec\""); at != std::string::npos;
       at = page.find("class=\"moesim-spec\"", at + 1))
    ++specs;
  CHECK(specs == 4);
  // --given-limit: the ranking stops after that many simulations of its own; the rank is
  // then a lower bound, and the top K are the same.
  const auto capped = test::run_moesim({"plan", given_file.path(), "--settings", "recompute",
                                        "--json", "--top", "3", "-o", in_dir("plan-capped.csv"),
                                        "--jobs", "2", "--given", "--given-limit", "2"});
  REQUIRE(capped.status == 0);
  const auto c = Json::parse(capped.out);
  CHECK(c["given"]["rank_exact"] == false);
  CHECK(c["given"]["simulated_for_rank"] == 2);
  CHECK(c["given"]["rank"].get<std::int64_t>() <= better + 1);
  CHECK(c["top"] == Json::parse(ranked.out)["top"]);
  CHECK(test::run_moesim({"plan", given_file.path(), "--given-limit", "2"}).status == 2);

  const auto one =
      test::run_moesim({"plan", scenario, "--gpus", "8", "--settings", "recompute", "--json",
                        "--top", "3", "-o", in_dir("plan1.csv"), "--jobs", "1"});
  REQUIRE(one.status == 0);
  const auto csv1 = reports::read_sweep_csv(in_dir("plan1.csv"));
  REQUIRE(csv1.rows.size() == csv.rows.size());
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    CHECK(csv1.rows[i].id == csv.rows[i].id);
    CHECK(csv1.rows[i].fields[col("status")] == csv.rows[i].fields[col("status")]);
  }
}

TEST_CASE("plan: settings inert in a candidate make it a duplicate, not a second row to simulate",
          "[cli][plan]") {
  // Qwen3-30B on 8 H100 with TP overlap varied: at TP 1 tp_comm_overlap true repeats
  // false (config/inert_settings.hpp), so only false is evaluated there.
  const std::string scenario = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");
  const test::TempFile out("", "plan-inert.csv");
  const auto run = test::run_moesim({"plan", scenario, "--gpus", "8", "--settings", "tp_overlap",
                                     "--json", "--top", "2", "-o", out.path(), "--jobs", "2"});
  REQUIRE(run.status == 0);
  const auto j = Json::parse(run.out);
  CHECK(j["settings"] == Json::parse(R"(["framework.tp_comm_overlap"])"));
  CHECK(j["fates"]["duplicate"].get<std::int64_t>() > 0);
  CHECK(j["bound_violations"].empty());
  const auto csv = reports::read_sweep_csv(out.path());
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(csv.header.begin(), csv.header.end(), name) -
                                    csv.header.begin());
  };
  for (const auto& r : csv.rows)
    if (r.fields[col("status")] == "duplicate") {
      CHECK(r.fields[col("parallelism.tp")] == "1");
      CHECK(r.fields[col("framework.tp_comm_overlap")] == "true");
    }
}

TEST_CASE("plan: the dispatcher's SMs, varied, are a device setting inert under NCCL's all-to-all",
          "[cli][plan]") {
  // Qwen3-30B on 8 H100: the dispatcher and its SMs varied. Under alltoall the SMs are
  // inert: only the first value (16) is evaluated there, the others are duplicates; under
  // DeepEP and HybridEP every value is a candidate of its own, and no simulated candidate
  // beats its bound (the layout bound takes the best over the SM counts).
  const std::string scenario = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");
  const test::TempFile out("", "plan-sms.csv");
  const auto run =
      test::run_moesim({"plan", scenario, "--gpus", "8", "--settings", "dispatcher,dispatcher_sms",
                        "--json", "--top", "3", "-o", out.path(), "--jobs", "2"});
  REQUIRE(run.status == 0);
  const auto j = Json::parse(run.out);
  CHECK(j["settings"] == Json::parse(R"(["framework.dispatcher", "framework.dispatcher_sms"])"));
  CHECK(j["bound_violations"].empty());
  const auto csv = reports::read_sweep_csv(out.path());
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(csv.header.begin(), csv.header.end(), name) -
                                    csv.header.begin());
  };
  std::set<std::string> library_sms;
  std::int64_t duplicates = 0;
  for (const auto& r : csv.rows) {
    const std::string d = r.fields[col("framework.dispatcher")],
                      sms = r.fields[col("framework.dispatcher_sms")];
    if (r.fields[col("status")] == "duplicate") {
      ++duplicates;
      CHECK(d == "alltoall");
      CHECK(sms != "16");
    } else if (d != "alltoall" && r.fields[col("status")] != "invalid") {
      library_sms.insert(sms);
    }
  }
  CHECK(duplicates > 0);
  CHECK(library_sms == std::set<std::string>{"16", "24", "32", "48"});
}

TEST_CASE("plan: bad options are refused", "[cli][plan][errors]") {
  const std::string scenario = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");
  auto r = test::run_moesim({"plan", scenario, "--objective", "speed"});
  CHECK(r.status == 2);
  // An option's error names the option on the command line, not a file's "(top level)".
  CHECK_THAT(r.err, Catch::Contains("<command line>: --objective: unknown objective 'speed'"));
  r = test::run_moesim({"plan", scenario, "--system", "h900"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("<command line>: --system: unknown system preset 'h900'"));
  r = test::run_moesim({"plan", scenario, "--objective", "days"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err,
             Catch::Contains("'days' needs a token budget: --token-budget, or the scenario's"));
  r = test::run_moesim({"plan", scenario, "--settings", "offload"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("<command line>: --settings: unknown setting group 'offload'"));
}

TEST_CASE("plan --set: ranked on a what-if, said, and never resumed under other options",
          "[cli][plan]") {
  const std::string scenario = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");
  const test::TempFile out_file("", "plan-set.csv");
  const std::string out = out_file.path();
  const std::vector<std::string> args = {"plan", scenario, "--gpus", "8",  "--settings",
                                         "none", "--top",  "3",      "-o", out};
  const auto with = [&](std::vector<std::string> extra) {
    auto a = args;
    a.insert(a.end(), extra.begin(), extra.end());
    return test::run_moesim(a);
  };
  auto r = with({"--json", "--set", "host.rank_contention=2"});
  REQUIRE(r.status == 0);
  const auto j = Json::parse(r.out);
  CHECK(j["predicted_with"] == "calibrated; set host.rank_contention=2");
  const auto base = Json::parse(with({"--json"}).out);
  CHECK(base["predicted_with"] == "calibrated");
  // The host twice as loaded: the best candidate is no faster than the calibrated model's.
  CHECK(j["top"][0]["step_time_s"].get<double>() >= base["top"][0]["step_time_s"].get<double>());
  r = with({"--set", "host.rank_contention=2"});
  CHECK_THAT(r.out, Catch::Contains("predicted with: calibrated; set host.rank_contention=2 (a "
                                    "what-if: the bands and the evidence behind gains describe "
                                    "the calibrated model)"));
  // The CSV holds the what-if's rows; resuming it without the set is refused.
  r = with({"--resume"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("where this plan predicts with 'calibrated'"));
}

TEST_CASE("plan on an announced system: the top K's caveats say it is a projection (issue #48)",
          "[cli][plan]") {
  const test::TempFile out("", "plan-announced.csv"), page("", "plan-announced.html");
  const std::vector<std::string> args = {
      "plan",       test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json"),
      "--gpus",     "8",
      "--system",   "vr200-nvl72",
      "--settings", "none",
      "--top",      "2",
      "-o",         out.path()};
  auto r = test::run_moesim(args);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("caveats of the top 2 (priced beyond what was measured):\n  "
                                    "every row: system vr200-nvl72 is announced hardware"));
  auto json_args = args;
  json_args.insert(json_args.end(), {"--resume", "--json", "--html", page.path()});
  r = test::run_moesim(json_args);
  REQUIRE(r.status == 0);
  const auto j = Json::parse(r.out);
  REQUIRE_FALSE(j["caveats"].empty());
  CHECK(j["caveats"][0]["rows"] == 2);
  CHECK(j["caveats"][0]["of"] == 2);
  CHECK_THAT(j["top"][0]["caveats"][0].get<std::string>(),
             Catch::StartsWith("system vr200-nvl72 is announced"));
  CHECK_THAT(test::read_text(page.path()), Catch::Contains("caveat of every row"));
}

TEST_CASE("plan: nothing fits, so it says the smallest cluster that would", "[cli][plan]") {
  // Qwen3-30B-A3B's weights, gradients and Adam states alone are some 550 GB: 2 H100 hold no
  // layout.
  const test::TempFile out("", "plan-nofit.csv");
  const auto r =
      test::run_moesim({"plan", test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json"),
                        "--gpus", "2", "--top", "3", "-o", out.path()});
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out,
             Catch::Contains("nothing fits on 2 GPUs: the least memory a candidate needs is"));
  CHECK_THAT(r.out, Catch::Contains("the smallest cluster where a candidate fits: 8 GPUs"));
  // The same at 8 GPUs has a ranking (the doubling stops at the first size that fits).
  const auto j = Json::parse(
      test::run_moesim({"plan", test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json"),
                        "--gpus", "4", "--top", "1", "--settings", "none", "--json", "-o",
                        out.path()})
          .out);
  CHECK(j["smallest_fitting_gpus"] == 8);
  CHECK(j["fates"]["simulated"] == 0);
}

TEST_CASE("plan: no layout keeps to the rules, so it says which rules dropped them",
          "[cli][plan]") {
  // 3 GPUs: tp x pp x cp must divide 3, so only tp = pp = cp = 1 (DP 3) is left, and
  // Qwen3-30B-A3B's global batch (not a multiple of 3) drops that too.
  const test::TempFile out("", "plan-norule.csv"), page("", "plan-norule.html");
  const auto r =
      test::run_moesim({"plan", test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json"),
                        "--gpus", "3", "--top", "3", "-o", out.path(), "--html", page.path()});
  REQUIRE(r.status == 0);
  // The page lists them among its facts (pruned_layouts, in the rules' order).
  CHECK_THAT(test::read_text(page.path()),
             Catch::Contains("layout rules</th><td>gpus_over_tp_pp_cp 6720, ep_outside_stage "
                             "480, batch_over_dp 480</td>"));
  CHECK_THAT(r.out, Catch::Contains("(0 layouts kept by the rules x 30 settings combinations"));
  CHECK_THAT(r.out, Catch::Contains("no layout of 3 GPUs keeps to the rules"));
  CHECK_THAT(r.out, Catch::Contains("gpus_over_tp_pp_cp: gpus not divisible by tp x pp x cp"));
  CHECK_THAT(r.out, Catch::Contains(
                        "batch_over_dp: global_batch_size not divisible by micro_batch_size x dp"));
  // Where layouts are left, the rules' counts are one line, as a sweep's summary has them.
  const auto kept =
      test::run_moesim({"plan", test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json"),
                        "--gpus", "8", "--top", "1", "--settings", "none", "-o", out.path()});
  REQUIRE(kept.status == 0);
  CHECK_THAT(kept.out, Catch::Contains("\n  layout rules: "));
  CHECK_THAT(kept.out, !Catch::Contains("keeps to the rules"));
}

TEST_CASE("plan: a cost objective takes the scenario's own token budget", "[cli][plan]") {
  const test::TempFile sc("", "plan-budget.json"), out("", "plan-budget.csv");
  auto j =
      Json::parse(test::read_text(test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json")));
  j["goodput"] = {{"token_budget", 1e12}};
  j["cost"] = {{"gpu_hour_usd", 2.5}};
  std::ofstream(sc.path()) << j.dump();
  const auto r = test::run_moesim({"plan", sc.path(), "--gpus", "16", "--top", "2", "--settings",
                                   "none", "--objective", "cost_usd", "--json", "-o", out.path()});
  REQUIRE(r.status == 0);
  const auto s = Json::parse(r.out);
  REQUIRE(s["top"].size() == 2);
  CHECK(s["top"][0]["cost_usd"].get<double>() <= s["top"][1]["cost_usd"].get<double>());
}

TEST_CASE(
    "plan: several systems and sizes, each planned, their bests ranked with cost per million "
    "tokens",
    "[cli][plan]") {
  const test::TempFile sc("", "plan-many.json"), out("", "plan-many.csv");
  auto j =
      Json::parse(test::read_text(test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json")));
  j["goodput"] = {{"token_budget", 1e12}};
  j["cost"] = {{"gpu_hour_usd", 2.5}};
  std::ofstream(sc.path()) << j.dump();
  const std::string stem = out.path().substr(0, out.path().size() - 4);
  const auto r = test::run_moesim({"plan", sc.path(), "--gpus", "16,32", "--system", "h100,b200",
                                   "--price", "b200=4.5", "--settings", "none", "--top", "1",
                                   "--json", "-o", out.path()});
  REQUIRE(r.status == 0);
  const auto s = Json::parse(r.out);
  REQUIRE(s["plans"].size() == 4);
  double last = 1e300;
  for (const auto& p : s["plans"]) {
    INFO(p["system"] << " " << p["gpus"]);
    REQUIRE(p["best"].is_object());
    const double v = p["best"]["tokens_per_s_per_gpu"].get<double>();
    CHECK(v <= last);  // best first
    last = v;
    // Each plan's CSV, and its cost at its own system's price.
    CHECK(std::filesystem::exists(p["csv"].get<std::string>()));
    const double hours = p["best"]["gpu_hours_with_goodput"].get<double>();
    const double usd = p["system"] == "b200" ? 4.5 : 2.5;
    CHECK(p["best"]["cost_usd"].get<double>() == Approx(hours * usd).epsilon(1e-9));
    CHECK(p["best"]["usd_per_million_tokens"].get<double>() ==
          Approx(hours * usd / 1e6).epsilon(1e-9));
    std::filesystem::remove(p["csv"].get<std::string>());
  }
  // A price for a system other than the scenario's is needed, and BF16 needs no precision note.
  const auto no_price = test::run_moesim({"plan", sc.path(), "--gpus", "16", "--system",
                                          "h100,b200", "--settings", "none", "-o", out.path()});
  CHECK(no_price.status == 2);
  CHECK_THAT(no_price.err, Catch::Contains("give --price b200=USD"));
  // A precision the system has no Tensor Cores for is taken to the nearest, and said.
  j["system"] = "b200";
  j["training"]["precision"] = "mxfp8";
  j.erase("cost");
  std::ofstream(sc.path()) << j.dump();
  const auto h = test::run_moesim({"plan", sc.path(), "--gpus", "16", "--system", "h100",
                                   "--settings", "none", "--top", "1", "-o", out.path()});
  REQUIRE(h.status == 0);
  CHECK_THAT(h.out, Catch::Contains("on h100: training.precision: mxfp8 -> fp8-blockwise"));
}
