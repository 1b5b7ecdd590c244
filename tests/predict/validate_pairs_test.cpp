// predict/validate.hpp's pairs and families (issue #44 item 1): the per-GPU throughput ratio of
// a pair, its error and direction, and a family's Kendall's tau, pairs ordered right and
// regret, against values worked out by hand; the loader's compare_with and family keys.
#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "predict/validate.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {
// A row at `gpus` GPUs and 1e6 tokens a step, measured and predicted step times.
predict::ValidateRow run(const char* name, double measured_s, double predicted_s,
                         std::int64_t gpus = 8) {
  predict::ValidateRow r;
  r.name = name;
  r.file = std::string(name) + ".json";
  r.source = std::string("paper of ") + name;
  r.gpus = gpus;
  r.tokens_per_step = 1e6;
  r.measured_step_s = measured_s;
  r.predicted_step_s = predicted_s;
  r.ok = true;  // within its own tolerance: only the pairs fail
  return r;
}
}  // namespace

TEST_CASE("Pairs: ratio of per-GPU throughput, error, direction and gate, by hand",
          "[predict][validate][pairs]") {
  std::vector<predict::ValidateRow> rows{run("off", 10.0, 10.0), run("on", 8.0, 9.5),
                                         run("big", 5.0, 6.0, 16)};
  rows[1].compare_with.push_back({"off", config::Decision::ep_overlap, 10, ""});
  // At twice the GPUs a step of 5 s is the same per-GPU throughput as 10 s at 8 GPUs.
  rows[2].compare_with.push_back({"off", config::Decision::scale, 1, "the scaling table"});
  rows[2].compare_with.push_back({"nowhere", config::Decision::tp, 5, ""});
  const auto c = predict::compare_pairs(rows, {});
  REQUIRE(c.pairs.size() == 2);
  const auto& p = c.pairs[0];
  CHECK(p.name == "on vs off");
  CHECK(p.decision == config::Decision::ep_overlap);
  CHECK(p.source == "paper of on");  // the measurement's source when the pair names none
  CHECK(p.measured_ratio == Approx(10.0 / 8.0));
  CHECK(p.predicted_ratio == Approx(10.0 / 9.5));
  CHECK(p.ratio_error_pct == Approx(100 * ((10.0 / 9.5) / 1.25 - 1)));  // -15.8%
  CHECK(p.significant);
  CHECK(p.direction_right);  // both faster
  CHECK_FALSE(p.ok);         // beyond 10%
  const auto& q = c.pairs[1];
  CHECK(q.source == "the scaling table");
  CHECK(q.measured_ratio == Approx(1.0));
  CHECK(q.predicted_ratio == Approx(10.0 / 12.0));
  CHECK_FALSE(q.significant);  // measured equal: no direction to get wrong
  CHECK(q.direction_right);
  REQUIRE(c.unresolved.size() == 1);
  CHECK(c.unresolved[0].run == "nowhere");
  CHECK(c.unresolved[0].file == "big.json");

  // The other way round the direction is wrong: measured faster, predicted slower.
  std::vector<predict::ValidateRow> wrong{run("a", 10.0, 10.0), run("b", 9.0, 10.5)};
  wrong[1].compare_with.push_back({"a", config::Decision::tp, 50, ""});
  const auto w = predict::compare_pairs(wrong, {});
  REQUIRE(w.pairs.size() == 1);
  CHECK_FALSE(w.pairs[0].direction_right);
  CHECK(w.pairs[0].ok);  // within its (wide) tolerance, still reported as a wrong direction

  // summarize counts them: the failed pair fails the run of validate.
  const auto s = predict::summarize(rows);
  CHECK(s.pairs_all.pairs == 2);
  CHECK(s.pairs_all.significant == 1);
  CHECK(s.pairs_failed == 2);  // 15.8% > 10%, 16.7% > 1%
  CHECK(s.failed() == 2);
  CHECK(s.pairs_by_decision.at("ep_overlap").pairs == 1);
  CHECK(s.pairs_all.mae() ==
        Approx((100 * (1 - (10.0 / 9.5) / 1.25) + 100 * (1 - 10.0 / 12.0)) / 2));
}

