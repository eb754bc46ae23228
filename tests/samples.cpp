// The sample registry, deterministic random tensors and tensor comparison.
#include "samples.hpp"

#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>

namespace fluxion::testing {

namespace {
std::map<std::string, PrimitiveSamples>& registry() {
  static std::map<std::string, PrimitiveSamples> r;
  return r;
}
}  // namespace

bool register_samples(const std::string& primitive, PrimitiveSamples samples) {
  registry()[primitive] = std::move(samples);
  return true;
}

const std::map<std::string, PrimitiveSamples>& sample_registry() { return registry(); }

Device test_device() {
  static const Device device = [] {
    const char* env = std::getenv("FLUXION_TEST_DEVICE");
    return env && std::string(env) == "cuda" && cuda::is_available() ? Device::cuda(0) : Device::cpu();
  }();
  return device;
}

std::vector<Sample> on_test_device(std::vector<Sample> samples) {
  if (test_device().is_cpu()) return samples;
  for (Sample& s : samples)
    for (Tensor& t : s.inputs) t = device_put(t, test_device());
  return samples;
}

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed * 7919 + 17);
  std::uniform_real_distribution<double> u(lo, hi);
  int64_t n = checked_num_elements("random_tensor", shape.dims());
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    x = u(rng);
    if (dtype == boolean) x = x > (lo + hi) / 2 ? 1.0 : 0.0;
    else if (is_integer(dtype)) x = std::round(x);
  }
  Tensor t = empty(AbstractValue{shape, dtype});
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.mutable_data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = detail::convert_scalar<T>(v[static_cast<size_t>(i)]);
  });
  return t;
}

Tensor grid_tensor(const Shape& shape, DType dtype, uint64_t seed) {
  std::vector<double> v = random_tensor(shape, f64, seed).to_vector<double>();
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> c(v.size());
    for (size_t i = 0; i < v.size(); ++i) c[i] = detail::convert_scalar<T>(std::round(v[i] * 16) / 16);
    return from_vector(c, shape);
  });
}

std::string compare_tensors(const Tensor& got, const Tensor& want, double* worst_rel) {
  std::ostringstream os;
  if (got.aval() != want.aval()) {
    os << "aval " << got.aval() << " != " << want.aval();
    return os.str();
  }
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double atol = 0, rtol = 0;
  if (got.dtype() == f32) atol = 1e-6, rtol = 1e-5;
  if (got.dtype() == f64) atol = 1e-13, rtol = 1e-12;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (g[i] == w[i]) continue;
    double err = std::fabs(g[i] - w[i]);
    if (worst_rel) *worst_rel = std::max(*worst_rel, err / std::max(std::fabs(w[i]), 1e-300));
    // An infinity equals only itself (the relative tolerance of an infinite value is infinite).
    if (std::isinf(g[i]) || std::isinf(w[i]) || !(err <= atol + rtol * std::fabs(w[i]))) {
      os.precision(17);
      os << "element " << i << ": got " << g[i] << ", want " << w[i];
      return os.str();
    }
  }
  return "";
}

}  // namespace fluxion::testing
