// The SVG plotting helper (fluxion/plot.hpp): axes and ticks, series, legend, log axis, heatmap,
// histogram counts, escaping, files, and every input error.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <fluxion/fluxion.hpp>
#include <fluxion/plot.hpp>

#include "test_util.hpp"

namespace fx = fluxion;
namespace plot = fluxion::plot;
using fluxion::testing::message_of;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

/// "" when `xml` is well formed in the sense the figures need: tags balanced and properly nested,
/// attribute values quoted, '&' only in entities, no '<' in text; else what is wrong and where.
std::string xml_problem(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  auto entity_ok = [&](size_t at) {
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      if (xml.compare(at, std::string(e).size(), e) == 0) return true;
    return false;
  };
  while (i < xml.size()) {
    if (xml[i] == '&' && !entity_ok(i)) return "bare & at " + std::to_string(i);
    if (xml[i] == '>') return "stray > at " + std::to_string(i);
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    const bool closing = xml.compare(i, 2, "</") == 0;
    size_t j = i + (closing ? 2 : 1);
    const size_t name_start = j;
    while (j < xml.size() && (std::isalnum(static_cast<unsigned char>(xml[j])) || xml[j] == '-')) ++j;
    const std::string name = xml.substr(name_start, j - name_start);
    if (name.empty()) return "tag without a name at " + std::to_string(i);
    // Attributes: name="value" pairs up to > or />.
    while (j < xml.size() && xml[j] != '>' && xml.compare(j, 2, "/>") != 0) {
      if (xml[j] == '"') {
        const size_t end = xml.find('"', j + 1);
        if (end == std::string::npos) return "unterminated attribute in <" + name + ">";
        const std::string value = xml.substr(j + 1, end - j - 1);
        if (value.find('<') != std::string::npos) return "< inside an attribute of <" + name + ">";
        for (size_t k = value.find('&'); k != std::string::npos; k = value.find('&', k + 1))
          if (!entity_ok(j + 1 + k)) return "bare & in an attribute of <" + name + ">";
        j = end + 1;
      } else {
        if (xml[j] == '<') return "< inside the tag <" + name + ">";
        if (xml[j] == '=' && xml[j + 1] != '"') return "unquoted attribute in <" + name + ">";
        ++j;
      }
    }
    if (j >= xml.size()) return "unterminated tag <" + name + ">";
    const bool self_closing = xml[j] == '/';
    i = j + (self_closing ? 2 : 1);
    if (closing) {
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? std::string("nothing") : "<" + open.back() + ">");
      open.pop_back();
    } else if (!self_closing) {
      open.push_back(name);
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

std::vector<double> ticks(double lo, double hi, bool log = false) { return plot::nice_axis(lo, hi, log).ticks; }

void check_ticks(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
}

/// The text between the first `open` and the next `close` after it.
std::string between(const std::string& text, const std::string& open, const std::string& close) {
  const size_t a = text.find(open);
  if (a == std::string::npos) return "";
  const size_t b = text.find(close, a + open.size());
  return text.substr(a + open.size(), b - a - open.size());
}

}  // namespace

TEST_CASE("plot: the XML checker itself rejects broken documents") {
  CHECK(xml_problem("<svg><g><rect x=\"1\"/></g></svg>") == "");
  CHECK(xml_problem("<svg><g></svg>") != "");
  CHECK(xml_problem("<svg><text>a < b</text></svg>") != "");
  CHECK(xml_problem("<svg><text>a & b</text></svg>") != "");
  CHECK(xml_problem("<svg><rect x=1/></svg>") != "");
  CHECK(xml_problem("<svg>") != "");
}

TEST_CASE("plot: linear axes tick at multiples of 1, 2 or 5 times a power of ten") {
  check_ticks(ticks(0, 1), {0, 0.2, 0.4, 0.6, 0.8, 1.0});
  check_ticks(ticks(0, 199), {0, 50, 100, 150, 200});
  check_ticks(ticks(-3.7, 12.2), {-5, 0, 5, 10, 15});
  check_ticks(ticks(0.0012, 0.0047), {0.001, 0.002, 0.003, 0.004, 0.005});
  check_ticks(ticks(-5.7779, -5.7771), {-5.778, -5.7778, -5.7776, -5.7774, -5.7772, -5.777});
  const plot::Axis a = plot::nice_axis(-3.7, 12.2);
  CHECK(a.lo == -5);
  CHECK(a.hi == 15);
  CHECK(!a.log);
}

TEST_CASE("plot: constant data gets a range around its value") {
  check_ticks(ticks(5, 5), {4.4, 4.6, 4.8, 5.0, 5.2, 5.4, 5.6});
  check_ticks(ticks(0, 0), {-1, -0.5, 0, 0.5, 1});
  const std::string svg = plot::line({2.0, 2.0, 2.0}).svg();
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find(">2.0</text>") != std::string::npos);
  CHECK(svg.find(">2.2</text>") != std::string::npos);
}

