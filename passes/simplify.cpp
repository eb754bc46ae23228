// simplify: sweeps the rule table (rules of simplify_algebra.cpp, simplify_seeds.cpp,
// simplify_products.cpp, simplify_symmetric.cpp and simplify_siblings.cpp) and folds small
// constants, to a fixed point. Every rewrite replaces a variable by an atom of the same aval.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "passes/simplify.hpp"

namespace fluxion::passes {
namespace simplify_detail {

/// Results up to this many elements are folded into constants.
constexpr int64_t kMaxFolded = 1024;
/// Sweeps before simplify gives up on reaching a fixed point.
constexpr int kMaxSweeps = 32;

// ---- the rule table ----

const std::vector<RuleEntry>& rule_table() {
  using runtime::Switch;
  namespace algebra = simplify_algebra;
  namespace products = simplify_products;
  const Primitive* any = nullptr;
  const Primitive* transpose = &shape_family::transpose_p();
  const Primitive* broadcast = &shape_family::broadcast_in_dim_p();
  const Primitive* dot = &dot_general_family::dot_general_p();
  const Primitive* reduce_sum = &reduction_family::reduce_sum_p();
  static const std::vector<RuleEntry> table = {
      // A dropped transpose beats any rewrite of it.
      {"symmetric_transpose", transpose, Switch::gram, &simplify_symmetric::symmetric_transpose},
      {"same_aval_identity", any, Switch::algebra, &algebra::same_aval_identity},
      {"overwriting_update", &indexing_family::dynamic_update_slice_p(), Switch::algebra, &algebra::overwriting_update},
      {"units", any, Switch::algebra, &algebra::units},
      {"absorbed_negation", any, Switch::algebra, &algebra::absorbed_negation},
      {"transpose_chain", transpose, Switch::algebra, &algebra::transpose_chain},
      {"reshape_chain", any, Switch::algebra, &algebra::reshape_chain},
      {"broadcast_chain", broadcast, Switch::algebra, &algebra::broadcast_chain},
      {"broadcast_as_reshape", broadcast, Switch::algebra, &algebra::broadcast_as_reshape},
      {"scalar_factors", any, Switch::algebra, &algebra::scalar_factors},
      {"select_known", &conversion_family::select_p(), Switch::algebra, &algebra::select_known},
      {"scaling_past_sum", reduce_sum, Switch::algebra, &algebra::scaling_past_sum},
      {"diagonal_product", dot, Switch::seeds, &simplify_seeds::diagonal_product},
      {"identity_transpose", transpose, Switch::seeds, &simplify_seeds::identity_transpose},
      {"sink_through_elementwise", any, Switch::products, &products::sink_through_elementwise},
      {"sum_into_product", reduce_sum, Switch::products, &products::sum_into_product},
      {"sink_into_reduction", any, Switch::products, &products::sink_into_reduction},
      {"shrink_spread_operands", dot, Switch::products, &products::shrink_spread_operands},
      {"distribute_over_sum", dot, Switch::products, &products::distribute_over_sum},
      {"absorb_transposes", dot, Switch::products, &products::absorb_transposes},
      // A product becomes a gram only after the product rules had their chance to shrink its operands.
      {"gram_of_product", dot, Switch::gram, &simplify_symmetric::gram_of_product},
      {"sibling_products", dot, Switch::siblings, &simplify_siblings::sibling_products},
  };
  return table;
}

/// The entries of rule_table() whose group is switched on, read once per simplify().
std::vector<const RuleEntry*> enabled_rules() {
  std::vector<const RuleEntry*> rules;
  for (const RuleEntry& entry : rule_table())
    if (runtime::enabled(entry.group)) rules.push_back(&entry);
  return rules;
}

// ---- facts about constants, cached per TensorImpl ----

ConstantFacts compute_facts(const Tensor& t) {
  ConstantFacts f;
  const int64_t n = t.size();
  dispatch_storage_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_type_t<T>;  // halves compare by their float value
    const T* p = t.data<T>();
    // Equal bits: +0 and -0 differ (x + -0 is x, x + +0 is not for x = -0), equal NaNs are one.
    f.splat = n > 0;
    for (int64_t i = 1; i < n && f.splat; ++i) f.splat = std::memcmp(&p[i], &p[0], sizeof(T)) == 0;
    if (f.splat) f.value = static_cast<double>(p[0]);
    f.iota = t.ndim() == 1;
    for (int64_t i = 0; i < n && f.iota; ++i) f.iota = to_compute(p[i]) == static_cast<C>(i);
    const int64_t rows = t.ndim() == 2 ? t.shape()[0] : -1;
    f.identity = rows >= 0 && t.shape()[1] == rows;
    for (int64_t i = 0; i < rows && f.identity; ++i)
      for (int64_t j = 0; j < rows && f.identity; ++j) f.identity = to_compute(p[i * rows + j]) == C(i == j ? 1 : 0);
  });
  return f;
}

