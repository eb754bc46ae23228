// The checks in reverse mode (jacrev, grad, jit_grad, vmap_grad, hvp, hessian). Each transform is
// instantiated once, on diff::Fn; functions with a non-scalar output are made scalar by scalarize.
#include <stdexcept>

#include "harness.hpp"

namespace diff {

Leaves run_reverse_check(const std::string& check, const Fn& f, const Args& args, const Args& batched,
                         const Args& tangent) {
  Fn s = [f](const Args& a) { return scalarize(f(a)); };
  if (check == "jacrev") return fx::jacrev(f)(args);
  if (check == "grad") return fx::grad(s)(args);
  if (check == "jit_grad") return fx::jit(fx::grad(s))(args);
  if (check == "vmap_grad") return fx::vmap(fx::grad(s))(batched);
  if (check == "hvp") return fx::hvp(s, args, tangent);
  if (check == "hessian") {
    Leaves flat;
    for (const Leaves& row : fx::hessian(s)(args)) flat.insert(flat.end(), row.begin(), row.end());
    return flat;
  }
  throw std::logic_error("unknown reverse check " + check);
}

}  // namespace diff
