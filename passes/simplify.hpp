/// Internal interface of the simplify pass: the sweep, the rule table and the rules (not public API).
#pragma once
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "passes/passes.hpp"
#include "primitives/binary.hpp"
#include "primitives/conversion.hpp"
#include "primitives/dot_general.hpp"
#include "primitives/gram.hpp"
#include "primitives/indexing.hpp"
#include "primitives/reduction.hpp"
#include "primitives/shape.hpp"
#include "primitives/unary.hpp"
#include "runtime/switches.hpp"

namespace fluxion::passes {
// The primitive families whose handles the rules compare equations to (`e.primitive ==
// &binary_family::add_p()`) and whose params they read (`params.as<shape_family::TransposeParams>()`).
namespace binary_family = primitives::binary_family;
namespace conversion_family = primitives::conversion_family;
namespace dot_general_family = primitives::dot_general_family;
namespace gram_family = primitives::gram_detail;
namespace indexing_family = primitives::indexing_family;
namespace reduction_family = primitives::reduction_family;
namespace shape_family = primitives::shape_family;
namespace unary_family = primitives::unary_family;
}  // namespace fluxion::passes

namespace fluxion::passes::simplify_detail {

/// What the pass knows about a concrete constant; computed once per TensorImpl.
struct ConstantFacts {
  bool splat = false;     // every element has the same bits (and there is at least one)
  double value = 0;       // that element, when splat
  bool identity = false;  // a square matrix with ones on the diagonal, zeros elsewhere
  bool iota = false;      // a vector holding 0, 1, ..., n-1 (a folded 1-d iota)
};
ConstantFacts constant_facts(const Tensor& t);

struct RuleEntry;

/// One forward sweep over a Jaxpr's equations. Rules see the kept equations (inputs already
/// replaced) through producer(); a rule answers the atom replacing an equation's single output.
class Sweep {
 public:
  /// A sweep trying `rules` (entries of rule_table(), in its order) on each equation.
  Sweep(Jaxpr& jaxpr, const std::vector<const RuleEntry*>& rules);
  /// Runs every rule once over the equations; true when something changed.
  bool run();

  Jaxpr& jaxpr() { return jaxpr_; }
  AbstractValue aval(const Atom& a) const { return jaxpr_.aval_of(a); }
  /// The kept equation defining `a` (nullptr for inputs, constvars and literals). Stable while
  /// the sweep runs (kept equations live in a deque).
  const Equation* producer(const Atom& a) const;
  /// The producer of `a` when it applies `p`, else nullptr.
  const Equation* produced_by(const Atom& a, const Primitive& p) const;
  /// How many times the Jaxpr read `a` (equation inputs and outputs) when the sweep began; 0 for
  /// literals and variables made since.
  int32_t uses(const Atom& a) const;
  /// The equations not yet swept that read variable `a` (with its id as the sweep began), in
  /// order, each once; with uses(), tells whether they are all of its readers.
  std::vector<const Equation*> later_readers(const Atom& a) const;
  /// `a` (resolved) when its value is defined at this point of the sweep: a literal, an input, a
  /// constvar or a kept equation's output; nullopt for outputs of equations not yet swept.
  std::optional<Atom> available(const Atom& a) const;
  /// Replaces variable `var`, the output of an equation not yet swept, by `with` (defined by
  /// now): that equation is dropped when the sweep reaches it.
  void replace_later(int32_t var, const Atom& with);
  /// The concrete host value of a literal or constvar (undefined otherwise: tracers, device arrays).
  Tensor constant(const Atom& a) const;
  /// The value of every element of `a`, when known: a literal, a splat constant, or a
  /// broadcast_in_dim of one.
  std::optional<double> splat(const Atom& a) const;
  /// A rank-0 atom holding every element of `a`: `a` itself when rank 0, the operand of a
  /// broadcast_in_dim of a rank-0 value, or a literal for a splat constant.
  std::optional<Atom> rank0(const Atom& a) const;
  /// Stages `build` on tracers standing for `args` (literals pass as concrete scalars) and, when
  /// its result has aval `want` exactly, keeps its equations and returns the result's atom.
  std::optional<Atom> emit(AbstractValue want, const std::vector<Atom>& args,
                           const std::function<Tensor(const std::vector<Tensor>&)>& build);

