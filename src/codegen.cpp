// emit_cpp: the generated file's frame (header comment, includes, scalar functions, constants, the
// C entry points) and the helpers every rule shares (C types, exact literals, loop nests).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "primitives/scalar_functions.hpp"
#include "src/codegen_emitter.hpp"

namespace fluxion {
namespace codegen_detail {

const char* c_type(DType d) {
  switch (d) {
    case DType::boolean: return "bool";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::f32: return "float";
    case DType::f64: return "double";
    default: break;
  }
  detail::fail<DTypeError>("emit_cpp", "dtype ", dtype_name(d),
                           " is not supported by the C++ emitter (supported: bool, i32, i64, f32, f64). ",
                           "Convert it with fx::astype before exporting.");
}

std::string c_value(DType d, double v) {
  const std::string t = c_type(d);
  if (d == DType::boolean) return v != 0 ? "true" : "false";
  if (d == DType::i32 || d == DType::i64) {
    const int64_t x = static_cast<int64_t>(v);
    if (d == DType::i64 && x == std::numeric_limits<int64_t>::min()) return "(int64_t(-9223372036854775807LL) - 1)";
    if (d == DType::i32 && x == std::numeric_limits<int32_t>::min()) return "(int32_t(-2147483647) - 1)";
    return t + "(" + std::to_string(x) + (d == DType::i64 ? "LL)" : ")");
  }
  const std::string lim = "std::numeric_limits<" + t + ">::";
  if (std::isnan(v)) return std::string(std::signbit(v) ? "-" : "") + lim + "quiet_NaN()";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + lim + "infinity()";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);  // exact: every f32 value is a double
  return t + "(" + buf + ")";
}

std::string c_literal(DType d, const void* p) {
  switch (d) {
    case DType::boolean: return *static_cast<const bool*>(p) ? "true" : "false";
    case DType::i32: return c_value(d, static_cast<double>(*static_cast<const int32_t*>(p)));
    case DType::i64: {
      const int64_t x = *static_cast<const int64_t*>(p);  // not through double: 64-bit values are exact here
      if (x == std::numeric_limits<int64_t>::min()) return c_value(d, static_cast<double>(x));
      return "int64_t(" + std::to_string(x) + "LL)";
    }
    case DType::f32: return c_value(d, static_cast<double>(*static_cast<const float*>(p)));
    case DType::f64: return c_value(d, *static_cast<const double*>(p));
    default: return c_type(d);  // throws
  }
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(static_cast<size_t>(shape.size()), 1);
  for (int64_t d = shape.size() - 1; d > 0; --d) s[static_cast<size_t>(d - 1)] = s[static_cast<size_t>(d)] * shape[d];
  return s;
}

void Code::line(const std::string& text) { os_ << std::string(static_cast<size_t>(depth_) * 2, ' ') << text << '\n'; }
void Code::open(const std::string& head) {
  line(head.empty() ? "{" : head + " {");
  ++depth_;
}
void Code::close(const std::string& tail) {
  --depth_;
  line(tail);
}
void Code::append(const Code& other) { os_ << other.str(); }

std::string Value::at(const std::string& idx) const {
  if (!fused.empty()) {
    std::string e = fused;
    for (size_t at = e.find('@'); at != std::string::npos; at = e.find('@', at + idx.size())) e.replace(at, 1, idx);
    return e;
  }
  if (ptr.empty()) return literal;
  if (aval.ndim() == 0) return ptr + "[0]";
  return ptr + "[" + idx + "]";
}

std::string Module::constant(const Tensor& value) {
  Tensor t = value.concrete("emit_cpp");
  if (!t.device().is_cpu()) t = detail::copy_to_host(t);
  const DType d = t.dtype();
  const std::string name = fresh("const_");
  if (t.size() == 0) {
    definitions_ += "static const " + std::string(c_type(d)) + "* const " + name + " = nullptr;\n";
    return name;
  }
  std::string text = "static const " + std::string(c_type(d)) + " " + name + "[" + std::to_string(t.size()) + "] = {";
  const auto* bytes = static_cast<const unsigned char*>(t.array().data());
  const int64_t width = dtype_size(d);
  for (int64_t i = 0; i < t.size(); ++i) {
    text += (i % 4 == 0) ? "\n    " : " ";
    text += c_literal(d, bytes + i * width) + ",";
  }
  definitions_ += text + "};\n";
  return name;
}

void loop_nest(Code& code, const std::vector<int64_t>& extents, const std::string& prefix,
               const std::function<void()>& body) {
  for (size_t k = 0; k < extents.size(); ++k) {
    const std::string i = prefix + std::to_string(k);
    code.open("for (int64_t " + i + " = 0; " + i + " < " + std::to_string(extents[k]) + "; ++" + i + ")");
  }
  body();
  for (size_t k = 0; k < extents.size(); ++k) code.close();
}

std::string index_expr(const std::string& prefix, const std::vector<int64_t>& strides, int64_t base, size_t first) {
  std::string e = base != 0 ? std::to_string(base) : "";
  for (size_t k = first; k < strides.size(); ++k) {
    if (strides[k] == 0) continue;
    if (!e.empty()) e += " + ";
    e += prefix + std::to_string(k);
    if (strides[k] != 1) e += " * " + std::to_string(strides[k]);
  }
  return e.empty() ? "0" : e;
}

void copy_elements(Code& code, const std::string& to, const std::string& from, int64_t n, DType dtype) {
  if (n == 0) return;
  code.line("std::memcpy(" + to + ", " + from + ", " + std::to_string(n * dtype_size(dtype)) + ");");
}

EmitRule find_rule(const std::string& name) {
  static const std::map<std::string, EmitRule> table = [] {
    std::map<std::string, EmitRule> t;
    add_elementwise_rules(t);
    add_shape_rules(t);
    add_reduce_rules(t);
    add_control_rules(t);
    return t;
  }();
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

std::vector<std::string> supported_names() {
  std::vector<std::string> names;
  for (const Primitive* p : all_primitives())
    if (find_rule(p->name)) names.push_back(p->name);
  std::sort(names.begin(), names.end());
  return names;
}

// The library's scalar functions (primitives/scalar_functions.hpp) as text for the generated file:
// in a namespace named after a hash of the text, behind an include guard of the same name, so that
// several emitted files can share one translation unit and files from different library versions
// never define one function two ways. One declaration per line.
std::string scalar_functions_text(std::string* namespace_name) {
  std::string s = scalar_functions::source();
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a
  for (char ch : s) hash = (hash ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
  char id[32];
  std::snprintf(id, sizeof id, "fx_scalar_%08llx", static_cast<unsigned long long>(hash & 0xffffffffULL));
  *namespace_name = id;
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  };
  replace_all("namespace fluxion::scalar_functions", std::string("namespace ") + id);
  replace_all("FLUXION_HD ", "");
  // The stringised source is one line: break it before each declaration that follows the end of
  // another (at spaces only, so the tokens are unchanged).
  for (size_t at = 1; at + 1 < s.size(); ++at) {
    if (s[at] != ' ' || (s[at - 1] != ';' && s[at - 1] != '}' && s[at - 1] != '{')) continue;
    for (const char* head : {"template <", "struct ", "inline "})
      if (s.compare(at + 1, std::strlen(head), head) == 0) s[at] = '\n';
  }
  const std::string guard = std::string(id) + "_DEFINED";
  // Once per translation unit (GCC keeps a copy of its options per optimize pragma: thousands of
  // emitted files concatenated took gigabytes): every product is rounded before it is added, no
  // fused multiply-add contraction, as in the library. It stays on for the rest of the unit.
  const std::string no_contraction =
      "// Every product is rounded before it is added (no fused multiply-add contraction), as in the library.\n"
      "#if defined(__clang__)\n#pragma STDC FP_CONTRACT OFF\n"
      "#elif defined(__GNUC__)\n#pragma GCC optimize(\"fp-contract=off\")\n#endif\n";
  return "#ifndef " + guard + "\n#define " + guard + "\n" + no_contraction + s + "\n#endif\n";
}

std::string entry_parameters(const Jaxpr& j) {
  std::string s;
  const std::vector<AbstractValue> ins = j.in_avals(), outs = j.out_avals();
  for (size_t i = 0; i < ins.size(); ++i)
    s += (s.empty() ? "" : ", ") + std::string("const ") + c_type(ins[i].dtype) + "* in" + std::to_string(i);
  for (size_t i = 0; i < outs.size(); ++i)
    s += (s.empty() ? "" : ", ") + std::string(c_type(outs[i].dtype)) + "* out" + std::to_string(i);
  return s;
}

std::string entry_arguments(const Jaxpr& j) {
  std::string s;
  for (size_t i = 0; i < j.invars.size(); ++i) s += "in" + std::to_string(i) + ", ";
  for (size_t i = 0; i < j.outputs.size(); ++i) s += "out" + std::to_string(i) + ", ";
  return s;
}

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  return true;
}

// The largest workspace `name` puts on the stack; larger ones are allocated once per call.
inline constexpr int64_t kStackWorkspace = 64 * 1024;

}  // namespace codegen_detail

