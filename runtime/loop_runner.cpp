// LoopRunner (runtime/loop_runner.hpp): one held state, arguments bound once, carries exchanged.
#include "runtime/loop_runner.hpp"

#include <cstring>
#include <utility>

#include "fluxion/errors.hpp"
#include "runtime/backend.hpp"
#include "runtime/executable.hpp"

namespace fluxion::runtime {

namespace loop_runner_detail {

size_t nbytes_of(const AbstractValue& a) { return static_cast<size_t>(a.shape.num_elements()) * dtype_size(a.dtype); }

Tensor copy_of(const Tensor& t, Device device) {
  Tensor c = empty(t.aval(), device);
  if (const size_t n = nbytes_of(t.aval())) std::memcpy(c.array("loop").data(), t.array("loop").data(), n);
  return c;
}

}  // namespace loop_runner_detail

LoopRunner::LoopRunner(std::shared_ptr<const Executable> exe) : exe_(std::move(exe)) {
  const Plan& plan = exe_->plan();
  if (plan.device.is_cuda())
    detail::fail<NotImplementedError>("loop", "the loop runner copies carries with host memcpy; the plan is for ",
                                      plan.device, ". Run the loop's CUDA kernel instead.");
  state_ = exe_->acquire();
  const Jaxpr& j = exe_->jaxpr();
  // A pooled state's output buffers may still be a caller's earlier results: fresh ones, once.
  for (int32_t v : plan.output_vars) state_->values[v] = empty(j.avals[v], plan.device);
  carried_of_arg_.assign(j.invars.size(), -1);
  for (int32_t v : j.invars) arg_bytes_.push_back(loop_runner_detail::nbytes_of(j.avals[v]));
  for (const Atom& a : j.outputs) out_bytes_.push_back(loop_runner_detail::nbytes_of(j.aval_of(a)));
}

LoopRunner::~LoopRunner() {
  if (!state_) return;
  RunState& s = *state_;
  const Plan& plan = exe_->plan();
  // As Executable::run_bound leaves a state: no argument, per-call view or output held, lists empty.
  for (int32_t v : exe_->jaxpr().invars) s.values[v] = Tensor();
  for (int32_t v : plan.dynamic_views) s.values[v] = Tensor();
  for (int32_t v : plan.output_vars) s.values[v] = Tensor();
  s.in.clear();
  s.out.clear();
  exe_->release(std::move(state_));
}

Tensor& LoopRunner::slot(size_t i) {
  const std::vector<int32_t>& invars = exe_->jaxpr().invars;
  if (i >= invars.size())
    detail::fail<Error>("loop", "argument ", i, " does not exist: the body takes ", invars.size(),
                        " arguments. Count arguments from 0 in the Jaxpr's invars order.");
  return state_->values[invars[i]];
}

void LoopRunner::bind(size_t i, const Tensor& value) {
  Tensor& t = slot(i);
  const AbstractValue& want = exe_->jaxpr().avals[exe_->jaxpr().invars[i]];
  if (value.aval() != want)
    detail::fail<ShapeError>("loop", "argument ", i, " is ", value.aval(), " but the body was traced for ", want,
                             ". Bind a tensor of that shape and dtype.");
  t = value;
}

void LoopRunner::bind_row(size_t i) {
  Tensor& t = slot(i);
  t = empty(exe_->jaxpr().avals[exe_->jaxpr().invars[i]], exe_->plan().device);
}

void LoopRunner::load_row(size_t i, const void* src) {
  if (const size_t n = arg_bytes_[i]) std::memcpy(state_->values[exe_->jaxpr().invars[i]].array("loop").data(), src, n);
}

void LoopRunner::carry(size_t arg, size_t out, const Tensor& init) {
  const Jaxpr& j = exe_->jaxpr();
  const Plan& plan = exe_->plan();
  Tensor& t = slot(arg);
  if (out >= j.outputs.size())
    detail::fail<Error>("loop", "output ", out, " does not exist: the body returns ", j.outputs.size(),
                        " values. Count outputs from 0 in the Jaxpr's outputs order.");
  if (carried_of_arg_[arg] >= 0)
    detail::fail<Error>("loop", "argument ", arg, " is carried twice. Carry each argument once.");
  const AbstractValue& want = j.avals[j.invars[arg]];
  if (j.aval_of(j.outputs[out]) != want)
    detail::fail<ShapeError>("loop", "output ", out, " is ", j.aval_of(j.outputs[out]), " but carried argument ", arg,
                             " is ", want, ". A carried output must keep its argument's shape and dtype.");
  if (init.aval() != want)
    detail::fail<ShapeError>("loop", "the initial carry of argument ", arg, " is ", init.aval(),
                             " but the body was traced for ", want, ". Start from a tensor of that shape and dtype.");
  t = loop_runner_detail::copy_of(init, plan.device);  // never write the caller's tensor
  Carried c{arg, out, j.invars[arg], -1, Tensor(), loop_runner_detail::nbytes_of(want)};
  const Atom& o = j.outputs[out];
  // The plan's own output buffer is written by its kernel and is no argument: run() may write the
  // new carry there directly. One variable returned as several carries is direct for the first only.
  bool claimed = false;
  for (const Carried& other : carried_) claimed = claimed || (!o.is_literal() && other.direct == o.var);
  if (!o.is_literal() && plan.kind[o.var] == Kind::output && !claimed) {
    c.direct = o.var;
  } else {
    c.spare = empty(want, plan.device);
  }
  carried_of_arg_[arg] = static_cast<int32_t>(carried_.size());
  carried_.push_back(std::move(c));
}

void LoopRunner::run() {
  RunState& s = *state_;
  const Plan& plan = exe_->plan();
  // Per-call views go first, so that each view's ArrayImpl is rebound instead of made anew.
  for (int32_t v : plan.dynamic_views) s.values[v] = Tensor();
  exe_->runner_->run(plan, s);
}

const Tensor& LoopRunner::result(size_t k) const {
  const Atom& a = exe_->jaxpr().outputs[k];
  return a.is_literal() ? a.literal : state_->values[a.var];
}

void LoopRunner::store(size_t k, void* dst) const {
  if (const size_t n = out_bytes_[k]) std::memcpy(dst, result(k).array("loop").data(), n);
}

void LoopRunner::advance() {
  std::vector<Tensor>& values = state_->values;
  // Every copy before any exchange: a carry may read another carry's argument (a permutation).
  for (Carried& c : carried_)
    if (c.direct < 0 && c.bytes) std::memcpy(c.spare.array("loop").data(), result(c.out).array("loop").data(), c.bytes);
  for (Carried& c : carried_) std::swap(values[c.invar], c.direct >= 0 ? values[c.direct] : c.spare);
}

const Tensor& LoopRunner::argument(size_t i) const { return state_->values[exe_->jaxpr().invars.at(i)]; }

const Tensor& LoopRunner::next_buffer(size_t arg) const {
  const int32_t k = arg < carried_of_arg_.size() ? carried_of_arg_[arg] : -1;
  if (k < 0)
    detail::fail<Error>("loop", "argument ", arg, " is not carried. Declare it with carry(arg, out, init) first.");
  const Carried& c = carried_[static_cast<size_t>(k)];
  return c.direct >= 0 ? state_->values[c.direct] : c.spare;
}

void LoopRunner::exchange(size_t i, Tensor& t) { std::swap(slot(i), t); }

}  // namespace fluxion::runtime
