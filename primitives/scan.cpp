// scan: inputs (consts..., init carry..., xs...), params: body (consts, carry, x slices -> carry,
// y slices), num_consts, num_carry, length, reverse. Outputs (final carry..., ys stacked...).
#include <cstring>
#include <sstream>

#include "fluxion/control_flow.hpp"
#include "primitives/control_flow_params.hpp"
#include "fluxion/lax.hpp"
#include "primitives/builder.hpp"
#include "runtime/loop_runner.hpp"
#include "runtime/plan_cache.hpp"
#include "runtime/switches.hpp"
#include "transforms/batching.hpp"
#include "transforms/partial_eval.hpp"

namespace fluxion {
namespace scan_detail {

using namespace control_flow_detail;
using Slices = std::vector<Tensor>;

Slices part(const Slices& v, size_t from, size_t n) {
  return Slices(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(from + n));
}
Slices cat(Slices a, const Slices& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
AbstractValue stacked(AbstractValue a, int64_t length) {
  a.shape.dims().insert(a.shape.dims().begin(), length);
  return a;
}
template <class T> std::vector<T> sub(const std::vector<T>& v, size_t from, size_t n) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(from),
                        v.begin() + static_cast<std::ptrdiff_t>(from + n));
}

std::vector<AbstractValue> shape_rule(const Primitive&, const std::vector<AbstractValue>& in, const Params& params) {
  const auto& p = params.as<ScanParams>();
  const Jaxpr& body = p.body.jaxpr();
  if (in.size() != body.invars.size())
    detail::fail<ShapeError>("scan", "expected ", body.invars.size(), " inputs, got ", in.size(), ".");
  for (size_t i = 0; i < in.size(); ++i) {
    AbstractValue want = body.avals[body.invars[i]];
    if (i >= p.nc() + p.ncar()) want = stacked(want, p.length);
    if (in[i] != want)
      detail::fail<ShapeError>("scan", "input ", i, " is ", in[i], " but the body was traced for ", want,
                               ". Pass xs stacked on axis 0 with the scan's length.");
  }
  std::vector<AbstractValue> out = body.out_avals();
  for (size_t k = 0; k < p.ncar(); ++k)
    if (out[k] != in[p.nc() + k])
      detail::fail<ShapeError>("scan", "the body changes carry ", k, " from ", in[p.nc() + k], " to ", out[k], ".");
  for (size_t k = p.ncar(); k < out.size(); ++k) out[k] = stacked(out[k], p.length);
  return out;
}

size_t nbytes(const Tensor& t) { return static_cast<size_t>(t.size()) * dtype_size(t.dtype()); }
char* bytes(const Tensor& t) { return static_cast<char*>(t.array("scan").data()); }

Tensor row(const Tensor& x, int64_t i) {
  AbstractValue a = x.aval();
  a.shape.dims().erase(a.shape.dims().begin());
  Tensor r = empty(a, x.device());
  const size_t n = nbytes(r);
  if (n) std::memcpy(bytes(r), bytes(x) + n * static_cast<size_t>(i), n);
  return r;
}

/// Step i of the scan: y slices `r` (from position `first`) into rows i of the stacked `out`.
void store_ys(const Slices& r, size_t first, int64_t i, Slices& out) {
  for (size_t k = first; k < r.size(); ++k) {
    const size_t n = nbytes(r[k]);
    if (n) std::memcpy(bytes(out[k]) + n * static_cast<size_t>(i), bytes(r[k]), n);
  }
}

/// The reference kernel: one equation-by-equation evaluation of the body per step.
void reference_kernel(const Slices& in, const Params& params, Slices& out) {
  const auto& p = params.as<ScanParams>();
  const size_t nc = p.nc(), ncar = p.ncar(), nx = p.nx();
  Slices consts = part(in, 0, nc), carry = part(in, nc, ncar), xs = part(in, nc + ncar, nx);
  for (int64_t step = 0; step < p.length; ++step) {
    const int64_t i = p.reverse ? p.length - 1 - step : step;
    Slices args = cat(consts, carry);
    for (const Tensor& x : xs) args.push_back(row(x, i));
    Slices r = p.body.run_reference(args);
    carry = part(r, 0, ncar);
    store_ys(r, ncar, i, out);
  }
  Slices carry_out = part(out, 0, ncar);
  copy_outputs("scan", carry, carry_out);
}

/// Rows of one stacked tensor: row i starts at base + i * bytes.
struct Rows {
  char* base;
  size_t bytes;
  char* at(int64_t i) const { return base + bytes * static_cast<size_t>(i); }
};
Rows rows_of(const Tensor& stacked, int64_t length) {
  return {bytes(stacked), nbytes(stacked) / static_cast<size_t>(length)};
}

/// The compiled kernel with the `loops` switch off: one plan call per step. The body's plan is
/// taken once and its argument list (consts, carry, x rows) is built once. Each step copies x rows
/// into fixed row tensors, writes ys into their stacked rows, and copies the new carry into the
/// `spare` set, which then swaps with the argument carry. Invariant: `spare` is never an argument
/// of the running step, so outputs that alias arguments (a carry passed through or permuted) are
/// copied safely; the caller's init is never written. The body's output buffers are reused
/// because `r` drops its references before each run.
void stepwise_kernel(const Slices& in, const Params& params, Slices& out) {
  const auto& p = params.as<ScanParams>();
  const size_t nc = p.nc(), ncar = p.ncar(), nx = p.nx();
  Slices args = part(in, 0, nc + ncar), spare, r;
  if (p.length > 0) {
    const std::shared_ptr<const Executable> exe = p.body.executable(in.empty() ? Device::cpu() : in[0].device());
    for (size_t k = 0; k < ncar; ++k) spare.push_back(empty(in[nc + k].aval(), in[nc + k].device()));
    std::vector<Rows> xs, ys;
    std::vector<char*> x_rows;  // the fixed row tensors' data
    for (size_t j = 0; j < nx; ++j) {
      const Tensor& x = in[nc + ncar + j];
      args.push_back(row(x, 0));
      xs.push_back(rows_of(x, p.length));
      x_rows.push_back(bytes(args.back()));
    }
    for (size_t k = ncar; k < out.size(); ++k) ys.push_back(rows_of(out[k], p.length));
    for (int64_t step = 0; step < p.length; ++step) {
      const int64_t i = p.reverse ? p.length - 1 - step : step;
      for (size_t j = 0; j < nx; ++j)
        if (xs[j].bytes) std::memcpy(x_rows[j], xs[j].at(i), xs[j].bytes);
      r.clear();
      if (step == 0) runtime::run_plan(*exe, args, r);  // checks the avals once
      else runtime::run_plan_unchecked(*exe, args, r);
      for (size_t k = 0; k < ys.size(); ++k)
        if (ys[k].bytes) std::memcpy(ys[k].at(i), bytes(r[ncar + k]), ys[k].bytes);
      for (size_t k = 0; k < ncar; ++k) {
        if (const size_t n = nbytes(r[k])) std::memcpy(bytes(spare[k]), bytes(r[k]), n);
        std::swap(spare[k], args[nc + k]);
        if (step == 0) spare[k] = empty(in[nc + k].aval(), in[nc + k].device());  // was the init
      }
    }
  }
  Slices carry = part(args, nc, ncar), carry_out = part(out, 0, ncar);
  copy_outputs("scan", carry, carry_out);
}

/// The compiled kernel: the body's plan run step after step on one held state (runtime::LoopRunner).
/// Consts are bound once, x rows are copied into the body's row arguments, ys are copied from the
/// body's outputs into their stacked rows, and carries are exchanged between two buffers (the
/// LoopRunner's invariants cover carries passed through, permuted or also returned as ys).
void compiled_kernel(const Slices& in, const Params& params, Slices& out) {
  if (!runtime::enabled(runtime::Switch::loops)) return stepwise_kernel(in, params, out);
  const auto& p = params.as<ScanParams>();
  const size_t nc = p.nc(), ncar = p.ncar(), nx = p.nx();
  Slices carry_out = part(out, 0, ncar);
  if (p.length == 0) {
    Slices init = part(in, nc, ncar);
    copy_outputs("scan", init, carry_out);
    return;
  }
  runtime::LoopRunner body(p.body.executable(in.empty() ? Device::cpu() : in[0].device()));
  for (size_t i = 0; i < nc; ++i) body.bind(i, in[i]);
  for (size_t k = 0; k < ncar; ++k) body.carry(nc + k, k, in[nc + k]);
  std::vector<Rows> xs, ys;
  for (size_t j = 0; j < nx; ++j) {
    body.bind_row(nc + ncar + j);
    xs.push_back(rows_of(in[nc + ncar + j], p.length));
  }
  for (size_t k = ncar; k < out.size(); ++k) ys.push_back(rows_of(out[k], p.length));
  for (int64_t step = 0; step < p.length; ++step) {
    const int64_t i = p.reverse ? p.length - 1 - step : step;
    for (size_t j = 0; j < nx; ++j) body.load_row(nc + ncar + j, xs[j].at(i));
    body.run();
    for (size_t k = 0; k < ys.size(); ++k) body.store(ncar + k, ys[k].at(i));
    body.advance();
  }
  Slices carry;
  for (size_t k = 0; k < ncar; ++k) carry.push_back(body.argument(nc + k));
  copy_outputs("scan", carry, carry_out);
}

// A scan of the jvp'd body over (primal, tangent) pairs: const and carry tangents ride along as
// consts and carries (carry tangents nonzero by fixed point), xs tangents as xs.
void jvp_rule(const Primitive& self, const Slices& primals, const Slices& tangents, const Params& params,
              Slices& primals_out, Slices& tangents_out) {
  const auto& p = params.as<ScanParams>();
  const size_t nc = p.nc(), ncar = p.ncar(), nx = p.nx(), ny = p.ny();
  std::vector<bool> nz;
  for (const Tensor& t : tangents) nz.push_back(t.defined());
  for (bool changed = true; changed;) {
    changed = false;
    JvpJaxpr d = jvp_jaxpr(p.body.jaxpr(), nz, {});
    for (size_t k = 0; k < ncar; ++k)
      if (d.out_nonzero[k] && !nz[nc + k]) nz[nc + k] = changed = true;
  }
  std::vector<bool> inst(ncar + ny, false);
  for (size_t k = 0; k < ncar; ++k) inst[k] = nz[nc + k];
  JvpJaxpr d = jvp_jaxpr(p.body.jaxpr(), nz, inst);
  // Group sizes of tangents: consts, carry, xs.
  size_t tc = 0, tk = 0, tx = 0, ty = 0;
  for (size_t i = 0; i < nc; ++i) tc += nz[i];
  for (size_t i = 0; i < ncar; ++i) tk += nz[nc + i];
  for (size_t i = 0; i < nx; ++i) tx += nz[nc + ncar + i];
  for (size_t k = 0; k < ny; ++k) ty += d.out_nonzero[ncar + k];
  const size_t n = nc + ncar + nx;
  std::vector<size_t> perm;
  auto range = [&](size_t from, size_t count) {
    for (size_t i = 0; i < count; ++i) perm.push_back(from + i);
  };
  range(0, nc), range(n, tc), range(nc, ncar), range(n + tc, tk), range(nc + ncar, nx), range(n + tc + tk, tx);
  Jaxpr body = permute_inputs(d.jaxpr, perm);
  // Outputs (carry, y, carry_t, y_t) -> (carry, carry_t, y, y_t).
  const std::vector<Atom> o = body.outputs;
  body.outputs.clear();
  for (size_t k = 0; k < ncar; ++k) body.outputs.push_back(o[k]);
  for (size_t k = 0; k < tk; ++k) body.outputs.push_back(o[ncar + ny + k]);
  for (size_t k = 0; k < ny; ++k) body.outputs.push_back(o[ncar + k]);
  for (size_t k = 0; k < ty; ++k) body.outputs.push_back(o[ncar + ny + tk + k]);
  Slices ins;
  auto add_group = [&](size_t from, size_t count, bool instantiate) {
    for (size_t i = from; i < from + count; ++i) ins.push_back(primals[i]);
    for (size_t i = from; i < from + count; ++i)
      if (nz[i])
        ins.push_back(tangents[i].defined() || !instantiate ? tangents[i]
                                                            : zeros(primals[i].shape(), primals[i].dtype()));
  };
  add_group(0, nc, false);
  add_group(nc, ncar, true);
  add_group(nc + ncar, nx, false);
  Slices outs = fluxion::bind(self, ins, ScanParams(std::move(body), nc + tc, ncar + tk, p.length, p.reverse));
  primals_out = cat(part(outs, 0, ncar), part(outs, ncar + tk, ny));
  tangents_out.clear();
  size_t t = ncar;
  for (size_t k = 0; k < ncar; ++k) tangents_out.push_back(nz[nc + k] ? outs[t++] : Tensor());
  t = ncar + tk + ny;
  for (size_t k = 0; k < ny; ++k) tangents_out.push_back(d.out_nonzero[ncar + k] ? outs[t++] : Tensor());
}

// Known/unknown split of the body (unknown carries by fixed point). The known scan runs now and
// emits the residuals as extra ys (stacked per step; loop-invariant ones that are known consts
// are passed as consts instead); the unknown scan is staged, reading them per step.
Slices partial_eval_rule(const Primitive& self, StageInterpreter& stage, const Slices& inputs,
                         const std::vector<bool>& known, const Params& params) {
  const auto& p = params.as<ScanParams>();
  const Jaxpr& jb = p.body.jaxpr();
  const size_t nc = p.nc(), ncar = p.ncar(), nx = p.nx(), ny = p.ny();
  std::vector<bool> unknown;
  for (bool k : known) unknown.push_back(!k);
  PartialEvalSplit split;
  for (bool changed = true; changed;) {
    changed = false;
    split = partial_eval_jaxpr(jb, unknown);
    for (size_t k = 0; k < ncar; ++k)
      if (!split.out_known[k] && !unknown[nc + k]) unknown[nc + k] = changed = true;
  }
  std::vector<bool> forced(ncar), const_res(split.num_residuals, false);
  std::vector<size_t> const_pos(split.num_residuals, 0);
  for (size_t k = 0; k < ncar; ++k) forced[k] = unknown[nc + k] && split.out_known[k];
  for (size_t r = 0; r < split.num_residuals; ++r) {
    const int i = split.residual_input[r];
    if (i >= 0 && static_cast<size_t>(i) < nc) const_res[r] = true, const_pos[r] = static_cast<size_t>(i);
  }
  // Positions of each body output in the known / unknown output lists.
  std::vector<size_t> kpos(ncar + ny), upos(ncar + ny);
  size_t nk = 0, nu = 0;
  for (size_t o = 0; o < ncar + ny; ++o) (split.out_known[o] ? kpos[o] = nk++ : upos[o] = nu++);
  std::vector<AbstractValue> in_avals = jb.in_avals(), res_avals, stacked_res_avals, forced_avals;
  for (size_t r = 0; r < split.num_residuals; ++r) {
    res_avals.push_back(split.unknown.avals[split.unknown.invars[r]]);
    if (!const_res[r]) stacked_res_avals.push_back(res_avals.back());
  }
  for (size_t k = 0; k < ncar; ++k)
    if (forced[k]) forced_avals.push_back(in_avals[nc + k]);
  // Known body: (known consts, known carries, known xs) -> (known carries, known ys, residuals, forced).
  std::vector<AbstractValue> k_avals;
  size_t kc = 0, kk = 0, kx = 0;
  for (size_t i = 0; i < in_avals.size(); ++i)
    if (!unknown[i]) {
      k_avals.push_back(in_avals[i]);
      (i < nc ? kc : i < nc + ncar ? kk : kx)++;
    }
  size_t kys = 0;
  Jaxpr known_body = trace_jaxpr(k_avals, Device::cpu(), [&](const Slices& ins) {
    Slices outs = eval_jaxpr(split.known, ins), result;
    for (size_t k = 0; k < ncar; ++k)
      if (!unknown[nc + k]) result.push_back(outs[kpos[k]]);
    kys = 0;
    for (size_t j = 0; j < ny; ++j)
      if (split.out_known[ncar + j]) result.push_back(outs[kpos[ncar + j]]), ++kys;
    for (size_t r = 0; r < split.num_residuals; ++r)
      if (!const_res[r]) result.push_back(outs[nk + r]);
    for (size_t k = 0; k < ncar; ++k)
      if (forced[k]) result.push_back(outs[kpos[k]]);
    return result;
  });
  // Unknown body: consts (const residuals, unknown consts), carries (unknown), xs (stacked
  // residuals, forced, unknown xs) -> (unknown carries, unknown ys).
  size_t n_cres = 0, uc = 0, uk = 0, ux = 0;
  for (bool b : const_res) n_cres += b;
  std::vector<AbstractValue> u_avals;
  for (size_t r = 0; r < split.num_residuals; ++r)
    if (const_res[r]) u_avals.push_back(res_avals[r]);
  for (size_t i = 0; i < nc; ++i)
    if (unknown[i]) u_avals.push_back(in_avals[i]), ++uc;
  for (size_t k = 0; k < ncar; ++k)
    if (unknown[nc + k]) u_avals.push_back(in_avals[nc + k]), ++uk;
  u_avals.insert(u_avals.end(), stacked_res_avals.begin(), stacked_res_avals.end());
  u_avals.insert(u_avals.end(), forced_avals.begin(), forced_avals.end());
  for (size_t i = 0; i < nx; ++i)
    if (unknown[nc + ncar + i]) u_avals.push_back(in_avals[nc + ncar + i]), ++ux;
  Jaxpr unknown_body = trace_jaxpr(u_avals, Device::cpu(), [&](const Slices& ins) {
    size_t c_pos = 0, s_pos = n_cres + uc + uk, f_pos = s_pos + stacked_res_avals.size();
    Slices args;
    for (size_t r = 0; r < split.num_residuals; ++r) args.push_back(const_res[r] ? ins[c_pos++] : ins[s_pos++]);
    Slices rest = part(ins, n_cres, uc + uk);
    args = cat(args, rest);
    args = cat(args, part(ins, f_pos + forced_avals.size(), ux));
    Slices outs = eval_jaxpr(split.unknown, args), result;
    for (size_t k = 0; k < ncar; ++k)
      if (unknown[nc + k]) result.push_back(forced[k] ? ins[f_pos++] : outs[upos[k]]);
    for (size_t j = 0; j < ny; ++j)
      if (!split.out_known[ncar + j]) result.push_back(outs[upos[ncar + j]]);
    return result;
  });
  Slices known_in;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!unknown[i]) known_in.push_back(inputs[i]);
  Slices known_out;
  {
    InterpreterScope parent(*stage.parent());
    known_out = fluxion::bind(self, known_in, ScanParams(std::move(known_body), kc, kk, p.length, p.reverse));
  }
  Slices u_in;
  for (size_t r = 0; r < split.num_residuals; ++r)
    if (const_res[r]) u_in.push_back(inputs[const_pos[r]]);
  for (size_t i = 0; i < nc + ncar; ++i)
    if (unknown[i]) u_in.push_back(inputs[i]);
  u_in = cat(u_in, part(known_out, kk + kys, stacked_res_avals.size() + forced_avals.size()));
  for (size_t i = nc + ncar; i < inputs.size(); ++i)
    if (unknown[i]) u_in.push_back(inputs[i]);
  Slices unknown_out =
      stage.stage_equation(self, u_in, ScanParams(std::move(unknown_body), n_cres + uc, uk, p.length, p.reverse));
  Slices out;
  size_t kp = 0, ky = kk, up = 0;
  for (size_t k = 0; k < ncar; ++k) out.push_back(unknown[nc + k] ? unknown_out[up++] : known_out[kp++]);
  for (size_t j = 0; j < ny; ++j) out.push_back(split.out_known[ncar + j] ? known_out[ky++] : unknown_out[up++]);
  return out;
}

