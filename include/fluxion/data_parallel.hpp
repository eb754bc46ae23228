/// Data-parallel and sharded (FSDP-style) training helpers built from the collective primitives.
///
/// Everything here names an axis (DataParallelOptions::axis_name, "world" by default) and nothing else, so
/// the same training step runs over the processes of an mpirun launch (fx::distributed::init registers the
/// world group under "world") and, in one process, under fx::vmap(step, fx::axis_name("world")), whose
/// batch members play the processes.
///
/// Data parallel (DDP): every member holds the whole parameter pytree and its share of the batch; the
/// gradient of its local loss is its share of the gradient, and all_mean_gradients turns the shares into
/// the full-batch gradient: the leaves packed into one flat buffer per dtype, summed in buckets of at most
/// bucket_bytes with ONE all_sum each, unpacked.
///
/// Sharded (FSDP): the parameters live as one flat vector (padded to a multiple of the member count)
/// of which each member keeps one slice (shard). gather() all_gathers the slices into the pytree before use;
/// the gradient with respect to the shard of a loss written as all_mean(local loss) comes out already
/// reduce_scatter'd and averaged (all_gather's transpose), and the optimizer state lives on the shard only.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fluxion/collectives.hpp"
#include "fluxion/pytree.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion::distributed {

struct DataParallelOptions {
  /// The axis the members run along: the process group's name, or the named vmap's.
  std::string axis_name = "world";
  /// The most bytes one all_sum carries (> 0). Leaves are packed whole into a bucket while they fit; a
  /// leaf larger than a bucket is split into full buckets and its rest. Below one element, one element.
  int64_t bucket_bytes = 25 << 20;
};

/// One bucket of gradient reduction: elements [begin, end) of the flat buffer of dtype `dtype`.
struct GradientBucket {
  DType dtype = f64;
  int64_t begin = 0, end = 0;
};

/// The buckets for leaves of these avals, in order (the buffers of the dtypes in order of first appearance).
/// Throws fluxion::Error for a non-floating leaf or bucket_bytes <= 0, with `op` in the message.
std::vector<GradientBucket> plan_gradient_buckets(const std::vector<AbstractValue>& leaves, int64_t bucket_bytes,
                                                  const char* op = "plan_gradient_buckets");

namespace data_parallel_detail {
std::vector<AbstractValue> avals_of(const std::vector<Tensor>& leaves);
/// The leaves summed (mean: averaged) over the members, one all_sum per bucket.
std::vector<Tensor> reduce_leaves(const std::vector<Tensor>& leaves, const DataParallelOptions& options, bool mean,
                                  const char* op);
}  // namespace data_parallel_detail

/// The sum over the members of every leaf of `grads` (any pytree of f32/f64 tensors): one all_sum per bucket.
template <class Tree> Tree all_sum_gradients(const Tree& grads, const DataParallelOptions& options = {}) {
  auto [leaves, def] = tree_flatten(grads);
  return tree_unflatten(def, data_parallel_detail::reduce_leaves(leaves, options, false, "all_sum_gradients"));
}

/// The mean over the members of every leaf of `grads`: in a data-parallel step, the members' gradients of
/// their local (mean) losses become the gradient of the full batch's mean loss when the shares are equal.
template <class Tree> Tree all_mean_gradients(const Tree& grads, const DataParallelOptions& options = {}) {
  auto [leaves, def] = tree_flatten(grads);
  return tree_unflatten(def, data_parallel_detail::reduce_leaves(leaves, options, true, "all_mean_gradients"));
}

/// How many all_sums all_sum_gradients / all_mean_gradients issue for `grads` (the buckets).
template <class Tree> int64_t gradient_bucket_count(const Tree& grads, const DataParallelOptions& options = {}) {
  return static_cast<int64_t>(
      plan_gradient_buckets(data_parallel_detail::avals_of(tree_leaves(grads)), options.bucket_bytes).size());
}

/// The bytes of all the leaves of `grads`: what one member contributes to the reduction per step (the lower
/// bound of the bytes one all_sum-based reduction moves per member).
template <class Tree> int64_t gradient_bytes(const Tree& grads) {
  int64_t bytes = 0;
  for (const Tensor& t : tree_leaves(grads)) bytes += t.size() * dtype_size(t.dtype());
  return bytes;
}

// ---------------------------------------------------------------- the sharded (FSDP-style) mode

/// The layout of a parameter list (one floating dtype) as one flat vector: leaves raveled and concatenated
/// in order, zero-padded to a multiple of num_shards, member r owning elements [r, r + 1) * shard_size().
class FlatLayout {
 public:
  FlatLayout() = default;
  /// Throws fluxion::Error for no leaves, leaves of different or non-floating dtypes, or num_shards < 1.
  FlatLayout(const std::vector<AbstractValue>& leaves, int64_t num_shards);

