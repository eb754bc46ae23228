// Samples of the collectives, in their named-axis vmap form: each sample's inputs carry the members on a
// leading axis and `fn` runs the collective inside fx::vmap(..., fx::axis_name("i")), so every rule suite
// (derivatives, vmap against a loop, jit against eager) runs the collective's rules in one process. A second
// form puts an unnamed vmap inside the named one (in_axes 1), which runs the collective's ordinary batching
// rule first. The suites that compare one staged equation across backends skip these samples
// (Sample::collective_form); tests/mpi runs the kernels across processes.
#include <sstream>

#include "samples.hpp"

namespace fluxion::testing {
namespace collectives_samples {

using Fn = std::function<Tensor(const Tensor&)>;

// The named form of per-member `f` over inputs [members, ...]: one member per row.
Sample named(std::string label, Tensor x, Fn f, Shape out, DType dt, bool nested = false) {
  std::ostringstream l;
  l << label << (nested ? " (inside an unnamed vmap)" : "") << ": " << x.aval();
  auto fn = [f, nested](const std::vector<Tensor>& in) {
    auto member = [f, nested](const Tensor& x) { return nested ? vmap(f, in_axes(1))(x) : f(x); };
    return std::vector<Tensor>{vmap(member, axis_name("i"))(in[0])};
  };
  Sample s{l.str(), {x}, fn, {AbstractValue{out, dt}}};
  s.collective_form = true;
  return s;
}

// Samples of an elementwise collective `op` (all_sum, all_mean, all_max, all_min, pvary, broadcast).
std::vector<Sample> elementwise(const char* name, DType dt, const std::function<Tensor(const Tensor&)>& op,
                                uint64_t seed) {
  std::vector<Sample> out;
  out.push_back(named(name, random_tensor({3, 4}, dt, seed), op, {3, 4}, dt));
  out.push_back(named(name, random_tensor({2, 2, 3}, dt, seed + 1), op, {2, 2, 3}, dt));
  out.push_back(named(name, random_tensor({4}, dt, seed + 2), op, {4}, dt));        // rank-0 members
  out.push_back(named(name, random_tensor({1, 3}, dt, seed + 3), op, {1, 3}, dt));  // one member
  out.push_back(named(name, random_tensor({3, 0}, dt, seed + 4), op, {3, 0}, dt));  // empty operands
  // Three members of [2, 2], each an unnamed batch along its axis 1.
  out.push_back(named(name, random_tensor({3, 2, 2}, dt, seed + 5), op, {3, 2, 2}, dt, true));
  return out;
}

std::vector<Sample> with_ints(std::vector<Sample> s, const char* name, const std::function<Tensor(const Tensor&)>& op) {
  s.push_back(named(std::string(name) + " of i32", random_tensor({3, 2}, i32, 77, -9, 9), op, {3, 2}, i32));
  s.back().differentiable = false;
  return s;
}

Tensor sum_i(const Tensor& x) { return all_sum(x, "i"); }
Tensor mean_i(const Tensor& x) { return all_mean(x, "i"); }
Tensor max_i(const Tensor& x) { return all_max(x, "i"); }
Tensor min_i(const Tensor& x) { return all_min(x, "i"); }
Tensor pvary_i(const Tensor& x) { return pvary(x, "i"); }

std::vector<Sample> gathers(DType dt) {
  std::vector<Sample> s;
  s.push_back(named(
      "stacked at 0", random_tensor({3, 2, 4}, dt, 11), [](const Tensor& x) { return all_gather(x, "i"); },
      {3, 3, 2, 4}, dt));
  s.push_back(named(
      "stacked at 1", random_tensor({3, 2, 4}, dt, 12), [](const Tensor& x) { return all_gather(x, "i", 1); },
      {3, 2, 3, 4}, dt));
  s.push_back(named(
      "stacked at the end", random_tensor({2, 3}, dt, 13), [](const Tensor& x) { return all_gather(x, "i", -1); },
      {2, 3, 2}, dt));
  s.push_back(named(
      "tiled along 0", random_tensor({3, 2, 4}, dt, 14), [](const Tensor& x) { return all_gather(x, "i", 0, true); },
      {3, 6, 4}, dt));
  s.push_back(named(
      "tiled along 1", random_tensor({3, 2, 4}, dt, 15), [](const Tensor& x) { return all_gather(x, "i", 1, true); },
      {3, 2, 12}, dt));
  s.push_back(named(
      "tiled along 0", random_tensor({3, 2, 2, 3}, dt, 16), [](const Tensor& x) { return all_gather(x, "i", 0, true); },
      {3, 2, 6, 3}, dt, true));
  return s;
}

std::vector<Sample> scatters(DType dt) {
  std::vector<Sample> s;
  s.push_back(named(
      "blocks on axis 0", random_tensor({3, 3, 2}, dt, 21), [](const Tensor& x) { return reduce_scatter(x, "i"); },
      {3, 2}, dt));
  s.push_back(named(
      "blocks on axis 1", random_tensor({3, 2, 3}, dt, 22), [](const Tensor& x) { return reduce_scatter(x, "i", 1); },
      {3, 2}, dt));
  s.push_back(named(
      "tiled on axis 0", random_tensor({3, 6, 2}, dt, 23),
      [](const Tensor& x) { return reduce_scatter(x, "i", 0, true); }, {3, 2, 2}, dt));
  s.push_back(named(
      "tiled on axis 1", random_tensor({2, 3, 4}, dt, 24),
      [](const Tensor& x) { return reduce_scatter(x, "i", 1, true); }, {2, 3, 2}, dt));
  s.push_back(named(
      "tiled on axis 0", random_tensor({3, 6, 2}, dt, 25),
      [](const Tensor& x) { return reduce_scatter(x, "i", 0, true); }, {3, 2, 2}, dt, true));
  return s;
}

std::vector<Sample> to_alls(DType dt) {
  std::vector<Sample> s;
  s.push_back(named(
      "split 0, concat 1", random_tensor({3, 6, 2}, dt, 31), [](const Tensor& x) { return all_to_all(x, "i", 0, 1); },
      {3, 2, 6}, dt));
  s.push_back(named(
      "split 1, concat 0", random_tensor({2, 3, 4}, dt, 32), [](const Tensor& x) { return all_to_all(x, "i", 1, 0); },
      {2, 6, 2}, dt));
  s.push_back(named(
      "split and concat 0", random_tensor({3, 6, 2}, dt, 33), [](const Tensor& x) { return all_to_all(x, "i", 0, 0); },
      {3, 6, 2}, dt));
  s.push_back(named(
      "split 2, concat 0, rank 3", random_tensor({2, 2, 3, 4}, dt, 34),
      [](const Tensor& x) { return all_to_all(x, "i", 2, 0); }, {2, 4, 3, 2}, dt));
  s.push_back(named(
      "split 0, concat 1", random_tensor({2, 2, 4, 3}, dt, 35),
      [](const Tensor& x) { return all_to_all(x, "i", 0, 1); }, {2, 4, 1, 6}, dt, true));
  return s;
}

std::vector<Sample> broadcasts(DType dt) {
  std::vector<Sample> s = elementwise(
      "root 0", dt, [](const Tensor& x) { return broadcast(x, "i"); }, 41);
  s.push_back(named(
      "root 2", random_tensor({3, 2}, dt, 47), [](const Tensor& x) { return broadcast(x, "i", 2); }, {3, 2}, dt));
  return s;
}

std::vector<Sample> indices(DType dt) {
  std::vector<Sample> s;
  // Each member scales its row by its index: the only floating input is x, so derivatives apply.
  auto scaled = [](const Tensor& x) { return x * astype(axis_index("i"), x.dtype()); };
  s.push_back(named("x * index", random_tensor({3, 2}, dt, 51), scaled, {3, 2}, dt));
  s.push_back(named("x * index", random_tensor({4, 3, 2}, dt, 52), scaled, {4, 2, 3}, dt, true));
  return s;
}

// Errors: an unbound name, eagerly and under jit (where the name is looked up while tracing).
BadInput unbound(const char* name, const std::function<Tensor(const Tensor&)>& op) {
  return bad<Error>(std::string(name) + ": unbound axis name",
                    std::string("[") + name + "] axis name 'i' is not bound: no enclosing fx::vmap",
                    [op] { op(ones({2}, f32)); });
}
BadInput unbound_in_jit(const char* name, const std::function<Tensor(const Tensor&)>& op) {
  return bad<Error>(std::string(name) + ": unbound axis name under jit", "axis name 'i' is not bound",
                    [op] { jit([op](const Tensor& x) { return op(x); })(ones({2}, f32)); });
}
BadInput in_vmap(std::string label, std::string message, const std::function<Tensor(const Tensor&)>& op,
                 Shape shape = {3, 2}, DType dt = f32) {
  return bad<Error>(std::move(label), std::move(message),
                    [op, shape, dt] { vmap(op, axis_name("i"))(ones(shape, dt)); });
}

const bool registered = [] {
  register_samples("all_sum",
                   {[](DType dt) { return with_ints(elementwise("all_sum", dt, sum_i, 1), "all_sum", sum_i); },
                    {unbound("all_sum", sum_i), unbound_in_jit("all_sum", sum_i),
                     in_vmap("bool operand", "[all_sum] does not take bool[2]", sum_i, {3, 2}, boolean)}});
  register_samples("all_mean", {[](DType dt) { return elementwise("all_mean", dt, mean_i, 101); },
                                {unbound("all_mean", mean_i), unbound_in_jit("all_mean", mean_i)}});
  register_samples("all_max",
                   {[](DType dt) { return with_ints(elementwise("all_max", dt, max_i, 201), "all_max", max_i); },
                    {unbound("all_max", max_i),
                     in_vmap("bool operand", "[all_max] does not take bool[2]", max_i, {3, 2}, boolean)}});
  register_samples("all_min",
                   {[](DType dt) { return with_ints(elementwise("all_min", dt, min_i, 301), "all_min", min_i); },
                    {unbound("all_min", min_i),
                     in_vmap("bool operand", "[all_min] does not take bool[2]", min_i, {3, 2}, boolean)}});
  register_samples("pvary", {[](DType dt) { return elementwise("pvary", dt, pvary_i, 401); },
                             {unbound("pvary", pvary_i), unbound_in_jit("pvary", pvary_i)}});
  register_samples("all_gather", {gathers,
                                  {unbound("all_gather", [](const Tensor& x) { return all_gather(x, "i"); }),
                                   in_vmap("axis out of range", "[all_gather] axis 2 is out of range for f32[2]",
                                           [](const Tensor& x) { return all_gather(x, "i", 2); }),
                                   in_vmap("tiled axis out of range", "[all_gather] axis 1 is out of range for f32[2]",
                                           [](const Tensor& x) { return all_gather(x, "i", 1, true); })}});
  register_samples(
      "reduce_scatter",
      {scatters,
       {unbound("reduce_scatter", [](const Tensor& x) { return reduce_scatter(x, "i"); }),
        in_vmap("one block per member", "[reduce_scatter] axis 0 of f32[2] has size 2, which is not the size 3",
                [](const Tensor& x) { return reduce_scatter(x, "i"); }),
        in_vmap("tiled: a multiple", "which is not a multiple of the size 3 of axis 'i'",
                [](const Tensor& x) { return reduce_scatter(x, "i", 0, true); })}});
  register_samples("all_to_all", {to_alls,
                                  {unbound("all_to_all", [](const Tensor& x) { return all_to_all(x, "i", 0, 0); }),
                                   in_vmap("split axis not divisible",
                                           "[all_to_all] split_axis 0 of f32[2] has size 2, which is not a multiple",
                                           [](const Tensor& x) { return all_to_all(x, "i", 0, 0); }),
                                   in_vmap("concat axis out of range", "[all_to_all] concat_axis 3 is out of range",
                                           [](const Tensor& x) { return all_to_all(x, "i", 0, 3); })}});
  register_samples("broadcast",
                   {broadcasts,
                    {unbound("broadcast", [](const Tensor& x) { return broadcast(x, "i"); }),
                     in_vmap("root out of range", "[broadcast] root 3 is not a member of axis 'i' of size 3",
                             [](const Tensor& x) { return broadcast(x, "i", 3); })}});
  register_samples("axis_index", {indices,
                                  {unbound("axis_index", [](const Tensor&) { return axis_index("i"); }),
                                   unbound_in_jit("axis_index", [](const Tensor&) { return axis_index("i"); })}});
  return true;
}();

}  // namespace collectives_samples
}  // namespace fluxion::testing
