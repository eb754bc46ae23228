// checkpoint: a closed sub-Jaxpr run as one primitive whose partial evaluation stores the call's
// inputs instead of its residuals, so reverse mode recomputes them (rematerialisation).
// Invariants: the sub-Jaxpr has concrete constants only; every derived Jaxpr (jvp, batched, the
// unknown part of a partial evaluation, the transpose) is bound as `checkpoint` again, so the
// recomputation boundary survives any stack of transforms.
#include <algorithm>
#include <map>
#include <mutex>

#include "fluxion/checkpoint.hpp"
#include "primitives/control_flow_params.hpp"
#include "primitives/builder.hpp"
#include "primitives/registry.hpp"
#include "transforms/batching.hpp"
#include "transforms/partial_eval.hpp"
#include "passes/passes.hpp"
#include "transforms/transpose.hpp"

namespace fluxion {
namespace checkpoint_detail {

using namespace control_flow_detail;

using ParamsPtr = std::shared_ptr<const CheckpointParams>;

/// Derived Jaxprs, one per configuration. The transpose is not cached: its plan keeps its buffers
/// (the recomputed residuals) while the params live, and these params live in the linear Jaxpr
/// through the whole backward pass.
struct Caches {
  struct Jvp {
    ParamsPtr call;
    std::vector<bool> tangent_out_nonzero;
  };
  struct Batch {
    ParamsPtr call;
    std::vector<int64_t> out_dims;
  };
  struct Known {     // partial evaluation: what the known inputs determine
    ParamsPtr call;  // known inputs -> known outputs (no residuals); null if none
    std::vector<bool> out_known;
  };
  struct Staged {                // partial evaluation: the one equation staged
    ParamsPtr call;              // (used known inputs..., used unknown inputs...) -> unknown outputs
    std::vector<size_t> inputs;  // positions of those inputs among the primitive's inputs
  };
  std::mutex mutex;
  std::map<std::vector<bool>, Jvp> jvp;
  std::map<std::pair<std::vector<int64_t>, int64_t>, Batch> batch;
  std::map<std::vector<bool>, Known> known;
  std::map<std::vector<bool>, Staged> staged;
};

CheckpointParams::CheckpointParams(Jaxpr j) : body(std::move(j)), caches(std::make_shared<Caches>()) {}

ParamsPtr make_params(Jaxpr j) { return std::make_shared<const CheckpointParams>(std::move(j)); }

/// map[key], made by make() on first use (under the params' lock; a throw inserts nothing).
template <class Map, class Make> const typename Map::mapped_type& cached(const CheckpointParams& p, Map Caches::*member,
                                                                         const typename Map::key_type& key, Make make) {
  std::lock_guard<std::mutex> lock(p.caches->mutex);
  Map& map = (*p.caches).*member;
  auto it = map.find(key);
  if (it == map.end()) it = map.emplace(key, make()).first;
  return it->second;
}

std::vector<AbstractValue> shape_rule(const Primitive&, const std::vector<AbstractValue>& in, const Params& params) {
  const Jaxpr& j = params.as<CheckpointParams>().body.jaxpr();
  if (in.size() != j.invars.size())
    detail::fail<ShapeError>("checkpoint", "the function was traced for ", j.invars.size(), " tensors, got ", in.size(),
                             ". Call it with the arguments it was traced with.");
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != j.avals[j.invars[i]])
      detail::fail<ShapeError>("checkpoint", "input ", i, " is ", in[i], " but the function was traced for ",
                               j.avals[j.invars[i]], ". Call fx::checkpoint(f) again to trace it for the new shape.");
  return j.out_avals();
}

void cpu_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  copy_outputs("checkpoint", params.as<CheckpointParams>().body.run(in), out);
}

void reference_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  copy_outputs("checkpoint", params.as<CheckpointParams>().body.run_reference(in), out);
}

