/// Small helpers shared by the test files.
#pragma once
#include <sstream>
#include <string>

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

}  // namespace fluxion::testing