// A scan in the opposite direction of the body transposed in (linear consts, every carry, linear
// xs); const cotangents accumulate in extra carries, xs cotangents are its ys. Carries are always
// linear here (a known carry value in a linear scan is a zero tangent: its cotangent is dropped).
void transpose_rule(const Primitive& self, const Slices& cts_out, const Slices& inputs,
                    const std::vector<AbstractValue>& in_avals, const Params& params, Slices& cts_in) {
  const auto& p = params.as<ScanParams>();
  const Jaxpr& jb = p.body.jaxpr();
  const size_t nc = p.nc(), ncar = p.ncar(), nx = p.nx(), ny = p.ny();
  std::vector<bool> linear(nc + ncar + nx, true), ct_defined(ncar + ny, true);
  for (size_t i = 0; i < nc; ++i) linear[i] = !inputs[i].defined();
  for (size_t i = nc + ncar; i < linear.size(); ++i) linear[i] = !inputs[i].defined();
  for (size_t j = 0; j < ny; ++j) ct_defined[ncar + j] = cts_out[ncar + j].defined();
  Jaxpr t = transpose_sub_jaxpr(jb, linear, ct_defined, Device::cpu());
  std::vector<AbstractValue> body_avals = jb.in_avals(), out_avals = jb.out_avals();
  Slices known_consts, acc0, ct_carry, known_xs, ct_ys;
  std::vector<AbstractValue> a_kc, a_acc, a_kx, a_cy;
  for (size_t i = 0; i < nc; ++i) {
    if (linear[i]) acc0.push_back(zeros(in_avals[i].shape, in_avals[i].dtype)), a_acc.push_back(in_avals[i]);
    else known_consts.push_back(inputs[i]), a_kc.push_back(in_avals[i]);
  }
  for (size_t k = 0; k < ncar; ++k)
    ct_carry.push_back(cts_out[k].defined() ? cts_out[k] : zeros(in_avals[nc + k].shape, in_avals[nc + k].dtype));
  for (size_t i = nc + ncar; i < linear.size(); ++i)
    if (!linear[i]) known_xs.push_back(inputs[i]), a_kx.push_back(body_avals[i]);
  for (size_t j = 0; j < ny; ++j)
    if (ct_defined[ncar + j]) ct_ys.push_back(cts_out[ncar + j]), a_cy.push_back(out_avals[ncar + j]);
  const size_t nkc = a_kc.size(), nlc = a_acc.size(), nkx = a_kx.size();
  std::vector<AbstractValue> avals = a_kc;
  avals.insert(avals.end(), a_acc.begin(), a_acc.end());
  for (size_t k = 0; k < ncar; ++k) avals.push_back(body_avals[nc + k]);
  avals.insert(avals.end(), a_kx.begin(), a_kx.end());
  avals.insert(avals.end(), a_cy.begin(), a_cy.end());
  Jaxpr body = trace_jaxpr(avals, Device::cpu(), [&](const Slices& ins) {
    Slices args = cat(part(ins, 0, nkc), part(ins, nkc + nlc + ncar, nkx));
    args = cat(args, part(ins, nkc + nlc, ncar));
    args = cat(args, part(ins, nkc + nlc + ncar + nkx, ct_ys.size()));
    Slices cts = eval_jaxpr(t, args), result;
    for (size_t i = 0; i < nlc; ++i) result.push_back(lax::add(ins[nkc + i], cts[i]));
    return cat(result, part(cts, nlc, cts.size() - nlc));
  });
  Slices ins = cat(cat(cat(cat(known_consts, acc0), ct_carry), known_xs), ct_ys);
  Slices outs = fluxion::bind(self, ins, ScanParams(std::move(body), nkc, nlc + ncar, p.length, !p.reverse));
  size_t a = 0, c = nlc, x = nlc + ncar;
  for (size_t i = 0; i < nc; ++i)
    if (linear[i]) cts_in[i] = outs[a++];
  for (size_t k = 0; k < ncar; ++k)
    if (!inputs[nc + k].defined()) cts_in[nc + k] = outs[c + k];
  for (size_t i = nc + ncar; i < linear.size(); ++i)
    if (linear[i]) cts_in[i] = outs[x++];
}

