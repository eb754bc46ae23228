// cond: inputs (index: i32[] or bool[] (false 0, true 1), operands...), params: one closed sub-Jaxpr per branch, all taking
// the operands' avals and returning equal avals. Runs branches[clamp(index)].
#include <algorithm>
#include <sstream>

#include "fluxion/control_flow.hpp"
#include "primitives/control_flow_params.hpp"
#include "fluxion/lax.hpp"
#include "primitives/builder.hpp"
#include "transforms/batching.hpp"
#include "transforms/partial_eval.hpp"

namespace fluxion {
namespace cond_detail {

using namespace control_flow_detail;

CondParams make_params(std::vector<Jaxpr> js) {
  std::vector<SubJaxpr> b;
  for (Jaxpr& j : js) b.emplace_back(std::move(j));
  return CondParams(std::move(b));
}

std::vector<AbstractValue> shape_rule(const Primitive&, const std::vector<AbstractValue>& in, const Params& params) {
  const auto& p = params.as<CondParams>();
  const Jaxpr& b0 = p.branches.at(0).jaxpr();
  if (in.empty() || !(in[0] == AbstractValue{Shape{}, i32} || in[0] == AbstractValue{Shape{}, boolean}))
    detail::fail<ShapeError>("cond", "the branch index must be an i32 or bool scalar, got ",
                             in.empty() ? std::string("nothing") : [&] { std::ostringstream o; o << in[0]; return o.str(); }(),
                             ". Pass a rank-0 bool predicate or integer index.");
  if (in.size() != b0.invars.size() + 1)
    detail::fail<ShapeError>("cond", "the branches take ", b0.invars.size(), " operands, got ", in.size() - 1, ".");
  for (const SubJaxpr& b : p.branches) {
    for (size_t i = 0; i + 1 < in.size(); ++i)
      if (in[i + 1] != b.jaxpr().avals[b.jaxpr().invars[i]])
        detail::fail<ShapeError>("cond", "operand ", i, " is ", in[i + 1], " but the branches were traced for ",
                                 b.jaxpr().avals[b.jaxpr().invars[i]], ".");
    if (b.jaxpr().out_avals() != b0.out_avals())
      detail::fail<ShapeError>("cond", "the branches return different avals.");
  }
  return b0.out_avals();
}

size_t pick(const Tensor& index, size_t n) {
  int64_t i = index.concrete("cond").item<int32_t>();
  return static_cast<size_t>(std::clamp<int64_t>(i, 0, static_cast<int64_t>(n) - 1));
}

void cpu_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<CondParams>();
  std::vector<Tensor> ops(in.begin() + 1, in.end());
  copy_outputs("cond", p.branches[pick(in[0], p.branches.size())].run(ops), out);
}

void reference_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<CondParams>();
  std::vector<Tensor> ops(in.begin() + 1, in.end());
  copy_outputs("cond", p.branches[pick(in[0], p.branches.size())].run_reference(ops), out);
}

// jvp of every branch in the operands with nonzero tangents; the branches' nonzero output
// tangents are unified (zeros where a branch has none) so all branches return equal avals.
void jvp_rule(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
              const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const auto& p = params.as<CondParams>();
  std::vector<bool> nonzero;
  for (size_t i = 1; i < tangents.size(); ++i) nonzero.push_back(tangents[i].defined());
  const size_t n_out = p.branches[0].jaxpr().outputs.size();
  std::vector<bool> any(n_out, false);
  for (const SubJaxpr& b : p.branches) {
    JvpJaxpr d = jvp_jaxpr(b.jaxpr(), nonzero, {});
    for (size_t k = 0; k < n_out; ++k) any[k] = any[k] || d.out_nonzero[k];
  }
  std::vector<Jaxpr> js;
  for (const SubJaxpr& b : p.branches) js.push_back(jvp_jaxpr(b.jaxpr(), nonzero, any).jaxpr);
  std::vector<Tensor> ins = primals;
  for (size_t i = 1; i < tangents.size(); ++i)
    if (tangents[i].defined()) ins.push_back(tangents[i]);
  std::vector<Tensor> outs = fluxion::bind(self, ins, make_params(std::move(js)));
  primals_out.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n_out));
  tangents_out.clear();
  size_t t = n_out;
  for (size_t k = 0; k < n_out; ++k) tangents_out.push_back(any[k] ? outs[t++] : Tensor());
}

