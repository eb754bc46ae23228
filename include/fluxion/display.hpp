/// Rich display in C++ notebooks (xeus-cling, xeus-cpp): mime_bundle_repr overloads, found by ADL.
///
/// Not included by fluxion.hpp: it needs nlohmann/json.hpp (which every xeus kernel ships), so a
/// notebook includes it explicitly after fluxion.hpp. A Tensor shows as an HTML table whose cells
/// hold the text operator<< prints (fluxion/tensor_format.hpp: one notation and width, so the
/// right-aligned cells line up their decimal points; large ones truncated to their first and last
/// rows and columns); a plot::Figure as its SVG picture; a Jaxpr as its text plus an SVG drawing of
/// its dataflow graph, scaled down to the page width when wider, when Graphviz `dot` is on PATH
/// (FLUXION_DOT names another binary; text only without it). Everything here is inline: it works
/// with the library linked or header-only.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "fluxion/jaxpr.hpp"
#include "fluxion/plot.hpp"
#include "fluxion/primitive.hpp"
#include "fluxion/tensor.hpp"
#include "fluxion/tensor_format.hpp"

namespace fluxion {
namespace display {

/// How much of a tensor the HTML table shows: `edge` leading and trailing rows (columns) of any
/// axis longer than `max_rows` (`max_cols`), with an ellipsis between them; and fewer columns (down
/// to 2 + 2) when the shown ones would be wider than `max_width_chars` characters (a notebook's
/// output column: about 140 characters of JupyterLab's 12px table font in a 1200-pixel window).
struct TableLimits {
  int64_t max_rows = 20;
  int64_t max_cols = 12;
  int64_t edge = 5;
  int64_t max_width_chars = 130;
};

/// `text` with &, <, >, " and ' replaced by HTML entities.
inline std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

/// The text `std::cout << value` prints.
template <class T> std::string plain_text(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

namespace detail {
/// Indices shown along an axis of length n: all of them, or the first and last `edge` with -1
/// marking the ellipsis between.
inline std::vector<int64_t> shown_indices(int64_t n, int64_t max, int64_t edge) {
  std::vector<int64_t> out;
  if (n <= max) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (int64_t i = 0; i < edge; ++i) out.push_back(i);
  out.push_back(-1);
  for (int64_t i = n - edge; i < n; ++i) out.push_back(i);
  return out;
}

/// One table cell's text: `padded` (numpy's text of the element, as wide as every other shown
/// element) without its leading spaces, which right alignment replaces, and with its trailing ones
/// as non-breaking spaces, which HTML keeps: so right-aligned cells line up their decimal points.
inline std::string cell_text(const std::string& padded) {
  const size_t begin = padded.find_first_not_of(' ');
  if (begin == std::string::npos) return "";
  const size_t end = padded.find_last_not_of(' ') + 1;
  std::string out = html_escape(padded.substr(begin, end - begin));
  for (size_t k = end; k < padded.size(); ++k) out += "&nbsp;";
  return out;
}

/// "[i,j,:]": the index prefix of one row of a rank >= 2 tensor viewed as rows x last axis.
inline std::string row_label(int64_t row, const Shape& shape) {
  const int64_t lead = static_cast<int64_t>(shape.size()) - 1;
  std::vector<int64_t> idx(static_cast<size_t>(lead));
  for (int64_t d = lead - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = row % shape[d];
    row /= shape[d];
  }
  std::string s = "[";
  for (int64_t d = 0; d < lead; ++d) s += (d ? "," : "") + std::to_string(idx[static_cast<size_t>(d)]);
  return s + (lead ? ",:]" : ":]");
}
}  // namespace detail

/// An HTML table of a concrete tensor under a "dtype[shape]" caption. Rank-0 tensors are one cell,
/// rank-1 one row, rank-n tables of rows (index prefix in the row header) by the last axis.
inline std::string to_html(const Tensor& t, const TableLimits& limits = {}) {
  std::ostringstream os;
  os << "<div class=\"fluxion-tensor\">";
  if (!t.defined() || t.is_tracer()) {
    os << "<pre>" << html_escape(plain_text(t)) << "</pre></div>";
    return os.str();
  }
  Tensor c = t.concrete("display");
  if (!c.device().is_cpu()) c = fluxion::detail::copy_to_host(c);  // never read device memory on the host
  const Shape& shape = c.shape();
  const int64_t cols = shape.size() == 0 ? 1 : shape[static_cast<int64_t>(shape.size()) - 1];
  const int64_t rows = cols == 0 ? 0 : c.size() / cols;
  const std::vector<int64_t> shown_rows = detail::shown_indices(rows, limits.max_rows, limits.edge);
  // The shown elements are formatted together, as numpy formats what it prints: one notation and width.
  std::vector<int64_t> shown_cols;
  std::vector<std::string> texts;
  for (int64_t edge = limits.edge;; --edge) {
    shown_cols = detail::shown_indices(cols, edge == limits.edge ? limits.max_cols : 2 * edge, edge);
    std::vector<int64_t> flat;
    for (int64_t i : shown_rows)
      for (int64_t j : shown_cols)
        if (i >= 0 && j >= 0) flat.push_back(i * cols + j);
    texts = tensor_format::format_elements(c, flat, shape.size() == 0);
    // Each cell is its text plus about two characters of padding.
    const size_t cell_chars = (texts.empty() ? 1 : texts[0].size()) + 2;
    if (edge <= 2 || static_cast<int64_t>(cell_chars * shown_cols.size()) <= limits.max_width_chars) break;
  }
  auto elides = [](const std::vector<int64_t>& shown) { return std::count(shown.begin(), shown.end(), -1) > 0; };
  const bool truncated = elides(shown_rows) || elides(shown_cols);
  os << "<table style=\"font-family: monospace; text-align: right\"><caption style=\"text-align: left\">"
     << html_escape(plain_text(c.aval())) << (truncated ? " (truncated)" : "") << "</caption>";
  const bool labels = shape.size() >= 2;
  if (shape.size() >= 1) {
    os << "<thead><tr>" << (labels ? "<th></th>" : "");
    for (int64_t j : shown_cols) os << "<th>" << (j < 0 ? "&hellip;" : std::to_string(j)) << "</th>";
    os << "</tr></thead>";
  }
  // Cells never break inside a number ("1.5e-03" would break at its '-'): Jupyter's CSS gives
  // table cells `white-space: normal`, which only a style on the cell itself overrides.
  const char* cell = "<td style=\"white-space: nowrap\">";
  size_t next = 0;
  os << "<tbody>";
  for (int64_t i : shown_rows) {
    os << "<tr>";
    if (labels) os << "<th>" << (i < 0 ? "&vellip;" : html_escape(detail::row_label(i, shape))) << "</th>";
    for (int64_t j : shown_cols) {
      if (i < 0) os << "<td>" << (j < 0 ? "&#8945;" : "&vellip;") << "</td>";
      else if (j < 0) os << "<td>&hellip;</td>";
      else os << cell << detail::cell_text(texts[next++]) << "</td>";
    }
    os << "</tr>";
  }
  os << "</tbody></table></div>";
  return os.str();
}

/// Graphviz source of the Jaxpr's dataflow graph: inputs and constants as ellipses, one box per
/// equation (primitive and params), the outputs as a final node; variables named as printed.
inline std::string to_dot(const Jaxpr& j) {
  std::unordered_map<int32_t, std::string> names;
  auto name_of = [&](int32_t v) -> const std::string& {
    auto it = names.find(v);
    if (it == names.end()) {
      std::string s;
      int64_t n = static_cast<int64_t>(names.size());
      do {
        s.insert(s.begin(), static_cast<char>('a' + n % 26));
        n /= 26;
      } while (n > 0);
      it = names.emplace(v, s).first;
    }
    return it->second;
  };
  // Graphviz strings: escape quotes and backslashes; long params are cut.
  auto quoted = [](std::string s) {
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c == '\n' ? ' ' : c;
    }
    return out + "\"";
  };
  std::unordered_map<int32_t, std::string> producer;  // variable -> graph node
  std::ostringstream os;
  os << "digraph jaxpr {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n"
        "  edge [fontname=\"monospace\", fontsize=9];\n";
  auto source = [&](int32_t v, const char* style) {
    const std::string node = "v" + std::to_string(v);
    os << "  " << node << " [shape=ellipse, " << style
       << ", label=" << quoted(name_of(v) + ":" + plain_text(j.avals[static_cast<size_t>(v)])) << "];\n";
    producer[v] = node;
  };
  for (int32_t v : j.constvars) source(v, "style=dashed");
  for (int32_t v : j.invars) source(v, "style=solid");
  for (size_t k = 0; k < j.equations.size(); ++k) {
    const Equation& e = j.equations[k];
    const std::string node = "e" + std::to_string(k);
    std::string label = e.primitive->name;
    std::ostringstream ps;
    e.params->print(ps);
    if (!ps.str().empty()) label += "[" + ps.str() + "]";
    os << "  " << node << " [shape=box, style=rounded, label=" << quoted(label) << "];\n";
    for (const Atom& a : e.inputs) {
      if (a.is_literal()) {
        const std::string lit = node + "_l" + std::to_string(&a - e.inputs.data());
        os << "  " << lit << " [shape=plaintext, label=" << quoted(plain_text(a.literal)) << "];\n";
        os << "  " << lit << " -> " << node << ";\n";
      } else if (producer.count(a.var)) {
        os << "  " << producer[a.var] << " -> " << node << " [label=" << quoted(name_of(a.var)) << "];\n";
      }
    }
    for (int32_t v : e.outputs) {
      name_of(v);
      producer[v] = node;
    }
  }
  os << "  out [shape=doublecircle, label=\"out\"];\n";
  for (const Atom& a : j.outputs) {
    if (!a.is_literal() && producer.count(a.var))
      os << "  " << producer[a.var] << " -> out [label=" << quoted(name_of(a.var)) << "];\n";
  }
  os << "}\n";
  return os.str();
}

/// The Graphviz `dot` binary: $FLUXION_DOT when set, else `dot` found on PATH; empty if neither.
inline std::string dot_executable() {
  if (const char* env = std::getenv("FLUXION_DOT")) return ::access(env, X_OK) == 0 ? env : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = (end > start ? dirs.substr(start, end - start) : ".") + "/dot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

/// The CSS pixels of an SVG length such as "307pt", "120px" or "96"; 0 when it is not one.
inline double svg_length_px(const std::string& length) {
  char* end = nullptr;
  const double value = std::strtod(length.c_str(), &end);
  const std::string unit = end ? std::string(end) : "";
  if (unit == "pt") return value * 96.0 / 72.0;
  if (unit == "px" || unit.empty()) return value;
  if (unit == "in") return value * 96.0;
  return 0;
}

/// Widest drawing (CSS pixels) kept at its natural size in every viewer: about a notebook's
/// narrowest output column. Wider drawings are sized relative to the page instead.
constexpr double kNaturalWidthLimitPx = 800;

/// `svg` (a document whose root <svg> has width, height and viewBox attributes, as dot writes)
/// made to fit the page width. Inline in a page, `max-width: 100%; height: auto` shrinks it with its
/// aspect ratio (viewBox) kept; shown as an <img> (JupyterLab, nbconvert with extracted outputs),
/// only the root's own width counts, so a drawing wider than kNaturalWidthLimitPx gets width="100%"
/// (the page's width) and no height, capped by max-width at its natural width. Smaller drawings keep
/// their natural size, never blown up to the page width. Vector text stays sharp at any scale.
inline std::string fit_svg_to_page(const std::string& svg) {
  const size_t root = svg.find("<svg");
  const size_t root_end = root == std::string::npos ? root : svg.find('>', root);
  if (root_end == std::string::npos) return svg;
  std::string tag = svg.substr(root, root_end - root);
  if (tag.find("viewBox=") == std::string::npos) return svg;  // without it the drawing cannot scale
  // The value of attribute `name` in `tag`, removing the attribute; empty when absent.
  auto take = [&tag](const std::string& name) {
    const size_t at = tag.find(" " + name + "=\"");
    if (at == std::string::npos) return std::string();
    const size_t begin = at + name.size() + 3, end = tag.find('"', begin);
    if (end == std::string::npos) return std::string();
    std::string value = tag.substr(begin, end - begin);
    tag.erase(at, end + 1 - at);
    return value;
  };
  const std::string width = take("width"), height = take("height");
  const double natural = svg_length_px(width);
  if (natural <= 0 || tag.find(" style=") != std::string::npos) return svg;
  char style[128];
  if (natural > kNaturalWidthLimitPx) {
    std::snprintf(style, sizeof style, " width=\"100%%\" style=\"max-width: %.0fpx; height: auto\"", natural);
  } else {
    std::snprintf(style, sizeof style, " width=\"%s\" height=\"%s\" style=\"max-width: 100%%; height: auto\"",
                  width.c_str(), height.c_str());
  }
  return svg.substr(0, root) + tag + style + svg.substr(root_end);
}

/// `dot_source` rendered by `dot -Tsvg`; nullopt without dot or when it fails.
inline std::optional<std::string> render_svg(const std::string& dot_source) {
  const std::string dot = dot_executable();
  if (dot.empty()) return std::nullopt;
  char path[] = "/tmp/fluxion_dot_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return std::nullopt;
  const bool written = ::write(fd, dot_source.data(), dot_source.size()) == static_cast<ssize_t>(dot_source.size());
  ::close(fd);
  std::optional<std::string> svg;
  if (written) {
    const std::string command = "'" + dot + "' -Tsvg '" + path + "' 2>/dev/null";
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
      std::string out;
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
      if (::pclose(pipe) == 0 && out.find("<svg") != std::string::npos) svg = out.substr(out.find("<svg"));
    }
  }
  ::unlink(path);
  return svg;
}

}  // namespace display

/// Jupyter display of a Tensor: "text/plain" (what operator<< prints) and "text/html" (a table).
inline nlohmann::json mime_bundle_repr(const Tensor& t) {
  nlohmann::json bundle;
  bundle["text/plain"] = display::plain_text(t);
  bundle["text/html"] = display::to_html(t);
  return bundle;
}

/// Jupyter display of a Jaxpr: "text/plain" (what operator<< prints) and, when Graphviz `dot` is
/// available, "image/svg+xml" (its dataflow graph, fit to the page width).
inline nlohmann::json mime_bundle_repr(const Jaxpr& j) {
  nlohmann::json bundle;
  bundle["text/plain"] = display::plain_text(j);
  if (auto svg = display::render_svg(display::to_dot(j))) bundle["image/svg+xml"] = display::fit_svg_to_page(*svg);
  return bundle;
}

/// Jupyter display of a figure: "image/svg+xml" (the picture) and "text/plain" (its summary). In
/// namespace plot, where argument-dependent lookup finds it for a plot::Figure.
namespace plot {
inline nlohmann::json mime_bundle_repr(const Figure& figure) {
  nlohmann::json bundle;
  bundle["text/plain"] = figure.summary();
  bundle["image/svg+xml"] = figure.svg();
  return bundle;
}
}  // namespace plot

}  // namespace fluxion
