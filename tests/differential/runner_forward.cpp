// The checks in forward mode and without derivatives (value, jit, vmap, jvp, jacfwd, jacobian), the
// catalogue and the scalarizing weights. Each transform is instantiated once, on diff::Fn.
#include <stdexcept>

#include "harness.hpp"

namespace diff {

void Catalogue::add(const std::string& name, Fn f) {
  if (!fns_.emplace(name, std::move(f)).second) throw std::logic_error("catalogue: duplicate entry " + name);
}

const Fn* Catalogue::find(const std::string& name) const {
  auto it = fns_.find(name);
  return it == fns_.end() ? nullptr : &it->second;
}

Catalogue catalogue() {
  Catalogue c;
  add_unary_binary(c);
  add_compare_reduce(c);
  add_shape_index_linalg(c);
  add_control(c);
  add_nested(c);
  add_transforms(c);
  add_special(c);
  return c;
}

Tensor scalarize(const Tensor& y) {
  if (y.ndim() == 0) return y;
  std::vector<double> w(static_cast<size_t>(y.size()));
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.5 + 0.25 * static_cast<double>(k % 4);
  return fx::sum(y * fx::astype(fx::from_vector(w, y.shape()), y.dtype()));
}

bool is_forward_check(const std::string& check) {
  return check == "value" || check == "jit" || check == "vmap" || check == "jvp" || check == "jacfwd" ||
         check == "jacobian";
}

std::string reference_of(const std::string& check) {
  if (check == "jit") return "value";
  if (check == "jacfwd" || check == "jacrev") return "jacobian";
  if (check == "jit_grad") return "grad";
  return check;
}

Leaves run_forward_check(const std::string& check, const Fn& f, const Args& args, const Args& batched,
                         const Args& tangent) {
  if (check == "value") return {f(args)};
  if (check == "jit") return {fx::jit(f)(args)};
  if (check == "vmap") return {fx::vmap(f)(batched)};
  if (check == "jvp") return {fx::jvp(f, std::make_tuple(args), std::make_tuple(tangent)).second};
  if (check == "jacfwd") return fx::jacfwd(f)(args);
  if (check == "jacobian") return fx::jacobian(f)(args);
  throw std::logic_error("unknown forward check " + check);
}

}  // namespace diff
