// jit_call: a closed sub-Jaxpr run as one primitive, so a jit'd function composes with every
// transform. Each rule transforms the sub-Jaxpr once per configuration (which tangents are
// nonzero, which axes are batched, ...) and caches the derived Jaxpr in the params.
#include <cstring>
#include <map>
#include <sstream>

#include "fluxion/control_flow.hpp"
#include "fluxion/jit.hpp"
#include "primitives/builder.hpp"
#include "primitives/registry.hpp"
#include "runtime/plan_cache.hpp"
#include "transforms/batching.hpp"
#include "transforms/jvp.hpp"
#include "transforms/partial_eval.hpp"
#include "transforms/transpose.hpp"

namespace fluxion {

struct JitCallParams::Caches {
  struct Jvp {
    std::shared_ptr<const JitCallParams> call;
    std::vector<bool> tangent_out_nonzero;
  };
  struct Batch {
    std::shared_ptr<const JitCallParams> call;
    std::vector<int64_t> out_dims;
  };
  struct PartialEval {
    std::shared_ptr<const JitCallParams> known, unknown;
    std::vector<bool> out_known;
    size_t num_residuals = 0;
  };
  Caches(std::shared_ptr<const Jaxpr> jaxpr, runtime::JaxprStage stage) : plans(std::move(jaxpr), stage) {}
  runtime::PlanCache plans;
  std::mutex mutex;  // guards the derived Jaxprs below
  std::map<std::vector<bool>, Jvp> jvp;
  std::map<std::pair<std::vector<int64_t>, int64_t>, Batch> batch;
  std::map<std::vector<bool>, PartialEval> partial_eval;
  std::map<std::vector<bool>, std::shared_ptr<const JitCallParams>> transpose;
};

JitCallParams::JitCallParams(std::shared_ptr<const Jaxpr> jaxpr, std::string name, bool optimized)
    : jaxpr_(std::move(jaxpr)),
      name_(std::move(name)),
      caches_(
          std::make_shared<Caches>(jaxpr_, optimized ? runtime::JaxprStage::optimized : runtime::JaxprStage::traced)) {}

std::shared_ptr<const Executable> JitCallParams::executable(Device device) const {
  return caches_->plans.executable(device);
}

FLUXION_REPL_INLINE void JitCallParams::print(std::ostream& os) const {
  std::ostringstream text;
  text << *jaxpr_;
  std::string s = text.str(), indented;
  for (char c : s) {
    indented += c;
    if (c == '\n') indented += "      ";
  }
  os << "name=" << name_ << " jaxpr=" << indented;
}
FLUXION_REPL_INLINE bool JitCallParams::equals(const Params& other) const {
  const auto* o = dynamic_cast<const JitCallParams*>(&other);
  return o && o->jaxpr_ == jaxpr_;
}
FLUXION_REPL_INLINE size_t JitCallParams::hash() const { return std::hash<const void*>()(jaxpr_.get()); }
FLUXION_REPL_INLINE std::shared_ptr<const Params> JitCallParams::clone() const {
  return std::make_shared<JitCallParams>(*this);
}

namespace jit_call_detail {

using Caches = JitCallParams::Caches;

std::shared_ptr<const JitCallParams> derived(Jaxpr j, const std::string& name) {
  return std::make_shared<const JitCallParams>(std::make_shared<const Jaxpr>(std::move(j)), name);
}

std::vector<AbstractValue> shape_rule(const Primitive&, const std::vector<AbstractValue>& in, const Params& params) {
  const Jaxpr& j = params.as<JitCallParams>().jaxpr();
  if (in.size() != j.invars.size())
    detail::fail<ShapeError>("jit_call", "the traced function takes ", j.invars.size(), " tensors, got ", in.size(),
                             ". Call it with the arguments it was traced with.");
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != j.avals[j.invars[i]])
      detail::fail<ShapeError>("jit_call", "input ", i, " is ", in[i], " but the function was traced for ",
                               j.avals[j.invars[i]], ". Retrace with jit for the new shape.");
  return j.out_avals();
}

void copy_outputs(const std::vector<Tensor>& from, std::vector<Tensor>& to) {
  control_flow_detail::copy_outputs("jit_call", from, to);
}

void cpu_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  copy_outputs(params.as<JitCallParams>().caches().plans.run(in), out);
}

// The reference backend replays the equations one by one with reference kernels.
void reference_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  copy_outputs(eval_jaxpr_on(params.as<JitCallParams>().jaxpr(), in, Backend::reference), out);
}

