// The Jaxpr printer and Jaxpr helpers.
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

std::vector<AbstractValue> Jaxpr::in_avals() const {
  std::vector<AbstractValue> out;
  for (int32_t v : invars) out.push_back(avals[v]);
  return out;
}
std::vector<AbstractValue> Jaxpr::out_avals() const {
  std::vector<AbstractValue> out;
  for (const Atom& a : outputs) out.push_back(aval_of(a));
  return out;
}

namespace jaxpr_print_detail {

// a..z, ba..bz, ca.. : JAX's naming, so printed Jaxprs read like JAX's.
std::string var_name(int64_t n) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + n % 26));
    n /= 26;
  } while (n > 0);
  return s;
}

std::string literal_text(const Tensor& t) {
  std::ostringstream os;
  // f16/bf16 literals print as the shortest text of their exact f32 value (it reads back to the same half).
  dispatch_dtype(compute_dtype(t.dtype()), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = t.item<T>();
    if constexpr (std::is_same_v<T, bool>) {
      os << (v ? "True" : "False");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) os << "nan";
      else if (std::isinf(v)) os << (v > 0 ? "inf" : "-inf");
      else {
        os.precision(std::is_same_v<T, float> ? 9 : 17);
        std::ostringstream shortest;
        // Shortest text that reads back to the same value.
        for (int p = 1; p <= (std::is_same_v<T, float> ? 9 : 17); ++p) {
          std::ostringstream trial;
          trial.precision(p);
          trial << v;
          if (static_cast<T>(std::stod(trial.str())) == v) {
            shortest << trial.str();
            break;
          }
        }
        std::string s = shortest.str();
        if (s.find_first_of(".e") == std::string::npos && s.find("inf") == std::string::npos) s += ".0";
        os.str("");
        os << s;
      }
    } else {
      os << v;
    }
  });
  return os.str() + ":" + dtype_name(t.dtype()) + "[]";
}

}  // namespace jaxpr_print_detail

std::ostream& operator<<(std::ostream& os, const Jaxpr& j) {
  using jaxpr_print_detail::literal_text;
  using jaxpr_print_detail::var_name;
  std::unordered_map<int32_t, std::string> names;
  auto name_of = [&](int32_t v) -> const std::string& {
    auto it = names.find(v);
    if (it == names.end()) it = names.emplace(v, var_name(static_cast<int64_t>(names.size()))).first;
    return it->second;
  };
  auto binder = [&](int32_t v) {
    return name_of(v) + ":" + [&] {
      std::ostringstream s;
      s << j.avals[v];
      return s.str();
    }();
  };
  auto atom = [&](const Atom& a) { return a.is_literal() ? literal_text(a.literal) : name_of(a.var); };

  os << "{ lambda ";
  for (size_t i = 0; i < j.constvars.size(); ++i) os << (i ? " " : "") << binder(j.constvars[i]);
  os << (j.constvars.empty() ? "; " : " ; ");
  for (size_t i = 0; i < j.invars.size(); ++i) os << (i ? " " : "") << binder(j.invars[i]);
  os << ". let\n";
  for (const Equation& e : j.equations) {
    os << "    ";
    for (size_t i = 0; i < e.outputs.size(); ++i) os << (i ? " " : "") << binder(e.outputs[i]);
    os << " = " << e.primitive->name;
    std::ostringstream ps;
    e.params->print(ps);
    if (!ps.str().empty()) os << '[' << ps.str() << ']';
    for (const Atom& a : e.inputs) os << ' ' << atom(a);
    os << '\n';
  }
  os << "  in (";
  for (size_t i = 0; i < j.outputs.size(); ++i) os << (i ? ", " : "") << atom(j.outputs[i]);
  if (j.outputs.size() == 1) os << ',';
  return os << ") }";
}

}  // namespace fluxion