ConstantFacts constant_facts(const Tensor& t) {
  if (t.size() <= 16) return compute_facts(t);
  static std::mutex mutex;
  // The weak_ptr tells a live entry from one whose TensorImpl address was reused.
  static std::unordered_map<const TensorImpl*, std::pair<std::weak_ptr<TensorImpl>, ConstantFacts>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(t.impl().get());
  if (it != cache.end() && it->second.first.lock() == t.impl()) return it->second.second;
  if (cache.size() > 4096)
    for (auto e = cache.begin(); e != cache.end();) e = e->second.first.expired() ? cache.erase(e) : std::next(e);
  ConstantFacts f = compute_facts(t);
  cache[t.impl().get()] = {t.impl(), f};
  return f;
}

bool is_power_of_two(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v) || *v == 0) return false;
  int exponent = 0;
  return std::fabs(std::frexp(*v, &exponent)) == 0.5;
}

bool exact_factor(const Sweep& s, const Atom& c) {
  const std::optional<double> v = s.splat(c);
  return !is_floating(s.aval(c).dtype) || (is_power_of_two(v) && *v > 0);
}

// ---- the sweep ----

Sweep::Sweep(Jaxpr& jaxpr, const std::vector<const RuleEntry*>& rules)
    : jaxpr_(jaxpr), uses_(jaxpr.avals.size(), 0), rules_(rules) {
  grow();
  is_invar_.assign(jaxpr_.avals.size(), 0);
  for (int32_t v : jaxpr_.invars) is_invar_[v] = 1;
  for (size_t i = 0; i < jaxpr_.constvars.size(); ++i) const_slot_[jaxpr_.constvars[i]] = static_cast<int32_t>(i);
  for (const Equation& e : jaxpr_.equations)
    for (const Atom& a : e.inputs)
      if (!a.is_literal()) ++uses_[a.var];
  for (const Atom& a : jaxpr_.outputs)
    if (!a.is_literal()) ++uses_[a.var];
}

int32_t Sweep::uses(const Atom& a) const {
  return a.is_literal() || static_cast<size_t>(a.var) >= uses_.size() ? 0 : uses_[a.var];
}

void Sweep::grow() {
  for (size_t v = repl_.size(); v < jaxpr_.avals.size(); ++v) repl_.push_back(Atom::of_var(static_cast<int32_t>(v)));
  def_.resize(jaxpr_.avals.size(), -1);
  const_slot_.resize(jaxpr_.avals.size(), -1);
}

Atom Sweep::resolve(const Atom& a) const {
  Atom r = a;
  while (!r.is_literal() && repl_[r.var].var != r.var) r = repl_[r.var];
  return r;
}

void Sweep::keep(Equation e) {
  grow();
  for (int32_t v : e.outputs) def_[v] = static_cast<int32_t>(kept_.size());
  kept_.push_back(std::move(e));
}

std::vector<const Equation*> Sweep::later_readers(const Atom& a) const {
  std::vector<const Equation*> out;
  if (a.is_literal() || static_cast<size_t>(a.var) >= uses_.size()) return out;  // made since: none pending
  if (reader_start_.empty()) {
    // Counting sort of (variable, reader) pairs. Equations before next_ are swept (their inputs
    // may be rewritten since) and are never asked for, so every equation is indexed as it began.
    const size_t nv = uses_.size();
    reader_start_.assign(nv + 1, 0);
    auto each_read = [&](auto&& f) {
      for (size_t i = next_; i < pending_.size(); ++i) {
        const std::vector<Atom>& in = pending_[i].inputs;
        for (size_t k = 0; k < in.size(); ++k) {
          if (in[k].is_literal()) continue;
          bool repeat = false;  // each reader once per variable
          for (size_t m = 0; m < k && !repeat; ++m) repeat = !in[m].is_literal() && in[m].var == in[k].var;
          if (!repeat) f(in[k].var, static_cast<int32_t>(i));
        }
      }
    };
    each_read([&](int32_t v, int32_t) { ++reader_start_[static_cast<size_t>(v) + 1]; });
    for (size_t v = 0; v < nv; ++v) reader_start_[v + 1] += reader_start_[v];
    readers_.resize(reader_start_[nv]);
    std::vector<int32_t> fill(reader_start_.begin(), reader_start_.end() - 1);
    each_read([&](int32_t v, int32_t i) { readers_[fill[v]++] = i; });
  }
  const auto first = readers_.begin() + reader_start_[a.var], last = readers_.begin() + reader_start_[a.var + 1];
  for (auto it = std::lower_bound(first, last, static_cast<int32_t>(next_)); it != last; ++it)
    out.push_back(&pending_[static_cast<size_t>(*it)]);
  return out;
}

