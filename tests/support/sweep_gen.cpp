#include "support/sweep_gen.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "config/json_reader.hpp"
#include "support/scenario_gen.hpp"

namespace moesim::test {
namespace {

using config::Json;

// A list nested `depth` levels deep around one value: past the reader's depth limit
// (config::kMaxJsonDepth) it is refused, not recursed into.
std::string nested_list(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') + "1" +
         std::string(static_cast<std::size_t>(depth), ']');
}

// A value for a grid path: what the path takes, or any JSON.
Json grid_value(const std::string& path, bool hostile, Rng& rng) {
  if (hostile && rng.chance(0.3)) {
    const Json any[] = {
        Json(nullptr), Json(true),      Json(-1),       Json(0),   Json(1e308),
        Json("x"),     Json::array(),   Json::object(), Json(1.5), Json(std::int64_t{1} << 62),
        Json(""),      Json({{"a", 1}})};
    return any[rng.below(std::size(any))];
  }
  if (path == "gpus") return rng.pick({8, 16, 32, 64, 128, 256, 512, 12});
  if (path == "framework.dispatcher")
    return rng.pick({"alltoall", "allgather", "deepep", "hybridep", "flex"});
  if (path == "training.global_batch_size") return rng.pick({64, 128, 256, 3});
  if (path == "training.micro_batch_size") return rng.pick({1, 2, 4});
  if (path == "training.seq_length") return rng.pick({1024, 2048, 4096, 3});
  if (path == "training.precision") return rng.pick({"bf16", "mxfp8", "fp8-blockwise", "nvfp4"});
  if (path == "routing.alpha") return rng.pick({0, 1, 2});
  if (path == "system.nvlink.bw_GBps") return rng.pick({100, 900, 1800, 0});
  if (path == "framework.moe_a2a_overlap") return rng.chance(0.5);
  if (path == "framework.cuda_graph_scope")
    return rng.chance(0.5) ? Json::array({"attn"})
                           : Json::array({"attn", "moe_router", "moe_preprocess"});
  if (path == "model.num_hidden_layers") return rng.pick({2, 4, 8, 16});
  if (path == "framework.recompute_modules")
    return Json::array({rng.pick({"moe_act", "mla_up_proj", "full"})});
  return rng.pick({1, 2, 4});
}

const std::vector<std::string> kGridPaths = {
    "gpus", "framework.dispatcher", "training.global_batch_size", "training.micro_batch_size",
    "training.seq_length", "training.precision", "routing.alpha", "system.nvlink.bw_GBps",
    "framework.moe_a2a_overlap", "framework.cuda_graph_scope", "model.num_hidden_layers",
    "framework.recompute_modules",
    // Mistyped, forbidden beside layouts, through a number, empty segments.
    "framwork.dispatcher", "parallelism.pp_layout", "gpus.count", "training..seq_length", "", ".",
    "a.b.c.d.e.f", "measured.step_time_s", "name"};

const std::vector<std::string> kDegrees = {"tp", "pp", "vpp", "ep", "etp", "cp"};

}  // namespace

std::vector<std::pair<std::string, std::string>> read_sweep_bases(const std::string& source_dir) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> out;
  const fs::path root = fs::path(source_dir) / "scenarios";
  std::vector<fs::path> files{root / "dsv3-gb200.json"};
  for (const char* dir : {"examples", "pai"})
    for (const auto& e : fs::directory_iterator(root / dir))
      if (e.path().extension() == ".json") files.push_back(e.path());
  for (const auto& f : files)
    out.emplace_back(fs::relative(f, root).generic_string(), read_file_text(f.string()));
  std::sort(out.begin(), out.end());
  return out;
}

