// custom_jvp_call, custom_vjp_call and custom_lin: functions carrying user derivative rules.
// Invariants: the sub-Jaxpr of a custom call has only concrete constants (a function closing over
// a tracer is refused); the user's rule, fwd and bwd are C++ functions called at rule time under
// whatever interpreter is current, so they are differentiated, batched or staged like any code.
#include <mutex>
#include <tuple>
#include <sstream>

#include "fluxion/custom_rules.hpp"
#include "fluxion/lax.hpp"
#include "primitives/builder.hpp"
#include "primitives/registry.hpp"
#include "transforms/batching.hpp"
#include "transforms/jvp.hpp"

namespace fluxion {
namespace custom_detail {

using control_flow_detail::avals_of;
using control_flow_detail::copy_outputs;
using control_flow_detail::SubJaxpr;

bool eager() { return &current_interpreter() == &eval_interpreter(); }

std::string text_of(const std::vector<AbstractValue>& avals) {
  std::ostringstream o;
  o << "(";
  for (size_t i = 0; i < avals.size(); ++i) o << (i ? ", " : "") << avals[i];
  o << ")";
  return o.str();
}

/// Throws when `got` does not have the avals `want` (what: which user function returned them).
void check_avals(const char* op, const char* what, const std::vector<Tensor>& got,
                 const std::vector<AbstractValue>& want, const char* fix) {
  std::vector<AbstractValue> g = avals_of(got);
  if (g != want)
    detail::fail<ShapeError>(op, what, " returned ", text_of(g), " but ", text_of(want), " was expected. ", fix);
}

/// Traces `f` on `args`' avals; a closure over a tracer of an enclosing transform is refused.
SubJaxpr trace_fun(const char* op, const FlatFn& f, const std::vector<Tensor>& args) {
  Device device = args.empty() ? Device::cpu() : args[0].device();
  control_flow_detail::Closed c = control_flow_detail::trace_closed(f, avals_of(args), device);
  if (!c.captured.empty())
    detail::fail<Error>(op, "the function closes over a value traced by an enclosing transform (", c.captured[0].aval(),
                        "); its custom rule cannot see it, so its derivative or batching ",
                        "would be wrong. Pass that value as an argument.");
  return SubJaxpr(std::move(c.jaxpr));
}

/// fn on `ins` batched at dims (0 or kNotMapped), every output batched at axis 0.
std::vector<Tensor> batch_flat(const FlatFn& fn, const std::vector<Tensor>& ins, const std::vector<int64_t>& dims,
                               int64_t size) {
  BatchInterpreter batch(size, "vmap");
  std::vector<Tensor> lifted;
  for (size_t i = 0; i < ins.size(); ++i)
    lifted.push_back(dims[i] == kNotMapped ? ins[i] : batch.lift(ins[i], dims[i]));
  std::vector<Tensor> outs;
  {
    InterpreterScope scope(batch);
    outs = fn(lifted);
  }
  std::vector<Tensor> results;
  for (const Tensor& o : outs) {
    auto [v, d] = batch.split(o);
    results.push_back(batching::materialize(v, d, size, 0));
  }
  return results;
}

/// Batched inputs moved to axis 0 (dims become 0 or kNotMapped).
std::vector<Tensor> batched_at_front(const std::vector<Tensor>& values, std::vector<int64_t>& dims) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < values.size(); ++i) {
    out.push_back(dims[i] == kNotMapped ? values[i] : batching::move_axis(values[i], dims[i], 0));
    if (dims[i] != kNotMapped) dims[i] = 0;
  }
  return out;
}

/// Tangents with symbolic zeros instantiated as zeros of the primal's aval.
std::vector<Tensor> instantiate(const std::vector<Tensor>& tangents, const std::vector<Tensor>& primals) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < tangents.size(); ++i)
    out.push_back(tangents[i].defined() ? tangents[i] : zeros(primals[i].shape(), primals[i].dtype()));
  return out;
}

std::vector<AbstractValue> fun_shape_rule(const char* op, const SubJaxpr& fun, const std::vector<AbstractValue>& in) {
  const Jaxpr& j = fun.jaxpr();
  if (in.size() != j.invars.size())
    detail::fail<ShapeError>(op, "the function was traced for ", j.invars.size(), " tensors, got ", in.size(),
                             ". Call it with the arguments it was traced with.");
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != j.avals[j.invars[i]])
      detail::fail<ShapeError>(op, "input ", i, " is ", in[i], " but the function was traced for ",
                               j.avals[j.invars[i]], ". Call the custom function again to retrace it.");
  return j.out_avals();
}