const Caches::Jvp& jvp_for(const JitCallParams& call, const std::vector<Tensor>& primals,
                           const std::vector<bool>& nonzero) {
  Caches& c = call.caches();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.jvp.find(nonzero);
  if (it != c.jvp.end()) return it->second;
  const Jaxpr& sub = call.jaxpr();
  StageInterpreter st("jit");
  std::vector<Tensor> p_in, t_in;
  for (const Tensor& p : primals) p_in.push_back(st.new_input(p.aval(), p.device()));
  for (size_t i = 0; i < primals.size(); ++i)
    t_in.push_back(nonzero[i] ? st.new_input(primals[i].aval(), primals[i].device()) : Tensor());
  Caches::Jvp d;
  std::vector<Tensor> results;
  {
    InterpreterScope scope(st);
    auto [primals_out, tangents_out] = control_flow_detail::jvp_eval_jaxpr(sub, p_in, t_in, "jit");
    results = std::move(primals_out);
    std::vector<Tensor> tangents;
    for (const Tensor& t : tangents_out) {
      d.tangent_out_nonzero.push_back(t.defined());
      if (t.defined()) tangents.push_back(t);
    }
    results.insert(results.end(), tangents.begin(), tangents.end());
  }
  d.call = derived(st.finish(results), call.name() + "_jvp");
  return c.jvp.emplace(nonzero, std::move(d)).first->second;
}

void jvp_rule(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
              const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const auto& call = params.as<JitCallParams>();
  std::vector<bool> nonzero(tangents.size());
  std::vector<Tensor> ins = primals;
  for (size_t i = 0; i < tangents.size(); ++i) {
    nonzero[i] = tangents[i].defined();
    if (nonzero[i]) ins.push_back(tangents[i]);
  }
  const Caches::Jvp& d = jvp_for(call, primals, nonzero);
  std::vector<Tensor> outs = fluxion::bind(self, ins, *d.call);
  const size_t n = call.jaxpr().outputs.size();
  primals_out.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n));
  tangents_out.clear();
  size_t k = n;
  for (size_t i = 0; i < n; ++i) tangents_out.push_back(d.tangent_out_nonzero[i] ? outs[k++] : Tensor());
}

const Caches::Batch& batch_for(const JitCallParams& call, const std::vector<Tensor>& values,
                               const std::vector<int64_t>& dims, int64_t size) {
  Caches& c = call.caches();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto key = std::make_pair(dims, size);
  auto it = c.batch.find(key);
  if (it != c.batch.end()) return it->second;
  StageInterpreter st("jit");
  std::vector<Tensor> ins;
  for (const Tensor& v : values) ins.push_back(st.new_input(v.aval(), v.device()));
  Caches::Batch d;
  std::vector<Tensor> results;
  {
    InterpreterScope scope(st);
    BatchInterpreter batch(size, "vmap");
    std::vector<Tensor> lifted;
    for (size_t i = 0; i < ins.size(); ++i)
      lifted.push_back(dims[i] == kNotMapped ? ins[i] : batch.lift(ins[i], dims[i]));
    std::vector<Tensor> outs;
    {
      InterpreterScope batch_scope(batch);
      outs = eval_jaxpr(call.jaxpr(), lifted);
    }
    for (const Tensor& o : outs) {
      auto [v, dim] = batch.split(o);
      results.push_back(v);
      d.out_dims.push_back(dim);
    }
  }
  d.call = derived(st.finish(results), call.name() + "_vmap");
  return c.batch.emplace(key, std::move(d)).first->second;
}

void batch_rule(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& call = params.as<JitCallParams>();
  const Caches::Batch& d = batch_for(call, values, dims, batching::batch_size(values, dims));
  out = fluxion::bind(self, values, *d.call);
  out_dims = d.out_dims;
}

const Caches::PartialEval& partial_eval_for(const JitCallParams& call, const std::vector<bool>& known) {
  Caches& c = call.caches();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.partial_eval.find(known);
  if (it != c.partial_eval.end()) return it->second;
  std::vector<bool> unknown(known.size());
  for (size_t i = 0; i < known.size(); ++i) unknown[i] = !known[i];
  PartialEvalSplit split = partial_eval_jaxpr(call.jaxpr(), unknown);
  Caches::PartialEval d;
  d.out_known = split.out_known;
  d.num_residuals = split.num_residuals;
  d.known = derived(std::move(split.known), call.name() + "_known");
  d.unknown = derived(std::move(split.unknown), call.name() + "_unknown");
  return c.partial_eval.emplace(known, std::move(d)).first->second;
}

// Under linearize: the known part runs now (one jit_call under the parent), the rest is staged
// as a jit_call taking the residuals. partial_eval_jaxpr splits nested control flow and calls by
// their own rules, so the known part holds every primal value.
std::vector<Tensor> partial_eval_rule(const Primitive& self, StageInterpreter& stage, const std::vector<Tensor>& inputs,
                                      const std::vector<bool>& known, const Params& params) {
  const auto& call = params.as<JitCallParams>();
  const Caches::PartialEval& d = partial_eval_for(call, known);
  std::vector<Tensor> known_in, unknown_in;
  for (size_t i = 0; i < inputs.size(); ++i) (known[i] ? known_in : unknown_in).push_back(inputs[i]);
  std::vector<Tensor> known_out;
  if (!d.known->jaxpr().outputs.empty()) {
    InterpreterScope parent(*stage.parent());
    known_out = fluxion::bind(self, known_in, *d.known);
  }
  const size_t n_known = known_out.size() - d.num_residuals;
  std::vector<Tensor> ins(known_out.begin() + static_cast<std::ptrdiff_t>(n_known), known_out.end());
  ins.insert(ins.end(), unknown_in.begin(), unknown_in.end());
  std::vector<Tensor> unknown_out;
  if (!d.unknown->jaxpr().outputs.empty()) unknown_out = stage.stage_equation(self, ins, *d.unknown);
  std::vector<Tensor> out;
  size_t k = 0, u = 0;
  for (bool is_known : d.out_known) out.push_back(is_known ? known_out[k++] : unknown_out[u++]);
  return out;
}