 private:
  Atom resolve(const Atom& a) const;
  void grow();
  void keep(Equation e);
  bool fold(const Equation& e);
  bool scalarize_operands(Equation& e) const;

  Jaxpr& jaxpr_;
  std::vector<Atom> repl_;           // by variable id: its replacement (itself by default)
  std::vector<int32_t> def_;         // by variable id: index of its kept equation, or -1
  std::vector<int32_t> const_slot_;  // by variable id: index into jaxpr_.consts, or -1
  std::vector<int32_t> uses_;        // by variable id, counted when the sweep began
  std::vector<char> is_invar_;       // by variable id: an input of the Jaxpr
  std::vector<Equation> pending_;    // the equations as the sweep began; those before next_ are moved out
  size_t next_ = 0;                  // index in pending_ of the equation after the one being rewritten
  // The pending equations reading each variable (as the sweep began), in order, each once:
  // readers_[reader_start_[v] .. reader_start_[v + 1]). Built by the first later_readers call.
  mutable std::vector<int32_t> reader_start_, readers_;
  std::deque<Equation> kept_;
  const std::vector<const RuleEntry*>& rules_;
};

/// True for ±2^k (finite, non-zero): multiplying by it only moves the exponent, so it rounds
/// exactly (barring overflow and underflow) and commutes with the rounding of sums.
bool is_power_of_two(const std::optional<double>& v);

/// True when multiplying by `c` distributes exactly over a sum of `c`'s dtype, up to the sum's
/// order: any integer (wrapping arithmetic is exact), or a float splat constant +2^k. Only then
/// may a rewrite take a factor out of a sum (x Σb for Σ x b): other float factors round
/// differently, an infinite x times a zero b is NaN in one and not the other, and a negative x
/// flips the sign of a zero sum (Σ -b is +0 for b = [1, -1], -Σb is -0).
bool exact_factor(const Sweep& s, const Atom& c);

/// An operand that is broadcast_in_dim(x): `source[d]` is the dim of x that operand dim d reads,
/// or -1 where the operand is constant along d (a new dim, or a size-1 dim of x expanded).
/// `kept` is x's shape without the expanded dims (which are all of size 1).
struct Spread {
  Atom x;
  std::vector<int64_t> source;
  Shape kept;
};
/// The Spread of `a` when a broadcast_in_dim produced it (simplify_products.cpp).
std::optional<Spread> spread_of(const Sweep& s, const Atom& a);

/// A rewrite of one single-output equation with output aval `out`: the atom replacing its output
/// (an atom of aval `out`), or nullopt.
using Rule = std::optional<Atom> (*)(Sweep& sweep, const Equation& eqn, const AbstractValue& out);

/// One simplification rule: tried on the equations applying `primitive` (on every equation when
/// nullptr) while the switch of its `group` is on (runtime/switches.hpp).
struct RuleEntry {
  const char* name;
  const Primitive* primitive;
  runtime::Switch group;
  Rule rule;
};
/// Every rule, in the order a sweep tries them on an equation: the first answer wins (simplify.cpp).
const std::vector<RuleEntry>& rule_table();

}  // namespace fluxion::passes::simplify_detail

// The rules, one function each, grouped by the file that defines them.

