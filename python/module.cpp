// python/module.cpp: `import moesim` (issue #17 item 6), a pybind11 module over the same
// library calls as the command line, returning what `--json` prints, as Python objects:
//   moesim.run(scenario) -> dict              (moesim run --json)
//   moesim.describe(scenario) -> dict         (moesim describe --json)
//   moesim.diff(a, b) -> dict                 (moesim diff --json)
//   moesim.sweep(path, jobs=0) -> list[dict]  (one per row, as sweep --json gives rows)
//   moesim.plan(path, gpus=0, ...) -> dict    (moesim plan --json)
//   moesim.validate(paths, ...) -> dict       (moesim validate --json)
//   moesim.import_megatron(script, ...) -> dict  (moesim import megatron: the scenario, and
//                                             what was ignored, derived, assumed, recorded)
//   moesim.report(scenario, out=None) -> str  (moesim report: the HTML page, written to
//   moesim.report_diff / report_validate /     `out` too when given)
//     report_sweep
// A scenario is a path to a scenario file or a dict in the scenario format (relative paths
// in a dict resolve against the working directory). `uncalibrated`, `headroom` and `set`
// are the command line's --uncalibrated, --headroom and --set, where the command has them
// (`set`: a dict of system paths to numbers, or a list of "PATH=VALUE" strings). Bad input raises
// moesim.InputError (a ValueError) with the command line's message; a simulation that cannot finish
// raises RuntimeError. Simulations run without the GIL. Formatting only: the figures come from
// predict/, the JSON from reports/.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "config/load.hpp"
#include "config/scenario_files.hpp"
#include "config/sweep_file.hpp"
#include "importer/import.hpp"
#include "predict/pair.hpp"
#include "predict/plan.hpp"
#include "predict/predict.hpp"
#include "predict/sweep.hpp"
#include "predict/validate.hpp"
#include "reports/describe.hpp"
#include "reports/diff.hpp"
#include "reports/html.hpp"
#include "reports/report.hpp"
#include "reports/run.hpp"
#include "reports/sweep.hpp"
#include "reports/validate.hpp"

namespace py = pybind11;
using namespace moesim;