void batch_rule(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<CondParams>();
  const int64_t size = batching::batch_size(values, dims);
  std::vector<Tensor> ops(values.begin() + 1, values.end());
  std::vector<int64_t> op_dims(dims.begin() + 1, dims.end());
  const size_t n_out = p.branches[0].jaxpr().outputs.size();
  if (dims[0] == kNotMapped) {
    // One cond of batched branches; outputs batched in any branch are batched (axis 0) in all.
    std::vector<bool> any(n_out, false);
    std::vector<BatchJaxpr> bs;
    for (const SubJaxpr& b : p.branches) {
      bs.push_back(batch_jaxpr(b.jaxpr(), avals_of(ops), op_dims, size, {}));
      for (size_t k = 0; k < n_out; ++k) any[k] = any[k] || bs.back().out_batched[k];
    }
    std::vector<Jaxpr> js;
    for (size_t i = 0; i < bs.size(); ++i)
      js.push_back(bs[i].out_batched == any
                       ? std::move(bs[i].jaxpr)
                       : batch_jaxpr(p.branches[i].jaxpr(), avals_of(ops), op_dims, size, any).jaxpr);
    out = fluxion::bind(self, values, make_params(std::move(js)));
    out_dims.clear();
    for (bool b : any) out_dims.push_back(b ? 0 : kNotMapped);
    return;
  }
  // Batched index: every branch runs on every lane; each lane keeps its branch's result.
  const int64_t n = static_cast<int64_t>(p.branches.size());
  Tensor index = values[0].dtype() == i32 ? values[0] : lax::convert_element_type(values[0], i32);
  index = lax::max(lax::min(index, full({size}, static_cast<double>(n - 1), i32)), zeros({size}, i32));
  out.assign(n_out, Tensor());
  for (int64_t b = 0; b < n; ++b) {
    std::vector<Tensor> res;
    {
      BatchInterpreter batch(size, "vmap");
      std::vector<Tensor> lifted;
      for (size_t i = 0; i < ops.size(); ++i)
        lifted.push_back(op_dims[i] == kNotMapped ? ops[i] : batch.lift(ops[i], op_dims[i]));
      std::vector<Tensor> outs;
      {
        InterpreterScope scope(batch);
        outs = eval_jaxpr(p.branches[static_cast<size_t>(b)].jaxpr(), lifted);
      }
      for (const Tensor& o : outs) {
        auto [v, d] = batch.split(o);
        res.push_back(batching::materialize(v, d, size, 0));
      }
    }
    if (b == 0) {
      out = res;
      continue;
    }
    Tensor lanes = lax::eq(index, full({size}, static_cast<double>(b), i32));
    for (size_t k = 0; k < n_out; ++k)
      out[k] = lax::select(lax::broadcast_in_dim(lanes, res[k].shape(), {0}), res[k], out[k]);
  }
  out_dims.assign(n_out, 0);
}

