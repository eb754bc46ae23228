/// The random program generator's internals, shared by generate.cpp (plain ops) and
/// generate_nested.cpp (control flow and transforms inside the program).
#pragma once
#include <functional>
#include <random>
#include <vector>

#include "fuzz/program.hpp"

namespace fluxion::fuzz {

/// What the generator knows of a value beyond its aval.
struct Info {
  double bound = 2;      // |value| <= bound (conservative), so that exp and loops stay finite
  bool repeats = false;  // may hold equal elements (broadcast, pad, take...): no max/min reductions
  uint64_t token = 0;    // equal tokens: the same value (a sub-program's input aliases its parent's)
};

/// Values past this bound are squashed (tanh(x) * 2) before anything else uses them.
constexpr double kBoundLimit = 20;
/// No value has more elements than this (Jacobians stay small).
constexpr int64_t kMaxElements = 48;

/// A program under construction: its values' infos and how deep it is nested.
struct Scope {
  Program* p = nullptr;
  std::vector<Info> info;
  int depth = 0;                // 0: the top-level program
  bool reverse_needed = false;  // inside a function differentiated by grad_of: reverse mode must work
  int counter = -1;             // the loop counter's value id in a loop body (a float copy of i), or -1
};

class Generator {
 public:
  Generator(uint64_t seed, const GenOptions& options) : rng_(seed), opt_(options) {}
  Program top();

  // ---- randomness
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  bool chance(double p) { return real(0, 1) < p; }
  uint64_t next_seed() { return rng_(); }
  uint64_t fresh_token() { return ++tokens_; }
  /// A value id of `s`, preferring recent ones, among those satisfying `ok` (-1 if none).
  int pick(const Scope& s, const std::function<bool(int)>& ok);
  /// A fixed tensor of `aval` with values uniform in [lo, hi) (bool: coin flips, ints rounded).
  Tensor constant(const AbstractValue& aval, double lo, double hi);

  // ---- building
  /// Appends `nd` (its aval found by tracing it), squashing the result if its bound is too big.
  int add(Scope& s, Node nd, Info info);
  /// `id` converted to `target` (dtype, then broadcast / reshape / sum-and-broadcast).
  int coerce(Scope& s, int id, const AbstractValue& target);
  /// `id` made to satisfy |value| <= limit.
  int bounded(Scope& s, int id, double limit);
  /// One random node in `s`; returns its id or -1 when the drawn op found no operands.
  int random_node(Scope& s);
  /// Fills `s` with 1..n random nodes; returns the last value's id.
  int fill(Scope& s, int n);
  /// A sub-program on inputs (avals, infos) under `parent`, one output per entry of `targets`
  /// (an undefined-shape target, rank -1 in `any`, takes whatever the body computed).
  /// `carry_limit` > 0 bounds the first output (a loop carry stays within its input's bound).
  /// `kind` is the enclosing construct (Cond / Switch, a loop, or a transform).
  std::shared_ptr<Program> sub_program(const Scope& parent, Op kind, const std::vector<AbstractValue>& in_avals,
                                       const std::vector<Info>& in_infos, int counter,
                                       const std::vector<const AbstractValue*>& targets, double carry_limit,
                                       std::vector<Info>& out_infos);

  // ---- op families (each returns a value id or -1)
  int unary(Scope& s);
  int along_axis(Scope& s);
  int binary(Scope& s);
  int where(Scope& s);
  int reduction(Scope& s);
  int shape_op(Scope& s);
  int indexing(Scope& s);
  int linear_algebra(Scope& s);
  int control_flow(Scope& s);
  int loop(Scope& s);
  int inner_transform(Scope& s);
  int custom_rule(Scope& s, Op op);

  /// False when `op` may not appear in `s`: a construct that reverse mode does not support
  /// where reverse mode is needed.
  bool allowed(const Scope& s, Op op) const;
  /// The result of an abstract evaluation of `nd` on the avals of its arguments in `s`.
  AbstractValue aval_of_node(const Scope& s, const Node& nd);

  std::mt19937_64 rng_;
  GenOptions opt_;
  uint64_t tokens_ = 0;
};

}  // namespace fluxion::fuzz
