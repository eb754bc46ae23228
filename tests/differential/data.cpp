// Reading data/*.json and EXPECTED_DIFFERENCES.md, and comparing results with references.
#include "data.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

#ifndef FLUXION_DIFF_DIR
#error "FLUXION_DIFF_DIR (the tests/differential directory) must be defined by the build"
#endif

namespace diff {
namespace {

/// A parsed JSON value. The data files are plain JSON written by generate.py; this small reader
/// replaces nlohmann/json, whose templates cost this test half a minute of compilation.
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  double number = 0;
  std::string text;  // a String's value
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json* find(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
  const Json& at(const std::string& key) const {
    if (const Json* v = find(key)) return *v;
    throw std::runtime_error("data: missing key '" + key + "'");
  }
  std::string str() const {
    if (kind != String) throw std::runtime_error("data: expected a string");
    return text;
  }
  std::vector<std::string> strings() const {
    std::vector<std::string> out;
    for (const Json& v : items) out.push_back(v.str());
    return out;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : p_(s.data()), end_(s.data() + s.size()) {}
  Json parse() {
    Json v = value();
    if (skip() != end_) fail("trailing characters");
    return v;
  }

 private:
  const char* skip() {
    while (p_ != end_ && std::isspace(static_cast<unsigned char>(*p_))) ++p_;
    return p_;
  }
  [[noreturn]] void fail(const char* what) const { throw std::runtime_error(std::string("data: bad JSON: ") + what); }
  void expect(char c) {
    if (skip() == end_ || *p_ != c) fail("unexpected character");
    ++p_;
  }
  bool literal(const char* word) {
    size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::strncmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (p_ != end_ && *p_ != '"') {
      char c = *p_++;
      if (c == '\\' && p_ != end_) {
        c = *p_++;
        switch (c) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u':  // a code point: not needed by the data, kept as '?'
            p_ += std::min<std::ptrdiff_t>(4, end_ - p_);
            c = '?';
            break;
          default: break;  // \" \\ \/
        }
      }
      out += c;
    }
    expect('"');
    return out;
  }
  /// After an element of an array or object: true when a ',' (consumed) announces another.
  bool another() {
    if (skip() == end_ || *p_ != ',') return false;
    ++p_;
    return true;
  }
  Json value() {
    Json v;
    if (skip() == end_) fail("unexpected end");
    if (*p_ == '{') {
      v.kind = Json::Object;
      ++p_;
      if (skip() != end_ && *p_ == '}') {
        ++p_;
        return v;
      }
      do {
        std::string key = string();
        expect(':');
        v.members.emplace_back(std::move(key), value());
      } while (another());
      expect('}');
    } else if (*p_ == '[') {
      v.kind = Json::Array;
      ++p_;
      if (skip() != end_ && *p_ == ']') {
        ++p_;
        return v;
      }
      do v.items.push_back(value());
      while (another());
      expect(']');
    } else if (*p_ == '"') {
      v.kind = Json::String;
      v.text = string();
    } else if (literal("true")) {
      v.kind = Json::Bool;
      v.number = 1;
    } else if (literal("false")) {
      v.kind = Json::Bool;
    } else if (!literal("null")) {
      char* after = nullptr;
      v.kind = Json::Number;
      v.number = std::strtod(p_, &after);
      if (after == p_) fail("not a value");
      p_ = after;
    }
    return v;
  }
  const char* p_;
  const char* end_;
};

double number(const Json& v) {
  if (v.kind == Json::String) {
    const std::string& s = v.text;
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw std::runtime_error("data: unknown number '" + s + "'");
  }
  if (v.kind != Json::Number) throw std::runtime_error("data: expected a number");
  return v.number;
}

RefTensor ref_tensor(const Json& j) {
  RefTensor r{j.at("dtype").str(), {}, {}};
  for (const Json& d : j.at("shape").items) r.shape.push_back(static_cast<int64_t>(number(d)));
  int64_t n = 1;
  for (int64_t d : r.shape) n *= d;
  if (const Json* fill = j.find("fill")) {
    r.values.assign(static_cast<size_t>(n), number(*fill));
  } else {
    for (const Json& v : j.at("data").items) r.values.push_back(number(v));
  }
  if (static_cast<int64_t>(r.values.size()) != n)
    throw std::runtime_error("data: a tensor's size does not match its shape");
  return r;
}

fx::DType dtype_of(const std::string& name) {
  if (name == "f64") return fx::f64;
  if (name == "f32") return fx::f32;
  if (name == "i32") return fx::i32;
  if (name == "i64") return fx::i64;
  if (name == "bool") return fx::boolean;
  throw std::runtime_error("data: unknown dtype " + name);
}

Tensor to_tensor(const RefTensor& r) {
  return fx::astype(fx::from_vector(r.values, fx::Shape(r.shape)), dtype_of(r.dtype));
}

Args tensors(const Json& list) {
  Args out;
  for (const Json& t : list.items) out.push_back(to_tensor(ref_tensor(t)));
  return out;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" `"));
    item.erase(item.find_last_not_of(" `") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t`"));
  s.erase(s.find_last_not_of(" \t`") + 1);
  return s;
}

std::string describe(const RefTensor& r) {
  std::ostringstream os;
  os << r.dtype << "[";
  for (size_t i = 0; i < r.shape.size(); ++i) os << (i ? "," : "") << r.shape[i];
  os << "]";
  return os.str();
}

std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << t.aval();
  return os.str();
}

}  // namespace