// Known concrete index: the branch is inlined. Known traced index: each branch is split into a
// known part (run now, emitting residuals in per-branch slots, zeros in the others) and an
// unknown part (staged). Unknown index: staged whole.
std::vector<Tensor> partial_eval_rule(const Primitive& self, StageInterpreter& stage, const std::vector<Tensor>& inputs,
                                      const std::vector<bool>& known, const Params& params) {
  const auto& p = params.as<CondParams>();
  std::vector<Tensor> ops(inputs.begin() + 1, inputs.end());
  if (!known[0]) return stage.stage_equation(self, inputs, params);
  if (!inputs[0].is_tracer()) return eval_jaxpr(p.branches[pick(inputs[0], p.branches.size())].jaxpr(), ops);
  std::vector<bool> unknown_ops;
  for (size_t i = 1; i < known.size(); ++i) unknown_ops.push_back(!known[i]);
  const size_t n_out = p.branches[0].jaxpr().outputs.size();
  std::vector<PartialEvalSplit> splits;
  std::vector<bool> out_unknown(n_out, false);
  for (const SubJaxpr& b : p.branches) {
    splits.push_back(partial_eval_jaxpr(b.jaxpr(), unknown_ops));
    for (size_t k = 0; k < n_out; ++k) out_unknown[k] = out_unknown[k] || !splits.back().out_known[k];
  }
  // Residual slots per branch: the split's residuals, then outputs known in this branch but
  // unknown overall (forwarded to the unknown side).
  std::vector<std::vector<AbstractValue>> slots(splits.size());
  std::vector<AbstractValue> out_avals = p.branches[0].jaxpr().out_avals();
  for (size_t b = 0; b < splits.size(); ++b) {
    const PartialEvalSplit& s = splits[b];
    for (size_t r = 0; r < s.num_residuals; ++r) slots[b].push_back(s.unknown.avals[s.unknown.invars[r]]);
    for (size_t k = 0; k < n_out; ++k)
      if (out_unknown[k] && s.out_known[k]) slots[b].push_back(out_avals[k]);
  }
  std::vector<AbstractValue> known_avals, unknown_avals, all_slots;
  for (size_t i = 0; i < ops.size(); ++i) (known[i + 1] ? known_avals : unknown_avals).push_back(ops[i].aval());
  for (const auto& sl : slots) all_slots.insert(all_slots.end(), sl.begin(), sl.end());
  std::vector<Jaxpr> known_js, unknown_js;
  size_t slot_start = 0;
  for (size_t b = 0; b < splits.size(); ++b) {
    const PartialEvalSplit& s = splits[b];
    known_js.push_back(trace_jaxpr(known_avals, Device::cpu(), [&](const std::vector<Tensor>& ins) {
      std::vector<Tensor> outs = eval_jaxpr(s.known, ins), result, known_outs;
      size_t pos = 0;
      for (size_t k = 0; k < n_out; ++k)
        if (s.out_known[k]) known_outs.push_back(outs[pos++]);
      pos = 0;
      for (size_t k = 0; k < n_out; ++k)
        if (!out_unknown[k]) result.push_back(known_outs[pos++]);
        else if (s.out_known[k]) ++pos;
      for (size_t c = 0; c < splits.size(); ++c) {
        if (c != b) {
          for (const AbstractValue& a : slots[c]) result.push_back(zeros(a.shape, a.dtype));
          continue;
        }
        for (size_t r = 0; r < s.num_residuals; ++r) result.push_back(outs[known_outs.size() + r]);
        size_t q = 0;
        for (size_t k = 0; k < n_out; ++k) {
          if (s.out_known[k] && out_unknown[k]) result.push_back(known_outs[q]);
          if (s.out_known[k]) ++q;
        }
      }
      return result;
    }));
    std::vector<AbstractValue> u_avals = all_slots;
    u_avals.insert(u_avals.end(), unknown_avals.begin(), unknown_avals.end());
    unknown_js.push_back(trace_jaxpr(u_avals, Device::cpu(), [&](const std::vector<Tensor>& ins) {
      std::vector<Tensor> args(ins.begin() + static_cast<std::ptrdiff_t>(slot_start),
                               ins.begin() + static_cast<std::ptrdiff_t>(slot_start + s.num_residuals));
      args.insert(args.end(), ins.begin() + static_cast<std::ptrdiff_t>(all_slots.size()), ins.end());
      std::vector<Tensor> outs = eval_jaxpr(s.unknown, args), result;
      size_t forced = slot_start + s.num_residuals, pos = 0;
      for (size_t k = 0; k < n_out; ++k) {
        if (!out_unknown[k]) continue;
        result.push_back(s.out_known[k] ? ins[forced++] : outs[pos++]);
      }
      return result;
    }));
    slot_start += slots[b].size();
  }
  std::vector<Tensor> known_in{inputs[0]}, unknown_in{inputs[0]};
  for (size_t i = 0; i < ops.size(); ++i)
    if (known[i + 1]) known_in.push_back(ops[i]);
  std::vector<Tensor> known_out;
  {
    InterpreterScope parent(*stage.parent());
    known_out = fluxion::bind(self, known_in, make_params(std::move(known_js)));
  }
  size_t n_known_out = known_out.size() - all_slots.size();
  unknown_in.insert(unknown_in.end(), known_out.begin() + static_cast<std::ptrdiff_t>(n_known_out), known_out.end());
  for (size_t i = 0; i < ops.size(); ++i)
    if (!known[i + 1]) unknown_in.push_back(ops[i]);
  std::vector<Tensor> unknown_out = stage.stage_equation(self, unknown_in, make_params(std::move(unknown_js)));
  std::vector<Tensor> out;
  size_t k_pos = 0, u_pos = 0;
  for (size_t k = 0; k < n_out; ++k) out.push_back(out_unknown[k] ? unknown_out[u_pos++] : known_out[k_pos++]);
  return out;
}

