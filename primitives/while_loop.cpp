// while: inputs (cond consts..., body consts..., carry...), params: cond (consts, carry -> bool[])
// and body (consts, carry -> carry) sub-Jaxprs and an optional max_steps (-1: unbounded).
#include <sstream>

#include "fluxion/control_flow.hpp"
#include "primitives/control_flow_params.hpp"
#include "fluxion/lax.hpp"
#include "primitives/builder.hpp"
#include "runtime/loop_runner.hpp"
#include "runtime/switches.hpp"
#include "transforms/batching.hpp"

namespace fluxion {
namespace while_detail {

using namespace control_flow_detail;

const char* const kNeedsMaxSteps =
    "reverse-mode differentiation (grad, vjp, jacrev) through a while_loop needs a bound on its trip count. "
    "Pass fx::max_steps(n) as the last argument of fx::while_loop (the loop then runs at most n steps), or use "
    "fx::fori_loop with static bounds or fx::scan.";

using Slices = std::vector<Tensor>;
Slices part(const std::vector<Tensor>& v, size_t from, size_t n) {
  return Slices(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(from + n));
}
Slices cat(Slices a, const Slices& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<AbstractValue> shape_rule(const Primitive&, const std::vector<AbstractValue>& in, const Params& params) {
  const auto& p = params.as<WhileParams>();
  const Jaxpr& body = p.body.jaxpr();
  const size_t n = body.outputs.size();
  if (in.size() != p.ncc() + p.nbc() + n)
    detail::fail<ShapeError>("while", "expected ", p.ncc() + p.nbc() + n, " inputs, got ", in.size(), ".");
  std::vector<AbstractValue> carry(in.end() - static_cast<std::ptrdiff_t>(n), in.end());
  if (body.out_avals() != carry) detail::fail<ShapeError>("while", "the body's outputs do not match the carry.");
  for (size_t i = 0; i < p.nbc() + n; ++i)
    if (body.avals[body.invars[i]] != in[p.ncc() + i])
      detail::fail<ShapeError>("while", "body input ", i, " is ", in[p.ncc() + i], " but the body was traced for ",
                               body.avals[body.invars[i]], ".");
  const Jaxpr& c = p.cond.jaxpr();
  for (size_t i = 0; i < p.ncc(); ++i)
    if (c.avals[c.invars[i]] != in[i])
      detail::fail<ShapeError>("while", "cond input ", i, " is ", in[i], " but cond was traced for ",
                               c.avals[c.invars[i]], ".");
  return carry;
}

template <bool Reference> void kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<WhileParams>();
  const size_t n = out.size();
  Slices cc = part(in, 0, p.ncc()), bc = part(in, p.ncc(), p.nbc()), carry = part(in, p.ncc() + p.nbc(), n);
  auto run = [](const SubJaxpr& s, const Slices& args) { return Reference ? s.run_reference(args) : s.run(args); };
  for (int64_t step = 0; p.max_steps < 0 || step < p.max_steps; ++step) {
    Tensor pred = run(p.cond, cat(cc, carry))[0];
    if (!pred.template item<bool>()) break;
    carry = run(p.body, cat(bc, carry));
  }
  copy_outputs("while", carry, out);
}

/// The compiled kernel: cond's and body's plans each run step after step on one held state
/// (runtime::LoopRunner). The body carries its carries in two buffers per carry; cond reads the
/// same two, following each exchange with one of its own. With the `loops` switch off: one plan
/// call per step (kernel<false>).
void compiled_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  if (!runtime::enabled(runtime::Switch::loops)) return kernel<false>(in, params, out);
  const auto& p = params.as<WhileParams>();
  const size_t ncc = p.ncc(), nbc = p.nbc(), n = out.size();
  if (p.max_steps == 0) {
    copy_outputs("while", part(in, ncc + nbc, n), out);
    return;
  }
  const Device device = in.empty() ? Device::cpu() : in[0].device();
  runtime::LoopRunner cond(p.cond.executable(device)), body(p.body.executable(device));
  for (size_t i = 0; i < ncc; ++i) cond.bind(i, in[i]);
  for (size_t i = 0; i < nbc; ++i) body.bind(i, in[ncc + i]);
  Slices other(n);  // cond's copy of the buffer body.advance() makes each carry's next value
  for (size_t k = 0; k < n; ++k) {
    body.carry(nbc + k, k, in[ncc + nbc + k]);
    cond.bind(ncc + k, body.argument(nbc + k));
    other[k] = body.next_buffer(nbc + k);
  }
  for (int64_t step = 0; p.max_steps < 0 || step < p.max_steps; ++step) {
    cond.run();
    if (!*cond.result(0).data<bool>()) break;
    body.run();
    body.advance();
    for (size_t k = 0; k < n; ++k) cond.exchange(ncc + k, other[k]);
  }
  Slices carry;
  for (size_t k = 0; k < n; ++k) carry.push_back(body.argument(nbc + k));
  copy_outputs("while", carry, out);
}

// A while over (primal, tangent) carries. The nonzero carry tangents are a fixed point: a carry
// whose tangent starts at zero becomes nonzero if the body makes it so.
void jvp_rule(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
              const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const auto& p = params.as<WhileParams>();
  const size_t ncc = p.ncc(), nbc = p.nbc(), n = primals.size() - ncc - nbc;
  std::vector<bool> nz_bc, mask;
  for (size_t i = 0; i < nbc; ++i) nz_bc.push_back(tangents[ncc + i].defined());
  for (size_t k = 0; k < n; ++k) mask.push_back(tangents[ncc + nbc + k].defined());
  auto in_mask = [&] {
    std::vector<bool> m = nz_bc;
    m.insert(m.end(), mask.begin(), mask.end());
    return m;
  };
  for (bool changed = true; changed;) {
    changed = false;
    JvpJaxpr d = jvp_jaxpr(p.body.jaxpr(), in_mask(), {});
    for (size_t k = 0; k < n; ++k)
      if (d.out_nonzero[k] && !mask[k]) mask[k] = changed = true;
  }
  JvpJaxpr d = jvp_jaxpr(p.body.jaxpr(), in_mask(), mask);
  size_t nzb = 0, nm = 0;
  for (bool b : nz_bc) nzb += b;
  for (bool b : mask) nm += b;
  // d's inputs: (bc, carry, bc_t, carry_t) -> (bc, bc_t, carry, carry_t).
  std::vector<size_t> perm;
  for (size_t i = 0; i < nbc; ++i) perm.push_back(i);
  for (size_t i = 0; i < nzb; ++i) perm.push_back(nbc + n + i);
  for (size_t i = 0; i < n; ++i) perm.push_back(nbc + i);
  for (size_t i = 0; i < nm; ++i) perm.push_back(nbc + n + nzb + i);
  Jaxpr body = permute_inputs(d.jaxpr, perm);
  Jaxpr cond = p.cond.jaxpr();
  Slices ins = part(primals, 0, ncc + nbc), carry_t;
  for (size_t i = 0; i < nbc; ++i)
    if (nz_bc[i]) ins.push_back(tangents[ncc + i]);
  for (size_t k = 0; k < n; ++k) {
    ins.push_back(primals[ncc + nbc + k]);
    if (!mask[k]) continue;
    const Tensor& t = tangents[ncc + nbc + k];
    carry_t.push_back(t.defined() ? t : zeros(primals[ncc + nbc + k].shape(), primals[ncc + nbc + k].dtype()));
    cond.invars.push_back(cond.new_var(carry_t.back().aval()));  // cond ignores the tangents
  }
  ins.insert(ins.end(), carry_t.begin(), carry_t.end());
  std::vector<Tensor> outs = fluxion::bind(
      self, ins,
      WhileParams(std::move(cond), std::move(body), p.num_cond_consts, static_cast<int64_t>(nbc + nzb), p.max_steps));
  primals_out = part(outs, 0, n);
  tangents_out.clear();
  size_t t = n;
  for (size_t k = 0; k < n; ++k) tangents_out.push_back(mask[k] ? outs[t++] : Tensor());
}

// Batched carries move to axis 0. A batched predicate runs until every lane is done; the body
// keeps finished lanes' carries with select (all carries are then batched).
void batch_rule(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<WhileParams>();
  const size_t ncc = p.ncc(), nbc = p.nbc(), n = values.size() - ncc - nbc;
  const int64_t size = batching::batch_size(values, dims);
  const Jaxpr& body = p.body.jaxpr();
  std::vector<bool> mask;
  for (size_t k = 0; k < n; ++k) mask.push_back(dims[ncc + nbc + k] != kNotMapped);
  auto carry_avals = [&] {
    std::vector<AbstractValue> a;
    for (size_t k = 0; k < n; ++k) {
      AbstractValue v = body.avals[body.invars[nbc + k]];
      if (mask[k]) v.shape.dims().insert(v.shape.dims().begin(), size);
      a.push_back(v);
    }
    return a;
  };
  auto carry_dims = [&] {
    std::vector<int64_t> d;
    for (bool b : mask) d.push_back(b ? 0 : kNotMapped);
    return d;
  };
  auto with = [&](size_t from, size_t count, std::vector<AbstractValue> a, std::vector<int64_t>& d) {
    std::vector<AbstractValue> r;
    d.clear();
    for (size_t i = from; i < from + count; ++i) r.push_back(values[i].aval()), d.push_back(dims[i]);
    std::vector<int64_t> cd = carry_dims();
    r.insert(r.end(), a.begin(), a.end());
    d.insert(d.end(), cd.begin(), cd.end());
    return r;
  };
  std::vector<int64_t> bdims, cdims;
  for (bool changed = true; changed;) {
    changed = false;
    auto avals = with(ncc, nbc, carry_avals(), bdims);
    BatchJaxpr b = batch_jaxpr(body, avals, bdims, size, {});
    for (size_t k = 0; k < n; ++k)
      if (b.out_batched[k] && !mask[k]) mask[k] = changed = true;
  }
  auto cavals = with(0, ncc, carry_avals(), cdims);
  BatchJaxpr cb = batch_jaxpr(p.cond.jaxpr(), cavals, cdims, size, {});
  const bool pred_batched = cb.out_batched[0];
  if (pred_batched) {
    mask.assign(n, true);
    cavals = with(0, ncc, carry_avals(), cdims);
    cb = batch_jaxpr(p.cond.jaxpr(), cavals, cdims, size, {});
  }
  auto bavals = with(ncc, nbc, carry_avals(), bdims);
  BatchJaxpr bb = batch_jaxpr(body, bavals, bdims, size, mask);
  Slices carry;
  for (size_t k = 0; k < n; ++k) {
    const Tensor& v = values[ncc + nbc + k];
    carry.push_back(mask[k] ? batching::materialize(v, dims[ncc + nbc + k], size, 0) : v);
  }
  Slices cc = part(values, 0, ncc), bc = part(values, ncc, nbc);
  out_dims.clear();
  for (bool b : mask) out_dims.push_back(b ? 0 : kNotMapped);
  if (!pred_batched) {
    out = fluxion::bind(
        self, cat(cat(cc, bc), carry),
        WhileParams(std::move(cb.jaxpr), std::move(bb.jaxpr), p.num_cond_consts, p.num_body_consts, p.max_steps));
    return;
  }
  std::vector<AbstractValue> c_avals = avals_of(cc), b_avals = avals_of(cat(cc, bc)), k_avals = carry_avals();
  c_avals.insert(c_avals.end(), k_avals.begin(), k_avals.end());
  b_avals.insert(b_avals.end(), k_avals.begin(), k_avals.end());
  Jaxpr any = trace_jaxpr(c_avals, Device::cpu(), [&](const Slices& ins) {
    Tensor lanes = lax::convert_element_type(eval_jaxpr(cb.jaxpr, ins)[0], i32);
    return Slices{lax::gt(lax::reduce_max(lanes, {0}), zeros({}, i32))};
  });
  Jaxpr frozen = trace_jaxpr(b_avals, Device::cpu(), [&](const Slices& ins) {
    Slices c_args = part(ins, 0, ncc), state = part(ins, ncc + nbc, n);
    Tensor lanes = eval_jaxpr(cb.jaxpr, cat(c_args, state))[0];
    Slices next = eval_jaxpr(bb.jaxpr, cat(part(ins, ncc, nbc), state));
    for (size_t k = 0; k < n; ++k)
      next[k] = lax::select(lax::broadcast_in_dim(lanes, next[k].shape(), {0}), next[k], state[k]);
    return next;
  });
  out = fluxion::bind(self, cat(cat(cc, cat(cc, bc)), carry),
                      WhileParams(std::move(any), std::move(frozen), p.num_cond_consts,
                                  p.num_cond_consts + p.num_body_consts, p.max_steps));
}

// Reverse mode (linearize) of a bounded loop: lowered here to a scan of max_steps steps whose
// step runs the body and keeps the old carry once the predicate fails (select per carry leaf, so
// partial evaluation splits primal and tangent parts equation by equation); scan's rules then
// split and transpose it. The body also runs on finished steps (results discarded).
std::vector<Tensor> partial_eval_rule(const Primitive&, StageInterpreter&, const std::vector<Tensor>& inputs,
                                      const std::vector<bool>&, const Params& params) {
  const auto& p = params.as<WhileParams>();
  if (p.max_steps < 0) detail::fail<NotImplementedError>("while_loop", kNeedsMaxSteps);
  const size_t ncc = p.ncc(), nbc = p.nbc(), n = inputs.size() - ncc - nbc;
  Slices cc = part(inputs, 0, ncc), bc = part(inputs, ncc, nbc), init = part(inputs, ncc + nbc, n);
  const Jaxpr &cond = p.cond.jaxpr(), &body = p.body.jaxpr();
  FlatFn step = [&](const Slices& carry) {
    Tensor pred = eval_jaxpr(cond, cat(cc, carry))[0];
    Slices next = eval_jaxpr(body, cat(bc, carry));
    for (size_t k = 0; k < n; ++k) next[k] = lax::select(pred, next[k], carry[k]);
    return next;
  };
  return scan_flat(step, init, {}, p.max_steps, false, "while_loop");
}

void transpose_rule(const Primitive&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                    const std::vector<AbstractValue>&, const Params&, std::vector<Tensor>&) {
  detail::fail<NotImplementedError>("while_loop", kNeedsMaxSteps);
}

}  // namespace while_detail

