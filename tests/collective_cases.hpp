// One function per collective, shared by the single-process tests (named-axis vmap, test_collectives.cpp) and
// the multi-process ones (tests/mpi/test_collectives_mpi.cpp): each takes one member's operand.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace fluxion::testing {

struct CollectiveCase {
  const char* what;
  std::function<Tensor(const Tensor&)> f;
  std::vector<int64_t> member;  // one member's operand shape
  bool replicated;              // the output is the same on every member (its cotangent is held once)
};

/// The cases over axis `axis` of `n` members (shapes that every collective's divisibility rules accept for n).
/// Several move a non-leading axis, so kernels that reorder blocks are exercised too.
inline std::vector<CollectiveCase> collective_cases(const std::string& axis, int64_t n) {
  return {
      {"all_sum", [axis](const Tensor& x) { return all_sum(sin(x), axis); }, {4}, true},
      {"all_mean", [axis](const Tensor& x) { return all_mean(x * x, axis); }, {2, 2}, true},
      {"all_max", [axis](const Tensor& x) { return all_max(x, axis); }, {3}, true},
      {"all_min", [axis](const Tensor& x) { return all_min(exp(x), axis); }, {3}, true},
      {"all_gather stacked at 1", [axis](const Tensor& x) { return all_gather(x * x, axis, 1); }, {2, 2}, false},
      {"all_gather tiled", [axis](const Tensor& x) { return all_gather(x, axis, 0, true); }, {3}, false},
      {"reduce_scatter on axis 1", [axis](const Tensor& x) { return reduce_scatter(sin(x), axis, 1); }, {2, n}, false},
      {"reduce_scatter tiled", [axis](const Tensor& x) { return reduce_scatter(x, axis, 0, true); }, {2 * n, 2}, false},
      {"all_to_all split 0 concat 1",
       [axis](const Tensor& x) { return all_to_all(x * x, axis, 0, 1); },
       {2 * n, 2},
       false},
      {"all_to_all split 1 concat 0", [axis](const Tensor& x) { return all_to_all(x, axis, 1, 0); }, {2, 2 * n}, false},
      {"broadcast from 1", [axis](const Tensor& x) { return broadcast(sin(x), axis, 1); }, {2}, false},
      {"axis_index", [axis](const Tensor& x) { return x * astype(axis_index(axis), x.dtype()); }, {2}, false},
  };
}

}  // namespace fluxion::testing