const std::vector<Entry>& load_entries() {
  static const std::vector<Entry> entries = [] {
    std::vector<std::filesystem::path> files;
    for (const auto& p : std::filesystem::directory_iterator(std::filesystem::path(FLUXION_DIFF_DIR) / "data"))
      if (p.path().extension() == ".json") files.push_back(p.path());
    std::sort(files.begin(), files.end());
    std::vector<Entry> out;
    for (const auto& file : files) {
      std::ifstream in(file);
      std::stringstream text;
      text << in.rdbuf();
      Json doc = JsonParser(text.str()).parse();
      for (const Json& j : doc.at("entries").items) {
        Entry e;
        e.name = j.at("name").str();
        e.cpp = j.find("cpp") ? j.at("cpp").str() : e.name;
        e.dtype = j.at("dtype").str();
        e.checks = j.at("checks").strings();
        e.args = tensors(j.at("args"));
        e.batched = tensors(j.at("batched"));
        e.tangent = tensors(j.at("tangent"));
        for (const auto& [name, list] : j.at("refs").members)
          for (const Json& t : list.items) e.refs[name].push_back(ref_tensor(t));
        out.push_back(std::move(e));
      }
    }
    return out;
  }();
  return entries;
}

std::vector<Rule> load_rules() {
  std::ifstream in(std::filesystem::path(FLUXION_DIFF_DIR) / "EXPECTED_DIFFERENCES.md");
  if (!in) throw std::runtime_error("cannot read EXPECTED_DIFFERENCES.md");
  std::vector<Rule> rules;
  std::string line;
  // Rows whose first cell is a `backticked` entry pattern: | `pattern` | checks | kind | reason |
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string cell;
    while (std::getline(ss, cell, '|')) cells.push_back(trim(cell));
    if (cells.size() < 4) throw std::runtime_error("EXPECTED_DIFFERENCES.md: a row needs 4 cells: " + line);
    Rule r{cells[0], cells[1], cells[2], cells[3], split_list(cells[1])};
    if (r.kind != "convention" && r.kind != "dtype" && r.kind != "failure")
      throw std::runtime_error("EXPECTED_DIFFERENCES.md: kind must be convention, dtype or failure: " + line);
    rules.push_back(std::move(r));
  }
  return rules;
}

bool glob_match(const std::string& pattern, const std::string& text) {
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p, ++t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Rule* find_rule(std::vector<Rule>& rules, const std::string& entry, const std::string& check) {
  for (Rule& r : rules) {
    if (!glob_match(r.pattern, entry)) continue;
    for (const std::string& c : r.checks)
      if (c == "*" || c == check) return &r;
  }
  return nullptr;
}

Verdict compare(const Leaves& got, const std::vector<RefTensor>& ref, bool ignore_dtype) {
  Verdict v;
  std::ostringstream os;
  if (got.size() != ref.size()) {
    os << got.size() << " results, JAX has " << ref.size();
    v.shape_differs = true;
    v.text = os.str();
    return v;
  }
  // Relative to each element and, for elements much smaller than the rest of their tensor, to the
  // tensor's largest magnitude (derivatives that cancel). Integers and bools are compared exactly.
  for (size_t k = 0; k < got.size(); ++k) {
    const RefTensor& r = ref[k];
    const bool f32 = r.dtype == "f32" || got[k].dtype() == fx::f32;  // either side: a dtype row compares f64 to f32
    const double rtol = f32 ? 2e-5 : 1e-10, atol = f32 ? 1e-6 : 1e-14;
    if (got[k].shape() != r.shape) {
      os << "result " << k << " is " << describe(got[k]) << ", JAX's is " << describe(r);
      v.shape_differs = true;
      break;
    }
    if (got[k].dtype() != dtype_of(r.dtype)) {
      v.dtype_differs = true;
      if (!ignore_dtype) {
        os << "result " << k << " is " << describe(got[k]) << ", JAX's is " << describe(r);
        break;
      }
    }
    std::vector<double> a = fx::astype(got[k], fx::f64).to_vector<double>();
    const bool exact = r.dtype == "bool" || r.dtype == "i32" || r.dtype == "i64";
    double scale = 0;
    for (double b : r.values)
      if (std::isfinite(b)) scale = std::max(scale, std::fabs(b));
    for (size_t i = 0; i < a.size(); ++i) {
      const double b = r.values[i];
      const bool same = a[i] == b || (std::isnan(a[i]) && std::isnan(b));
      const double tol = rtol * (std::fabs(b) + 1e-2 * scale) + atol;
      const bool near = !exact && std::isfinite(a[i]) && std::isfinite(b) && std::fabs(a[i] - b) <= tol;
      if (near) v.worst = std::max(v.worst, std::fabs(a[i] - b) / tol);
      if (!same && !near) {
        os << std::setprecision(17) << "result " << k << " element " << i << " is " << a[i] << ", JAX's is " << b;
        v.text = os.str();
        return v;
      }
    }
  }
  v.text = os.str();
  return v;
}

}  // namespace diff
