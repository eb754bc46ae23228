/// Runs one Executable's plan step after step on one held RunState, for loops (scan, while, fori):
/// arguments bound once or refilled in place, carries exchanged between two buffers per step.
///
/// A plain Executable call takes a state from the pool, checks and binds every argument, checks
/// each output buffer for reuse and hands results back as new handles. A loop pays that per step.
/// LoopRunner pays it once: it takes a state for its lifetime, and a step is the plan's steps plus
/// pointer exchanges (no allocation, no atomic reference counting for carries).
///
/// Carries are double-buffered. Carried argument k reads buffer A while the step writes its new
/// value into buffer B; advance() exchanges them. B is, when the plan allows it, the plan's own
/// output buffer of that carry (Kind::output: written by its kernel, never read by the step before
/// it is written, and distinct from every argument), so the exchange is two pointer swaps. When the
/// output is not such a buffer (a carry passed through unchanged or permuted, an argument returned
/// as a carry, a literal, a view, or one variable returned as several carries), advance() copies
/// it into a spare buffer owned by the runner and exchanges that. Every copy happens before any
/// exchange, so a carry that reads another's old value (carries swapped each step) sees it intact.
/// The caller's initial carries are copied once and never written.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "fluxion/tensor.hpp"

namespace fluxion {
class Executable;
}

namespace fluxion::runtime {

struct RunState;

class LoopRunner {
 public:
  /// Holds one state of `exe` until destroyed. Output buffers are allocated afresh once (a state
  /// from the pool may still hold results a caller reads), never per step.
  explicit LoopRunner(std::shared_ptr<const Executable> exe);
  ~LoopRunner();
  LoopRunner(const LoopRunner&) = delete;
  LoopRunner& operator=(const LoopRunner&) = delete;

  /// Binds argument `i` to `value` until bound again (a loop-invariant argument: once). ShapeError
  /// when its aval is not the one the plan was traced for.
  void bind(size_t i, const Tensor& value);
  /// Makes argument `i` a row filled before each step by load_row (one buffer owned by the runner).
  void bind_row(size_t i);
  /// Copies argument `i`'s bytes (a row bound by bind_row) from `src`.
  void load_row(size_t i, const void* src);
  /// Argument `arg` carries output `out` from each step to the next, starting from a copy of
  /// `init` (checked like bind). Each argument is carried at most once.
  void carry(size_t arg, size_t out, const Tensor& init);

  /// Runs the plan once on the bound arguments.
  void run();
  /// Output `k` of the last run(): valid until the next run() or advance().
  const Tensor& result(size_t k) const;
  /// Copies result `k`'s bytes to `dst` (a row of a stacked output).
  void store(size_t k, void* dst) const;
  /// Makes each carried argument the value its output had in the last run().
  void advance();
  /// The current value of argument `i` (for a carried one: the last advance()'s, in the runner's buffer).
  const Tensor& argument(size_t i) const;
  /// The buffer the next advance() makes carried argument `arg`'s value: the one run() writes into
  /// or advance() copies into. Together with argument(arg) it is the pair advance() exchanges.
  const Tensor& next_buffer(size_t arg) const;
  /// Exchanges argument `i`'s value with `t` (a pointer swap): a second runner reading the carries
  /// of this one follows them with exchange(i, its copy of next_buffer) after each advance().
  void exchange(size_t i, Tensor& t);

 private:
  struct Carried {
    size_t arg, out;
    int32_t invar;   // the argument's variable in the plan's state
    int32_t direct;  // the output's variable when run() writes straight into the spare buffer; else -1
    Tensor spare;    // the other buffer when not direct
    size_t bytes;
  };
  Tensor& slot(size_t i);

  std::shared_ptr<const Executable> exe_;
  std::unique_ptr<RunState> state_;
  std::vector<Carried> carried_;
  std::vector<int32_t> carried_of_arg_;        // by argument: index into carried_, or -1
  std::vector<size_t> arg_bytes_, out_bytes_;  // by argument and by output
};

}  // namespace fluxion::runtime