  int64_t num_shards() const { return num_shards_; }
  DType dtype() const { return dtype_; }
  /// Elements of the parameters, of the padded flat vector, and of one shard.
  int64_t size() const { return size_; }
  int64_t padded_size() const { return shard_size_ * num_shards_; }
  int64_t shard_size() const { return shard_size_; }

  /// The padded flat vector of `leaves` (avals as at construction; Error otherwise).
  Tensor flatten(const std::vector<Tensor>& leaves) const;
  /// The leaves back from a flat vector of padded_size() (or size()) elements; the padding is dropped.
  std::vector<Tensor> unflatten(const Tensor& flat) const;
  /// This member's shard of `leaves`: axis_index(axis_name) picks it (dynamic_slice), so it works over
  /// processes and under a named vmap alike. axis_size(axis_name) must be num_shards().
  Tensor shard(const std::vector<Tensor>& leaves, const std::string& axis_name) const;
  /// The leaves from every member's shard (all_gather, tiled), padding dropped.
  std::vector<Tensor> gather(const Tensor& shard, const std::string& axis_name) const;
  /// Throws fluxion::Error naming `op` unless `shard` is a vector of shard_size() elements of dtype().
  void check_shard(const Tensor& shard, const char* op) const;

 private:
  void check_axis(const std::string& axis_name, const char* op) const;
  std::vector<AbstractValue> leaves_;
  DType dtype_ = f64;
  int64_t num_shards_ = 0, size_ = 0, shard_size_ = 0;
};

/// FlatLayout for a parameter pytree, which it also rebuilds. It keeps the structure only, not the tensors
/// (neither the whole parameters a sharded member must not hold, nor the tracers of a transform it was made in).
template <class Tree> class ShardedLayout : public FlatLayout {
 public:
  ShardedLayout(const Tree& params, int64_t num_shards)
      : FlatLayout(data_parallel_detail::avals_of(tree_leaves(params)), num_shards),
        def_{tree_map([](const Tensor&) { return Tensor(); }, params), tree_leaves(params).size()} {}
  /// The pytree from a flat vector (see FlatLayout::unflatten).
  Tree unflatten_tree(const Tensor& flat) const { return rebuild(unflatten(flat)); }
  Tensor flatten_tree(const Tree& params) const { return flatten(tree_leaves(params)); }
  /// The pytree of these leaves (in the order of tree_leaves).
  Tree rebuild(const std::vector<Tensor>& leaves) const { return tree_unflatten(def_, leaves); }

 private:
  TreeDef<Tree> def_;
};

/// This member's shard of `params` (a flat vector of layout.shard_size() elements).
template <class Tree>
Tensor shard(const Tree& params, const ShardedLayout<Tree>& layout, const std::string& axis_name = "world") {
  return layout.shard(tree_leaves(params), axis_name);
}

/// The whole parameter pytree from the members' shards. Differentiating through it sends each member the
/// sum over members of the cotangents of its slice (reduce_scatter), so the gradient of all_mean(local loss)
/// with respect to the shard is the shard of the full-batch gradient.
template <class Tree>
Tree gather(const Tensor& shard, const ShardedLayout<Tree>& layout, const std::string& axis_name = "world") {
  return layout.rebuild(layout.gather(shard, axis_name));
}

// ---------------------------------------------------------------- an optimizer for shards and pytrees

/// Stochastic gradient descent with heavy-ball momentum, as torch.optim.SGD:
///   velocity <- momentum * velocity + grad;   param <- param - learning_rate * velocity.
/// Elementwise, so it updates a flat shard (the sharded mode's optimizer state is the shard's velocity) or
/// a whole pytree alike, with the same numbers element for element.
struct SgdMomentum {
  double learning_rate = 0.01;
  double momentum = 0.9;

  /// (new param, new velocity). Throws fluxion::Error when the three shapes differ.
  std::pair<Tensor, Tensor> update(const Tensor& param, const Tensor& grad, const Tensor& velocity) const;

  template <class Tree, class = std::enable_if_t<!std::is_same_v<Tree, Tensor> && is_pytree_v<Tree>>>
  std::pair<Tree, Tree> update(const Tree& params, const Tree& grads, const Tree& velocity) const {
    std::vector<Tensor> p = tree_leaves(params), g = tree_leaves(grads), v = tree_leaves(velocity);
    if (g.size() != p.size() || v.size() != p.size())
      detail::fail<Error>("SgdMomentum::update", "params, grads and velocity have ", p.size(), ", ", g.size(), " and ",
                          v.size(), " leaves. Pass trees of the same structure.");
    std::vector<Tensor> new_p, new_v;
    for (size_t i = 0; i < p.size(); ++i) {
      auto [pi, vi] = update(p[i], g[i], v[i]);
      new_p.push_back(pi);
      new_v.push_back(vi);
    }
    auto pit = new_p.cbegin();
    auto vit = new_v.cbegin();
    return {PyTree<Tree>::rebuild(params, pit), PyTree<Tree>::rebuild(velocity, vit)};
  }
};

}  // namespace fluxion::distributed
