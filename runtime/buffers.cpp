// Buffer liveness: a greedy walk over the steps, taking for each new intermediate the free buffer
// that fits best (the smallest that fits, else the largest, grown).
#include "runtime/buffers.hpp"

#include <algorithm>
#include <iterator>
#include <map>

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
  // The buffer-owning root of each variable, by one pass in definition order (a view's source is
  // defined before it), so long chains of views cost one step each.
  std::vector<int32_t> root_of(nv);
  for (size_t v = 0; v < nv; ++v) root_of[v] = static_cast<int32_t>(v);
  auto resolve = [&](int32_t v) {
    if (plan.kind[v] == Kind::stable_view) root_of[v] = root_of[plan.view_source[v]];
  };
  for (int32_t v : j.constvars) resolve(v);
  for (int32_t v : j.invars) resolve(v);
  for (const Equation& e : j.equations)
    for (int32_t v : e.outputs) resolve(v);
  auto root = [&](int32_t v) { return root_of[v]; };
  std::vector<int32_t> last_use(nv, -1);
  for (size_t s = 0; s < reads.size(); ++s)
    for (int32_t v : reads[s]) last_use[root(v)] = static_cast<int32_t>(s);
  plan.buffer_of.assign(nv, -1);
  // Free buffers by capacity; among equal capacities, in the order they were freed.
  std::multimap<int64_t, int32_t> free_by_bytes;
  auto nbytes = [&](int32_t v) {
    return static_cast<int64_t>(j.avals[v].shape.num_elements()) * itemsize_of(j.avals[v].dtype);
  };
  auto release = [&](int32_t v) {
    if (reuse && plan.kind[v] == Kind::intermediate && plan.buffer_of[v] >= 0)
      free_by_bytes.emplace(plan.buffer_bytes[plan.buffer_of[v]], plan.buffer_of[v]);
  };
  auto allocate = [&](int32_t v) {
    const int64_t need = nbytes(v);
    if (free_by_bytes.empty()) {
      plan.buffer_bytes.push_back(need);
      plan.buffer_of[v] = static_cast<int32_t>(plan.buffer_bytes.size() - 1);
      return;
    }
    // The smallest that fits, else the first freed of the largest (grown).
    auto best = free_by_bytes.lower_bound(need);
    if (best == free_by_bytes.end()) best = free_by_bytes.lower_bound(std::prev(free_by_bytes.end())->first);
    const int32_t b = best->second;
    free_by_bytes.erase(best);
    plan.buffer_bytes[b] = std::max(plan.buffer_bytes[b], need);
    plan.buffer_of[v] = b;
  };
  // released_at[v] == s: v's buffer was released at step s already.
  std::vector<int32_t> released_at(nv, -1);
  for (size_t s = 0; s < defs.size(); ++s) {
    const auto step = static_cast<int32_t>(s);
    if (reuse && uses.in_place[s]) {
      int32_t out_size = defs[s].empty() ? 0 : itemsize_of(j.avals[defs[s][0]].dtype);
      for (int32_t v : reads[s]) {
        int32_t r = root(v);
        if (last_use[r] == step && itemsize_of(j.avals[r].dtype) == out_size && released_at[r] != step) {
          release(r);
          released_at[r] = step;
        }
      }
    }
    for (int32_t v : defs[s])
      if (plan.kind[v] == Kind::intermediate) allocate(v);
    for (int32_t v : reads[s]) {
      int32_t r = root(v);
      if (last_use[r] == step && released_at[r] != step) {
        release(r);
        released_at[r] = step;
      }
    }
    // Values defined and never read (outputs of multi-output primitives) free immediately.
    for (int32_t v : defs[s])
      if (last_use[v] < 0 && plan.kind[v] == Kind::intermediate) release(v);
  }
}

}  // namespace fluxion::runtime
