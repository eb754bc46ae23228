// The text form of an exported function (docs/export_format.md): a header line, the name and
// structures, then one block per Jaxpr with equations written close to the printed Jaxpr.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fluxion/errors.hpp"
#include "src/export_cursor.hpp"
#include "src/export_module.hpp"

namespace fluxion::export_detail {

namespace text_detail {

constexpr const char* kHeader = "fluxion-exported ";

std::string aval_text(const AbstractValue& a) {
  std::string s = dtype_name(a.dtype);
  s += "[";
  for (int64_t i = 0; i < a.shape.size(); ++i) s += (i ? "," : "") + std::to_string(a.shape[i]);
  return s + "]";
}

std::string float64_text(uint64_t bits) {
  double v = 0;
  std::memcpy(&v, &bits, sizeof v);
  if (std::isnan(v)) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "nan:0x%016llx", static_cast<unsigned long long>(bits));
    return buf;
  }
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";  // never read back as an int64
  return s;
}

std::string ints_text(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

/// A rank-0 literal: decimal where exact ("1.5:f32", "3:i32", "true:bool"), else "#<hex bytes>:<dtype>".
std::string literal_text(const Tensor& t) {
  Tensor c = t.concrete("export");
  const void* p = c.array("export").data();
  std::string value;
  if (c.ndim() == 0) {
    char buf[40] = {0};
    if (c.dtype() == boolean) {
      value = *static_cast<const bool*>(p) ? "true" : "false";
    } else if (c.dtype() == i32) {
      value = std::to_string(*static_cast<const int32_t*>(p));
    } else if (c.dtype() == i64) {
      value = std::to_string(*static_cast<const int64_t*>(p));
    } else if (c.dtype() == f32 && std::isfinite(*static_cast<const float*>(p))) {
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(*static_cast<const float*>(p)));
      value = buf;
    } else if (c.dtype() == f64 && std::isfinite(*static_cast<const double*>(p))) {
      std::snprintf(buf, sizeof buf, "%.17g", *static_cast<const double*>(p));
      value = buf;
    }
  }
  if (value.empty()) value = "#" + hex_of(p, static_cast<size_t>(c.size() * dtype_size(c.dtype())));
  return value + ":" + (c.ndim() == 0 ? std::string(dtype_name(c.dtype())) : aval_text(c.aval()));
}

std::string atom_text(const Atom& a) { return a.is_literal() ? literal_text(a.literal) : var_name(a.var); }

}  // namespace text_detail

std::string field_text(const ParamField& f) {
  using K = ParamField::Kind;
  switch (f.kind) {
    case K::int64: return std::to_string(f.i);
    case K::boolean: return f.i ? "True" : "False";
    case K::float64: return text_detail::float64_text(f.f);
    case K::dtype: return dtype_name(static_cast<DType>(f.i));
    case K::ints: return text_detail::ints_text(f.ints);
    case K::axis_pair:
      return "(" + text_detail::ints_text(f.pair.first) + "," + text_detail::ints_text(f.pair.second) + ")";
    case K::string: return quote(f.str);
    case K::jaxpr: return "@" + std::to_string(f.i);
  }
  return "?";
}

std::string write_text(const Module& m) {
  using namespace text_detail;
  std::string out = kHeader + std::to_string(m.version) + "\n";
  out += "name " + quote(m.name) + "\n";
  out += "in_tree " + to_string(m.in_tree) + "\n";
  out += "out_tree " + to_string(m.out_tree) + "\n";
  for (size_t k = 0; k < m.jaxprs.size(); ++k) {
    const SavedJaxpr& b = m.jaxprs[k];
    out += "jaxpr " + std::to_string(k) + "\n";
    size_t next = 0;
    for (const Tensor& c : b.consts) {
      Tensor h = c.concrete("export");
      out += "  const " + var_name(next++) + ":" + aval_text(h.aval()) + " = " +
             hex_of(h.array("export").data(), static_cast<size_t>(h.size() * dtype_size(h.dtype()))) + "\n";
    }
    out += "  in";
    for (const AbstractValue& a : b.in_avals) out += " " + var_name(next++) + ":" + aval_text(a);
    out += "\n";
    for (const SavedEquation& e : b.equations) {
      out += " ";
      for (const AbstractValue& a : e.out_avals) out += " " + var_name(next++) + ":" + aval_text(a);
      out += " = " + e.primitive;
      if (!e.params.empty()) {
        out += "[";
        for (size_t i = 0; i < e.params.size(); ++i)
          out += (i ? " " : "") + e.params[i].name + "=" + field_text(e.params[i]);
        out += "]";
      }
      for (const Atom& a : e.inputs) out += " " + atom_text(a);
      out += "\n";
    }
    out += "  out";
    for (const Atom& a : b.outputs) out += " " + atom_text(a);
    out += "\nend\n";
  }
  return out;
}