// ---------------------------------------------------------------- custom_jvp_call

struct JvpCallParams final : Params {
  SubJaxpr fun;
  std::shared_ptr<const FlatJvpRule> rule;
  JvpCallParams(SubJaxpr f, std::shared_ptr<const FlatJvpRule> r) : fun(std::move(f)), rule(std::move(r)) {}
  void print(std::ostream& os) const override {
    os << "jvp=<C++ rule> ";
    fun.print(os, "jaxpr");
  }
  bool equals(const Params& o) const override {
    const auto* p = dynamic_cast<const JvpCallParams*>(&o);
    return p && p->fun.id() == fun.id() && p->rule == rule;
  }
  size_t hash() const override { return detail::hash_combine(std::hash<const void*>()(fun.id()), 0x4a7670); }
  std::shared_ptr<const Params> clone() const override { return std::make_shared<JvpCallParams>(*this); }
};

std::vector<AbstractValue> jvp_call_shape(const Primitive&, const std::vector<AbstractValue>& in,
                                          const Params& params) {
  return fun_shape_rule("custom_jvp", params.as<JvpCallParams>().fun, in);
}

template <class P> void fun_cpu_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  copy_outputs("custom_call", params.as<P>().fun.run(in), out);
}
template <class P>
void fun_reference_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  copy_outputs("custom_call", params.as<P>().fun.run_reference(in), out);
}
template <class P> const Jaxpr& fun_callee(const Params& params) { return params.as<P>().fun.jaxpr(); }

void jvp_call_jvp(const Primitive&, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                  const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const auto& p = params.as<JvpCallParams>();
  std::vector<Tensor> outs = (*p.rule)(primals, instantiate(tangents, primals));
  std::vector<AbstractValue> want = p.fun.jaxpr().out_avals();
  const size_t n = want.size();
  std::vector<AbstractValue> both = want;
  both.insert(both.end(), want.begin(), want.end());
  check_avals("custom_jvp", "the jvp rule", outs, both,
              "The rule must return std::pair{f's output, its tangent}, each with f's output avals.");
  primals_out.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n));
  tangents_out.assign(outs.begin() + static_cast<std::ptrdiff_t>(n), outs.end());
}

void jvp_call_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                    const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<JvpCallParams>();
  const int64_t size = batching::batch_size(values, dims);
  std::vector<int64_t> d = dims;
  std::vector<Tensor> vals = batched_at_front(values, d);
  std::vector<bool> all(p.fun.jaxpr().outputs.size(), true);
  auto fun = control_flow_detail::batch_jaxpr(p.fun.jaxpr(), avals_of(vals), d, size, all);
  auto rule = std::make_shared<const FlatJvpRule>(
      [base = p.rule, d, size](const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents) {
        std::vector<Tensor> ins = primals;
        ins.insert(ins.end(), tangents.begin(), tangents.end());
        std::vector<int64_t> both = d;
        both.insert(both.end(), d.begin(), d.end());
        const size_t n = primals.size();
        FlatFn joined = [&](const std::vector<Tensor>& v) {
          return (*base)(std::vector<Tensor>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)),
                         std::vector<Tensor>(v.begin() + static_cast<std::ptrdiff_t>(n), v.end()));
        };
        return batch_flat(joined, ins, both, size);
      });
  out = fluxion::bind(self, vals, JvpCallParams(SubJaxpr(std::move(fun.jaxpr)), rule));
  out_dims.assign(out.size(), 0);
}

// ---------------------------------------------------------------- custom_vjp_call

struct VjpCallParams final : Params {
  SubJaxpr fun;
  std::shared_ptr<const FlatFn> fwd, bwd;
  VjpCallParams(SubJaxpr f, std::shared_ptr<const FlatFn> fw, std::shared_ptr<const FlatFn> bw)
      : fun(std::move(f)), fwd(std::move(fw)), bwd(std::move(bw)) {}
  void print(std::ostream& os) const override {
    os << "fwd=<C++ function> bwd=<C++ function> ";
    fun.print(os, "jaxpr");
  }
  bool equals(const Params& o) const override {
    const auto* p = dynamic_cast<const VjpCallParams*>(&o);
    return p && p->fun.id() == fun.id() && p->fwd == fwd && p->bwd == bwd;
  }
  size_t hash() const override { return detail::hash_combine(std::hash<const void*>()(fun.id()), 0x566a70); }
  std::shared_ptr<const Params> clone() const override { return std::make_shared<VjpCallParams>(*this); }
};