std::optional<Atom> Sweep::available(const Atom& a) const {
  const Atom r = resolve(a);
  if (r.is_literal() || def_[r.var] >= 0 || const_slot_[r.var] >= 0) return r;
  if (static_cast<size_t>(r.var) < is_invar_.size() && is_invar_[r.var]) return r;
  return std::nullopt;
}

void Sweep::replace_later(int32_t var, const Atom& with) {
  grow();
  repl_[var] = with;
}

const Equation* Sweep::producer(const Atom& a) const {
  if (a.is_literal() || def_[a.var] < 0) return nullptr;
  return &kept_[static_cast<size_t>(def_[a.var])];
}

const Equation* Sweep::produced_by(const Atom& a, const Primitive& p) const {
  const Equation* e = producer(a);
  return e && e->primitive == &p ? e : nullptr;
}

Tensor Sweep::constant(const Atom& a) const {
  const Tensor& t = a.is_literal()            ? a.literal
                    : const_slot_[a.var] >= 0 ? jaxpr_.consts[static_cast<size_t>(const_slot_[a.var])]
                                              : Tensor();
  if (!t.defined() || t.is_tracer() || !t.device().is_cpu()) return Tensor();
  return t;
}

std::optional<double> Sweep::splat(const Atom& a) const {
  if (Tensor c = constant(a); c.defined()) {
    ConstantFacts f = constant_facts(c);
    return f.splat ? std::optional<double>(f.value) : std::nullopt;
  }
  if (const Equation* b = produced_by(a, shape_family::broadcast_in_dim_p())) return splat(b->inputs[0]);
  return std::nullopt;
}

std::optional<Atom> Sweep::rank0(const Atom& a) const {
  if (aval(a).ndim() == 0) return a;
  if (const Equation* b = produced_by(a, shape_family::broadcast_in_dim_p())) return rank0(b->inputs[0]);
  Tensor c = constant(a);
  if (!c.defined() || !constant_facts(c).splat) return std::nullopt;
  // The first element, bit for bit, as a literal.
  Tensor s = empty(AbstractValue{Shape{}, c.dtype()});
  std::memcpy(s.array().data(), c.array().data(), static_cast<size_t>(dtype_size(c.dtype())));
  return Atom::of_literal(s);
}

std::optional<Atom> Sweep::emit(AbstractValue want, const std::vector<Atom>& args,
                                const std::function<Tensor(const std::vector<Tensor>&)>& build) {
  StageInterpreter stage("simplify");
  std::vector<Tensor> xs;
  std::vector<Atom> var_args;
  for (const Atom& a : args) {
    if (a.is_literal()) {
      xs.push_back(a.literal);
    } else {
      xs.push_back(stage.new_input(jaxpr_.avals[a.var]));
      var_args.push_back(a);
    }
  }
  Tensor y;
  try {
    InterpreterScope scope(stage);
    y = build(xs);
  } catch (const OutOfMemoryError&) { throw; } catch (const Error&) {
    return std::nullopt;  // a rule that does not apply after all (the shape rules said no)
  }
  Jaxpr sub = stage.finish({y});
  if (sub.out_avals()[0] != want) return std::nullopt;
  std::vector<Atom> map(sub.avals.size());
  for (size_t i = 0; i < sub.invars.size(); ++i) map[sub.invars[i]] = var_args[i];
  for (size_t i = 0; i < sub.constvars.size(); ++i) {
    const int32_t v = jaxpr_.new_var(sub.avals[sub.constvars[i]]);
    grow();
    const_slot_[v] = static_cast<int32_t>(jaxpr_.consts.size());
    jaxpr_.constvars.push_back(v);
    jaxpr_.consts.push_back(sub.consts[i]);
    map[sub.constvars[i]] = Atom::of_var(v);
  }
  auto mapped = [&](const Atom& a) { return a.is_literal() ? a : map[a.var]; };
  for (const Equation& e : sub.equations) {
    Equation copy{e.primitive, e.params, {}, {}};
    for (const Atom& a : e.inputs) copy.inputs.push_back(mapped(a));
    for (int32_t v : e.outputs) {
      copy.outputs.push_back(jaxpr_.new_var(sub.avals[v]));
      map[v] = Atom::of_var(copy.outputs.back());
    }
    keep(std::move(copy));
  }
  return mapped(sub.outputs[0]);
}