FuzzCase generate_sweep_case(std::uint64_t seed, int index,
                             const std::vector<std::pair<std::string, std::string>>& shipped) {
  Rng rng = Rng::of(seed ^ 0x5eed5eedULL, index);
  FuzzCase c;
  c.seed = seed;
  c.index = index;
  // The base: a shipped scenario, or a generated one (mostly as generated, a share
  // perturbed by the scenario generator itself).
  const ScenarioGenerator scenarios(seed);
  GeneratedScenario base = scenarios.generate(index);
  Json sweep = Json::object();
  sweep["name"] = "fuzz-sweep-" + std::to_string(index);
  const auto draw = rng.below(10);
  if (draw >= 5 && !shipped.empty()) {
    const auto& [name, text] = shipped[rng.below(shipped.size())];
    base.json = config::Json::parse(text);
    base.perturbed = false;
    sweep["base"] = "base.json";
    c.files.emplace_back("base.json", text);
    c.stratum = "shipped base";
  }
  switch (draw >= 5 && !shipped.empty() ? 99 : draw) {
    case 99:
      break;
    case 0:
      sweep["base"] = base.json;
      c.stratum = "inline base";
      break;
    case 1:
      sweep["base"] = rng.pick({"missing.json", "/etc/hostname", ".", "sub", "", "/dev/zero"});
      c.files.emplace_back("sub/x.json", "{}");
      c.stratum = "base not a scenario file";
      break;
    case 2:
      sweep["base"] = rng.chance(0.5) ? Json(7) : Json::array({"base.json"});
      c.stratum = "base of the wrong type";
      break;
    default:
      sweep["base"] = "base.json";
      c.files.emplace_back("base.json", base.json.dump(2));
      c.stratum = base.perturbed ? "perturbed generated base" : "generated base";
      break;
  }
  const bool hostile = rng.chance(0.3);
  // Grid: 0-2 paths of a few values (the product stays small); a hostile one adds a
  // mistyped path, a value of the wrong shape, or a list nested deep.
  Json grid = Json::object();
  std::string deep;
  const auto keys = rng.below(3);
  for (std::uint64_t k = 0; k < keys; ++k) {
    const std::string path =
        hostile && rng.chance(0.4) ? rng.pick(kGridPaths) : kGridPaths[rng.below(12)];
    Json values = Json::array();
    const auto n = 1 + rng.below(2);
    for (std::uint64_t v = 0; v < n; ++v) {  // a value listed twice is refused: hostile draws only
      Json x = grid_value(path, hostile, rng);
      if (hostile || std::find(values.begin(), values.end(), x) == values.end())
        values.push_back(std::move(x));
    }
    if (hostile && rng.chance(0.2)) values = rng.chance(0.5) ? Json(3) : Json::array();
    grid[path] = values;
  }
  if (hostile && rng.chance(0.15)) {
    deep = nested_list(static_cast<int>(rng.pick({10, 63, 64, 65, 1000, 70000})));
    grid["routing.seed"] = "__DEEP__";
  }
  if (!grid.empty() || rng.chance(0.3)) sweep["grid"] = grid;
  // Layouts: 0-2 degrees of one or two values; hostile: odd, negative, huge, mistyped,
  // or so many values that the sweep describes more rows than allowed.
  if (rng.chance(0.7)) {
    Json layouts = Json::object();
    const auto n = rng.below(3);
    for (std::uint64_t k = 0; k < n; ++k) {
      const std::string& d = rng.pick(kDegrees);
      Json values = Json::array();
      const auto m = 1 + rng.below(2);
      for (std::uint64_t v = 0; v < m; ++v) {
        const Json x = rng.pick({1, 2, 2, 4, 8});
        if (hostile || std::find(values.begin(), values.end(), x) == values.end())
          values.push_back(x);
      }
      if (hostile && rng.chance(0.3)) {
        const Json bad[] = {Json(0),   Json(-2),  Json(3),      Json(1e10),
                            Json("2"), Json(2.5), Json(nullptr)};
        values.push_back(bad[rng.below(std::size(bad))]);
      }
      layouts[d] = values;
    }
    if (hostile && rng.chance(0.15)) {  // 6 degrees x 12 values: 3 million combinations
      for (const auto& d : kDegrees) {
        Json v = Json::array();
        for (int k = 1; k <= 12; ++k) v.push_back(k);
        layouts[d] = v;
      }
    }
    if (hostile && rng.chance(0.2))
      layouts[rng.pick({"tpp", "dp", "pp_split"})] = Json::array({"x"});
    if (rng.chance(0.2))
      layouts["pp_split"] =
          rng.chance(0.7) ? Json::array({"even", "embedding_loss"}) : Json::array({"bogus"});
    sweep["layouts"] = layouts;
  }
  if (rng.chance(0.3)) {
    const Json budgets[] = {Json(1.5e13), Json(1e9), Json(0), Json(-1), Json("lots"), Json(1e308)};
    sweep["token_budget"] = budgets[rng.below(hostile ? std::size(budgets) : 2)];
  }
  if (rng.chance(0.3))
    sweep["objective"] =
        hostile
            ? rng.pick({"tokens_per_s_per_gpu", "step_time_s", "cost_usd", "days", "mfu", "speed"})
            : rng.pick({"tokens_per_s_per_gpu", "step_time_s", "mfu"});
  if (hostile && rng.chance(0.2)) sweep[rng.pick({"extra", "grids", "Name"})] = 1;
  if (hostile && rng.chance(0.1)) sweep.erase("name");

  std::string text = sweep.dump(2);
  if (!deep.empty()) text.replace(text.find("\"__DEEP__\""), 10, deep);
  if (hostile && rng.chance(0.1)) {  // cut short, or a stray byte
    const auto at = rng.below(text.size());
    if (rng.chance(0.5))
      text.resize(at);
    else
      text.insert(at, 1, rng.pick({"{", "]", ",", "\"", "\\", "\x01"})[0]);
  }
  c.files.emplace_back("sweep.json", text);

  std::vector<std::string> cmd{"sweep", "sweep.json", "-o", "out.csv", "--jobs", "1"};
  if (rng.chance(0.3)) cmd.emplace_back("--json");
  if (rng.chance(0.2)) {
    cmd.emplace_back("--top");
    cmd.emplace_back(std::to_string(rng.pick({0, 1, 5, 1000000})));
  }
  if (rng.chance(0.15)) {
    cmd.emplace_back("--shard");
    cmd.emplace_back(hostile ? rng.pick({"0/2", "2/2", "0/0", "a/b", "-1/3", "1/1000000000000"})
                             : rng.pick({"0/2", "1/2"}));
  }
  if (rng.chance(0.1)) {  // the script's tasks choose their own CPUs: --jobs is refused with it
    cmd.emplace_back("--slurm-script");
    if (rng.chance(0.7)) {
      const auto jobs = std::find(cmd.begin(), cmd.end(), "--jobs");
      cmd.erase(jobs, jobs + 2);  // the option and its value
    }
  }
  if (rng.chance(0.15)) {  // a resume over a CSV that is not this sweep's
    c.files.emplace_back("out.csv", rng.pick({"", "id,gpus\n0,banana\n", "id\n", "\"unterminated\n",
                                              "id,gpus,status\n0,8,ok\n0,8,ok\n"}));
    cmd.emplace_back("--resume");
  }
  c.commands.push_back(cmd);
  if (rng.chance(0.2)) {  // run again, resuming the first run's CSV
    std::vector<std::string> again{"sweep",  "sweep.json", "-o",      "out.csv",
                                   "--jobs", "1",          "--resume"};
    c.commands.push_back(again);
  }
  if (hostile) c.stratum += ", hostile";
  return c;
}

}  // namespace moesim::test
