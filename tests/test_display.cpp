// Notebook display (fluxion/display.hpp): the mime bundles xeus-cling / xeus-cpp show for a Tensor
// and a Jaxpr. Needs nlohmann/json.hpp; without it the file compiles to a single skipped note.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

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
  CHECK(count(html, "<td>") == 4);
  CHECK(html.find("<td>0.5</td>") != std::string::npos);
  CHECK(html.find("<td>1.</td>") != std::string::npos);
  CHECK(html.find("<td>-2.</td>") != std::string::npos);
  CHECK(html.find("<td>1.e-09</td>") != std::string::npos);
  CHECK(html.find("truncated") == std::string::npos);
  CHECK(html.find("&hellip;") == std::string::npos);
}

TEST_CASE("display: booleans, integers and scalars") {
  CHECK(fx::display::to_html(fx::tensor({1.0, -1.0}) > 0.0).find("<td>True</td><td>False</td>") != std::string::npos);
  CHECK(fx::display::to_html(fx::arange(3)).find("<td>0</td><td>1</td><td>2</td>") != std::string::npos);
  const std::string s = fx::display::to_html(fx::scalar(2.0));
  CHECK(count(s, "<td>") == 1);
  CHECK(s.find("f64[]") != std::string::npos);
}

TEST_CASE("display: a large tensor is truncated to its first and last rows and columns") {
  const std::string html = fx::display::to_html(fx::reshape(fx::arange(100 * 50), {100, 50}));
  CHECK(html.find("i32[100,50] (truncated)") != std::string::npos);
  // 5 + 1 + 5 shown rows, each with 5 + 1 + 5 cells.
  CHECK(count(html, "<tr>") == 1 + 11);
  CHECK(count(html, "<td>") == 11 * 11);
  CHECK(html.find("<td>0</td>") != std::string::npos);
  CHECK(html.find("<td>4999</td>") != std::string::npos);  // the last element
  CHECK(html.find("<td>2500</td>") == std::string::npos);  // row 50 is elided
  CHECK(html.find("<th>[99,:]</th>") != std::string::npos);
  CHECK(html.find("&vellip;") != std::string::npos);
  CHECK(html.find("&hellip;") != std::string::npos);
}

TEST_CASE("display: rank-3 rows are labelled with their index prefix") {
  const std::string html = fx::display::to_html(fx::zeros({2, 3, 4}));
  CHECK(html.find("<th>[0,0,:]</th>") != std::string::npos);
  CHECK(html.find("<th>[1,2,:]</th>") != std::string::npos);
  CHECK(count(html, "<td>") == 2 * 3 * 4);
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
  {
    ScopedEnv no_dot("FLUXION_DOT", "/nonexistent/dot");
    CHECK(fx::display::dot_executable().empty());
    const nlohmann::json text_only = mime_bundle_repr(jaxpr);
    CHECK_FALSE(text_only.contains("image/svg+xml"));
    CHECK(text_only["text/plain"] == to_text(jaxpr));
  }
}

#else
TEST_CASE("display: skipped, nlohmann/json.hpp is not installed") {
  MESSAGE("fluxion/display.hpp needs nlohmann/json.hpp (Debian: nlohmann-json3-dev)");
}
#endif
