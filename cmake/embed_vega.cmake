# Generates a C++ source holding the Vega runtime (https://vega.github.io/vega/, BSD-3-Clause)
# as Debian's libjs-vega ships it, for `moesim report`'s self-contained HTML: the binary
# needs neither the package nor a network at run time. Invoked at build time:
#   cmake -DVEGA_DIR=/usr/share/javascript/vega -DVERSION=5.22.1 -DOUT_CPP=... -DOUT_JS=... -P this
#
# Debian's libjs-vega has no combined vega.min.js: it ships each of Vega's packages as its
# own UMD bundle (vega-util.min.js, vega-view.min.js, ...; d3 inlined in each), and every
# one of them, loaded by a <script> tag, replaces the global `vega` with its own exports
# (`factory(global.vega = {}, global.vega, ...)`), so they cannot simply be concatenated.
# Each runs here instead through its CommonJS branch, with a `require` that returns the
# modules loaded before it, and the `vega` global is assembled as the `vega` package's
# index.js does (vega 5.22.1, packages/vega/index.js, shipped by Debian's node-vega):
# every transform registered, the same names exported. Two of Vega's own dependencies are
# not in libjs-vega (d3-geo-projection, d3-delaunay): the Mollweide projection and the
# voronoi transform are stubs that fail when used; nothing moesim draws needs them.

# Module name (as the bundles `require` it) = file, in an order where each comes after
# what it requires.
set(modules
    "vega-util=vega-util.min.js"
    "vega-canvas=vega-canvas.min.js"
    "vega-time=vega-time.min.js"
    "vega-format=vega-format.min.js"
    "vega-loader=vega-loader.min.js"
    "vega-dataflow=vega-dataflow.min.js"
    "vega-statistics=vega-statistics.min.js"
    "vega-expression=vega-expression.min.js"
    "vega-event-selector=vega-event-selector.min.js"
    "vega-scale=vega-scale.min.js"
    "vega-scenegraph=vega-scenegraph.min.js"
    "vega-selections=vega-selection.min.js"
    "vega-projection=vega-projection.min.js"
    "vega-functions=vega-functions.min.js"
    "vega-runtime=vega-runtime.min.js"
    "vega-view=vega-view.min.js"
    "vega-parser=vega-parser.min.js"
    "vega-transforms=vega-transforms.min.js"
    "vega-view-transforms=vega-view-transforms.min.js"
    "vega-encode=vega-encode.min.js"
    "vega-geo=vega-geo.min.js"
    "vega-force=vega-force.min.js"
    "vega-hierarchy=vega-hierarchy.min.js"
    "vega-label=vega-label.min.js"
    "vega-regression=vega-regression.min.js"
    "vega-voronoi=vega-voronoi.min.js"
    "vega-wordcloud=vega-wordcloud.min.js"
    "vega-crossfilter=vega-crossfilter.min.js")

