#include "reports/html.hpp"

#include <fmt/format.h>

namespace moesim::reports {

namespace {

constexpr std::string_view kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222;
       margin: 24px auto; max-width: 1240px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 4px; }
.subtitle { color: #555; margin: 0 0 16px; }
table.facts { border-collapse: collapse; margin: 8px 0 12px; }
table.facts th { text-align: left; font-weight: 600; padding: 2px 18px 2px 0; color: #444; vertical-align: top; }
table.facts td { padding: 2px 0; font-variant-numeric: tabular-nums; }
.caption { color: #444; margin: 0 0 8px; max-width: 1100px; }
table.data { border-collapse: collapse; margin: 4px 0 12px; font-variant-numeric: tabular-nums; }
table.data th, table.data td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
table.data th { background: #f4f4f4; font-weight: 600; }
.chart { margin-bottom: 12px; }
.vega svg { max-width: 100%; height: auto; }
#moesim-errors { color: #b00020; white-space: pre-wrap; border: 1px solid #b00020; padding: 8px; }
footer { color: #777; font-size: 12px; margin-top: 32px; border-top: 1px solid #ddd; padding-top: 8px; }
)css";

// Draws every chart, counts them and marks the page (see html.hpp). One chart's failure
// is shown and counted, and the others still draw.
constexpr std::string_view kRunner = R"js(
(function () {
  'use strict';
  var body = document.body, errors = [], drawn = 0;
  function fail(e) {
    errors.push(String((e && e.message) || e));
    body.dataset.chartErrors = String(errors.length);
    var box = document.getElementById('moesim-errors');
    box.hidden = false;
    box.textContent = 'Chart errors:\n' + errors.join('\n');
  }
  window.addEventListener('error', function (ev) { fail(ev.message); });
  var specs = Array.prototype.slice.call(document.querySelectorAll('script.moesim-spec'));
  body.dataset.chartsTotal = String(specs.length);
  body.dataset.chartsDrawn = '0';
  body.dataset.charts = 'drawing';
  if (typeof vega === 'undefined') {
    fail('the Vega runtime did not load');
    body.dataset.charts = 'failed';
    return;
  }
  Promise.all(specs.map(function (s) {
    return Promise.resolve().then(function () {
      var view = new vega.View(vega.parse(JSON.parse(s.textContent)),
                               {renderer: 'svg', container: '#' + s.dataset.target});
      return view.runAsync();
    }).then(function () {
      drawn += 1;
      body.dataset.chartsDrawn = String(drawn);
    }, fail);
  })).then(function () {
    body.dataset.charts = drawn === specs.length && errors.length === 0 ? 'drawn' : 'failed';
  });
})();
)js";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string script_json(const nlohmann::ordered_json& j) {
  const std::string text = j.dump();
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    // Outside strings JSON has none of these characters; inside, the escapes read back the same.
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out;
}

std::string html_page(const HtmlPage& page) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  o += fmt::format("<meta name=\"generator\" content=\"moesim report\">\n<title>{}</title>\n",
                   html_escape(page.title));
  o += fmt::format("<style>{}</style>\n", kStyle);
  o += fmt::format("<script>/* Vega {} */\n", vega_version());
  o += vega_runtime_js();
  o += "</script>\n</head>\n<body>\n";
  o += fmt::format("<h1>{}</h1>\n", html_escape(page.title));
  if (!page.subtitle.empty())
    o += fmt::format("<p class=\"subtitle\">{}</p>\n", html_escape(page.subtitle));
  if (!page.facts.empty()) {
    o += "<table class=\"facts\">\n";
    for (const auto& [k, v] : page.facts)
      o += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", html_escape(k), html_escape(v));
    o += "</table>\n";
  }
  for (std::size_t i = 0; i < page.tables.size(); ++i) {
    const HtmlTable& t = page.tables[i];
    o += fmt::format("<section class=\"table\" id=\"table-{}\">\n<h2>{}</h2>\n", i + 1,
                     html_escape(t.title));
    if (!t.caption.empty())
      o += fmt::format("<p class=\"caption\">{}</p>\n", html_escape(t.caption));
    o += "<table class=\"data\">\n<tr>";
    for (const auto& h : t.header) o += fmt::format("<th>{}</th>", html_escape(h));
    o += "</tr>\n";
    for (const auto& row : t.rows) {
      o += "<tr>";
      for (const auto& cell : row) o += fmt::format("<td>{}</td>", html_escape(cell));
      o += "</tr>\n";
    }
    o += "</table>\n</section>\n";
  }
  o += "<pre id=\"moesim-errors\" hidden></pre>\n";
  for (std::size_t i = 0; i < page.charts.size(); ++i) {
    const HtmlChart& c = page.charts[i];
    const std::string id = fmt::format("chart-{}", i + 1);
    o +=
        fmt::format("<section class=\"chart\" id=\"{}\">\n<h2>{}</h2>\n", id, html_escape(c.title));
    if (!c.caption.empty())
      o += fmt::format("<p class=\"caption\">{}</p>\n", html_escape(c.caption));
    o += fmt::format("<div class=\"vega\" id=\"{}-view\"></div>\n", id);
    o += fmt::format(
        "<script type=\"application/json\" class=\"moesim-spec\" "
        "data-target=\"{}-view\">{}</script>\n",
        id, script_json(c.spec));
    o += "</section>\n";
  }
  o += fmt::format(
      "<footer>Written by moesim report. Charts: Vega {} (BSD-3-Clause), from Debian's libjs-vega, "
      "inlined in this file.</footer>\n",
      vega_version());
  o += fmt::format("<script>{}</script>\n</body>\n</html>\n", kRunner);
  return o;
}

}  // namespace moesim::reports
