#include <catch2/catch.hpp>

#include "schedules/pp_layout.hpp"

using namespace moesim::schedules;

TEST_CASE("Et|(tt|)*30L: 32 virtual stages on pp 8, vpp 4", "[schedules][pp_layout]") {
  const auto l = PipelineLayout::parse("Et|(tt|)*30L", 8);
  CHECK(l.vpp() == 4);
  CHECK(l.stages().size() == 32);
  CHECK(l.count(LayoutItemKind::decoder) == 61);
  // Virtual stage 0 is rank 0 chunk 0: E and layer 0; stage 31 is rank 7 chunk 3: L only.
  CHECK(l.stage(0, 0).to_string() == "E t0");
  CHECK(l.stage(1, 0).to_string() == "t1-t2");
  CHECK(l.stage(0, 1).to_string() == "t15-t16");  // stage 8 = layers 15, 16
  CHECK(l.stage(7, 3).to_string() == "L");
  CHECK(l.decoder_layers_on_rank(0) == 7);
  CHECK(l.decoder_layers_on_rank(7) == 6);
}

TEST_CASE("Et*4|(t*4|)*14tmL: 16 stages with MTP in the last", "[schedules][pp_layout]") {
  const auto l16 = PipelineLayout::parse("Et*4|(t*4|)*14tmL", 16);
  CHECK(l16.vpp() == 1);
  CHECK(l16.count(LayoutItemKind::decoder) == 61);
  CHECK(l16.count(LayoutItemKind::mtp) == 1);
  CHECK(l16.stage(0, 0).to_string() == "E t0-t3");
  CHECK(l16.stage(15, 0).to_string() == "t60 m0 L");
  const auto l8 = PipelineLayout::parse("Et*4|(t*4|)*14tmL", 8);
  CHECK(l8.vpp() == 2);
  CHECK(l8.stage(7, 1).to_string() == "t60 m0 L");
}

TEST_CASE("E|(t|)*94L: embedding and loss in stages of their own", "[schedules][pp_layout]") {
  const auto l = PipelineLayout::parse("E|(t|)*94L", 16);
  CHECK(l.vpp() == 6);
  CHECK(l.count(LayoutItemKind::decoder) == 94);
  CHECK(l.stage(0, 0).to_string() == "E");
  CHECK(l.stage(0, 0).count(LayoutItemKind::decoder) == 0);
  CHECK(l.stage(15, 5).to_string() == "L");
}

TEST_CASE("Nested groups expand", "[schedules][pp_layout]") {
  const auto l = PipelineLayout::parse("E((tt|)*2t|)*2L", 1);
  // Group = "tt|tt|t|", twice: "Ett|tt|t|tt|tt|t|L" = 7 stages, 10 decoder layers.
  CHECK(l.stages().size() == 7);
  CHECK(l.count(LayoutItemKind::decoder) == 10);
  CHECK(l.stages()[1].to_string() == "t2-t3");
  CHECK(l.stages()[2].to_string() == "t4");
  CHECK(l.stages()[6].to_string() == "L");
}

TEST_CASE("Malformed layouts are refused with the column", "[schedules][pp_layout]") {
  struct Bad {
    const char* text;
    int pp;
    std::size_t column;
    const char* fragment;
  };
  const Bad cases[] = {
      {"Et|(tt|*30L", 8, 4, "unbalanced '('"},
      {"Et|tt)|L", 1, 6, "unbalanced ')'"},
      {"Et|(tt|)30L", 1, 9, "must be followed by '*N'"},
      {"Et|t*|L", 1, 6, "expected a repeat count"},
      {"Et|t*0|L", 1, 6, "at least 1"},
      {"Ex|L", 1, 2, "unexpected 'x'"},
      {"Et |L", 1, 3, "unexpected ' '"},
      {"tE|tL", 1, 2, "'E' must come first"},
      {"EtL|t", 1, 3, "'L' must come last"},
      {"Etm|tL", 1, 3, "'m' must be in the last virtual stage"},
      {"Et|mt|L", 3, 4, "must all come before the MTP layers"},
      {"Et|tm|mL", 3, 0, "split over several pipeline ranks"},
      {"EE|tL", 1, 2, "more than one embedding"},
      {"E()*3|tL", 1, 2, "empty group"},
      {"(t*1000)*1000000", 1, 1, "more than"},
  };
  for (const auto& b : cases) {
    INFO(b.text);
    try {
      PipelineLayout::parse(b.text, b.pp);
      FAIL("parsed");
    } catch (const LayoutError& e) {
      CHECK(e.column() == b.column);
      CHECK_THAT(e.what(), Catch::Contains(b.fragment));
    }
  }
  CHECK_THROWS_WITH(PipelineLayout::parse("Et|tt|tL", 2), Catch::Contains("3 virtual stages"));
  CHECK_THROWS_WITH(PipelineLayout::parse("t|tL", 1), Catch::Contains("no embedding"));
  CHECK_THROWS_WITH(PipelineLayout::parse("Et|t", 1), Catch::Contains("no loss"));
  CHECK_THROWS_AS(PipelineLayout::parse("", 1), LayoutError);
}

// Megatron-Core's own example (TransformerConfig.pipeline_model_parallel_layout docstring):
// DeepSeek-V3 at PP16 VPP2, the comma cosmetic, MTP alone in rank 14's second virtual stage
// and the loss alone in rank 15's (its pretty_repr: "PP rank 14 ... mtp", "PP rank 15 ... loss").
TEST_CASE("Et*3|(tt|)*29,m|L: Megatron's documented PP16 VPP2 layout", "[schedules][pp_layout]") {
  const auto l = PipelineLayout::parse("Et*3|(tt|)*29,m|L", 16);
  CHECK(l.vpp() == 2);
  CHECK(l.count(LayoutItemKind::decoder) == 61);
  CHECK(l.stage(0, 0).to_string() == "E t0-t2");
  CHECK(l.stage(14, 1).to_string() == "m0");
  CHECK(l.stage(15, 1).to_string() == "L");
  CHECK(l.stage(13, 1).to_string() == "t59-t60");
  CHECK(PipelineLayout::parse("E,t,t|t,L", 2).stage(1, 0).to_string() == "t2 L");
}

TEST_CASE("Default split: even, earlier stages take the remainder", "[schedules][pp_layout]") {
  const auto l = PipelineLayout::even(61, 1, 8, 1);
  CHECK(l.stage(0, 0).to_string() == "E t0-t7");  // 61 = 8 * 7 + 5: stages 0-4 get 8
  CHECK(l.stage(4, 0).count(LayoutItemKind::decoder) == 8);
  CHECK(l.stage(5, 0).count(LayoutItemKind::decoder) == 7);
  CHECK(l.stage(7, 0).to_string() == "t54-t60 m0 L");
  const auto v = PipelineLayout::even(61, 0, 8, 4);  // 32 stages: 29 of 2 layers, 3 of 1
  CHECK(v.stage(0, 0).count(LayoutItemKind::decoder) == 2);
  CHECK(v.stage(7, 3).count(LayoutItemKind::decoder) == 1);
  CHECK(v.count(LayoutItemKind::decoder) == 61);
  CHECK_THROWS_WITH(PipelineLayout::even(61, 0, 16, 4), Catch::Contains("cannot fill"));
}