TEST_CASE("plot: spans below double resolution and huge ranges neither hang nor draw garbage") {
  const plot::Axis close = plot::nice_axis(1e16, 1e16 + 2);  // 2 apart: below resolution at 1e16
  CHECK(close.ticks.size() <= 12);
  CHECK(close.lo < 1e16);
  CHECK(close.hi > 1e16);
  const plot::Axis huge = plot::nice_axis(-1e307, 1e307);
  CHECK(huge.ticks.size() <= 12);
  CHECK(std::isfinite(huge.lo));
  CHECK(message_of<fx::Error>([] { plot::nice_axis(-1.7e308, 1.7e308); }).find("too large to draw") !=
        std::string::npos);
  CHECK(xml_problem(plot::line({1e16, 1e16 + 2, 1e16}).svg()) == "");
}

TEST_CASE("plot: tick labels carry the decimals their step needs") {
  using V = std::vector<std::string>;
  CHECK(plot::tick_labels(plot::nice_axis(0, 1)) == V{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"});
  CHECK(plot::tick_labels(plot::nice_axis(0, 199)) == V{"0", "50", "100", "150", "200"});
  CHECK(plot::tick_labels(plot::nice_axis(0, 2e-5)) == V{"0", "5e-6", "1e-5", "1.5e-5", "2e-5"});
  CHECK(plot::tick_labels(plot::nice_axis(0, 3e6)) == V{"0", "1e6", "2e6", "3e6"});
  CHECK(plot::tick_labels(plot::nice_axis(-1, 1)) == V{"-1.0", "-0.5", "0.0", "0.5", "1.0"});
}

TEST_CASE("plot: log axes tick at decades, or at 1-2-5 within two decades") {
  check_ticks(ticks(0.003, 40, true), {1e-3, 1e-2, 1e-1, 1, 10, 100});
  CHECK(plot::tick_labels(plot::nice_axis(0.003, 40, true)) ==
        std::vector<std::string>{"10^-3", "10^-2", "10^-1", "10^0", "10^1", "10^2"});
  check_ticks(ticks(2, 30, true), {2, 5, 10, 20, 50});
  CHECK(plot::tick_labels(plot::nice_axis(2, 30, true)) == std::vector<std::string>{"2", "5", "10", "20", "50"});
  check_ticks(ticks(1e-12, 1e3, true), {1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1, 1e2, 1e4});
  CHECK(plot::nice_axis(0.003, 40, true).log);
}

TEST_CASE("plot: a line figure is well-formed SVG with axes, labels and title") {
  std::vector<double> x, y;
  for (int i = 0; i <= 50; ++i) x.push_back(i * 0.1), y.push_back(std::sin(i * 0.1));
  const plot::Figure fig = plot::line(x, y).title("Sine").x_label("t [s]").y_label("sin t");
  const std::string svg = fig.svg();
  CHECK(xml_problem(svg) == "");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find(">Sine</text>") != std::string::npos);
  CHECK(svg.find(">t [s]</text>") != std::string::npos);
  CHECK(svg.find(">sin t</text>") != std::string::npos);
  CHECK(count(svg, "<polyline") == 1);
  CHECK(count(between(svg, "points=\"", "\""), ",") == 51);
  for (const char* label : {">0</text>", ">1</text>", ">5</text>", ">-1.0</text>", ">1.0</text>"})
    CHECK(svg.find(label) != std::string::npos);
  CHECK(svg.find("class=\"legend\"") == std::string::npos);  // one series: no legend
  CHECK(svg == fig.svg());                                   // deterministic
  CHECK(fig.summary() == "Figure \"Sine\": line (51 points); x data in [0, 5]; y data in [-0.9999, 0.9996]");
}

TEST_CASE("plot: several labelled series get a legend with one entry each") {
  plot::Figure fig;
  fig.line({1.0, 2.0, 3.0}, "model").scatter({1.5, 2.5, 2.0}, "data").line({0.5, 0.5, 0.5});
  const std::string svg = fig.svg();
  CHECK(xml_problem(svg) == "");
  const std::string legend = between(svg, "<g class=\"legend\">", "</g>");
  REQUIRE(!legend.empty());
  CHECK(legend.find(">model</text>") != std::string::npos);
  CHECK(legend.find(">data</text>") != std::string::npos);
  CHECK(count(legend, "<text") == 2);  // the unlabelled series has no entry
  CHECK(count(svg, "<circle") == 3 + 1);
  CHECK(legend.find("#1f77b4") != std::string::npos);  // entries in the series' colours
  CHECK(legend.find("#ff7f0e") != std::string::npos);
}

TEST_CASE("plot: a log y axis places decades evenly and labels them as powers of ten") {
  const plot::Figure fig = plot::line({1e-3, 1e-2, 1e-1, 1.0}).log_y();
  const std::string svg = fig.svg();
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find("10<tspan dy=\"-5\" font-size=\"8\">-3</tspan>") != std::string::npos);
  // Equal ratios are equal distances: the polyline's y coordinates step evenly.
  std::istringstream points(between(svg, "points=\"", "\""));
  std::vector<double> ys;
  for (std::string p; points >> p;) ys.push_back(std::stod(p.substr(p.find(',') + 1)));
  REQUIRE(ys.size() == 4);
  CHECK(ys[0] - ys[1] == doctest::Approx(ys[1] - ys[2]).epsilon(1e-3));
  CHECK(ys[1] - ys[2] == doctest::Approx(ys[2] - ys[3]).epsilon(1e-3));
  CHECK(fig.summary().find("(log axis)") != std::string::npos);
}