std::vector<AbstractValue> vjp_call_shape(const Primitive&, const std::vector<AbstractValue>& in,
                                          const Params& params) {
  return fun_shape_rule("custom_vjp", params.as<VjpCallParams>().fun, in);
}

// ---------------------------------------------------------------- custom_lin

/// custom_lin's params: bwd, and the avals of the residuals, the arguments (which of them have a
/// tangent input) and the outputs. The forward map (bwd transposed) is derived once, lazily.
struct LinParams final : Params {
  std::shared_ptr<const FlatFn> bwd;
  std::vector<AbstractValue> res_avals, arg_avals, out_avals;
  std::vector<bool> nonzero;  // per argument: its tangent is an input
  // A mutex and an optional, not std::call_once: call_once's TLS trampolines fail to resolve
  // in clang-repl's JIT.
  struct Forward {
    std::mutex mutex;
    std::optional<SubJaxpr> jaxpr;
  };
  std::shared_ptr<Forward> forward = std::make_shared<Forward>();

  void print(std::ostream& os) const override {
    os << "bwd=<C++ function> residuals=" << res_avals.size() << " arguments=" << text_of(arg_avals);
  }
  bool equals(const Params& o) const override {
    const auto* p = dynamic_cast<const LinParams*>(&o);
    return p && p->bwd == bwd && p->res_avals == res_avals && p->arg_avals == arg_avals && p->out_avals == out_avals &&
           p->nonzero == nonzero;
  }
  size_t hash() const override { return std::hash<const void*>()(bwd.get()); }
  std::shared_ptr<const Params> clone() const override { return std::make_shared<LinParams>(*this); }

  std::vector<AbstractValue> input_avals() const {
    std::vector<AbstractValue> in = res_avals;
    for (size_t i = 0; i < arg_avals.size(); ++i)
      if (nonzero[i]) in.push_back(arg_avals[i]);
    return in;
  }
  /// bwd on residuals and output cotangents, checked against the arguments' avals.
  std::vector<Tensor> call_bwd(const std::vector<Tensor>& residuals, const std::vector<Tensor>& cts) const {
    std::vector<Tensor> ins = residuals;
    ins.insert(ins.end(), cts.begin(), cts.end());
    std::vector<Tensor> out = (*bwd)(ins);
    check_avals("custom_vjp", "bwd", out, arg_avals,
                "bwd(residuals, cotangent) must return one cotangent per argument, shaped like it.");
    return out;
  }
  /// The forward map (residuals..., nonzero argument tangents...) -> output tangents: bwd traced
  /// and transposed in its cotangent inputs.
  const SubJaxpr& forward_jaxpr() const {
    std::lock_guard<std::mutex> lock(forward->mutex);
    if (!forward->jaxpr) {
      std::vector<AbstractValue> avals = res_avals;
      avals.insert(avals.end(), out_avals.begin(), out_avals.end());
      const size_t n_res = res_avals.size();
      Jaxpr b = control_flow_detail::trace_jaxpr(avals, Device::cpu(), [&](const std::vector<Tensor>& ins) {
        return call_bwd(std::vector<Tensor>(ins.begin(), ins.begin() + static_cast<std::ptrdiff_t>(n_res)),
                        std::vector<Tensor>(ins.begin() + static_cast<std::ptrdiff_t>(n_res), ins.end()));
      });
      std::vector<bool> linear(avals.size(), false);
      for (size_t k = n_res; k < avals.size(); ++k) linear[k] = true;
      forward->jaxpr.emplace(control_flow_detail::transpose_sub_jaxpr(b, linear, nonzero, Device::cpu()));
    }
    return *forward->jaxpr;
  }
};

std::vector<AbstractValue> lin_shape(const Primitive&, const std::vector<AbstractValue>& in, const Params& params) {
  const auto& p = params.as<LinParams>();
  std::vector<AbstractValue> want = p.input_avals();
  if (in != want)
    detail::fail<ShapeError>("custom_lin", "the inputs are ", text_of(in), " but ", text_of(want),
                             " (residuals, then argument tangents) were expected. custom_lin is bound by custom_vjp's "
                             "jvp rule; call the custom_vjp function instead.");
  return p.out_avals;
}

void lin_cpu_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  copy_outputs("custom_lin", params.as<LinParams>().forward_jaxpr().run(in), out);
}
void lin_reference_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  copy_outputs("custom_lin", params.as<LinParams>().forward_jaxpr().run_reference(in), out);
}
const Jaxpr& lin_callee(const Params& params) { return params.as<LinParams>().forward_jaxpr().jaxpr(); }

