/// The error hierarchy: every user-facing failure is a fluxion::Error subclass.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace fluxion {

/// Base of every Fluxion error. Messages read "[where] what is wrong, with values. How to fix."
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class ShapeError : public Error {
 public:
  using Error::Error;
};
class DTypeError : public Error {
 public:
  using Error::Error;
};
class AxisError : public Error {
 public:
  using Error::Error;
};
class ConcretizationError : public Error {
 public:
  using Error::Error;
};
class LeakedTracerError : public Error {
 public:
  using Error::Error;
};
class NotImplementedError : public Error {
 public:
  using Error::Error;
};
class DeviceError : public Error {
 public:
  using Error::Error;
};
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

namespace detail {

/// Concatenates anything printable into one string; used to build error messages.
template <class... Args> std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// Throws E with the message "[where] <parts...>" (built only when called).
template <class E, class... Args> [[noreturn]] void fail(const char* where, const Args&... parts) {
  throw E(cat("[", where, "] ", parts...));
}

}  // namespace detail
}  // namespace fluxion