// Transposes the sub-Jaxpr in the inputs that are undefined (linear): its known part gives the
// residuals, and the linear rest is transposed. Staged into one Jaxpr per configuration.
void transpose_rule(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                    const std::vector<AbstractValue>& in_avals, const Params& params, std::vector<Tensor>& cts_in) {
  const auto& call = params.as<JitCallParams>();
  std::vector<bool> key;
  for (const Tensor& t : inputs) key.push_back(!t.defined());
  for (const Tensor& t : cts_out) key.push_back(t.defined());
  std::shared_ptr<const JitCallParams> transposed;
  {
    Caches& c = call.caches();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.transpose.find(key);
    if (it != c.transpose.end()) {
      transposed = it->second;
    } else {
      const Jaxpr& sub = call.jaxpr();
      std::vector<bool> linear(inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) linear[i] = !inputs[i].defined();
      StageInterpreter st("jit");
      std::vector<Tensor> known_in, ct_in;
      for (size_t i = 0; i < inputs.size(); ++i)
        if (!linear[i]) known_in.push_back(st.new_input(in_avals[i], inputs[i].device()));
      for (const Tensor& ct : cts_out) ct_in.push_back(ct.defined() ? st.new_input(ct.aval(), ct.device()) : Tensor());
      std::vector<Tensor> result;
      {
        InterpreterScope scope(st);
        // Linearize the sub-Jaxpr in its linear inputs: replayed under a partial-evaluation stage
        // whose parent is `st`, the known part is recorded into the transposed Jaxpr (each
        // equation split by its own rule) and the linear part into `lin`, whose constants are
        // the residuals. Known outputs are constants of `lin`: their cotangents are ignored.
        StageInterpreter pe("jit", /*forward_known=*/true);
        // Linear inputs are undefined: their device is that of any defined value (CPU if none).
        Device device = Device::cpu();
        for (const Tensor& t : inputs)
          if (t.defined()) device = t.device();
        for (const Tensor& t : cts_out)
          if (t.defined()) device = t.device();
        std::vector<Tensor> mixed;
        size_t k = 0;
        for (size_t i = 0; i < inputs.size(); ++i)
          mixed.push_back(linear[i] ? pe.new_input(in_avals[i], device) : known_in[k++]);
        std::vector<Tensor> outs;
        {
          InterpreterScope pe_scope(pe);
          outs = eval_jaxpr(sub, mixed);
        }
        Jaxpr lin = pe.finish(outs);
        result = transpose_jaxpr(lin, ct_in, "vjp");
      }
      transposed = derived(st.finish(result), call.name() + "_transpose");
      c.transpose.emplace(key, transposed);
    }
  }
  std::vector<Tensor> ins;
  for (const Tensor& t : inputs)
    if (t.defined()) ins.push_back(t);
  for (const Tensor& ct : cts_out)
    if (ct.defined()) ins.push_back(ct);
  std::vector<Tensor> cts = fluxion::bind(self, ins, *transposed);
  size_t k = 0;
  for (size_t i = 0; i < inputs.size(); ++i) cts_in[i] = inputs[i].defined() ? Tensor() : cts[k++];
}

const Jaxpr& callee(const Params& params) { return params.as<JitCallParams>().jaxpr(); }

}  // namespace jit_call_detail

const Primitive& jit_call_p() {
  static const Primitive& p = primitives::define_primitive("jit_call")
                                  .params<JitCallParams>()
                                  .shape(&jit_call_detail::shape_rule)
                                  .reference(&jit_call_detail::reference_kernel)
                                  .cpu(&jit_call_detail::cpu_kernel)
                                  .jvp(&jit_call_detail::jvp_rule)
                                  .transpose(&jit_call_detail::transpose_rule)
                                  .batch(&jit_call_detail::batch_rule)
                                  .partial_eval(&jit_call_detail::partial_eval_rule)
                                  .callee(&jit_call_detail::callee, /*transparent=*/true)
                                  .build();
  return p;
}

namespace primitives {
void register_control_flow(std::vector<const Primitive*>& list) {
  list.push_back(&jit_call_p());
  register_loops(list);
}
}  // namespace primitives

}  // namespace fluxion