// jvp of the forward map (linear in the tangents, not in the residuals): its equations replayed
// under a jvp interpreter.
void lin_jvp(const Primitive&, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
             const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const Jaxpr& f = params.as<LinParams>().forward_jaxpr().jaxpr();
  std::tie(primals_out, tangents_out) = control_flow_detail::jvp_eval_jaxpr(f, primals, tangents, "jvp");
}

// Transposed in the argument tangents (the residuals are known): the user's bwd.
void lin_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                   const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  const auto& p = params.as<LinParams>();
  const size_t n_res = p.res_avals.size();
  std::vector<Tensor> residuals(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(n_res));
  for (const Tensor& r : residuals)
    if (!r.defined())
      detail::fail<Error>("custom_vjp", "internal: a residual of custom_lin is linear; only the tangents are.");
  std::vector<Tensor> cts;
  for (size_t k = 0; k < cts_out.size(); ++k)
    cts.push_back(cts_out[k].defined() ? cts_out[k] : zeros(p.out_avals[k].shape, p.out_avals[k].dtype));
  std::vector<Tensor> arg_cts = p.call_bwd(residuals, cts);
  cts_in.assign(inputs.size(), Tensor());
  size_t k = n_res;
  for (size_t i = 0; i < p.arg_avals.size(); ++i)
    if (p.nonzero[i]) cts_in[k++] = arg_cts[i];
}

AbstractValue with_batch(const AbstractValue& a, int64_t size) {
  std::vector<int64_t> dims = a.shape.dims();
  dims.insert(dims.begin(), size);
  return AbstractValue{Shape(dims), a.dtype};
}

// One custom_lin over the batch: residuals keep their batching, tangents and outputs are batched
// at axis 0, and bwd is batched (its argument cotangents at axis 0).
void lin_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
               const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<LinParams>();
  const int64_t size = batching::batch_size(values, dims);
  const size_t n_res = p.res_avals.size();
  std::vector<int64_t> d = dims;
  std::vector<Tensor> vals = batched_at_front(values, d);
  LinParams q;
  for (size_t i = 0; i < vals.size(); ++i) {
    if (i >= n_res) {
      vals[i] = batching::materialize(vals[i], d[i], size, 0);
      d[i] = 0;
    } else {
      q.res_avals.push_back(d[i] == kNotMapped ? p.res_avals[i] : with_batch(p.res_avals[i], size));
    }
  }
  for (const AbstractValue& a : p.arg_avals) q.arg_avals.push_back(with_batch(a, size));
  for (const AbstractValue& a : p.out_avals) q.out_avals.push_back(with_batch(a, size));
  q.nonzero = p.nonzero;
  std::vector<int64_t> bwd_dims(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(n_res));
  bwd_dims.resize(n_res + p.out_avals.size(), 0);
  q.bwd = std::make_shared<const FlatFn>([base = p.bwd, bwd_dims, size](const std::vector<Tensor>& ins) {
    return batch_flat(*base, ins, bwd_dims, size);
  });
  out = fluxion::bind(self, vals, q);
  out_dims.assign(out.size(), 0);
}

// ---------------------------------------------------------------- custom_vjp_call rules

// The primal outputs and residuals come from fwd; the output tangents are custom_lin of the
// residuals and the argument tangents, so linearize stages custom_lin and transposes it with bwd.
void vjp_call_jvp(const Primitive&, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                  const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const auto& p = params.as<VjpCallParams>();
  std::vector<Tensor> fo = (*p.fwd)(primals);
  std::vector<AbstractValue> want = p.fun.jaxpr().out_avals();
  const size_t n = want.size();
  std::vector<Tensor> outs(fo.begin(), fo.begin() + static_cast<std::ptrdiff_t>(std::min(n, fo.size())));
  check_avals("custom_vjp", "fwd's output", outs, want, "fwd must return std::pair{f's output, residuals}.");
  LinParams lin;
  lin.bwd = p.bwd;
  std::vector<Tensor> ins(fo.begin() + static_cast<std::ptrdiff_t>(n), fo.end());
  lin.res_avals = avals_of(ins);
  lin.arg_avals = avals_of(primals);
  lin.out_avals = want;
  for (const Tensor& t : tangents) {
    lin.nonzero.push_back(t.defined());
    if (t.defined()) ins.push_back(t);
  }
  primals_out = std::move(outs);
  tangents_out = fluxion::bind(custom_lin_p(), ins, lin);
}

