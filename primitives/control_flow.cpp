// Shared machinery of the control-flow primitives (cond.cpp, while_loop.cpp, scan.cpp): tracing
// user functions into closed sub-Jaxprs, and deriving jvp / batched / transposed sub-Jaxprs.
// Invariant: a sub-Jaxpr held in params has only concrete constants; tracers of enclosing
// transforms that a user function closed over become leading inputs of the primitive.
#include <cstring>
#include <sstream>

#include "fluxion/control_flow.hpp"
#include "fluxion/lax.hpp"
#include "primitives/registry.hpp"
#include "runtime/plan_cache.hpp"
#include "transforms/batching.hpp"
#include "transforms/jvp.hpp"
#include "transforms/partial_eval.hpp"
#include "transforms/transpose.hpp"

namespace fluxion {
namespace control_flow_detail {

SubJaxpr::SubJaxpr(Jaxpr j) : jaxpr_(std::make_shared<const Jaxpr>(std::move(j))) {
  plans_ = std::make_shared<const runtime::PlanCache>(jaxpr_, runtime::JaxprStage::traced);
}

std::shared_ptr<const Executable> SubJaxpr::executable(Device device) const { return plans_->executable(device); }

std::vector<Tensor> SubJaxpr::run(const std::vector<Tensor>& args) const { return plans_->run(args); }

std::vector<Tensor> SubJaxpr::run_reference(const std::vector<Tensor>& args) const {
  return eval_jaxpr_on(*jaxpr_, args, Backend::reference);
}

void SubJaxpr::print(std::ostream& os, const char* name) const {
  std::ostringstream text;
  text << *jaxpr_;
  std::string s = text.str(), indented;
  for (char c : s) {
    indented += c;
    if (c == '\n') indented += "      ";
  }
  os << name << "=" << indented;
}

Closed trace_closed(const FlatFn& fn, const std::vector<AbstractValue>& avals, Device device) {
  StageInterpreter st("trace");
  std::vector<Tensor> ins, outs;
  for (const AbstractValue& a : avals) ins.push_back(st.new_input(a, device));
  {
    InterpreterScope scope(st);
    outs = fn(ins);
  }
  Jaxpr j = st.finish(outs);
  Closed c;
  std::vector<int32_t> constvars, lifted;
  std::vector<Tensor> consts;
  for (size_t i = 0; i < j.constvars.size(); ++i) {
    if (j.consts[i].is_tracer()) {
      lifted.push_back(j.constvars[i]);
      c.captured.push_back(j.consts[i]);
    } else {
      constvars.push_back(j.constvars[i]);
      consts.push_back(j.consts[i]);
    }
  }
  j.constvars = std::move(constvars);
  j.consts = std::move(consts);
  j.invars.insert(j.invars.begin(), lifted.begin(), lifted.end());
  c.jaxpr = std::move(j);
  return c;
}

std::vector<Tensor> unify_captured(std::vector<Closed>& fns) {
  std::vector<Tensor> all;
  for (const Closed& c : fns)
    for (const Tensor& t : c.captured) {
      bool seen = false;
      for (const Tensor& a : all) seen |= a.impl() == t.impl();
      if (!seen) all.push_back(t);
    }
  for (Closed& c : fns) {
    const size_t own = c.captured.size();
    std::vector<int32_t> lead;
    for (const Tensor& t : all) {
      int32_t var = -1;
      for (size_t i = 0; i < own; ++i)
        if (c.captured[i].impl() == t.impl()) var = c.jaxpr.invars[i];
      lead.push_back(var >= 0 ? var : c.jaxpr.new_var(t.aval()));
    }
    c.jaxpr.invars.erase(c.jaxpr.invars.begin(), c.jaxpr.invars.begin() + static_cast<std::ptrdiff_t>(own));
    c.jaxpr.invars.insert(c.jaxpr.invars.begin(), lead.begin(), lead.end());
    c.captured = all;
  }
  return all;
}

Jaxpr trace_jaxpr(const std::vector<AbstractValue>& avals, Device device, const FlatFn& fn) {
  Closed c = trace_closed(fn, avals, device);
  if (!c.captured.empty())
    detail::fail<Error>("control_flow", "internal: a derived sub-Jaxpr captured a tracer of an enclosing transform.");
  return std::move(c.jaxpr);
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp_eval_jaxpr(const Jaxpr& j, const std::vector<Tensor>& primals,
                                                                   const std::vector<Tensor>& tangents,
                                                                   const char* name) {
  JvpInterpreter jvp(name);
  std::vector<Tensor> lifted;
  for (size_t i = 0; i < primals.size(); ++i) lifted.push_back(jvp.lift(primals[i], tangents[i]));
  std::vector<Tensor> outs;
  {
    InterpreterScope scope(jvp);
    outs = eval_jaxpr(j, lifted);
  }
  std::pair<std::vector<Tensor>, std::vector<Tensor>> r;
  for (const Tensor& o : outs) {
    auto [p, t] = jvp.split(o);
    r.first.push_back(p);
    r.second.push_back(t);
  }
  return r;
}

JvpJaxpr jvp_jaxpr(const Jaxpr& j, const std::vector<bool>& nonzero, const std::vector<bool>& instantiate) {
  std::vector<AbstractValue> avals = j.in_avals();
  for (size_t i = 0; i < nonzero.size(); ++i)
    if (nonzero[i]) avals.push_back(j.avals[j.invars[i]]);
  JvpJaxpr r;
  r.jaxpr = trace_jaxpr(avals, Device::cpu(), [&](const std::vector<Tensor>& ins) {
    const size_t n = j.invars.size();
    std::vector<Tensor> tangents_in;
    size_t t = n;
    for (size_t i = 0; i < n; ++i) tangents_in.push_back(nonzero[i] ? ins[t++] : Tensor());
    auto [primals, tangents_out] = jvp_eval_jaxpr(
        j, std::vector<Tensor>(ins.begin(), ins.begin() + static_cast<std::ptrdiff_t>(n)), tangents_in, "jvp");
    std::vector<Tensor> tangents;
    r.out_nonzero.clear();
    for (size_t k = 0; k < primals.size(); ++k) {
      const Tensor& tan = tangents_out[k];
      bool keep = tan.defined() || (k < instantiate.size() && instantiate[k]);
      r.out_nonzero.push_back(keep);
      if (keep) tangents.push_back(tan.defined() ? tan : zeros(primals[k].shape(), primals[k].dtype()));
    }
    primals.insert(primals.end(), tangents.begin(), tangents.end());
    return primals;
  });
  return r;
}

BatchJaxpr batch_jaxpr(const Jaxpr& j, const std::vector<AbstractValue>& avals, const std::vector<int64_t>& dims,
                       int64_t size, const std::vector<bool>& force) {
  BatchJaxpr r;
  r.jaxpr = trace_jaxpr(avals, Device::cpu(), [&](const std::vector<Tensor>& ins) {
    BatchInterpreter batch(size, "vmap");
    std::vector<Tensor> lifted;
    for (size_t i = 0; i < ins.size(); ++i)
      lifted.push_back(dims[i] == kNotMapped ? ins[i] : batch.lift(ins[i], dims[i]));
    std::vector<Tensor> outs;
    {
      InterpreterScope scope(batch);
      outs = eval_jaxpr(j, lifted);
    }
    std::vector<Tensor> results;
    r.out_batched.clear();
    for (size_t k = 0; k < outs.size(); ++k) {
      auto [v, d] = batch.split(outs[k]);
      bool b = d != kNotMapped || (k < force.size() && force[k]);
      r.out_batched.push_back(b);
      results.push_back(b ? batching::materialize(v, d, size, 0) : v);
    }
    return results;
  });
  return r;
}

Jaxpr transpose_sub_jaxpr(const Jaxpr& j, const std::vector<bool>& linear, const std::vector<bool>& ct_defined,
                          Device device) {
  std::vector<AbstractValue> avals;
  for (size_t i = 0; i < linear.size(); ++i)
    if (!linear[i]) avals.push_back(j.avals[j.invars[i]]);
  std::vector<AbstractValue> outs = j.out_avals();
  for (size_t k = 0; k < outs.size(); ++k)
    if (ct_defined[k]) avals.push_back(outs[k]);
  return trace_jaxpr(avals, device, [&](const std::vector<Tensor>& ins) {
    size_t pos = 0;
    std::vector<Tensor> known_in, ct_in;
    for (size_t i = 0; i < linear.size(); ++i)
      if (!linear[i]) known_in.push_back(ins[pos++]);
    for (size_t k = 0; k < outs.size(); ++k) ct_in.push_back(ct_defined[k] ? ins[pos++] : Tensor());
    PartialEvalSplit split = partial_eval_jaxpr(j, linear);
    std::vector<Tensor> known_out = eval_jaxpr(split.known, known_in);
    Jaxpr lin = std::move(split.unknown);
    // Residual inputs become constants: transpose_jaxpr treats constants as known values.
    const size_t n_known = known_out.size() - split.num_residuals;
    for (size_t r = 0; r < split.num_residuals; ++r) {
      lin.constvars.push_back(lin.invars[r]);
      lin.consts.push_back(known_out[n_known + r]);
    }
    lin.invars.erase(lin.invars.begin(), lin.invars.begin() + static_cast<std::ptrdiff_t>(split.num_residuals));
    std::vector<Tensor> lin_cts;
    for (size_t k = 0; k < split.out_known.size(); ++k)
      if (!split.out_known[k]) lin_cts.push_back(ct_in[k]);
    return transpose_jaxpr(lin, lin_cts, "vjp");
  });
}

Jaxpr permute_inputs(const Jaxpr& j, const std::vector<size_t>& perm) {
  Jaxpr out = j;
  for (size_t i = 0; i < perm.size(); ++i) out.invars[i] = j.invars[perm[i]];
  return out;
}

void copy_outputs(const char* op, const std::vector<Tensor>& from, std::vector<Tensor>& to) {
  for (size_t i = 0; i < to.size(); ++i) {
    Tensor src = from[i].concrete(op);
    const size_t n = static_cast<size_t>(src.size()) * dtype_size(src.dtype());
    if (n) std::memcpy(to[i].array().data(), src.array().data(), n);
  }
}

std::vector<AbstractValue> avals_of(const std::vector<Tensor>& ts) {
  std::vector<AbstractValue> a;
  for (const Tensor& t : ts) a.push_back(t.aval());
  return a;
}

void structure_mismatch(const char* op, const char* what) {
  detail::fail<ShapeError>(op, what, " (container sizes, map keys or static leaves such as ints differ). ",
                           "Return the same structure every time; pass values that change as Tensors.");
}

Tensor predicate_index(const char* op, const Tensor& pred) {
  if (pred.ndim() != 0)
    detail::fail<ShapeError>(op, "the predicate must be a scalar, got ", pred.aval(),
                             ". Reduce it first (e.g. fx::any) or use fx::where for elementwise choices.");
  // A bool predicate is the index itself (false: branch 0, true: branch 1).
  return pred.dtype() == boolean ? pred : lax::ne(pred, zeros({}, pred.dtype()));
}

int64_t scan_length(const std::vector<Tensor>& xs) {
  if (xs.empty())
    detail::fail<Error>("scan",
                        "xs has no tensors, so the number of steps is unknown. Pass xs with a leading axis "
                        "(e.g. fx::arange(n)) or use fx::fori_loop.");
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].ndim() == 0)
      detail::fail<ShapeError>("scan", "xs leaf ", i, " is ", xs[i].aval(), ", a scalar; every xs leaf needs a ",
                               "leading axis to scan over. Stack the values first.");
    if (xs[i].shape()[0] != xs[0].shape()[0])
      detail::fail<ShapeError>("scan", "xs leaves have different leading sizes: leaf 0 is ", xs[0].aval(), " and leaf ",
                               i, " is ", xs[i].aval(), ". Stack every xs leaf along axis 0 with the same length.");
  }
  return xs[0].shape()[0];
}

}  // namespace control_flow_detail

namespace primitives {
void register_loops(std::vector<const Primitive*>& list) {
  list.push_back(&cond_p());
  list.push_back(&while_p());
  list.push_back(&scan_p());
}
}  // namespace primitives

}  // namespace fluxion