// Batched xs move their batch axis to 1 (axis 0 of a slice), batched consts keep theirs, batched
// carries sit at axis 0; a carry is batched if its init is or the body makes it so (fixed point).
void batch_rule(const Primitive& self, const Slices& values, const std::vector<int64_t>& dims, const Params& params,
                Slices& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<ScanParams>();
  const Jaxpr& jb = p.body.jaxpr();
  const size_t nc = p.nc(), ncar = p.ncar(), nx = p.nx(), ny = p.ny();
  const int64_t size = batching::batch_size(values, dims);
  std::vector<bool> mask(ncar);
  for (size_t k = 0; k < ncar; ++k) mask[k] = dims[nc + k] != kNotMapped;
  Slices ins = part(values, 0, nc);
  std::vector<AbstractValue> body_avals = jb.in_avals();
  auto signature = [&](std::vector<int64_t>& d) {
    std::vector<AbstractValue> a;
    d.clear();
    for (size_t i = 0; i < nc; ++i) a.push_back(values[i].aval()), d.push_back(dims[i]);
    for (size_t i = nc; i < nc + ncar + nx; ++i) {
      bool b = i < nc + ncar ? mask[i - nc] : dims[i] != kNotMapped;
      AbstractValue v = body_avals[i];
      if (b) v.shape.dims().insert(v.shape.dims().begin(), size);
      a.push_back(v);
      d.push_back(b ? 0 : kNotMapped);
    }
    return a;
  };
  std::vector<int64_t> d;
  for (bool changed = true; changed;) {
    changed = false;
    BatchJaxpr b = batch_jaxpr(jb, signature(d), d, size, {});
    for (size_t k = 0; k < ncar; ++k)
      if (b.out_batched[k] && !mask[k]) mask[k] = changed = true;
  }
  std::vector<bool> force(mask);
  force.resize(ncar + ny, false);
  BatchJaxpr b = batch_jaxpr(jb, signature(d), d, size, force);
  for (size_t k = 0; k < ncar; ++k)
    ins.push_back(mask[k] ? batching::materialize(values[nc + k], dims[nc + k], size, 0) : values[nc + k]);
  for (size_t i = nc + ncar; i < values.size(); ++i)
    ins.push_back(dims[i] == kNotMapped ? values[i] : batching::move_axis(values[i], dims[i], 1));
  out = fluxion::bind(self, ins, ScanParams(std::move(b.jaxpr), nc, ncar, p.length, p.reverse));
  out_dims.clear();
  for (size_t k = 0; k < ncar; ++k) out_dims.push_back(mask[k] ? 0 : kNotMapped);
  for (size_t j = 0; j < ny; ++j) out_dims.push_back(b.out_batched[ncar + j] ? 1 : kNotMapped);
}

}  // namespace scan_detail

