// Buffer liveness: a greedy walk over the steps, taking for each new intermediate the free buffer
// that fits best (the smallest that fits, else the largest, grown).
#include "runtime/buffers.hpp"

#include <algorithm>

#include "runtime/switches.hpp"

namespace fluxion::runtime {

// Elementwise kernels may write over an input that dies at their step when the element sizes
// match: coefficient-wise kernels are alias-safe.
void assign_buffers(const Jaxpr& j, Plan& plan, const StepUses& uses) {
  const std::vector<std::vector<int32_t>>& defs = uses.defs;
  const std::vector<std::vector<int32_t>>& reads = uses.reads;
  // Without reuse no buffer is ever released, so each intermediate allocates its own.
  const bool reuse = enabled(Switch::buffer_reuse);
  const size_t nv = j.avals.size();
  auto root = [&](int32_t v) {
    while (plan.kind[v] == Kind::stable_view) v = plan.view_source[v];
    return v;
  };
  std::vector<int32_t> last_use(nv, -1);
  for (size_t s = 0; s < reads.size(); ++s)
    for (int32_t v : reads[s]) last_use[root(v)] = static_cast<int32_t>(s);
  plan.buffer_of.assign(nv, -1);
  std::vector<int32_t> free_list;
  auto nbytes = [&](int32_t v) {
    return static_cast<int64_t>(j.avals[v].shape.num_elements()) * itemsize_of(j.avals[v].dtype);
  };
  auto release = [&](int32_t v) {
    if (reuse && plan.kind[v] == Kind::intermediate && plan.buffer_of[v] >= 0) free_list.push_back(plan.buffer_of[v]);
  };
  auto allocate = [&](int32_t v) {
    int64_t need = nbytes(v);
    int best = -1;
    for (int k = 0; k < static_cast<int>(free_list.size()); ++k) {
      int64_t cap = plan.buffer_bytes[free_list[k]];
      if (best < 0) {
        best = k;
        continue;
      }
      int64_t bcap = plan.buffer_bytes[free_list[best]];
      bool fits = cap >= need, bfits = bcap >= need;
      if ((fits && !bfits) || (fits && bfits && cap < bcap) || (!fits && !bfits && cap > bcap)) best = k;
    }
    if (best < 0) {
      plan.buffer_bytes.push_back(need);
      plan.buffer_of[v] = static_cast<int32_t>(plan.buffer_bytes.size() - 1);
      return;
    }
    int32_t b = free_list[best];
    free_list.erase(free_list.begin() + best);
    plan.buffer_bytes[b] = std::max(plan.buffer_bytes[b], need);
    plan.buffer_of[v] = b;
  };
  for (size_t s = 0; s < defs.size(); ++s) {
    std::vector<int32_t> released;
    if (reuse && uses.in_place[s]) {
      int32_t out_size = defs[s].empty() ? 0 : itemsize_of(j.avals[defs[s][0]].dtype);
      for (int32_t v : reads[s]) {
        int32_t r = root(v);
        if (last_use[r] == static_cast<int32_t>(s) && itemsize_of(j.avals[r].dtype) == out_size &&
            std::find(released.begin(), released.end(), r) == released.end()) {
          release(r);
          released.push_back(r);
        }
      }
    }
    for (int32_t v : defs[s])
      if (plan.kind[v] == Kind::intermediate) allocate(v);
    for (int32_t v : reads[s]) {
      int32_t r = root(v);
      if (last_use[r] == static_cast<int32_t>(s) && std::find(released.begin(), released.end(), r) == released.end()) {
        release(r);
        released.push_back(r);
      }
    }
    // Values defined and never read (outputs of multi-output primitives) free immediately.
    for (int32_t v : defs[s])
      if (last_use[v] < 0 && plan.kind[v] == Kind::intermediate) release(v);
  }
}

}  // namespace fluxion::runtime