// Each branch transposed in the linear operands; the index is never linear.
void transpose_rule(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                    const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  const auto& p = params.as<CondParams>();
  if (!inputs[0].defined())
    detail::fail<Error>("cond", "internal: transpose in the branch index, in which cond is not linear.");
  std::vector<bool> linear, ct_defined;
  for (size_t i = 1; i < inputs.size(); ++i) linear.push_back(!inputs[i].defined());
  for (const Tensor& c : cts_out) ct_defined.push_back(c.defined());
  std::vector<Jaxpr> js;
  for (const SubJaxpr& b : p.branches) js.push_back(transpose_sub_jaxpr(b.jaxpr(), linear, ct_defined, Device::cpu()));
  std::vector<Tensor> ins;
  for (const Tensor& t : inputs)
    if (t.defined()) ins.push_back(t);
  for (const Tensor& c : cts_out)
    if (c.defined()) ins.push_back(c);
  std::vector<Tensor> cts = fluxion::bind(self, ins, make_params(std::move(js)));
  size_t k = 0;
  for (size_t i = 1; i < inputs.size(); ++i)
    if (!inputs[i].defined()) cts_in[i] = cts[k++];
}

std::string aval_list(const std::vector<AbstractValue>& avals) {
  std::ostringstream o;
  o << "(";
  for (size_t i = 0; i < avals.size(); ++i) o << (i ? ", " : "") << avals[i];
  o << ")";
  return o.str();
}

}  // namespace cond_detail

const Primitive& cond_p() {
  static const Primitive& p = primitives::define_primitive("cond")
                                  .params<cond_detail::CondParams>()
                                  .shape(&cond_detail::shape_rule)
                                  .reference(&cond_detail::reference_kernel)
                                  .cpu(&cond_detail::cpu_kernel)
                                  .jvp(&cond_detail::jvp_rule)
                                  .transpose(&cond_detail::transpose_rule)
                                  .batch(&cond_detail::batch_rule)
                                  .partial_eval(&cond_detail::partial_eval_rule)
                                  .build();
  return p;
}

namespace control_flow_detail {

std::vector<Tensor> cond_flat(const char* op, const Tensor& index, const std::vector<FlatFn>& branches,
                              const std::vector<Tensor>& operands) {
  if (branches.empty()) detail::fail<Error>(op, "no branches were given. Pass at least one branch function.");
  if (index.ndim() != 0 || !(index.dtype() == i32 || index.dtype() == i64 || index.dtype() == boolean))
    detail::fail<ShapeError>(op, "the index must be an integer scalar, got ", index.aval(),
                             ". Pass a rank-0 i32 tensor.");
  Device device = operands.empty() ? Device::cpu() : operands[0].device();
  std::vector<Closed> traced;
  for (const FlatFn& b : branches) traced.push_back(trace_closed(b, avals_of(operands), device));
  for (size_t i = 1; i < traced.size(); ++i)
    if (traced[i].jaxpr.out_avals() != traced[0].jaxpr.out_avals())
      detail::fail<ShapeError>(op, "branch 0 returns ", cond_detail::aval_list(traced[0].jaxpr.out_avals()),
                               " but branch ", i, " returns ", cond_detail::aval_list(traced[i].jaxpr.out_avals()),
                               ". Make every branch return the same structure, shapes and dtypes.");
  std::vector<Tensor> captured = unify_captured(traced);
  Tensor idx = index.dtype() == i64 ? lax::convert_element_type(index, i32) : index;
  std::vector<Tensor> ins{idx};
  ins.insert(ins.end(), captured.begin(), captured.end());
  ins.insert(ins.end(), operands.begin(), operands.end());
  std::vector<Jaxpr> js;
  for (Closed& c : traced) js.push_back(std::move(c.jaxpr));
  return fluxion::bind(cond_p(), ins, cond_detail::make_params(std::move(js)));
}

}  // namespace control_flow_detail
}  // namespace fluxion
