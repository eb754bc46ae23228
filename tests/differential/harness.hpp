/// The differential harness: catalogue functions (one type-erased signature, so that each transform
/// template is instantiated once, in runner.cpp) and the checks comparing them to JAX's references.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace diff {

namespace fx = fluxion;
using fx::Tensor;
using Args = std::vector<Tensor>;
/// Every catalogue function: the inputs as one pytree (so grad/jacobians/hessian are taken in all
/// of them at once, like JAX's grad of a function of a list) -> one Tensor.
using Fn = std::function<Tensor(const Args&)>;

/// Catalogue name -> function; filled by the add_* functions of the cat_*.cpp files.
class Catalogue {
 public:
  void add(const std::string& name, Fn f);
  const Fn* find(const std::string& name) const;
  size_t size() const { return fns_.size(); }
  const std::map<std::string, Fn>& all() const { return fns_; }

 private:
  std::map<std::string, Fn> fns_;
};

void add_unary_binary(Catalogue& c);
void add_compare_reduce(Catalogue& c);
void add_shape_index_linalg(Catalogue& c);
void add_control(Catalogue& c);
void add_nested(Catalogue& c);
void add_transforms(Catalogue& c);
void add_special(Catalogue& c);

/// The whole catalogue.
Catalogue catalogue();

/// The weights making an output y scalar for grad/hessian/hvp: S = y for a scalar y, else
/// sum(y * w) with w.flat[k] = 0.5 + 0.25 * (k % 4), in y's dtype (spec.py's `weights`).
Tensor scalarize(const Tensor& y);

/// The result of one check, flattened to its leaves in JAX's order (hessian: row-major blocks).
using Leaves = std::vector<Tensor>;
/// Runs the check named `check` (value, jit, vmap, jvp, jacfwd, jacrev, jacobian, grad, jit_grad,
/// vmap_grad, hvp, hessian) of `f`; throws whatever Fluxion throws.
Leaves run_forward_check(const std::string& check, const Fn& f, const Args& args, const Args& batched,
                         const Args& tangent);
Leaves run_reverse_check(const std::string& check, const Fn& f, const Args& args, const Args& batched,
                         const Args& tangent);
/// True when `check` is one of run_forward_check's (else run_reverse_check's).
bool is_forward_check(const std::string& check);
/// The reference a check compares with when the data has none of the check's own name (jit: value,
/// jacfwd/jacrev: jacobian, jit_grad: grad).
std::string reference_of(const std::string& check);

}  // namespace diff
