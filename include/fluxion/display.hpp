/// Rich display in C++ notebooks (xeus-cling, xeus-cpp): mime_bundle_repr overloads, found by ADL.
///
/// Not included by fluxion.hpp: it needs nlohmann/json.hpp (which every xeus kernel ships), so a
/// notebook includes it explicitly after fluxion.hpp. A Tensor shows as an HTML table (large ones
/// truncated to their first and last rows and columns); a plot::Figure as its SVG picture; a Jaxpr
/// as its text plus an SVG drawing of its dataflow graph when Graphviz `dot` is on PATH
/// (FLUXION_DOT names another binary; text only without it). Everything here is inline: it works
/// with the library linked or header-only.
#pragma once
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

namespace fluxion {
namespace display {

/// How much of a tensor the HTML table shows: `edge` leading and trailing rows (columns) of any
/// axis longer than `max_rows` (`max_cols`), with an ellipsis between them.
struct TableLimits {
  int64_t max_rows = 20;
  int64_t max_cols = 12;
  int64_t edge = 5;
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
/// One element as numpy prints it: True/False, integers as is, floats with up to 8 decimals and
/// trailing zeros dropped ("1.", "0.84147098"), scientific outside [1e-4, 1e8).
template <class T> std::string format_element(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "True" : "False";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else if constexpr (is_half_storage_v<T>) {
    return format_element(v.to_float());
  } else {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    const double a = std::fabs(static_cast<double>(v));
    char buf[64];
    if (a != 0 && (a < 1e-4 || a >= 1e8)) {
      std::snprintf(buf, sizeof buf, "%.8e", static_cast<double>(v));
      std::string s = buf;
      const size_t e = s.find('e');
      std::string mantissa = s.substr(0, e), exponent = s.substr(e);
      while (!mantissa.empty() && mantissa.back() == '0') mantissa.pop_back();
      return mantissa + exponent;
    }
    std::snprintf(buf, sizeof buf, "%.8f", static_cast<double>(v));
    std::string s = buf;
    while (!s.empty() && s.back() == '0') s.pop_back();
    return s;
  }
}

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
  const bool truncated = rows > limits.max_rows || cols > limits.max_cols;
  os << "<table style=\"font-family: monospace; text-align: right\"><caption style=\"text-align: left\">"
     << html_escape(plain_text(c.aval())) << (truncated ? " (truncated)" : "") << "</caption>";
  const std::vector<int64_t> shown_cols = detail::shown_indices(cols, limits.max_cols, limits.edge);
  const std::vector<int64_t> shown_rows = detail::shown_indices(rows, limits.max_rows, limits.edge);
  const bool labels = shape.size() >= 2;
  if (shape.size() >= 1) {
    os << "<thead><tr>" << (labels ? "<th></th>" : "");
    for (int64_t j : shown_cols) os << "<th>" << (j < 0 ? "&hellip;" : std::to_string(j)) << "</th>";
    os << "</tr></thead>";
  }
  os << "<tbody>";
  dispatch_storage_dtype(c.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = c.data<T>();
    for (int64_t i : shown_rows) {
      os << "<tr>";
      if (labels) os << "<th>" << (i < 0 ? "&vellip;" : html_escape(detail::row_label(i, shape))) << "</th>";
      for (int64_t j : shown_cols) {
        if (i < 0) os << "<td>" << (j < 0 ? "&#8945;" : "&vellip;") << "</td>";
        else if (j < 0) os << "<td>&hellip;</td>";
        else os << "<td>" << html_escape(detail::format_element(data[i * cols + j])) << "</td>";
      }
      os << "</tr>";
    }
  });
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
/// available, "image/svg+xml" (its dataflow graph).
inline nlohmann::json mime_bundle_repr(const Jaxpr& j) {
  nlohmann::json bundle;
  bundle["text/plain"] = display::plain_text(j);
  if (auto svg = display::render_svg(display::to_dot(j))) bundle["image/svg+xml"] = *svg;
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