void jvp_rule(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
              const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const auto& p = params.as<CheckpointParams>();
  std::vector<bool> nonzero;
  std::vector<Tensor> ins = primals;
  for (const Tensor& t : tangents) {
    nonzero.push_back(t.defined());
    if (t.defined()) ins.push_back(t);
  }
  const Caches::Jvp& d = cached(p, &Caches::jvp, nonzero, [&] {
    JvpJaxpr r = jvp_jaxpr(p.body.jaxpr(), nonzero, {});
    return Caches::Jvp{make_params(std::move(r.jaxpr)), std::move(r.out_nonzero)};
  });
  std::vector<Tensor> outs = fluxion::bind(self, ins, *d.call);
  const size_t n = d.tangent_out_nonzero.size();
  primals_out.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n));
  tangents_out.clear();
  size_t k = n;
  for (size_t i = 0; i < n; ++i) tangents_out.push_back(d.tangent_out_nonzero[i] ? outs[k++] : Tensor());
}

void batch_rule(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<CheckpointParams>();
  const int64_t size = batching::batch_size(values, dims);
  const Caches::Batch& d = cached(p, &Caches::batch, std::make_pair(dims, size), [&] {
    BatchJaxpr r = batch_jaxpr(p.body.jaxpr(), avals_of(values), dims, size, {});
    Caches::Batch b{make_params(std::move(r.jaxpr)), {}};
    for (bool batched : r.out_batched) b.out_dims.push_back(batched ? 0 : kNotMapped);
    return b;
  });
  out = fluxion::bind(self, values, *d.call);
  out_dims = d.out_dims;
}

/// The static split: which outputs the known inputs determine, and a Jaxpr computing just those.
const Caches::Known& known_part(const CheckpointParams& p, const std::vector<bool>& known) {
  return cached(p, &Caches::known, known, [&] {
    std::vector<bool> unknown;
    for (bool k : known) unknown.push_back(!k);
    PartialEvalSplit split = partial_eval_jaxpr(p.body.jaxpr(), unknown);
    Caches::Known d{nullptr, split.out_known};
    const size_t n_known = split.known.outputs.size() - split.num_residuals;
    if (n_known > 0) {
      split.known.outputs.resize(n_known);  // the residuals are what checkpoint does not store
      d.call = make_params(passes::dce(split.known));
    }
    return d;
  });
}

/// The equation staged for the unknown outputs: the whole sub-Jaxpr (so it recomputes its
/// residuals from the known inputs), restricted to those outputs and the inputs they read.
const Caches::Staged& staged_part(const CheckpointParams& p, const std::vector<bool>& known,
                                  const std::vector<bool>& out_known) {
  std::vector<bool> key = known;
  key.insert(key.end(), out_known.begin(), out_known.end());
  return cached(p, &Caches::staged, key, [&] {
    Jaxpr j = p.body.jaxpr();
    std::vector<Atom> outs;
    for (size_t k = 0; k < out_known.size(); ++k)
      if (!out_known[k]) outs.push_back(j.outputs[k]);
    j.outputs = std::move(outs);
    j = passes::dce(j);
    // Inputs nothing reads any more are not passed (so not stored by the linear Jaxpr).
    std::vector<bool> used(j.avals.size(), false);
    auto use = [&used](const Atom& a) {
      if (!a.is_literal()) used[a.var] = true;
    };
    for (const Equation& e : j.equations) std::for_each(e.inputs.begin(), e.inputs.end(), use);
    std::for_each(j.outputs.begin(), j.outputs.end(), use);
    Caches::Staged d;
    std::vector<int32_t> invars;
    for (bool want_known : {true, false})
      for (size_t i = 0; i < known.size(); ++i)
        if (known[i] == want_known && used[j.invars[i]]) {
          d.inputs.push_back(i);
          invars.push_back(j.invars[i]);
        }
    j.invars = std::move(invars);
    d.call = make_params(std::move(j));
    return d;
  });
}