set(js "/*! Vega ${VERSION} (https://vega.github.io/vega/, BSD-3-Clause, Copyright (c) 2015-2021 University of Washington Interactive Data Lab; d3 ISC, Mike Bostock) as Debian's libjs-vega ships it, its modules joined by moesim's cmake/embed_vega.cmake */\n")
string(APPEND js [=[
(function (root) {
var loaded = {};
function load(name) {
  if (!Object.prototype.hasOwnProperty.call(loaded, name)) throw new Error('moesim vega bundle: ' + name + ' is not included');
  return loaded[name];
}
function unavailable(what) { return function () { throw new Error('moesim vega bundle: ' + what + ' is not in Debian\'s libjs-vega'); }; }
loaded['d3-geo-projection'] = {geoMollweide: unavailable('the mollweide projection (d3-geo-projection)')};
loaded['d3-delaunay'] = {Delaunay: {from: unavailable('the voronoi transform (d3-delaunay)')}};
]=])
foreach(entry IN LISTS modules)
  string(REPLACE "=" ";" pair "${entry}")
  list(GET pair 0 name)
  list(GET pair 1 file)
  if(NOT EXISTS "${VEGA_DIR}/${file}")
    message(FATAL_ERROR "${VEGA_DIR}/${file} not found: install Debian's libjs-vega (make deps)")
  endif()
  file(READ "${VEGA_DIR}/${file}" text)
  # The source maps are not shipped with the page.
  string(REGEX REPLACE "//# sourceMappingURL=[^\n]*" "" text "${text}")
  string(APPEND js "(function (require) { var module = {exports: {}}, exports = module.exports;\n")
  string(APPEND js "${text}")
  string(APPEND js "\n;loaded['${name}'] = module.exports; })(load);\n")
endforeach()
string(APPEND js [=[
var m = loaded, util = m['vega-util'], vega = {};
util.extend(m['vega-dataflow'].transforms, m['vega-transforms'], m['vega-view-transforms'], m['vega-encode'],
            m['vega-geo'], m['vega-force'], m['vega-label'], m['vega-hierarchy'], m['vega-regression'],
            m['vega-voronoi'], m['vega-wordcloud'], m['vega-crossfilter']);
['vega-statistics', 'vega-time', 'vega-util', 'vega-loader', 'vega-scenegraph'].forEach(function (n) { util.extend(vega, m[n]); });
function pick(module, names) { names.forEach(function (n) { var p = n.split(':'); vega[p[p.length - 1]] = m[module][p[0]]; }); }
pick('vega-dataflow', ['Dataflow', 'EventStream', 'Parameters', 'Pulse', 'MultiPulse', 'Operator', 'Transform', 'changeset',
                       'ingest', 'isTuple', 'definition', 'transform', 'transforms', 'tupleid']);
pick('vega-scale', ['scale', 'scheme', 'interpolate', 'interpolateColors', 'interpolateRange', 'quantizeInterpolator']);
pick('vega-projection', ['projection']);
pick('vega-view', ['View']);
pick('vega-format', ['numberFormatDefaultLocale:formatLocale', 'timeFormatDefaultLocale:timeFormatLocale', 'locale',
                     'defaultLocale', 'resetDefaultLocale']);
pick('vega-functions', ['expressionFunction']);
pick('vega-parser', ['parse']);
pick('vega-runtime', ['context:runtimeContext']);
pick('vega-expression', ['codegenExpression', 'parseExpression']);
pick('vega-event-selector', ['parseSelector']);
]=])
string(APPEND js "vega.version = '${VERSION}';\nroot.vega = vega;\n")
string(APPEND js "})(typeof globalThis !== 'undefined' ? globalThis : self);\n")
# Inlined in a <script> element, the text must not close it.
string(REGEX REPLACE "</([sS][cC][rR][iI][pP][tT])" "<\\\\/\\1" js "${js}")

file(WRITE "${OUT_JS}.tmp" "${js}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT_JS}.tmp" "${OUT_JS}")
file(REMOVE "${OUT_JS}.tmp")

# The C++ source: the bytes as an array (no quoting, no string-literal length limits).
string(HEX "${js}" hex)
string(LENGTH "${hex}" hex_length)
math(EXPR bytes "${hex_length} / 2")
set(cpp "// Generated by cmake/embed_vega.cmake from ${VEGA_DIR} (libjs-vega ${VERSION}); do not edit.\n")
string(APPEND cpp "#include \"reports/html.hpp\"\n\nnamespace moesim::reports {\nnamespace {\n\n")
string(APPEND cpp "const unsigned char kVegaJs[${bytes}] = {\n")
set(chunk 65520)  # hex digits: 1365 rows of 24 bytes
string(REPEAT "0x..," 24 row)
set(pos 0)
while(pos LESS hex_length)
  string(SUBSTRING "${hex}" ${pos} ${chunk} part)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," part "${part}")
  string(REGEX REPLACE "(${row})" "\\1\n" part "${part}")
  string(APPEND cpp "${part}")
  math(EXPR pos "${pos} + ${chunk}")
endwhile()
string(APPEND cpp "\n};\n\n}  // namespace\n\n")
string(APPEND cpp "std::string_view vega_runtime_js() { return {reinterpret_cast<const char*>(kVegaJs), sizeof kVegaJs}; }\n")
string(APPEND cpp "std::string_view vega_version() { return \"${VERSION}\"; }\n\n}  // namespace moesim::reports\n")
file(WRITE "${OUT_CPP}.tmp" "${cpp}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT_CPP}.tmp" "${OUT_CPP}")
file(REMOVE "${OUT_CPP}.tmp")
