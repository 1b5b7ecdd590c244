// python/module.cpp: `import moesim` (issue #17 item 6), a pybind11 module over the same
// library calls as the command line, returning what `--json` prints, as Python objects:
//   moesim.run(scenario) -> dict              (moesim run --json)
//   moesim.describe(scenario) -> dict         (moesim describe --json)
//   moesim.diff(a, b) -> dict                 (moesim diff --json)
//   moesim.sweep(path, jobs=0) -> list[dict]  (one per row, as sweep --json gives rows)
//   moesim.plan(path, gpus=0, ...) -> dict    (moesim plan --json)
// A scenario is a path to a scenario file or a dict in the scenario format (relative paths
// in a dict resolve against the working directory). Bad input raises moesim.InputError
// (a ValueError) with the command line's message; a simulation that cannot finish raises
// RuntimeError. Simulations run without the GIL. Formatting only: the figures come from
// predict/, the JSON from reports/.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <fstream>
#include <optional>
#include <string>

#include "config/load.hpp"
#include "config/sweep_file.hpp"
#include "predict/parallel.hpp"
#include "predict/plan.hpp"
#include "predict/predict.hpp"
#include "predict/sweep.hpp"
#include "reports/describe.hpp"
#include "reports/diff.hpp"
#include "reports/html.hpp"
#include "reports/report.hpp"
#include "reports/run.hpp"
#include "reports/sweep.hpp"

namespace py = pybind11;
using namespace moesim;

namespace {

// nlohmann JSON to Python through the json module: exact for the numbers JSON carries.
py::object to_python(const nlohmann::ordered_json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

config::Scenario load(const py::object& scenario, bool uncalibrated) {
  const config::LoadOptions opts{!uncalibrated};
  if (py::isinstance<py::str>(scenario) || py::hasattr(scenario, "__fspath__"))
    return config::load_scenario_file(py::str(py::module_::import("os").attr("fspath")(scenario)), opts);
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
      [](const py::object& scenario, bool uncalibrated) {
        const config::Scenario sc = load(scenario, uncalibrated);
        return to_python(reports::run_json(sc, simulate(sc)));
      },
      py::arg("scenario"), py::kw_only(), py::arg("uncalibrated") = false,
      "Predict one scenario (a path or a dict): the dict `moesim run --json` prints.");
  m.def(
      "describe",
      [](const py::object& scenario, bool uncalibrated) {
        return to_python(reports::describe_json(load(scenario, uncalibrated)));
      },
      py::arg("scenario"), py::kw_only(), py::arg("uncalibrated") = false,
      "What a scenario resolves to without simulating: the dict `moesim describe --json` prints.");
  m.def(
      "diff",
      [](const py::object& a, const py::object& b, bool uncalibrated) {
        const std::array<config::Scenario, 2> sc{load(a, uncalibrated), load(b, uncalibrated)};
        std::array<predict::Prediction, 2> p;
        {
          py::gil_scoped_release release;
          predict::run_parallel(2, 2, [&](std::size_t i) { p[i] = predict::predict(sc[i]); });
        }
        return to_python(reports::diff_json({sc[0], p[0]}, {sc[1], p[1]}));
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("uncalibrated") = false,
      "Two predictions and the step-time difference by contribution: the dict `moesim diff --json` prints.");
  m.def(
      "sweep",
      [](const std::string& path, int jobs) {
        const config::SweepFile sweep = config::read_sweep_file(path);
        const config::SweepPlan plan = config::expand_sweep(sweep);
        const bool budget = sweep.token_budget.has_value();
        const auto header = reports::sweep_csv_header(plan, budget);
        std::vector<const config::SweepPoint*> points;
        for (const auto& p : plan.points) points.push_back(&p);
        std::vector<std::vector<std::string>> rows(plan.points.size());
        {
          py::gil_scoped_release release;
          predict::run_sweep(points, sweep.base_file, sweep.token_budget, jobs,
                             [&](const config::SweepPoint& p, const predict::SweepResult& r) {
                               rows[static_cast<std::size_t>(p.id)] = reports::sweep_csv_fields(p, r, budget);
                             });
        }
        py::list out;
        for (const auto& fields : rows) out.append(to_python(reports::sweep_row_json(header, fields)));
        return out;
      },
      py::arg("path"), py::arg("jobs") = 0,
      "Every row of a sweep file (docs/SWEEP_FORMAT.md), in id order: dicts as `moesim sweep --json` gives rows.");
  m.def(
      "plan",
      [](const std::string& scenario, std::int64_t gpus, std::vector<std::string> settings, const std::string& objective,
         std::optional<double> token_budget, int top, int jobs, const std::string& csv, bool uncalibrated,
         bool given, std::int64_t given_limit, const std::string& html) {
        const predict::PlanRequest req{scenario, gpus, std::move(settings), objective, token_budget, top, jobs,
                                       config::LoadOptions{!uncalibrated}, given, given_limit, {}, {}, {}, true, std::nullopt, std::nullopt};
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
      py::arg("scenario"), py::kw_only(), py::arg("gpus") = 0, py::arg("settings") = std::vector<std::string>{},
      py::arg("objective") = "", py::arg("token_budget") = std::nullopt, py::arg("top") = 10, py::arg("jobs") = 0,
      py::arg("csv") = "", py::arg("uncalibrated") = false, py::arg("given") = false,
      py::arg("given_limit") = 0, py::arg("html") = "",
      "The best layouts and settings of a scenario file's model on `gpus` GPUs: the dict `moesim plan --json` "
      "prints (`settings`: setting groups, [] the defaults, ['none'] none; `csv`: where to write every evaluated "
      "candidate, '' not at all; `given`: also rank the scenario as given, under 'given', simulating at most "
      "`given_limit` candidates for it (0: no limit); `html`: where to write the plan's page, '' not at all).");
  m.attr("__version__") = "0.1.0";
}