const Primitive& while_p() {
  static const Primitive& p = primitives::define_primitive("while")
                                  .params<while_detail::WhileParams>()
                                  .shape(&while_detail::shape_rule)
                                  .reference(&while_detail::kernel<true>)
                                  .cpu(&while_detail::compiled_kernel)
                                  .jvp(&while_detail::jvp_rule)
                                  .transpose(&while_detail::transpose_rule)
                                  .batch(&while_detail::batch_rule)
                                  .partial_eval(&while_detail::partial_eval_rule)
                                  .build();
  return p;
}

namespace control_flow_detail {

std::vector<Tensor> while_flat(const FlatFn& cond_fn, const FlatFn& body_fn, const std::vector<Tensor>& init,
                               int64_t max_steps) {
  if (max_steps < -1) detail::fail<Error>("while_loop", "max_steps must be >= 0, got ", max_steps, ".");
  Device device = init.empty() ? Device::cpu() : init[0].device();
  std::vector<AbstractValue> avals = avals_of(init);
  Closed c = trace_closed(cond_fn, avals, device);
  std::vector<AbstractValue> c_out = c.jaxpr.out_avals();
  if (c_out.size() != 1 || c_out[0] != AbstractValue{Shape{}, boolean}) {
    std::ostringstream o;
    for (size_t i = 0; i < c_out.size(); ++i) o << (i ? ", " : "") << c_out[i];
    detail::fail<ShapeError>("while_loop", "cond_fn must return a rank-0 bool, got ", o.str(),
                             ". Compare (e.g. x < 10) and reduce (fx::any) inside cond_fn.");
  }
  Closed b = trace_closed(body_fn, avals, device);
  std::vector<AbstractValue> b_out = b.jaxpr.out_avals();
  if (b_out.size() != avals.size())
    detail::fail<ShapeError>("while_loop", "body_fn returned ", b_out.size(), " tensors for a carry of ", avals.size(),
                             ".");
  for (size_t k = 0; k < avals.size(); ++k)
    if (b_out[k] != avals[k])
      detail::fail<ShapeError>("while_loop", "body_fn changed the carry: leaf ", k, " is ", avals[k], " on entry but ",
                               b_out[k],
                               " after the body. Keep every carry leaf's shape and dtype (convert with fx::astype).");
  std::vector<Tensor> ins = c.captured;
  ins.insert(ins.end(), b.captured.begin(), b.captured.end());
  ins.insert(ins.end(), init.begin(), init.end());
  return fluxion::bind(
      while_p(), ins,
      while_detail::WhileParams(std::move(c.jaxpr), std::move(b.jaxpr), static_cast<int64_t>(c.captured.size()),
                                static_cast<int64_t>(b.captured.size()), max_steps));
}

}  // namespace control_flow_detail
}  // namespace fluxion
