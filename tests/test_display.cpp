// Notebook display (fluxion/display.hpp): the mime bundles xeus-cling / xeus-cpp show for a Tensor
// and a Jaxpr. Needs nlohmann/json.hpp; without it the file compiles to a single skipped note.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#if __has_include(<nlohmann/json.hpp>)
#include <fluxion/display.hpp>
#include <fluxion/fluxion.hpp>

#include "test_util.hpp"

namespace fx = fluxion;
using fluxion::testing::to_text;

namespace {
size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

/// Sets an environment variable for one scope, restoring the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

/// The texts of an HTML table's <td> cells, non-breaking spaces read back as spaces.
std::vector<std::string> cells(const std::string& html) {
  std::vector<std::string> out;
  for (size_t at = html.find("<td"); at != std::string::npos; at = html.find("<td", at + 3)) {
    const size_t begin = html.find('>', at) + 1;
    std::string cell = html.substr(begin, html.find("</td>", at) - begin);
    for (size_t nb = cell.find("&nbsp;"); nb != std::string::npos; nb = cell.find("&nbsp;")) cell.replace(nb, 6, " ");
    out.push_back(cell);
  }
  return out;
}
}  // namespace

TEST_CASE("display: HTML escaping covers the five special characters") {
  CHECK(fx::display::html_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  CHECK(fx::display::html_escape("plain") == "plain");
}

TEST_CASE("display: a tensor's plain text is what operator<< prints") {
  for (const fx::Tensor& t : {fx::tensor({1.0, 2.0, 3.0}), fx::eye(3), fx::scalar(2.5), fx::arange(4),
                              fx::ones({2, 3, 4}, fx::f32), fx::tensor({1.0}) > 0.0}) {
    const nlohmann::json bundle = mime_bundle_repr(t);  // found by ADL, as the kernels call it
    CHECK(bundle["text/plain"] == to_text(t));
    CHECK(bundle.contains("text/html"));
  }
}

TEST_CASE("display: a small tensor is a full HTML table with its aval as caption") {
  const std::string html = fx::display::to_html(fx::tensor({{1.0, 0.5}, {-2.0, 1e-9}}));
  CHECK(html.find("<caption style=\"text-align: left\">f64[2,2]</caption>") != std::string::npos);
  CHECK(count(html, "<td") == 4);
  // 1e-9 makes numpy's notation scientific for the whole tensor, with one mantissa precision.
  CHECK(cells(html) == std::vector<std::string>{"1.e+00", "5.e-01", "-2.e+00", "1.e-09"});
  CHECK(html.find("truncated") == std::string::npos);
  CHECK(html.find("&hellip;") == std::string::npos);
}

TEST_CASE("display: right-aligned cells line up their decimal points, as the printed text does") {
  const fx::Tensor t = fx::tensor({{1.0, 0.25}, {-10.5, std::nan("")}});
  const std::string html = fx::display::to_html(t);
  // Padding is kept by non-breaking spaces (Jupyter's CSS collapses spaces in cells); nowrap keeps numbers whole.
  CHECK(html.find("<td style=\"white-space: nowrap\">1.&nbsp;&nbsp;</td>") != std::string::npos);
  const std::vector<std::string> texts = cells(html);
  CHECK(texts == std::vector<std::string>{"1.  ", "0.25", "-10.5 ", "nan"});
  for (const std::string& cell : texts) {
    const size_t dot = cell.find('.');
    if (dot != std::string::npos) CHECK(cell.size() - dot == 3);  // the same distance from the right edge
    CHECK(to_text(t).find(cell.substr(0, cell.find_last_not_of(' ') + 1)) != std::string::npos);
  }
  CHECK(to_text(t) == "[[  1.     0.25]\n [-10.5     nan]]");  // numpy 2.4 str()
}

TEST_CASE("display: HTML cells use numpy's notation, chosen from the shown elements") {
  CHECK(cells(fx::display::to_html(fx::tensor({1e-9, 1.5, -2.0}))) ==
        std::vector<std::string>{"1.0e-09", "1.5e+00", "-2.0e+00"});
  CHECK(cells(fx::display::to_html(fx::tensor({0.5, -std::numeric_limits<double>::infinity()}))) ==
        std::vector<std::string>{"0.5", "-inf"});
  CHECK(cells(fx::display::to_html(fx::astype(fx::tensor({0.1, 2.0}), fx::f32))) ==
        std::vector<std::string>{"0.1", "2. "});
  CHECK(cells(fx::display::to_html(fx::tensor({-3, 12}))) == std::vector<std::string>{"-3", "12"});
  CHECK(cells(fx::display::to_html(fx::scalar(1e-9))) == std::vector<std::string>{"1.e-09"});
}

TEST_CASE("display: a large tensor is truncated to its first and last rows and columns") {
  const std::string html = fx::display::to_html(fx::reshape(fx::arange(100 * 50), {100, 50}));
  CHECK(html.find("i32[100,50] (truncated)") != std::string::npos);
  // 5 + 1 + 5 shown rows, each with 5 + 1 + 5 cells.
  CHECK(count(html, "<tr>") == 1 + 11);
  CHECK(count(html, "<td") == 11 * 11);
  const std::vector<std::string> texts = cells(html);
  CHECK(texts.front() == "0");
  CHECK(texts.back() == "4999");                                        // the last element
  CHECK(std::find(texts.begin(), texts.end(), "2500") == texts.end());  // row 50 is elided
  CHECK(html.find("<th>[99,:]</th>") != std::string::npos);
  CHECK(html.find("&vellip;") != std::string::npos);
  CHECK(html.find("&hellip;") != std::string::npos);
}

TEST_CASE("display: wide numbers show fewer columns, so that the table fits a notebook's width") {
  // exp(0) .. exp(14.4): scientific (the largest is over 1000 times the smallest), 14 characters.
  const fx::Tensor h = fx::exp(fx::reshape(fx::arange(17 * 17, fx::f64), {17, 17}) / 20.0);
  const std::string html = fx::display::to_html(h);
  CHECK(html.find("f64[17,17] (truncated)") != std::string::npos);
  CHECK(count(html, "<th>") == 1 + 7 + 17);  // corner, 3 + 1 + 3 column headers, 17 row headers
  CHECK(cells(html).front() == "1.00000000e+00");
  // Narrow numbers keep the 5 + 1 + 5 columns; a wider budget keeps them for wide ones too.
  CHECK(count(fx::display::to_html(fx::reshape(fx::arange(17 * 17), {17, 17})), "<th>") == 1 + 11 + 17);
  fx::display::TableLimits wide;
  wide.max_width_chars = 1000;
  CHECK(count(fx::display::to_html(h, wide), "<th>") == 1 + 11 + 17);
}

TEST_CASE("display: rank-3 rows are labelled with their index prefix") {
  const std::string html = fx::display::to_html(fx::zeros({2, 3, 4}));
  CHECK(html.find("<th>[0,0,:]</th>") != std::string::npos);
  CHECK(html.find("<th>[1,2,:]</th>") != std::string::npos);
  CHECK(count(html, "<td") == 2 * 3 * 4);
}

TEST_CASE("display: tracers show their text, never their values") {
  fx::grad([](const fx::Tensor& x) {
    const std::string html = fx::display::to_html(x);
    CHECK(html.find("Traced&lt;f64[2]&gt;") != std::string::npos);
    CHECK(html.find("<table") == std::string::npos);
    return fx::sum(x);
  })(fx::ones({2}));
}

TEST_CASE("display: a Jaxpr shows its text, and an SVG graph exactly when dot exists") {
  auto f = [](const fx::Tensor& x) { return fx::sum(fx::sin(x) * 2.0); };
  const fx::Jaxpr jaxpr = fx::make_jaxpr(f)(fx::ones({3}));
  const std::string dot = fx::display::to_dot(jaxpr);
  CHECK(dot.find("label=\"a:f64[3]\"") != std::string::npos);
  CHECK(dot.find("label=\"sin\"") != std::string::npos);
  CHECK(dot.find("reduce_sum[axes=(0,)]") != std::string::npos);
  CHECK(dot.find("-> out") != std::string::npos);

  const nlohmann::json bundle = mime_bundle_repr(jaxpr);
  CHECK(bundle["text/plain"] == to_text(jaxpr));
  const bool have_dot = !fx::display::dot_executable().empty();
  CHECK(bundle.contains("image/svg+xml") == have_dot);
  if (have_dot) {
    const std::string svg = bundle["image/svg+xml"];
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK(svg.find("reduce_sum") != std::string::npos);
  }
  if (have_dot) {  // fit to the page width: scaled by CSS, aspect ratio kept by the viewBox
    const std::string svg = bundle["image/svg+xml"];
    const std::string root = svg.substr(0, svg.find('>'));
    CHECK(root.find("viewBox=") != std::string::npos);
    CHECK(root.find("max-width") != std::string::npos);
    CHECK(root.find("height: auto") != std::string::npos);
  }
  {
    ScopedEnv no_dot("FLUXION_DOT", "/nonexistent/dot");
    CHECK(fx::display::dot_executable().empty());
    const nlohmann::json text_only = mime_bundle_repr(jaxpr);
    CHECK_FALSE(text_only.contains("image/svg+xml"));
    CHECK(text_only["text/plain"] == to_text(jaxpr));
  }
}

TEST_CASE("display: SVG drawings fit the page: wide ones take its width, small ones keep their size") {
  const std::string body = "<g><text>x</text></g></svg>";
  const std::string wide =
      fx::display::fit_svg_to_page("<svg width=\"1427pt\" height=\"1011pt\"\n viewBox=\"0 0 1426.89 1011.21\">" + body);
  CHECK(wide ==
        "<svg\n viewBox=\"0 0 1426.89 1011.21\" width=\"100%\" style=\"max-width: 1903px; height: auto\">" + body);
  const std::string small =
      fx::display::fit_svg_to_page("<svg width=\"307pt\" height=\"467pt\" viewBox=\"0 0 307 467\">" + body);
  CHECK(small ==
        "<svg viewBox=\"0 0 307 467\" width=\"307pt\" height=\"467pt\" style=\"max-width: 100%; height: auto\">" +
            body);
  // Without a viewBox the drawing could not scale: left as it is.
  const std::string fixed = "<svg width=\"2000pt\" height=\"10pt\">" + body;
  CHECK(fx::display::fit_svg_to_page(fixed) == fixed);
  CHECK(fx::display::svg_length_px("72pt") == doctest::Approx(96));
  CHECK(fx::display::svg_length_px("50%") == 0);
}

#else
TEST_CASE("display: skipped, nlohmann/json.hpp is not installed") {
  MESSAGE("fluxion/display.hpp needs nlohmann/json.hpp (Debian: nlohmann-json3-dev)");
}
#endif
