/// Small helpers shared by the test files.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace fluxion::testing {

/// The message of the E thrown by f(), or "<no exception>".
template <class E, class F> std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) { return e.what(); }
  return "<no exception>";
}

/// What `os << v` prints.
template <class T> std::string to_text(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// The typechecked Jaxpr of f on args, as text.
template <class F, class... Args> std::string jaxpr_text(F f, const Args&... args) {
  Jaxpr j = make_jaxpr(f)(args...);
  typecheck(j);
  return to_text(j);
}

/// Largest |got - want| over the elements; +inf when the shapes differ, so a bound on it fails.
inline double max_diff(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return std::numeric_limits<double>::infinity();
  double m = 0;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) m = std::max(m, std::fabs(g[i] - w[i]));
  return m;
}

}  // namespace fluxion::testing
