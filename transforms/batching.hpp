/// Batching (vmap): the batch interpreter carries (value, batch axis) pairs; kNotMapped marks
/// values shared by every batch element. Rules move axes, never loop over examples.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "fluxion/interpreter.hpp"

namespace fluxion {

class BatchTracer final : public TracerImpl {
 public:
  BatchTracer(Tensor value, int64_t batch_dim, std::shared_ptr<InterpreterTag> owner);
  const Tensor& value() const { return value_; }
  int64_t batch_dim() const { return batch_dim_; }

 private:
  Tensor value_;
  int64_t batch_dim_;
};

class BatchInterpreter final : public Interpreter {
 public:
  /// A vmap named `axis_name` ("" for none): collectives over that name act across its batch axis.
  BatchInterpreter(int64_t axis_size, std::string axis_name, const char* transform = "vmap")
      : Interpreter(transform), axis_size_(axis_size), axis_name_(std::move(axis_name)) {}
  /// For batching rules (jit_call, cond, scan, ...) that batch a sub-Jaxpr: the new interpreter maps
  /// the same axis as the one whose rule is running, so it takes that one's axis name.
  BatchInterpreter(int64_t axis_size, const char* transform = "vmap");
  int64_t axis_size() const { return axis_size_; }
  const std::string& axis_name() const { return axis_name_; }
  /// A tracer of this interpreter: `value` batched along `batch_dim`.
  Tensor lift(const Tensor& value, int64_t batch_dim);
  /// Value and batch axis of `t` at this level (kNotMapped for values from outside).
  std::pair<Tensor, int64_t> split(const Tensor& t) const;
  std::vector<Tensor> process(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params) override;

 private:
  int64_t axis_size_;
  std::string axis_name_;
};

namespace batching {
/// `x` with its batch axis `from` moved to position `to` (a transpose; no-op when equal).
Tensor move_axis(const Tensor& x, int64_t from, int64_t to);
/// `x` with a batch axis at position `to`: moved there if mapped, broadcast to `size` if not.
Tensor materialize(const Tensor& x, int64_t dim, int64_t size, int64_t to = 0);
/// The batch size of mapped values (all equal by construction).
int64_t batch_size(const std::vector<Tensor>& values, const std::vector<int64_t>& dims);
/// The size of the vmap named `name` enclosing the current interpreter, or -1 when none does.
int64_t named_axis_size(const std::string& name);
}  // namespace batching

}  // namespace fluxion