// fun, fwd and bwd batched; arguments that are not batched get their cotangents summed over
// the batch.
void vjp_call_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                    const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<VjpCallParams>();
  const int64_t size = batching::batch_size(values, dims);
  std::vector<int64_t> d = dims;
  std::vector<Tensor> vals = batched_at_front(values, d);
  std::vector<bool> all(p.fun.jaxpr().outputs.size(), true);
  auto fun = control_flow_detail::batch_jaxpr(p.fun.jaxpr(), avals_of(vals), d, size, all);
  auto fwd = std::make_shared<const FlatFn>(
      [base = p.fwd, d, size](const std::vector<Tensor>& ins) { return batch_flat(*base, ins, d, size); });
  auto bwd = std::make_shared<const FlatFn>([base = p.bwd, d, size](const std::vector<Tensor>& ins) {
    std::vector<Tensor> cts = batch_flat(*base, ins, std::vector<int64_t>(ins.size(), 0), size);
    for (size_t i = 0; i < cts.size() && i < d.size(); ++i)
      if (d[i] == kNotMapped) cts[i] = sum(cts[i], {0});
    return cts;
  });
  out = fluxion::bind(self, vals, VjpCallParams(SubJaxpr(std::move(fun.jaxpr)), fwd, bwd));
  out_dims.assign(out.size(), 0);
}

}  // namespace custom_detail

namespace custom_detail {

std::vector<Tensor> custom_jvp_flat(const FlatFn& f, const FlatJvpRule& rule, const std::vector<Tensor>& args) {
  SubJaxpr fun = trace_fun("custom_jvp", f, args);
  return fluxion::bind(custom_jvp_call_p(), args,
                       JvpCallParams(std::move(fun), std::make_shared<const FlatJvpRule>(rule)));
}

std::vector<Tensor> custom_vjp_flat(const FlatFn& f, const FlatFn& fwd, const FlatFn& bwd,
                                    const std::vector<Tensor>& args) {
  SubJaxpr fun = trace_fun("custom_vjp", f, args);
  return fluxion::bind(
      custom_vjp_call_p(), args,
      VjpCallParams(std::move(fun), std::make_shared<const FlatFn>(fwd), std::make_shared<const FlatFn>(bwd)));
}

std::vector<Tensor> custom_lin_flat(const FlatFn& bwd, const std::vector<Tensor>& residuals,
                                    const std::vector<Tensor>& tangents, const std::vector<AbstractValue>& arg_avals,
                                    const std::vector<AbstractValue>& out_avals) {
  LinParams lin;
  lin.bwd = std::make_shared<const FlatFn>(bwd);
  lin.res_avals = avals_of(residuals);
  lin.arg_avals = arg_avals;
  lin.out_avals = out_avals;
  std::vector<Tensor> ins = residuals;
  for (const Tensor& t : tangents) {
    lin.nonzero.push_back(t.defined());
    if (t.defined()) ins.push_back(t);
  }
  return fluxion::bind(custom_lin_p(), ins, lin);
}

}  // namespace custom_detail

const Primitive& custom_jvp_call_p() {
  using namespace custom_detail;
  static const Primitive& p = primitives::define_primitive("custom_jvp_call")
                                  .shape(&jvp_call_shape)
                                  .reference(&fun_reference_kernel<JvpCallParams>)
                                  .cpu(&fun_cpu_kernel<JvpCallParams>)
                                  .jvp(&jvp_call_jvp)
                                  .batch(&jvp_call_batch)
                                  .callee(&fun_callee<JvpCallParams>)
                                  .build();
  return p;
}

const Primitive& custom_vjp_call_p() {
  using namespace custom_detail;
  static const Primitive& p = primitives::define_primitive("custom_vjp_call")
                                  .shape(&vjp_call_shape)
                                  .reference(&fun_reference_kernel<VjpCallParams>)
                                  .cpu(&fun_cpu_kernel<VjpCallParams>)
                                  .jvp(&vjp_call_jvp)
                                  .batch(&vjp_call_batch)
                                  .callee(&fun_callee<VjpCallParams>)
                                  .build();
  return p;
}

const Primitive& custom_lin_p() {
  using namespace custom_detail;
  static const Primitive& p = primitives::define_primitive("custom_lin")
                                  .shape(&lin_shape)
                                  .reference(&lin_reference_kernel)
                                  .cpu(&lin_cpu_kernel)
                                  .jvp(&lin_jvp)
                                  .transpose(&lin_transpose)
                                  .batch(&lin_batch)
                                  .callee(&lin_callee)
                                  .build();
  return p;
}

namespace primitives {
void register_custom_rules(std::vector<const Primitive*>& list) {
  list.push_back(&custom_jvp_call_p());
  list.push_back(&custom_vjp_call_p());
  list.push_back(&custom_lin_p());
}
}  // namespace primitives

}  // namespace fluxion