TEST_CASE("plot: NaN and infinite points are skipped, breaking the line, and the summary says so") {
  const double nan = std::nan(""), inf = INFINITY;
  const plot::Figure fig = plot::line({1.0, 2.0, nan, 3.0, 4.0, inf, 5.0});
  const std::string svg = fig.svg();
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, "<polyline") == 3);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
  CHECK(fig.summary().find("2 NaN/inf skipped") != std::string::npos);
  CHECK(count(plot::scatter({1.0, nan, 2.0}).svg(), "<circle") == 2);
}

TEST_CASE("plot: tensors are accepted for line, scatter, bars and heatmap") {
  const fx::Tensor y = fx::square(fx::arange(5, fx::f64));
  CHECK(plot::line(y).summary().find("y data in [0, 16]") != std::string::npos);
  CHECK(plot::scatter(fx::arange(5, fx::f32), y).svg().find("<circle") != std::string::npos);
  CHECK(plot::bars({"a", "b", "c"}, fx::arange(3, fx::i32)).series()[0].y == std::vector<double>{0, 1, 2});
  const plot::Figure h = plot::heatmap(fx::reshape(fx::arange(6, fx::f64), {2, 3}));
  CHECK(h.summary() == "Figure: heatmap 2x3, values in [0, 5]");
}

TEST_CASE("plot: heatmap cells take the colour map's ends at the range's ends, with a colour bar") {
  const plot::Figure seq = plot::heatmap(std::vector<std::vector<double>>{{0, 5}, {10, 2.5}});
  const std::string svg = seq.svg();
  CHECK(xml_problem(svg) == "");
  const std::string cells = between(svg, "<g shape-rendering=\"crispEdges\">", "</g>");
  CHECK(count(cells, "<rect") == 4);
  CHECK(cells.find("fill=\"#440154\"") != std::string::npos);  // 0: the low end
  CHECK(cells.find("fill=\"#fde725\"") != std::string::npos);  // 10: the high end
  CHECK(count(between(svg, "<g class=\"colorbar\"", "</g>"), "<rect") == 64);
  CHECK(svg.find(">10</text>") != std::string::npos);  // colour bar ticks 0..10

  // Signed data: a diverging map, white at zero.
  const std::string div = plot::heatmap(std::vector<std::vector<double>>{{-1, 0}, {1, 0.5}}).svg();
  const std::string div_cells = between(div, "<g shape-rendering=\"crispEdges\">", "</g>");
  CHECK(div_cells.find("fill=\"#2166ac\"") != std::string::npos);
  CHECK(div_cells.find("fill=\"#f7f7f7\"") != std::string::npos);
  CHECK(div_cells.find("fill=\"#b2182b\"") != std::string::npos);
  // Forced sequential on the same data.
  const std::string forced =
      plot::heatmap(std::vector<std::vector<double>>{{-1, 0}, {1, 0.5}}).colormap(plot::Colormap::sequential).svg();
  CHECK(between(forced, "<g shape-rendering=\"crispEdges\">", "</g>").find("#440154") != std::string::npos);
  // A NaN cell is grey and counted.
  const plot::Figure with_nan = plot::heatmap(std::vector<std::vector<double>>{{1, std::nan("")}});
  CHECK(with_nan.svg().find("#c8c8c8") != std::string::npos);
  CHECK(with_nan.summary().find("1 NaN/inf cells drawn grey") != std::string::npos);
}

