// OverlappedGradients: a custom_vjp identity per watched group whose bwd hands the group's cotangent to a
// communication thread, which runs its all_mean while the backward pass goes on. The order of the collectives
// is the order in which the backward pass completes the groups: the same on every rank, since every rank runs
// the same program. The communication thread is the only one that talks to other processes in the backward
// pass, so the loss's own backward pass must not run collectives (all_mean of the loss is fine: its transpose
// is local, primitives/collectives.cpp).
#include "fluxion/overlapped_gradients.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "fluxion/collectives.hpp"
#include "fluxion/ops.hpp"

namespace fluxion::distributed {

namespace overlap_detail {

struct Job {
  size_t index;
  std::vector<Tensor> cotangents;
};

// The mean over `axis_name` of every leaf, as one collective per dtype (leaves flattened into one buffer).
std::vector<Tensor> mean_flat(const std::vector<Tensor>& leaves, const std::string& axis_name) {
  std::vector<Tensor> out(leaves.size());
  std::vector<bool> done(leaves.size(), false);
  for (size_t first = 0; first < leaves.size(); ++first) {
    if (done[first]) continue;
    std::vector<size_t> same;
    std::vector<Tensor> flat;
    for (size_t i = first; i < leaves.size(); ++i)
      if (!done[i] && leaves[i].dtype() == leaves[first].dtype()) {
        same.push_back(i);
        flat.push_back(reshape(leaves[i], {leaves[i].size()}));
        done[i] = true;
      }
    Tensor mean = all_mean(concatenate(flat, 0), axis_name);
    int64_t offset = 0;
    for (size_t i : same) {
      const int64_t n = leaves[i].size();
      out[i] = reshape(slice(mean, {offset}, {offset + n}), leaves[i].shape().dims());
      offset += n;
    }
  }
  return out;
}

}  // namespace overlap_detail

struct OverlappedGradients::State {
  std::string axis_name;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<overlap_detail::Job> queue;
  std::vector<std::vector<AbstractValue>> avals;            // per watched group of this step
  std::vector<std::optional<std::vector<Tensor>>> results;  // filled by the communication thread
  std::vector<bool> started;                                // the backward pass reached the group
  size_t running = 0;                                       // jobs taken but not finished
  bool reading = false;                                     // gradients() was called this step
  bool stop = false;
  std::exception_ptr error;
  std::thread worker;

  void work() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;  // stop, nothing left
      overlap_detail::Job job = std::move(queue.front());
      queue.pop_front();
      ++running;
      lock.unlock();
      std::optional<std::vector<Tensor>> reduced;
      std::exception_ptr failure;
      try {
        reduced = overlap_detail::mean_flat(job.cotangents, axis_name);
      } catch (...) { failure = std::current_exception(); }
      lock.lock();
      --running;
      if (failure && !error) error = failure;
      if (reduced && job.index < results.size()) results[job.index] = std::move(reduced);
      changed.notify_all();
    }
  }

  void wait_idle(std::unique_lock<std::mutex>& lock) {
    changed.wait(lock, [&] { return queue.empty() && running == 0; });
  }
};

OverlappedGradients::OverlappedGradients(std::string axis_name) : state_(std::make_shared<State>()) {
  state_->axis_name = std::move(axis_name);
  state_->worker = std::thread([s = state_.get()] { s->work(); });
}

OverlappedGradients::~OverlappedGradients() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->changed.notify_all();
  state_->worker.join();
}

void OverlappedGradients::wait() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->wait_idle(lock);
}

std::vector<Tensor> OverlappedGradients::watch_flat(const std::vector<Tensor>& leaves) {
  size_t index = 0;
  std::vector<AbstractValue> avals;
  for (const Tensor& t : leaves) avals.push_back(t.aval());
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    if (state_->reading) {  // a new step: the last one's reductions were read
      state_->wait_idle(lock);
      state_->avals.clear();
      state_->results.clear();
      state_->started.clear();
      state_->reading = false;
      state_->error = nullptr;
    }
    index = state_->avals.size();
    state_->avals.push_back(avals);
    state_->results.emplace_back();
    state_->started.push_back(false);
  }
  auto identity = [](const std::vector<Tensor>& xs) { return xs; };
  std::weak_ptr<State> weak = state_;
  auto bwd = [weak, index, avals](const std::vector<Tensor>& cts) {
    std::vector<Tensor> full;
    for (size_t i = 0; i < cts.size(); ++i) {
      full.push_back(cts[i].defined() ? cts[i] : zeros(avals[i].shape, avals[i].dtype));
      if (full.back().is_tracer())
        detail::fail<Error>("OverlappedGradients", "the backward pass is being traced (jit, vmap, jvp or a higher ",
                            "derivative): overlapping needs an eager fx::grad. Use all_mean_gradients there.");
    }
    if (auto s = weak.lock()) {
      std::lock_guard<std::mutex> lock(s->mutex);
      if (index < s->started.size()) {
        s->started[index] = true;
        s->queue.push_back(overlap_detail::Job{index, full});
      }
      s->changed.notify_all();
    }
    return full;
  };
  return custom_detail::custom_vjp_flat(identity, identity, bwd, leaves);
}

std::vector<Tensor> OverlappedGradients::gradients_flat(size_t index) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->reading = true;
  if (index >= state_->avals.size())
    detail::fail<Error>("OverlappedGradients", "group ", index, " was not watched in this step (", state_->avals.size(),
                        " were). Call watch once per group in the loss, before fx::grad.");
  // grad has returned: a group the backward pass never reached has a zero gradient on every rank.
  if (!state_->started[index]) {
    std::vector<Tensor> zero;
    for (const AbstractValue& a : state_->avals[index]) zero.push_back(zeros(a.shape, a.dtype));
    return zero;
  }
  state_->changed.wait(lock, [&] { return state_->results[index].has_value() || state_->error; });
  if (state_->error) std::rethrow_exception(state_->error);
  return *state_->results[index];
}

}  // namespace fluxion::distributed
