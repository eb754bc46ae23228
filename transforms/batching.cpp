// The batch interpreter: each primitive's batching rule, run under the parent interpreter.
#include "transforms/batching.hpp"

#include <new>
#include <numeric>

#include "fluxion/lax.hpp"

namespace fluxion {

BatchTracer::BatchTracer(Tensor value, int64_t batch_dim, std::shared_ptr<InterpreterTag> owner)
    : TracerImpl(
          [&] {
            AbstractValue a = value.aval();
            a.shape.dims().erase(a.shape.dims().begin() + batch_dim);
            return a;
          }(),
          value.device(), std::move(owner)),
      value_(std::move(value)),
      batch_dim_(batch_dim) {}

namespace batching_detail {
// The axis name of the BatchInterpreter whose batching rule runs on this thread now (nullptr when
// none): interpreters that rule makes for sub-Jaxprs map the same axis.
thread_local const std::string* rule_axis_name = nullptr;

struct RuleAxisScope {
  const std::string* previous;
  explicit RuleAxisScope(const std::string* name) : previous(rule_axis_name) { rule_axis_name = name; }
  ~RuleAxisScope() { rule_axis_name = previous; }
};
}  // namespace batching_detail

BatchInterpreter::BatchInterpreter(int64_t axis_size, const char* transform)
    : Interpreter(transform),
      axis_size_(axis_size),
      axis_name_(batching_detail::rule_axis_name ? *batching_detail::rule_axis_name : std::string()) {}

Tensor BatchInterpreter::lift(const Tensor& value, int64_t batch_dim) {
  return Tensor(std::make_shared<BatchTracer>(value, batch_dim, tag()));
}

std::pair<Tensor, int64_t> BatchInterpreter::split(const Tensor& t) const {
  if (owns(t)) {
    const auto& tr = static_cast<const BatchTracer&>(*t.impl());
    return {tr.value(), tr.batch_dim()};
  }
  return {t, kNotMapped};
}

FLUXION_REPL_INLINE std::vector<Tensor> BatchInterpreter::process(const Primitive& p, const std::vector<Tensor>& inputs,
                                                                  const Params& params) try {
  std::vector<Tensor> values;
  std::vector<int64_t> dims;
  values.reserve(inputs.size());
  dims.reserve(inputs.size());
  bool any_mapped = false;
  for (const Tensor& t : inputs) {
    check_visible(t, p.name.c_str());
    auto [v, d] = split(t);
    any_mapped |= d != kNotMapped;
    values.push_back(std::move(v));
    dims.push_back(d);
  }
  InterpreterScope parent_scope(*parent());
  // A collective over this vmap's axis name communicates across the batch axis, mapped or not.
  const bool named_here = p.axis_name && !axis_name_.empty() && p.axis_name(params) == axis_name_;
  if (!any_mapped && !named_here) return fluxion::bind(p, values, params);
  if (!p.batch) detail::fail<NotImplementedError>(tag()->transform, "no batching rule for primitive '", p.name, "'.");
  std::vector<Tensor> out;
  std::vector<int64_t> out_dims;
  {
    batching_detail::RuleAxisScope rule_axis(&axis_name_);
    if (named_here) {
      // The rule writes array work in place of the primitive: validate the member's operands first.
      std::vector<AbstractValue> member_avals;
      for (const Tensor& t : inputs) member_avals.push_back(t.aval());
      p.abstract_eval(member_avals, params);
      p.collective_batch(p, values, dims, axis_size_, params, out, out_dims);
    } else p.batch(p, values, dims, params, out, out_dims);
  }
  std::vector<Tensor> result;
  result.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i)
    result.push_back(out_dims[i] == kNotMapped ? out[i] : lift(out[i], out_dims[i]));
  return result;
} catch (const std::bad_alloc&) {
  detail::fail<OutOfMemoryError>(tag()->transform, "out of memory in the batching rule of '", p.name,
                                 "'. Free memory, or map fewer elements at once.");
}

namespace batching {

Tensor move_axis(const Tensor& x, int64_t from, int64_t to) {
  if (from == to) return x;
  std::vector<int64_t> perm(static_cast<size_t>(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + from);
  perm.insert(perm.begin() + to, from);
  return lax::transpose(x, perm);
}

Tensor materialize(const Tensor& x, int64_t dim, int64_t size, int64_t to) {
  if (dim != kNotMapped) return move_axis(x, dim, to);
  std::vector<int64_t> shape = x.shape().dims();
  shape.insert(shape.begin() + to, size);
  std::vector<int64_t> bdims;
  for (int64_t i = 0; i < x.ndim(); ++i) bdims.push_back(i < to ? i : i + 1);
  return lax::broadcast_in_dim(x, Shape(shape), bdims);
}

int64_t batch_size(const std::vector<Tensor>& values, const std::vector<int64_t>& dims) {
  for (size_t i = 0; i < values.size(); ++i)
    if (dims[i] != kNotMapped) return values[i].shape()[dims[i]];
  return 0;
}

int64_t named_axis_size(const std::string& name) {
  for (Interpreter* i = &current_interpreter(); i; i = i->parent())
    if (const auto* b = dynamic_cast<const BatchInterpreter*>(i); b && b->axis_name() == name) return b->axis_size();
  return -1;
}

}  // namespace batching
}  // namespace fluxion
