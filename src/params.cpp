// Printing and hashing of primitive parameters (the Jaxpr text format of DESIGN.md §4).
#include <functional>
#include <sstream>

#include "fluxion/primitive.hpp"

namespace fluxion {

const NoParams& no_params() {
  static const NoParams p;
  return p;
}

namespace detail {

void print_param(std::ostream& os, int64_t v) { os << v; }
void print_param(std::ostream& os, bool v) { os << (v ? "True" : "False"); }
void print_param(std::ostream& os, double v) { os << v; }
void print_param(std::ostream& os, DType v) { os << v; }
void print_param(std::ostream& os, const Shape& v) { print_param(os, v.dims()); }
// Python tuple style: (), (1,), (0,1).
void print_param(std::ostream& os, const std::vector<int64_t>& v) {
  os << '(';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  if (v.size() == 1) os << ',';
  os << ')';
}
void print_param(std::ostream& os, const std::string& v) { os << "'" << v << "'"; }
void print_param(std::ostream& os, const AxisPair& v) {
  os << '(';
  print_param(os, v.first);
  os << ',';
  print_param(os, v.second);
  os << ')';
}

size_t hash_param(int64_t v) { return std::hash<int64_t>{}(v); }
size_t hash_param(bool v) { return v ? 1 : 2; }
size_t hash_param(double v) { return std::hash<double>{}(v); }
size_t hash_param(DType v) { return static_cast<size_t>(v) + 17; }
size_t hash_param(const std::vector<int64_t>& v) {
  size_t h = v.size();
  for (int64_t x : v) h = hash_combine(h, std::hash<int64_t>{}(x));
  return h;
}
size_t hash_param(const Shape& v) { return hash_param(v.dims()); }
size_t hash_param(const std::string& v) { return std::hash<std::string>{}(v); }
size_t hash_param(const AxisPair& v) { return hash_combine(hash_param(v.first), hash_param(v.second)); }

}  // namespace detail
}  // namespace fluxion