namespace {

// nlohmann JSON to Python through the json module: exact for the numbers JSON carries.
py::object to_python(const nlohmann::ordered_json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

// --set as a dict {PATH: VALUE} or a list of "PATH=VALUE": each through the command line's
// reader (config::parse_system_set), so both refuse what --set refuses.
using SetArg = std::variant<std::map<std::string, double>, std::vector<std::string>>;

config::LoadOptions options(bool uncalibrated, const SetArg& set, double headroom_gib = 0) {
  std::vector<std::string> texts;
  if (const auto* m = std::get_if<std::map<std::string, double>>(&set))
    for (const auto& [path, value] : *m) texts.push_back(fmt::format("{}={}", path, value));
  else
    texts = std::get<std::vector<std::string>>(set);
  return config::load_options(uncalibrated, texts, headroom_gib);
}

config::Scenario load(const py::object& scenario, const config::LoadOptions& opts) {
  if (py::isinstance<py::str>(scenario) || py::hasattr(scenario, "__fspath__"))
    return config::load_scenario_file(py::str(py::module_::import("os").attr("fspath")(scenario)),
                                      opts);
  if (py::isinstance<py::dict>(scenario)) {
    const std::string text = py::str(py::module_::import("json").attr("dumps")(scenario));
    return config::load_scenario_text(text, "<dict>", opts);
  }
  throw py::type_error("a scenario is a path (str or os.PathLike) or a dict");
}

predict::Prediction simulate(const config::Scenario& sc) {
  py::gil_scoped_release release;
  return predict::predict(sc);
}

std::string path_of(const py::object& p) {
  return py::str(py::module_::import("os").attr("fspath")(p));
}

// One path (str or os.PathLike) or an iterable of them.
std::vector<std::string> paths_of(const py::object& paths) {
  if (py::isinstance<py::str>(paths) || py::hasattr(paths, "__fspath__")) return {path_of(paths)};
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(path_of(py::reinterpret_borrow<py::object>(p)));
  return out;
}

// A page's HTML, also written to `out` unless it is None.
std::string page_text(const reports::HtmlPage& page, const py::object& out) {
  std::string html = reports::html_page(page);
  if (!out.is_none()) {
    const std::string file = path_of(out);
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    if (!f || !(f << html) || !f.flush())
      throw config::InputError(file, "", "cannot write the file");
  }
  return html;
}

py::dict pairs_dict(const std::vector<std::pair<std::string, std::string>>& pairs) {
  py::dict d;
  for (const auto& [k, v] : pairs) d[py::str(k)] = v;
  return d;
}

}  // namespace

PYBIND11_MODULE(moesim, m) {
  m.doc() = "moesim: discrete-event performance model of Mixture-of-Experts training";
  static py::exception<config::InputError> input_error(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const config::InputError& e) {
      input_error(e.what());
    }
  });

  m.def(
      "run",
      [](const py::object& scenario, bool uncalibrated, double headroom, const SetArg& set) {
        const config::Scenario sc = load(scenario, options(uncalibrated, set, headroom));
        return to_python(reports::run_json(sc, simulate(sc)));
      },
      py::arg("scenario"), py::kw_only(), py::arg("uncalibrated") = false,
      py::arg("headroom") = 0.0, py::arg("set") = SetArg{},
      "Predict one scenario (a path or a dict): the dict `moesim run --json` prints.");
  m.def(
      "describe",
      [](const py::object& scenario, bool uncalibrated, const SetArg& set) {
        return to_python(reports::describe_json(load(scenario, options(uncalibrated, set))));
      },
      py::arg("scenario"), py::kw_only(), py::arg("uncalibrated") = false,
      py::arg("set") = SetArg{},
      "What a scenario resolves to without simulating: the dict `moesim describe --json` prints.");
  m.def(
      "diff",
      [](const py::object& a, const py::object& b, bool uncalibrated, const SetArg& set) {
        const config::LoadOptions opts = options(uncalibrated, set);
        const std::array<config::Scenario, 2> sc{load(a, opts), load(b, opts)};
        std::array<predict::Prediction, 2> p;
        {
          py::gil_scoped_release release;
          p = predict::predict_pair(sc[0], sc[1]);
        }
        return to_python(reports::diff_json({sc[0], p[0]}, {sc[1], p[1]}));
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("uncalibrated") = false,
      py::arg("set") = SetArg{},
      "Two predictions and the step-time difference by contribution: the dict `moesim diff --json` "
      "prints.");
  m.def(
      "sweep",
      [](const py::object& path, int jobs, bool uncalibrated, double headroom, const SetArg& set) {
        const config::LoadOptions opts = options(uncalibrated, set, headroom);
        const config::SweepFile sweep = config::read_sweep_file(path_of(path));
        const config::SweepPlan plan = config::expand_sweep(sweep);
        predict::check_system_set(plan, sweep.base_file, opts);
        const bool budget = sweep.token_budget.has_value();
        const auto header = reports::sweep_csv_header(plan, budget);
        std::vector<const config::SweepPoint*> points;
        for (const auto& p : plan.points) points.push_back(&p);
        std::vector<reports::SweepCsv::Row> rows(plan.points.size());
        {
          py::gil_scoped_release release;
          predict::run_sweep(
              points, sweep.base_file, sweep.token_budget, jobs,
              [&](const config::SweepPoint& p, const predict::SweepResult& r) {
                rows[static_cast<std::size_t>(p.id)] = {p.id,
                                                        reports::sweep_csv_fields(p, r, budget), r};
              },
              opts);
        }
        py::list out;
        for (const auto& row : rows) out.append(to_python(reports::sweep_row_json(header, row)));
        return out;
      },
      py::arg("path"), py::arg("jobs") = 0, py::kw_only(), py::arg("uncalibrated") = false,
      py::arg("headroom") = 0.0, py::arg("set") = SetArg{},
      "Every row of a sweep file (docs/SWEEP_FORMAT.md), in id order: dicts as `moesim sweep "
      "--json` gives rows.");
  m.def(
      "plan",
      [](const py::object& scenario_path, std::int64_t gpus, std::vector<std::string> settings,
         const std::string& objective, std::optional<double> token_budget, int top, int jobs,
         const py::object& csv_path, bool uncalibrated, bool given, std::int64_t given_limit,
         const py::object& html_path, double headroom, const SetArg& set) {
        const std::string scenario = path_of(scenario_path);
        const std::string csv = csv_path.is_none() ? "" : path_of(csv_path);
        const std::string html = html_path.is_none() ? "" : path_of(html_path);
        const predict::PlanRequest req{scenario,
                                       gpus,
                                       std::move(settings),
                                       objective,
                                       token_budget,
                                       top,
                                       jobs,
                                       options(uncalibrated, set, headroom),
                                       given,
                                       given_limit,
                                       {},
                                       {},
                                       {},
                                       true,
                                       std::nullopt,
                                       std::nullopt};
        predict::Plan p;
        {
          py::gil_scoped_release release;
          p = predict::plan(req);
        }
        const reports::SweepCsv all = reports::plan_csv(p);
        if (!csv.empty()) {
          std::ofstream out(csv, std::ios::binary);
          out << reports::sweep_csv_text(all);
          if (!out) throw config::InputError(csv, "", "cannot write the file");
        }
        const reports::PlanSummaryInfo info = reports::plan_summary_info(p, scenario, csv, top);
        if (!html.empty()) {
          std::ofstream out(html, std::ios::binary);
          out << reports::html_page(reports::plan_report(all, info));
          if (!out) throw config::InputError(html, "", "cannot write the file");
        }
        return to_python(reports::plan_summary_json(all, info));
      },
      py::arg("scenario"), py::kw_only(), py::arg("gpus") = 0,
      py::arg("settings") = std::vector<std::string>{}, py::arg("objective") = "",
      py::arg("token_budget") = std::nullopt, py::arg("top") = 10, py::arg("jobs") = 0,
      py::arg("csv") = py::none(), py::arg("uncalibrated") = false, py::arg("given") = false,
      py::arg("given_limit") = 0, py::arg("html") = py::none(), py::arg("headroom") = 0.0,
      py::arg("set") = SetArg{},
      "The best layouts and settings of a scenario file's model on `gpus` GPUs: the dict `moesim "
      "plan --json` "
      "prints (`settings`: setting groups, [] the defaults, ['none'] none; `csv`: where to write "
      "every evaluated "
      "candidate, None or '' not at all; `given`: also rank the scenario as given, under 'given', "
      "simulating at most "
      "`given_limit` candidates for it (0: no limit); `html`: where to write the plan's page, None "
      "or '' not at all; paths are str or os.PathLike).");
  m.def(
      "validate",
      [](const py::object& paths, int jobs, bool unmeasured, bool uncalibrated,
         const py::object& baseline, double tolerance, bool deterministic, const SetArg& set) {
        const config::ScenarioFileSets sets = config::sort_scenario_files(paths_of(paths));
        const bool all = unmeasured || !baseline.is_none();
        reports::ValidateExtras x;
        x.skipped = sets.other + (all ? 0 : static_cast<int>(sets.unmeasured.size()));
        x.tolerance_pct = tolerance;
        x.timings = !deterministic;
        std::optional<std::vector<reports::BaselineRow>> base;
        if (!baseline.is_none()) {
          const std::string file = path_of(baseline);
          base = reports::read_baseline(nlohmann::json(config::read_json_file(file)), file);
        }
        const config::LoadOptions opts = options(uncalibrated, set);
        x.system_set = config::system_set_texts(opts);
        std::vector<predict::ValidateRow> rows;
        {
          py::gil_scoped_release release;
          rows = predict::validate_files(sets.measured, opts, jobs);
          if (all) x.predictions = predict::predict_files(sets.unmeasured, opts, jobs);
        }
        if (base) x.moved = reports::compare_baseline(rows, x.predictions, *base, tolerance);
        return to_python(reports::validate_json(rows, predict::summarize(rows), x));
      },
      py::arg("paths"), py::kw_only(), py::arg("jobs") = 0, py::arg("unmeasured") = false,
      py::arg("uncalibrated") = false, py::arg("baseline") = py::none(),
      py::arg("baseline_tolerance") = 1.0, py::arg("deterministic") = false,
      py::arg("set") = SetArg{},
      "Predicted against measured for the scenario files with a `measured` block under `paths` (a "
      "path or a list; "
      "folders recursively): the dict `moesim validate --json` prints (`unmeasured`: also predict "
      "the scenarios "
      "without one; `baseline`: an earlier validate --json file, predictions that moved more than "
      "`baseline_tolerance` percent flagged under 'baseline'; `deterministic`: without each row's "
      "wall_s).");
  m.def(
      "import_megatron",
      [](const py::object& script, const py::object& args, const std::string& system,
         std::int64_t gpus, std::optional<std::string> model, std::int64_t domain,
         std::optional<std::string> release, std::map<std::string, std::string> env,
         std::int64_t run, const py::object& wrapper_root, const py::object& source_roots) {
        importer::MegatronImportOptions opt;
        opt.system = system;
        opt.gpus = gpus;
        opt.model = std::move(model);
        if (domain > 0) opt.gpus_per_nvlink_domain = domain;
        opt.release = std::move(release);
        opt.environment = std::move(env);
        if (run > 0) opt.run = run;
        if (!wrapper_root.is_none()) opt.wrapper_root = path_of(wrapper_root);
        if (!source_roots.is_none()) opt.source_roots = paths_of(source_roots);
        std::string text;
        if (script.is_none() == args.is_none())
          throw config::InputError("<arguments>", "script",
                                   "give a script or args=, not both and not neither");
        if (!args.is_none()) {
          text = py::str(args);
          opt.source = "<args>";
        } else {
          opt.source = path_of(script);
          text = config::read_text_file(opt.source);
        }
        const importer::MegatronImport imp = importer::import_megatron(text, opt);
        py::dict out;
        out["scenario"] = to_python(nlohmann::ordered_json(imp.scenario));
        out["ignored"] = imp.ignored;
        out["derived"] = pairs_dict(imp.derived);
        out["assumed"] = pairs_dict(imp.assumed);
        out["recorded"] = imp.recorded;
        out["notes"] = imp.notes;
        return out;
      },
      py::arg("script") = py::none(), py::kw_only(), py::arg("args") = py::none(),
      py::arg("system") = "", py::arg("gpus") = 0, py::arg("model") = std::nullopt,
      py::arg("gpus_per_nvlink_domain") = 0, py::arg("release") = std::nullopt,
      py::arg("env") = std::map<std::string, std::string>{}, py::arg("run") = 0,
      py::arg("wrapper_root") = py::none(), py::arg("source_roots") = py::none(),
      "A Megatron launch script (a path) or command line (args=) as a scenario, as `moesim import "
      "megatron` reads "
      "it (nothing is run): a dict with 'scenario' (pass it to run()), 'ignored' (flags without a "
      "performance "
      "effect), 'derived' and 'assumed' (scenario key -> why), 'recorded' and 'notes' (what was "
      "not evaluated).");
  m.def(
      "report",
      [](const py::object& scenario, const py::object& out, bool uncalibrated, const SetArg& set) {
        const config::Scenario sc = load(scenario, options(uncalibrated, set));
        std::array<predict::Prediction, 2> p;
        {
          py::gil_scoped_release release;
          p = predict::predict_with_trace(sc);
        }
        return page_text(reports::run_report(sc, p[0], p[1]), out);
      },
      py::arg("scenario"), py::arg("out") = py::none(), py::kw_only(),
      py::arg("uncalibrated") = false, py::arg("set") = SetArg{},
      "One scenario's HTML page (`moesim report`): returned, and written to `out` when given.");
  m.def(
      "report_diff",
      [](const py::object& a, const py::object& b, const py::object& out, bool uncalibrated,
         const SetArg& set) {
        const config::LoadOptions opts = options(uncalibrated, set);
        const std::array<config::Scenario, 2> sc{load(a, opts), load(b, opts)};
        std::array<predict::Prediction, 2> p;
        {
          py::gil_scoped_release release;
          p = predict::predict_pair(sc[0], sc[1]);
        }
        return page_text(reports::diff_report({sc[0], p[0]}, {sc[1], p[1]}), out);
      },
      py::arg("a"), py::arg("b"), py::arg("out") = py::none(), py::kw_only(),
      py::arg("uncalibrated") = false, py::arg("set") = SetArg{},
      "Two scenarios' HTML page (`moesim report --diff`): returned, and written to `out` when "
      "given.");
  m.def(
      "report_validate",
      [](const py::object& paths, const py::object& out, int jobs, bool uncalibrated,
         const SetArg& set) {
        const config::LoadOptions opts = options(uncalibrated, set);
        int skipped = 0;
        const std::vector<std::string> files = config::measured_files(paths_of(paths), skipped);
        if (files.empty())
          throw config::InputError("<arguments>", "paths",
                                   "no scenario with a measured block under the given paths");
        std::vector<predict::ValidateRow> rows;
        {
          py::gil_scoped_release release;
          rows = predict::validate_files(files, opts, jobs);
        }
        return page_text(reports::validate_report(rows, skipped, config::system_set_texts(opts)),
                         out);
      },
      py::arg("paths"), py::arg("out") = py::none(), py::kw_only(), py::arg("jobs") = 0,
      py::arg("uncalibrated") = false, py::arg("set") = SetArg{},
      "Predicted against measured as an HTML page (`moesim report --validate`): returned, and "
      "written to `out` "
      "when given.");
  m.def(
      "report_sweep",
      [](const py::object& csv, const py::object& out, const std::string& objective) {
        config::SweepObjective o = config::SweepObjective::tokens_per_s_per_gpu;
        if (!objective.empty()) {
          const auto found = config::sweep_objective_names().find(objective);
          if (!found)
            throw config::InputError("<arguments>", "objective",
                                     fmt::format("unknown objective '{}'; known: {}", objective,
                                                 config::sweep_objective_names().known()));
          o = *found;
        }
        const std::string file = path_of(csv);
        return page_text(reports::sweep_report(reports::read_sweep_csv(file), file, o), out);
      },
      py::arg("csv"), py::arg("out") = py::none(), py::kw_only(), py::arg("objective") = "",
      "A sweep CSV's HTML page (`moesim report --sweep`): returned, and written to `out` when "
      "given.");
  m.attr("__version__") = "0.1.0";
}