TEST_CASE("plot: histogram counts values in equal bins, the maximum in the last") {
  const plot::Bins b = plot::bin_counts({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5);
  CHECK(b.edges == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(b.counts == std::vector<int64_t>{2, 2, 2, 2, 3});
  CHECK(b.skipped == 0);
  const plot::Bins c = plot::bin_counts({3, 3, std::nan(""), 3}, 2);
  CHECK(c.edges == std::vector<double>{2.5, 3, 3.5});
  CHECK(c.counts == std::vector<int64_t>{0, 3});
  CHECK(c.skipped == 1);
  const plot::Figure h = plot::histogram(fx::sin(fx::arange(100, fx::f64)), 10);
  int64_t total = 0;
  for (double v : h.series()[0].y) total += static_cast<int64_t>(v);
  CHECK(total == 100);
  const std::string svg = h.svg();
  CHECK(xml_problem(svg) == "");
  CHECK(count(between(svg, "<g stroke=\"white\"", "</g>"), "<rect") == 10);
}

TEST_CASE("plot: bars draw one rectangle per category, grouped across series, labelled by category") {
  plot::Figure fig = plot::bars({"adam", "sgd", "lbfgs"}, {3.0, -1.0, 2.0}, "run 1");
  fig.bars({"adam", "sgd", "lbfgs"}, {2.5, 1.0, 0.5}, "run 2");
  const std::string svg = fig.svg();
  CHECK(xml_problem(svg) == "");
  for (const char* c : {">adam</text>", ">sgd</text>", ">lbfgs</text>", ">run 1</text>", ">run 2</text>"})
    CHECK(svg.find(c) != std::string::npos);
  CHECK(count(between(svg, "<g fill=\"#1f77b4\">", "</g>"), "<rect") == 3);
  CHECK(count(between(svg, "<g fill=\"#ff7f0e\">", "</g>"), "<rect") == 3);
}

TEST_CASE("plot: text is XML-escaped everywhere it appears") {
  plot::Figure fig = plot::line({1.0, 2.0}, "a<b").title("x & \"y\" <z>").x_label("it's").y_label("1 > 0");
  fig.line({2.0, 1.0}, "c&d");
  const std::string svg = fig.svg();
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find("x &amp; &quot;y&quot; &lt;z&gt;") != std::string::npos);
  CHECK(svg.find("it&apos;s") != std::string::npos);
  CHECK(svg.find("a&lt;b") != std::string::npos);
  CHECK(svg.find("c&amp;d") != std::string::npos);
  CHECK(xml_problem(plot::bars({"<&>"}, {1.0}).svg()) == "");
  CHECK(plot::xml_escape("'\"&<>") == "&apos;&quot;&amp;&lt;&gt;");
}

TEST_CASE("plot: save writes the SVG, and names the path when it cannot") {
  const plot::Figure fig = plot::scatter({1.0, 2.0}, {3.0, 4.0});
  char dir[] = "/tmp/fluxion_plot_XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/fig.svg";
  fig.save(path);
  std::ifstream in(path);
  std::stringstream read;
  read << in.rdbuf();
  CHECK(read.str() == fig.svg());
  std::remove(path.c_str());
  ::rmdir(dir);
  const std::string bad = std::string(dir) + "/missing/fig.svg";
  CHECK(message_of<fx::Error>([&] { fig.save(bad); }) ==
        "[plot::save] cannot write '" + bad +
            "': No such file or directory. Check that the folder exists and is writable.");
}

TEST_CASE("plot: bad input names the function, the values and the fix") {
  auto msg = [](auto f) { return message_of<fx::Error>(f); };
  CHECK(message_of<fx::ShapeError>([] {
          plot::line({1.0, 2.0, 3.0, 4.0, 5.0}, {1.0, 2.0, 3.0, 4.0});
        }) == "[plot::line] x has 5 values and y has 4. Pass one y value per x value.");
  CHECK(message_of<fx::ShapeError>([] {
          plot::scatter({1.0}, {1.0, 2.0});
        }) == "[plot::scatter] x has 1 values and y has 2. Pass one y value per x value.");
  CHECK(msg([] { plot::line(std::vector<double>{}); }) == "[plot::line] y is empty. Pass at least one value.");
  CHECK(message_of<fx::ShapeError>([] {
          plot::line(fx::zeros({3, 4}));
        }) ==
        "[plot::line] y must be 1-D, got shape [3,4]. Pass a vector, or flatten the tensor with "
        "fx::reshape(t, {t.size()}).");
  CHECK(message_of<fx::ShapeError>([] { plot::scatter(fx::scalar(1.0), fx::scalar(2.0)); }).find("must be 1-D") !=
        std::string::npos);
  CHECK(message_of<fx::ShapeError>([] {
          plot::bars({"a", "b"}, {1.0});
        }) == "[plot::bars] 2 categories and 1 heights. Pass one height per category.");
  CHECK(msg([] { plot::bars({"a"}, {1.0}).bars({"b"}, {2.0}); }).find("categories differ") != std::string::npos);
  CHECK(msg([] { plot::bars({"a"}, {1.0}).line({1.0}); }).find("cannot share a figure") != std::string::npos);
  CHECK(message_of<fx::ShapeError>([] { plot::heatmap(fx::arange(4, fx::f64)); }) ==
        "[plot::heatmap] needs a 2-D matrix, got shape [4]. Reshape it to rows x columns, e.g. "
        "fx::reshape(t, {rows, cols}).");
  CHECK(msg([] { plot::heatmap(fx::zeros({0, 3})); }).find("is empty") != std::string::npos);
  CHECK(msg([] { plot::heatmap(std::vector<std::vector<double>>{{NAN}}); }).find("all 1 cells are NaN") !=
        std::string::npos);
  CHECK(message_of<fx::ShapeError>([] {
          plot::heatmap(std::vector<std::vector<double>>{{1, 2}, {3}});
        }) == "[plot] row 1 of the matrix has 1 values and row 0 has 2. Give every row the same length.");
  CHECK(msg([] {
          plot::heatmap(std::vector<std::vector<double>>{{1}}).line({1.0});
        }).find("this figure is a heatmap") != std::string::npos);
  CHECK(msg([] {
          plot::line({NAN, INFINITY});
        }).find("all 2 points have a NaN or infinite coordinate") != std::string::npos);
  CHECK(msg([] { plot::histogram({1.0}, 0); }) == "[plot::histogram] bins is 0. Pass 1 or more bins.");
  CHECK(msg([] { plot::histogram(std::vector<double>{}, 3); }).find("no values to count") != std::string::npos);
  CHECK(msg([] { plot::histogram({NAN}, 3); }).find("all 1 values are NaN or infinite") != std::string::npos);
  CHECK(msg([] { plot::Figure().svg(); }).find("[plot::svg] the figure is empty") != std::string::npos);
  CHECK(msg([] { plot::line({1.0}).size(50, 50); }).find("too small") != std::string::npos);
  CHECK(msg([] { plot::nice_axis(1, 0); }).find("not an interval") != std::string::npos);
}

TEST_CASE("plot: a log axis refuses values it cannot show, whichever is given first") {
  CHECK(message_of<fx::Error>([] {
          plot::line({1.0, -0.5, 2.0}).log_y();
        }) ==
        "[plot::log_y] y = -0.5 (series 0, point 1) cannot be shown on a log axis, which needs positive values. "
        "Plot the absolute values, or use a linear axis.");
  CHECK(message_of<fx::Error>([] {
          plot::Figure().log_y().line({1.0, 2.0}).scatter({1.0, 0.0}, "fit");
        }) ==
        "[plot::scatter] y = 0 (series 'fit', point 1) cannot be shown on a log axis, which needs positive values. "
        "Plot the absolute values, or use a linear axis.");
  CHECK(message_of<fx::Error>([] { plot::histogram({1.0, 2.0}, 2).log_y(); }).find("start at 0") != std::string::npos);
  CHECK(message_of<fx::Error>([] { plot::heatmap(fx::ones({2, 2})).log_y(); }).find("heatmap") != std::string::npos);
  CHECK_NOTHROW(plot::line({1.0, NAN, 2.0}).log_y().svg());  // NaN is skipped, not refused
}

TEST_CASE("plot: a value traced by vmap cannot be plotted") {
  auto f = [](const fx::Tensor& t) {
    plot::line(t);
    return t;
  };
  CHECK_THROWS_AS(fx::vmap(f)(fx::ones({2, 3})), fx::ConcretizationError);
}

#if __has_include(<nlohmann/json.hpp>)
#include <fluxion/display.hpp>

TEST_CASE("plot: a figure displays in notebooks as its SVG with its summary as text") {
  const plot::Figure fig = plot::line({1.0, 4.0, 9.0}).title("squares");
  const nlohmann::json bundle = mime_bundle_repr(fig);  // found by argument-dependent lookup
  CHECK(bundle.at("image/svg+xml").get<std::string>() == fig.svg());
  CHECK(bundle.at("text/plain").get<std::string>() == fig.summary());
  CHECK(bundle.size() == 2);
}
#endif
