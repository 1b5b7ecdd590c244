// predict/validate.hpp's grouped summaries: every timing row's error as a speed (positive where
// the prediction runs faster, whatever the metric), the mean absolute error and the speed bias
// by system, dispatcher, set (corpus or held out), model and TP size, and the groups' natural
// order; against values worked out by hand. The same figures in validate's JSON and text.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "predict/validate.hpp"
#include "reports/validate.hpp"

using namespace moesim;

namespace {
// A timing row: `metric` step_time_s or tokens_per_s_per_gpu, measured and predicted values,
// the step times they imply (a throughput scales as 1 / step).
predict::ValidateRow row(const char* name, const char* metric, double measured, double predicted,
                         const char* model, std::int64_t tp, bool held_out) {
  predict::ValidateRow r;
  r.name = name;
  r.system = "gb200-nvl72";
  r.dispatcher = "hybridep";
  r.metric = metric;
  r.model = model;
  r.tp = tp;
  r.held_out = held_out;
  r.measured = measured;
  r.predicted = predicted;
  r.error_pct = 100 * (predicted - measured) / measured;
  const bool step = std::string(metric) == "step_time_s";
  r.predicted_step_s = step ? predicted : 10.0;
  r.measured_step_s = step ? measured : 10.0 * predicted / measured;
  r.ok = true;
  return r;
}
}  // namespace

TEST_CASE("Validate groups: speed error, mean absolute error and speed bias, by hand",
          "[predict][validate]") {
  std::vector<predict::ValidateRow> rows{
      // Step 10 s measured, 8 s predicted: error -20%, the prediction 25% faster.
      row("a", "step_time_s", 10.0, 8.0, "m1", 2, true),
      // 1000 tokens/s measured, 1100 predicted: error +10%, 10% faster.
      row("b", "tokens_per_s_per_gpu", 1000, 1100, "m1", 1, false),
      // 1000 measured, 800 predicted: error -20%, 20% slower.
      row("c", "tokens_per_s_per_gpu", 1000, 800, "m2", 16, false),
  };
  CHECK(rows[0].speed_error_pct() == Approx(25.0));
  CHECK(rows[1].speed_error_pct() == Approx(10.0));
  CHECK(rows[2].speed_error_pct() == Approx(-20.0));

  const auto s = predict::summarize(rows);
  CHECK(s.all.runs == 3);
  CHECK(s.all.mae() == Approx((20.0 + 10.0 + 20.0) / 3));
  CHECK(s.all.speed_bias() == Approx((25.0 + 10.0 - 20.0) / 3));
  REQUIRE(s.by_set.size() == 2);
  CHECK(s.by_set.at("held out").runs == 1);
  CHECK(s.by_set.at("held out").speed_bias() == Approx(25.0));
  CHECK(s.by_set.at("corpus").mae() == Approx(15.0));
  CHECK(s.by_set.at("corpus").speed_bias() == Approx(-5.0));
  CHECK(s.by_model.at("m1").speed_bias() == Approx(17.5));
  CHECK(s.by_model.at("m2").mae() == Approx(20.0));
  // Natural order: tp1, tp2, tp16 (not the text order tp1, tp16, tp2).
  std::vector<std::string> tps;
  for (const auto& [k, v] : s.by_tp) tps.push_back(k);
  CHECK(tps == std::vector<std::string>{"tp1", "tp2", "tp16"});
  CHECK(s.by_tp.at("tp2").speed_bias() == Approx(25.0));

  // The same figures in the JSON report, under by_set, by_model and by_tp beside by_system.
  const auto j = reports::validate_json(rows, s, {});
  CHECK(j.at("by_system").at("gb200-nvl72").at("runs") == 3);
  CHECK(j.at("by_set").at("held out").at("speed_bias_pct").get<double>() == Approx(25.0));
  CHECK(j.at("by_model").at("m1").at("mean_abs_error_pct").get<double>() == Approx(15.0));
  CHECK(j.at("by_tp").at("tp16").at("speed_bias_pct").get<double>() == Approx(-20.0));
  // And in the text, one line a group.
  const auto t = reports::validate_text(rows, s, {});
  CHECK(t.find("  set        held out") != std::string::npos);
  CHECK(t.find("speed bias  +25.0%") != std::string::npos);
}

TEST_CASE("Validate groups: natural order of group names", "[predict][validate]") {
  const predict::NaturalLess less;
  CHECK(less("tp2", "tp16"));
  CHECK_FALSE(less("tp16", "tp2"));
  CHECK(less("b200", "gb200-nvl72"));
  CHECK(less("qwen3-30b", "qwen3-235b"));
  CHECK_FALSE(less("tp2", "tp2"));
  CHECK(less("tp", "tp1"));
  // Equal numbers with different leading zeros still order, by their text.
  CHECK(less("tp02", "tp2") != less("tp2", "tp02"));
}
