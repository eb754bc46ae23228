/// Random programs as data: a DAG of nodes over 1-3 input tensors, interpreted by `run` with the
/// public ops, so the same program runs eagerly and under jit, vmap, grad, jvp and vjp.
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace fluxion::fuzz {

/// What a node computes. Every op keeps its operands on a domain where it is smooth (see
/// run.cpp), so derivatives can be checked against finite differences.
enum class Op : uint8_t {
  // Elementwise unary (one argument).
  Neg,
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  Softplus,
  Exp,
  Square,
  LogOnePlusSquare,
  SqrtOnePlusSquare,
  RsqrtOnePlusSquare,
  Expm1,
  Log1pSquare,
  PowOnePlusSquare,
  ScaleShift,
  ReciprocalOnePlusSquare,
  Squash,
  Convert,
  // Along one axis.
  Softmax,
  LogSoftmax,
  Cumsum,
  // Binary with numpy broadcasting (and dtype promotion).
  Add,
  Sub,
  Mul,
  DivOnePlusSquare,
  Maximum,
  Minimum,
  Atan2,
  PowBase,
  Where,
  // Reductions.
  Sum,
  Mean,
  Prod,
  Max,
  Min,
  LogSumExp,
  Norm,
  // Shapes and indexing.
  Reshape,
  Transpose,
  BroadcastTo,
  ExpandDims,
  Squeeze,
  Slice,
  Concatenate,
  Stack,
  Pad,
  DynamicSlice,
  DynamicUpdateSlice,
  Take,
  Ravel,
  // Linear algebra.
  Matmul,
  Outer,
  DotGeneral,
  Solve,
  Gram,
  // Control flow: subs hold the branches / bodies.
  Cond,
  Switch,
  Scan,
  ForiLoop,
  WhileLoop,
  // Transforms applied inside the program, and functions with custom derivative rules.
  GradOf,
  JvpOf,
  VmapOf,
  JitOf,
  CheckpointOf,
  CustomJvp,
  CustomVjp,
  kCount
};
const char* op_name(Op op);

struct Program;

/// One node: the value `op(args...)`. Ids 0..n_inputs-1 are the program's inputs, node k is id
/// n_inputs + k. `ints`..`ints4` and `x`/`y`/`flag` are the op's static parameters (axes,
/// shapes, starts, constants...); `constant` is a fixed tensor (a mask, indices, a matrix).
struct Node {
  Op op = Op::Neg;
  std::vector<int> args;
  std::vector<int64_t> ints, ints2, ints3, ints4;
  double x = 0, y = 0;
  bool flag = false;
  int64_t n = 0;  // a count: trip count, max_steps, arguments passed (not closed over), out select
  Tensor constant;
  std::vector<std::shared_ptr<Program>> subs;
  AbstractValue aval;  // of the result, as the generator computed it
};

/// A program (or a sub-program: a branch or a loop body). Outputs are value ids.
struct Program {
  std::vector<AbstractValue> inputs;
  std::vector<Node> nodes;
  std::vector<int> outputs;
  /// False when the program holds a construct that only forward mode supports (while_loop
  /// without max_steps, fori_loop with Tensor bounds).
  bool reverse_ok = true;
  /// True when any value is f32 (finite differences are then skipped: f32 cannot resolve them).
  bool has_f32 = false;
  /// True when a predicate depends on the inputs (cond/switch at top level): finite differences
  /// are skipped where a perturbed point takes another branch.
  bool data_predicates = false;

  AbstractValue aval_of(int id) const;
  int num_values() const { return static_cast<int>(inputs.size() + nodes.size()); }
};

/// Generator settings: `max_nodes` top-level nodes, nesting of sub-programs up to `max_depth`.
struct GenOptions {
  int max_nodes = 10;
  int max_depth = 2;
};

/// A random well-typed program drawn from `seed`.
Program generate(uint64_t seed, const GenOptions& options = {});

/// Runs `p` on `inputs` with the public ops (under whatever transforms are active).
std::vector<Tensor> run(const Program& p, const std::vector<Tensor>& inputs);
/// The first output of run: the function every check transforms.
Tensor run1(const Program& p, const std::vector<Tensor>& inputs);

/// Test-only: when set, CustomJvp's rule returns 1.5 times the true tangent (the fuzzer's own
/// test checks that such a bug is found and shrunk).
void set_planted_bug(bool on);

/// When set, eager runs of a top-level program append each data-dependent predicate's value
/// (finite differences compare them to see a branch change).
void set_predicate_log(std::vector<int>* log);

/// Sets p's reverse_ok, has_f32 and data_predicates from its structure.
void analyze(Program& p);

/// The program in readable form, one node a line, sub-programs indented.
void print(std::ostream& os, const Program& p, int indent = 0);
std::string to_string(const Program& p);

/// Counts of each op (nested ones included) in `p`, added into `counts` (size Op::kCount).
void count_ops(const Program& p, std::vector<int64_t>& counts);

/// `p` without nodes that no output depends on (ids renumbered).
Program dead_code_eliminated(const Program& p);

}  // namespace fluxion::fuzz