namespace fluxion::passes::simplify_algebra {
using simplify_detail::Sweep;
using Result = std::optional<Atom>;
/// An equation computing operand 0 unchanged at the output's aval (see unchanged_when_same_aval).
Result same_aval_identity(Sweep& s, const Equation& e, const AbstractValue& out);
/// dynamic_update_slice whose update covers the whole operand: the update.
Result overwriting_update(Sweep& s, const Equation& e, const AbstractValue& out);
/// x*1, x*-1, x+(-0), x-(+0), x/1, neg(neg x).
Result units(Sweep& s, const Equation& e, const AbstractValue& out);
/// Negations absorbed by the add, sub or product reading them.
Result absorbed_negation(Sweep& s, const Equation& e, const AbstractValue& out);
/// Transposes composed, undone, or moved into the products and elementwise ops below them.
Result transpose_chain(Sweep& s, const Equation& e, const AbstractValue& out);
/// Chains of reshape/squeeze/expand_dims as one reshape.
Result reshape_chain(Sweep& s, const Equation& e, const AbstractValue& out);
/// broadcast_in_dim of a broadcast (or of a reshape inserting size-1 dims) as one broadcast.
Result broadcast_chain(Sweep& s, const Equation& e, const AbstractValue& out);
/// broadcast_in_dim that only inserts size-1 dims as a reshape.
Result broadcast_as_reshape(Sweep& s, const Equation& e, const AbstractValue& out);
/// a + a as a * 2; exact products of rank-0 float factors folded.
Result scalar_factors(Sweep& s, const Equation& e, const AbstractValue& out);
/// select with a known predicate or equal branches.
Result select_known(Sweep& s, const Equation& e, const AbstractValue& out);
/// sum(x * c) as sum(x) * c for an exact rank-0 factor c.
Result scaling_past_sum(Sweep& s, const Equation& e, const AbstractValue& out);
}  // namespace fluxion::passes::simplify_algebra

namespace fluxion::passes::simplify_seeds {
/// Products with an identity or diagonal matrix as a transpose and scaling of the other operand.
std::optional<Atom> diagonal_product(simplify_detail::Sweep& s, const Equation& e, const AbstractValue& out);
/// transpose of an identity matrix: the identity.
std::optional<Atom> identity_transpose(simplify_detail::Sweep& s, const Equation& e, const AbstractValue& out);
}  // namespace fluxion::passes::simplify_seeds

namespace fluxion::passes::simplify_products {
using simplify_detail::Sweep;
/// E(transpose(a), ...) as transpose(E(a, ...)) for an elementwise E.
std::optional<Atom> sink_through_elementwise(Sweep& s, const Equation& e, const AbstractValue& out);
/// An integer sum over a product's free dims taken on its operands first.
std::optional<Atom> sum_into_product(Sweep& s, const Equation& e, const AbstractValue& out);
/// reduce(transpose(a)) as transpose(reduce(a)).
std::optional<Atom> sink_into_reduction(Sweep& s, const Equation& e, const AbstractValue& out);
/// A product of a broadcast operand computed on the unbroadcast value.
std::optional<Atom> shrink_spread_operands(Sweep& s, const Equation& e, const AbstractValue& out);
/// An integer product of a sum of broadcasts distributed over the sum when cheaper.
std::optional<Atom> distribute_over_sum(Sweep& s, const Equation& e, const AbstractValue& out);
/// A transpose feeding a product absorbed into its dimension pairs.
std::optional<Atom> absorb_transposes(Sweep& s, const Equation& e, const AbstractValue& out);
}  // namespace fluxion::passes::simplify_products

namespace fluxion::passes::simplify_symmetric {
/// A transpose swapping two dims of a value symmetric in them: the value.
std::optional<Atom> symmetric_transpose(simplify_detail::Sweep& s, const Equation& e, const AbstractValue& out);
/// xᵀ diag(s) x products as gram(x, s).
std::optional<Atom> gram_of_product(simplify_detail::Sweep& s, const Equation& e, const AbstractValue& out);
}  // namespace fluxion::passes::simplify_symmetric

namespace fluxion::passes::simplify_siblings {
/// Matrix-vector products sharing their matrix as one product with the vectors stacked.
std::optional<Atom> sibling_products(simplify_detail::Sweep& s, const Equation& e, const AbstractValue& out);
}  // namespace fluxion::passes::simplify_siblings