// Elementwise binary primitives accept one rank-0 operand: a broadcast (or splat constant)
// operand is replaced by its rank-0 value when the other operand has the output's shape, and
// select's predicate likewise. The shape rule confirms the output aval is unchanged.
bool Sweep::scalarize_operands(Equation& e) const {
  const bool is_select = e.primitive == &conversion_family::select_p();
  if (e.outputs.size() != 1 || !(is_select || (e.primitive->traits.elementwise && e.inputs.size() == 2))) return false;
  const AbstractValue out = jaxpr_.avals[e.outputs[0]];
  for (size_t i = 0; i < (is_select ? 1 : 2); ++i) {
    if (aval(e.inputs[i]).ndim() == 0 || (!is_select && aval(e.inputs[1 - i]).shape != out.shape)) continue;
    std::optional<Atom> r = rank0(e.inputs[i]);
    if (!r) continue;
    std::vector<AbstractValue> in;
    for (size_t k = 0; k < e.inputs.size(); ++k) in.push_back(k == i ? aval(*r) : aval(e.inputs[k]));
    try {
      if (e.primitive->abstract_eval(in, *e.params) != std::vector<AbstractValue>{out}) continue;
    } catch (const Error&) { continue; }
    e.inputs[i] = *r;
    return true;
  }
  return false;
}

// An equation whose inputs are all known constants and whose outputs are small is evaluated
// now; its outputs become literals (rank 0) or constvars. A broadcast of a rank-0 value is left
// for its users to absorb (see scalarize_operands).
bool Sweep::fold(const Equation& e) {
  const Primitive& p = *e.primitive;
  if (!p.traits.view && !p.kernel(Backend::cpu)) return false;
  if (p.traits.collective) return false;  // talks to other processes: only when the program runs
  if (&p == &shape_family::broadcast_in_dim_p() && aval(e.inputs[0]).ndim() == 0) return false;
  for (int32_t v : e.outputs)
    if (jaxpr_.avals[v].shape.num_elements() > kMaxFolded) return false;
  std::vector<Tensor> in;
  for (const Atom& a : e.inputs) {
    in.push_back(constant(a));
    if (!in.back().defined()) return false;
  }
  std::vector<Tensor> out;
  try {
    out = eval_primitive(p, in, *e.params, Backend::cpu);
  } catch (const OutOfMemoryError&) { throw; } catch (const Error&) {
    return false;
  }
  for (size_t k = 0; k < out.size(); ++k)
    if (out[k].aval() != jaxpr_.avals[e.outputs[k]]) return false;
  for (size_t k = 0; k < out.size(); ++k) {
    const int32_t v = e.outputs[k];
    if (out[k].ndim() == 0) {
      repl_[v] = Atom::of_literal(out[k]);
    } else {  // the output variable itself becomes a constvar
      const_slot_[v] = static_cast<int32_t>(jaxpr_.consts.size());
      jaxpr_.constvars.push_back(v);
      jaxpr_.consts.push_back(out[k]);
    }
  }
  return true;
}

bool Sweep::run() {
  pending_ = std::move(jaxpr_.equations);
  jaxpr_.equations.clear();
  bool changed = false;
  for (next_ = 1; next_ <= pending_.size(); ++next_) {
    Equation& e = pending_[next_ - 1];
    if (e.outputs.size() == 1 && (repl_[e.outputs[0]].is_literal() || repl_[e.outputs[0]].var != e.outputs[0])) {
      changed = true;  // replaced by an earlier rewrite (replace_later)
      continue;
    }
    for (Atom& a : e.inputs) a = resolve(a);
    changed |= scalarize_operands(e);
    if (e.outputs.size() == 1 && !e.inputs.empty()) {
      const AbstractValue want = jaxpr_.avals[e.outputs[0]];
      std::optional<Atom> r;
      for (const RuleEntry* entry : rules_)
        if (!entry->primitive || entry->primitive == e.primitive)
          if ((r = entry->rule(*this, e, want))) break;
      if (r && aval(*r) == want) {
        grow();
        repl_[e.outputs[0]] = *r;
        changed = true;
        continue;
      }
    }
    if (fold(e)) {
      changed = true;
      continue;
    }
    keep(std::move(e));
  }
  pending_ = {};  // moved-from shells: freed before the kept equations move back
  jaxpr_.equations.reserve(kept_.size());
  for (; !kept_.empty(); kept_.pop_front()) jaxpr_.equations.push_back(std::move(kept_.front()));
  for (Atom& a : jaxpr_.outputs) a = resolve(a);
  return changed;
}

}  // namespace simplify_detail

Jaxpr simplify(Jaxpr jaxpr) {
  const std::vector<const simplify_detail::RuleEntry*> rules = simplify_detail::enabled_rules();
  for (int sweep = 0; sweep < simplify_detail::kMaxSweeps; ++sweep)
    if (!simplify_detail::Sweep(jaxpr, rules).run()) break;
  return jaxpr;
}

}  // namespace fluxion::passes