const Primitive& scan_p() {
  static const Primitive& p = primitives::define_primitive("scan")
                                  .params<scan_detail::ScanParams>()
                                  .shape(&scan_detail::shape_rule)
                                  .reference(&scan_detail::reference_kernel)
                                  .cpu(&scan_detail::compiled_kernel)
                                  .jvp(&scan_detail::jvp_rule)
                                  .transpose(&scan_detail::transpose_rule)
                                  .batch(&scan_detail::batch_rule)
                                  .partial_eval(&scan_detail::partial_eval_rule)
                                  .build();
  return p;
}

namespace control_flow_detail {

std::vector<Tensor> scan_flat(const FlatFn& body, const std::vector<Tensor>& init, const std::vector<Tensor>& xs,
                              int64_t length, bool reverse, const char* op) {
  Device device = !init.empty() ? init[0].device() : !xs.empty() ? xs[0].device() : Device::cpu();
  std::vector<AbstractValue> avals = avals_of(init);
  for (const Tensor& x : xs) {
    if (x.ndim() == 0 || x.shape()[0] != length)
      detail::fail<ShapeError>(op, "xs leaf ", x.aval(), " does not have the scan length ", length, " on axis 0.");
    AbstractValue a = x.aval();
    a.shape.dims().erase(a.shape.dims().begin());
    avals.push_back(a);
  }
  Closed c = trace_closed(body, avals, device);
  std::vector<AbstractValue> out = c.jaxpr.out_avals();
  if (out.size() < init.size())
    detail::fail<ShapeError>(op, "f returned ", out.size(), " tensors for a carry of ", init.size(), ".");
  for (size_t k = 0; k < init.size(); ++k)
    if (out[k] != init[k].aval())
      detail::fail<ShapeError>(op, "f changed the carry: leaf ", k, " is ", init[k].aval(), " on entry but ", out[k],
                               " after f. Keep every carry leaf's shape and dtype (convert with fx::astype).");
  std::vector<Tensor> ins = c.captured;
  ins.insert(ins.end(), init.begin(), init.end());
  ins.insert(ins.end(), xs.begin(), xs.end());
  const size_t nc = c.captured.size();
  return fluxion::bind(scan_p(), ins, scan_detail::ScanParams(std::move(c.jaxpr), nc, init.size(), length, reverse));
}

}  // namespace control_flow_detail
}  // namespace fluxion