TEST_CASE("Families: Kendall's tau, pairs ordered right and regret, by hand",
          "[predict][validate][families]") {
  // Measured per-GPU order: m1 > m2 > m3 > m4 (steps 1, 2, 3, 4 s). Predicted
  // steps 2.0, 1.5, 3.5, 3.0: order m2 > m1 > m4 > m3. Of the 6 pairs, (m1,m2) and (m3,m4) are
  // swapped: C = 4, D = 2, tau = 1/3.
  std::vector<predict::ValidateRow> rows{run("m1", 1, 2.0), run("m2", 2, 1.5), run("m3", 3, 3.5),
                                         run("m4", 4, 3.0), run("alone", 1, 1)};
  for (int i = 0; i < 4; ++i) rows[i].family = std::string("f");
  rows[4].family = "g";  // a family of one is no family
  const auto c = predict::compare_pairs(rows, {});
  REQUIRE(c.families.size() == 1);
  const auto& f = c.families[0];
  CHECK(f.name == "f");
  CHECK(f.members.size() == 4);
  CHECK(f.pairs == 6);
  CHECK(f.pairs_ordered_right == 4);
  CHECK(f.kendall_tau == Approx(1.0 / 3));
  CHECK(f.measured_best->name == "m1");
  CHECK(f.predicted_best->name == "m2");
  // The pick, m2, is measured at half m1's throughput: 100 (1/1 / (1/2) - 1) = 100%.
  CHECK(f.regret_pct == Approx(100));
  // A tie on one side is neither concordant nor discordant.
  std::vector<predict::ValidateRow> tie{run("t1", 1, 2), run("t2", 2, 2)};
  tie[0].family = tie[1].family = "t";
  const auto t = predict::compare_pairs(tie, {});
  CHECK(t.families.at(0).kendall_tau == Approx(0));
  CHECK(t.families.at(0).pairs_ordered_right == 0);
}

TEST_CASE("Pairs: a series' consecutive sizes are pairs of decision scale",
          "[predict][validate][pairs]") {
  std::vector<predict::ValidateRow> rows{run("s512", 8, 8, 512), run("s1024", 4.2, 4.1, 1024)};
  for (auto& r : rows) r.series = std::string("s"), r.microbatches = 8, r.tolerance_pct = 7;
  rows[1].tolerance_pct = 9;
  const auto sum = predict::summarize(rows);
  REQUIRE(sum.compared.pairs.size() == 1);
  const auto& p = sum.compared.pairs[0];
  CHECK(p.decision == config::Decision::scale);
  CHECK(p.name == "s1024 vs s512");
  CHECK(p.tolerance_pct == 9);  // the larger of the two runs' tolerances
  CHECK(p.measured_ratio == Approx(8 / (2 * 4.2)));
  CHECK(p.predicted_ratio == Approx(8 / (2 * 4.1)));
}

TEST_CASE("Pairs: the loader reads compare_with and family, and refuses what cannot be a pair",
          "[predict][validate][pairs][config]") {
  const std::string base = test::source_path("scenarios/journey/02-mxfp8-alloc-permute.json");
  auto j = config::Json::parse(test::read_text(base));
  j["measured"]["family"] = "journey";
  j["measured"]["compare_with"] = config::Json::array(
      {{{"run", "dsv3-gb200-journey-01-baseline"}, {"decision", "fusion"}, {"tolerance_pct", 12}}});
  const auto sc = config::load_scenario_json(j, "pair.json");
  REQUIRE(sc.measured);
  CHECK(sc.measured->family == "journey");
  REQUIRE(sc.measured->compare_with.size() == 1);
  CHECK(sc.measured->compare_with[0].run == "dsv3-gb200-journey-01-baseline");
  CHECK(sc.measured->compare_with[0].decision == config::Decision::fusion);
  CHECK(sc.measured->compare_with[0].tolerance_pct == 12);

  const auto refused = [&](config::Json bad, const char* what) {
    INFO(bad.dump());
    CHECK_THROWS_WITH(config::load_scenario_json(bad, "pair.json"), Catch::Contains(what));
  };
  auto k = j;
  k["measured"]["compare_with"][0]["decision"] = "vibes";
  refused(k, "unknown decision 'vibes'");
  k = j;
  k["measured"]["compare_with"][0]["run"] = j["name"];
  refused(k, "compared with itself");
  k = j;
  k["measured"]["compare_with"][0]["ratio"] = 1.2;
  refused(k, "ratio");
  k = j;
  k["measured"]["compare_with"] = {{"run", "x"}};
  refused(k, "compare_with");
}