// Under linearize: the known outputs are computed now under the parent (without residuals), and
// one checkpoint equation taking the known inputs themselves is staged for the unknown outputs.
std::vector<Tensor> partial_eval_rule(const Primitive& self, StageInterpreter& stage, const std::vector<Tensor>& inputs,
                                      const std::vector<bool>& known, const Params& params) {
  const auto& p = params.as<CheckpointParams>();
  const Caches::Known& d = known_part(p, known);
  const std::vector<bool>& out_known = d.out_known;
  std::vector<Tensor> out(out_known.size());
  if (d.call) {
    std::vector<Tensor> known_in;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (known[i]) known_in.push_back(inputs[i]);
    std::vector<Tensor> known_out;
    {
      InterpreterScope parent_scope(*stage.parent());
      known_out = fluxion::bind(self, known_in, *d.call);
    }
    size_t k = 0;
    for (size_t i = 0; i < out.size(); ++i)
      if (out_known[i]) out[i] = known_out[k++];
  }
  bool any_unknown = false;
  for (bool k : out_known) any_unknown |= !k;
  if (!any_unknown) return out;
  const Caches::Staged& s = staged_part(p, known, out_known);
  std::vector<Tensor> ins;
  for (size_t i : s.inputs) ins.push_back(inputs[i]);
  std::vector<Tensor> unknown_out = stage.stage_equation(self, ins, *s.call);
  size_t u = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (!out_known[i]) out[i] = unknown_out[u++];
  return out;
}

// Transposes the sub-Jaxpr in its undefined (linear) inputs: it is linearized there under a
// partial-evaluation stage, which records the forward recomputation of the residuals into the
// transposed Jaxpr, and the linear part is transposed after it. Bound as one checkpoint.
void transpose_rule(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                    const std::vector<AbstractValue>& in_avals, const Params& params, std::vector<Tensor>& cts_in) {
  const Jaxpr& sub = params.as<CheckpointParams>().body.jaxpr();
  std::vector<AbstractValue> avals;
  std::vector<Tensor> ins;
  Device device = Device::cpu();  // linear inputs are undefined: the device of any defined value
  for (const std::vector<Tensor>* group : {&inputs, &cts_out})
    for (const Tensor& t : *group)
      if (t.defined()) {
        avals.push_back(t.aval());
        ins.push_back(t);
        device = t.device();
      }
  Jaxpr transposed = trace_jaxpr(avals, device, [&](const std::vector<Tensor>& traced) {
    StageInterpreter pe("vjp", /*forward_known=*/true);
    size_t pos = 0;
    std::vector<Tensor> mixed, cts;
    for (size_t i = 0; i < inputs.size(); ++i)
      mixed.push_back(inputs[i].defined() ? traced[pos++] : pe.new_input(in_avals[i], device));
    for (const Tensor& ct : cts_out) cts.push_back(ct.defined() ? traced[pos++] : Tensor());
    std::vector<Tensor> outs;
    {
      InterpreterScope pe_scope(pe);
      outs = eval_jaxpr(sub, mixed);
    }
    // Known outputs are constants of the linear Jaxpr: their cotangents are ignored.
    return transpose_jaxpr(pe.finish(outs), cts, "vjp");
  });
  std::vector<Tensor> cts = fluxion::bind(self, ins, *make_params(std::move(transposed)));
  size_t k = 0;
  for (size_t i = 0; i < inputs.size(); ++i) cts_in[i] = inputs[i].defined() ? Tensor() : cts[k++];
}

}  // namespace checkpoint_detail

const Primitive& checkpoint_p() {
  static const Primitive& p = primitives::define_primitive("checkpoint")
                                  .params<checkpoint_detail::CheckpointParams>()
                                  .shape(&checkpoint_detail::shape_rule)
                                  .reference(&checkpoint_detail::reference_kernel)
                                  .cpu(&checkpoint_detail::cpu_kernel)
                                  .jvp(&checkpoint_detail::jvp_rule)
                                  .transpose(&checkpoint_detail::transpose_rule)
                                  .batch(&checkpoint_detail::batch_rule)
                                  .partial_eval(&checkpoint_detail::partial_eval_rule)
                                  .build();
  return p;
}

namespace checkpoint_detail {

std::vector<Tensor> checkpoint_flat(const FlatFn& fn, const std::vector<Tensor>& leaves) {
  Closed c = trace_closed(fn, avals_of(leaves), leaves.empty() ? Device::cpu() : leaves[0].device());
  std::vector<Tensor> ins = std::move(c.captured);
  ins.insert(ins.end(), leaves.begin(), leaves.end());
  return fluxion::bind(checkpoint_p(), ins, *make_params(std::move(c.jaxpr)));
}

}  // namespace checkpoint_detail

namespace primitives {
void register_checkpoint(std::vector<const Primitive*>& list) { list.push_back(&checkpoint_p()); }
}  // namespace primitives

}  // namespace fluxion