// ---------------------------------------------------------------- reading

namespace text_detail {

DType parse_dtype(TextCursor& c) {
  std::string name = c.word();
  for (int d = 0; d < kNumDTypes; ++d)
    if (name == dtype_name(static_cast<DType>(d))) return static_cast<DType>(d);
  c.fail("unknown dtype '" + name + "'");
}

/// "[3,4]" after a dtype; sizes are checked so that no later product overflows.
AbstractValue parse_dims(TextCursor& c, DType dtype) {
  c.expect('[');
  std::vector<int64_t> dims;
  while (!c.accept(']')) {
    if (!dims.empty()) c.expect(',');
    if (dims.size() >= 64) c.fail("more than 64 dimensions");
    dims.push_back(c.count());
  }
  try {
    checked_num_elements("load_exported", dims);
  } catch (const Error&) { c.fail("a shape with too many elements"); }
  return AbstractValue{Shape(std::move(dims)), dtype};
}

AbstractValue parse_aval(TextCursor& c) {
  DType d = parse_dtype(c);
  return parse_dims(c, d);
}

int hex_digit(TextCursor& c, char h) {
  if (h >= '0' && h <= '9') return h - '0';
  if (h >= 'a' && h <= 'f') return h - 'a' + 10;
  c.fail("a bad hex digit");
}

/// A tensor of `aval` from hex bytes (exactly its size).
Tensor parse_tensor(TextCursor& c, const AbstractValue& aval, const std::string& hex) {
  const size_t nbytes = static_cast<size_t>(aval.shape.num_elements() * dtype_size(aval.dtype));
  if (hex.size() != 2 * nbytes)
    c.fail("the data has " + std::to_string(hex.size() / 2) + " bytes, " + std::to_string(nbytes) + " expected");
  Tensor t = empty(aval);
  auto* p = static_cast<unsigned char*>(t.array().data());
  for (size_t i = 0; i < nbytes; ++i)
    p[i] = static_cast<unsigned char>(hex_digit(c, hex[2 * i]) * 16 + hex_digit(c, hex[2 * i + 1]));
  return t;
}

/// The variable id of a name var_name wrote (canonical: no leading 'a' but for "a" itself).
int32_t parse_var(TextCursor& c, const std::string& name) {
  if (name.empty() || name.size() > 6 || (name.size() > 1 && name[0] == 'a'))
    c.fail("a bad variable name '" + name + "'");
  int64_t id = 0;
  for (char ch : name) {
    if (ch < 'a' || ch > 'z') c.fail("a bad variable name '" + name + "'");
    id = id * 26 + (ch - 'a');
  }
  return static_cast<int32_t>(id);
}

template <class T> T parse_number(TextCursor& c, const std::string& w) {
  errno = 0;
  char* end = nullptr;
  T v{};
  if constexpr (std::is_same_v<T, float>) v = std::strtof(w.c_str(), &end);
  else if constexpr (std::is_same_v<T, double>) v = std::strtod(w.c_str(), &end);
  else v = static_cast<T>(std::strtoll(w.c_str(), &end, 10));
  if (errno != 0 || w.empty() || end != w.c_str() + w.size()) c.fail("'" + w + "' is not a valid number");
  if constexpr (std::is_same_v<T, int32_t>) {
    long long wide = std::strtoll(w.c_str(), nullptr, 10);
    if (wide != v) c.fail("'" + w + "' is out of the i32 range");
  }
  return v;
}

/// "1.5:f32", "#0000c07f:f32", "#...:f32[2]".
Atom parse_literal(TextCursor& c, const std::string& token) {
  size_t colon = token.rfind(':');
  std::string value = token.substr(0, colon), type = token.substr(colon + 1);
  TextCursor tc(type, c.where());
  DType d = parse_dtype(tc);
  AbstractValue aval{Shape{}, d};
  if (!tc.at_end()) aval = parse_dims(tc, d);
  if (!tc.at_end()) c.fail("a bad literal type '" + type + "'");
  if (!value.empty() && value[0] == '#') return Atom::of_literal(parse_tensor(c, aval, value.substr(1)));
  if (aval.shape.size() != 0) c.fail("a literal with a shape must be written in hex");
  Tensor t = empty(aval);
  void* p = t.array().data();
  switch (d) {
    case DType::boolean:
      if (value != "true" && value != "false") c.fail("'" + value + "' is not a bool");
      *static_cast<bool*>(p) = value == "true";
      break;
    case DType::i32: *static_cast<int32_t*>(p) = parse_number<int32_t>(c, value); break;
    case DType::i64: *static_cast<int64_t*>(p) = parse_number<int64_t>(c, value); break;
    case DType::f32: *static_cast<float*>(p) = parse_number<float>(c, value); break;
    case DType::f64: *static_cast<double*>(p) = parse_number<double>(c, value); break;
    default: c.fail("a " + std::string(dtype_name(d)) + " literal must be written in hex");
  }
  return Atom::of_literal(t);
}

std::vector<int64_t> parse_ints(TextCursor& c) {
  c.expect('(');
  std::vector<int64_t> v;
  while (!c.accept(')')) {
    if (!v.empty()) {
      c.expect(',');
      if (c.accept(')')) break;  // "(3,)"
    }
    v.push_back(c.integer());
  }
  return v;
}

/// One params value; its syntax says its kind (docs/export_format.md).
ParamField parse_field(TextCursor& c, std::string name) {
  ParamField f;
  f.name = std::move(name);
  using K = ParamField::Kind;
  char first = c.peek();
  if (first == '\'') {
    f.kind = K::string;
    f.str = c.quoted();
  } else if (first == '@') {
    c.expect('@');
    f.kind = K::jaxpr;
    f.i = c.count();
  } else if (first == '(' && c.peek(1) == '(') {  // "((1,),(0,))"
    c.expect('(');
    f.kind = K::axis_pair;
    f.pair.first = parse_ints(c);
    c.expect(',');
    f.pair.second = parse_ints(c);
    c.expect(')');
  } else if (first == '(') {
    f.kind = K::ints;
    f.ints = parse_ints(c);
  } else {
    std::string w = c.word();
    if (w == "True" || w == "False") {
      f.kind = K::boolean;
      f.i = w == "True";
    } else if (w == "nan") {
      c.expect(':');
      std::string bits = c.word();
      if (bits.size() != 18 || bits.compare(0, 2, "0x") != 0) c.fail("a bad NaN '" + bits + "'");
      f.kind = K::float64;
      for (size_t i = 2; i < bits.size(); ++i) f.f = f.f * 16 + static_cast<uint64_t>(hex_digit(c, bits[i]));
    } else if (w == "inf" || w == "-inf" || w.find_first_of(".eE") != std::string::npos) {
      f.kind = K::float64;
      double v = w == "inf" ? HUGE_VAL : w == "-inf" ? -HUGE_VAL : parse_number<double>(c, w);
      std::memcpy(&f.f, &v, sizeof v);
    } else if ((w[0] >= '0' && w[0] <= '9') || w[0] == '-' || w[0] == '+') {
      f.kind = K::int64;
      f.i = parse_number<int64_t>(c, w);
    } else {
      TextCursor dc(w, c.where());
      f.kind = K::dtype;
      f.i = static_cast<int64_t>(parse_dtype(dc));
    }
  }
  return f;
}

}  // namespace text_detail