std::vector<std::string> emit_cpp_supported_primitives() { return codegen_detail::supported_names(); }

std::string emit_cpp(const Jaxpr& jaxpr, const std::string& name) {
  using namespace codegen_detail;
  if (!is_identifier(name))
    detail::fail<Error>("emit_cpp", "the function name '", name, "' is not a C identifier. ",
                        "Use letters, digits and underscores, not starting with a digit.");
  Module module(name);
  int64_t ws = 0;
  const std::string top = module.function(jaxpr, &ws);

  std::string scalar_namespace;
  const std::string scalar_text = scalar_functions_text(&scalar_namespace);
  std::ostringstream os;
  os << "// " << name << ": generated by Fluxion's emit_cpp. Dependency-free C++17: compile it with any C++17\n"
     << "// compiler (e.g. c++ -std=c++17 -O2 -c " << name << ".cpp), without -ffast-math (it keeps NaN, inf and\n"
     << "// the order of every rounding; other compilers than GCC and Clang: also without FMA contraction).\n"
     << "// Buffers are row-major and contiguous; outputs must not alias inputs.\n//\n";
  const std::vector<AbstractValue> ins = jaxpr.in_avals(), outs = jaxpr.out_avals();
  for (size_t i = 0; i < ins.size(); ++i)
    os << "//   in" << i << ":  " << ins[i] << "  (" << c_type(ins[i].dtype) << ")\n";
  for (size_t i = 0; i < outs.size(); ++i)
    os << "//   out" << i << ": " << outs[i] << "  (" << c_type(outs[i].dtype) << ")\n";
  os << "//\n// Entry points (C linkage):\n"
     << "//   std::size_t " << name << "_workspace_size();  // " << ws << " bytes of scratch for the intermediates\n"
     << "//   void " << name << "_with_workspace(inputs..., outputs..., void* workspace);  // never allocates;\n"
     << "//        workspace: " << name << "_workspace_size() bytes, aligned to " << kAlign << " bytes\n"
     << "//   void " << name << "(inputs..., outputs...);  // "
     << (ws <= kStackWorkspace ? "the workspace on the stack" : "allocates the workspace once per call") << "\n"
     << "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstring>\n#include <limits>\n\n"
     << "// The element functions of Fluxion's primitives (the library's primitives/scalar_functions.hpp).\n"
     << scalar_text << "\n"
     << "namespace " << name << "_impl {\n"
     << "namespace scalar_functions = ::" << scalar_namespace << ";\n"
     << module.definitions() << "}  // namespace " << name << "_impl\n\n";
  const std::string params = entry_parameters(jaxpr), args = entry_arguments(jaxpr);
  const std::string sep = params.empty() ? "" : ", ";
  os << "extern \"C\" std::size_t " << name << "_workspace_size() { return " << ws << "; }\n\n"
     << "extern \"C\" void " << name << "_with_workspace(" << params << sep << "void* workspace) {\n"
     << "  " << name << "_impl::" << top << "(" << args << "static_cast<unsigned char*>(workspace));\n}\n\n"
     << "extern \"C\" void " << name << "(" << params << ") {\n";
  if (ws <= kStackWorkspace) {
    os << "  alignas(" << kAlign << ") unsigned char workspace[" << std::max<int64_t>(ws, 1) << "];\n"
       << "  " << name << "_impl::" << top << "(" << args << "workspace);\n}\n";
  } else {
    os << "  unsigned char* raw = new unsigned char[" << ws + kAlign << "];\n"
       << "  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(raw);\n"
       << "  unsigned char* workspace = raw + (" << kAlign << " - at % " << kAlign << ") % " << kAlign << ";\n"
       << "  " << name << "_impl::" << top << "(" << args << "workspace);\n  delete[] raw;\n}\n";
  }
  return os.str();
}

}  // namespace fluxion