namespace text_detail {

/// The lines of a text file, numbered from 1, read one at a time.
class Lines {
 public:
  Lines(const std::string& bytes, const std::string& source) : bytes_(bytes), source_(source) {}
  bool done() const { return pos_ >= bytes_.size(); }
  /// The next line (without its newline); Error at the end of the file.
  const std::string& next() {
    if (done()) fail_at(source_, "line " + std::to_string(number_ + 1), "the file ends early");
    size_t end = bytes_.find('\n', pos_);
    if (end == std::string::npos) end = bytes_.size();
    line_ = bytes_.substr(pos_, end - pos_);
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    pos_ = end + 1;
    ++number_;
    return line_;
  }
  const std::string& line() const { return line_; }
  std::string where() const { return source_ + " line " + std::to_string(number_); }
  std::string where_short() const { return "line " + std::to_string(number_); }
  bool starts(const char* prefix) const { return line_.compare(0, std::strlen(prefix), prefix) == 0; }

 private:
  const std::string& bytes_;
  const std::string& source_;
  size_t pos_ = 0, number_ = 0;
  std::string line_;
};

void read_version(Lines& lines, const std::string& source, Module& m) {
  TextCursor c(lines.next(), lines.where());
  if (!c.accept(kHeader)) fail_at(source, "line 1", "the file does not start with 'fluxion-exported <version>'");
  m.version = c.count();
  if (m.version > kExportFormatVersion)
    detail::fail<Error>("load_exported", source, " has format version ", m.version,
                        " but this build reads versions up to ", kExportFormatVersion,
                        ". Load it with a newer Fluxion, or export it again with this one.");
  if (m.version < 1) fail_at(source, "line 1", "format version 0 does not exist");
  if (!c.at_end()) c.fail("unexpected text after the version");
}

/// `<prefix> <rest>`: the rest of the line after the prefix.
TextCursor field_line(Lines& lines, const char* prefix) {
  TextCursor c(lines.next(), lines.where());
  c.expect(prefix);
  return c;
}

void read_equation(TextCursor& c, SavedEquation& e, size_t& next) {
  c.expect("  ");
  while (true) {
    c.skip_spaces();
    if (c.accept('=')) break;
    std::string name = c.word();
    if (parse_var(c, name) != static_cast<int32_t>(next))
      c.fail("expected the variable " + var_name(next) + ", not " + name);
    c.expect(':');
    e.out_avals.push_back(parse_aval(c));
    ++next;
  }
  c.skip_spaces();
  e.primitive = c.word();
  if (c.accept('[')) {
    while (!c.accept(']')) {
      if (!e.params.empty()) c.expect(' ');
      std::string name = c.word();
      c.expect('=');
      e.params.push_back(parse_field(c, std::move(name)));
    }
  }
  while (!c.at_end()) {
    c.expect(' ');
    std::string token = c.token();
    if (token.find(':') != std::string::npos) e.inputs.push_back(parse_literal(c, token));
    else e.inputs.push_back(Atom::of_var(parse_var(c, token)));
  }
}

void read_atoms(TextCursor& c, std::vector<Atom>& out) {
  while (!c.at_end()) {
    c.expect(' ');
    std::string token = c.token();
    if (token.find(':') != std::string::npos) out.push_back(parse_literal(c, token));
    else out.push_back(Atom::of_var(parse_var(c, token)));
  }
}

SavedJaxpr read_block(Lines& lines) {
  SavedJaxpr b;
  b.where = lines.where_short();
  size_t next = 0;
  while (true) {
    TextCursor c(lines.next(), lines.where());
    if (!c.accept("  const ")) {
      c.expect("  in");
      while (!c.at_end()) {
        c.expect(' ');
        std::string name = c.word();
        if (parse_var(c, name) != static_cast<int32_t>(next)) c.fail("expected the variable " + var_name(next));
        c.expect(':');
        b.in_avals.push_back(parse_aval(c));
        ++next;
      }
      break;
    }
    std::string name = c.word();
    if (parse_var(c, name) != static_cast<int32_t>(next)) c.fail("expected the variable " + var_name(next));
    c.expect(':');
    AbstractValue aval = parse_aval(c);
    c.expect(" = ");
    b.consts.push_back(parse_tensor(c, aval, c.token()));
    if (!c.at_end()) c.fail("unexpected text after the constant");
    ++next;
  }
  while (true) {
    TextCursor c(lines.next(), lines.where());
    // The outputs line; an equation defining a variable named "out..." has ':' after the name.
    if (lines.line() == "  out" || lines.starts("  out ")) {
      c.expect("  out");
      read_atoms(c, b.outputs);
      break;
    }
    SavedEquation e;
    e.where = lines.where_short();
    read_equation(c, e, next);
    b.equations.push_back(std::move(e));
  }
  if (lines.next() != "end") fail_at(lines.where(), "", "expected 'end'");
  return b;
}

}  // namespace text_detail

Module read_text(const std::string& bytes, const std::string& source) {
  using namespace text_detail;
  Module m;
  Lines lines(bytes, source);
  read_version(lines, source, m);
  {
    TextCursor c = field_line(lines, "name ");
    m.name = c.quoted();
    if (!c.at_end()) c.fail("unexpected text after the name");
  }
  lines.next();
  if (!lines.starts("in_tree ")) fail_at(lines.where(), "", "expected 'in_tree <structure>'");
  m.in_tree = parse_tree_desc(lines.line().substr(8), lines.where());
  lines.next();
  if (!lines.starts("out_tree ")) fail_at(lines.where(), "", "expected 'out_tree <structure>'");
  m.out_tree = parse_tree_desc(lines.line().substr(9), lines.where());
  while (!lines.done()) {
    const std::string& header = lines.next();
    if (header.empty() && lines.done()) break;
    TextCursor c(header, lines.where());
    c.expect("jaxpr ");
    if (c.count() != static_cast<int64_t>(m.jaxprs.size()) || !c.at_end())
      c.fail("expected 'jaxpr " + std::to_string(m.jaxprs.size()) + "'");
    m.jaxprs.push_back(read_block(lines));
  }
  return m;
}

}  // namespace fluxion::export_detail
