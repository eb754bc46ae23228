// fx::distributed data-parallel training helpers (flat gradient buckets, the sharded mode).
//
// Everything is written with the public ops and the collectives over a named axis, so it stages under jit,
// batches under a named vmap and differentiates like any other code: a bucket is ravel + concatenate + slice
// around ONE all_sum, and a shard is a dynamic_slice at axis_index * shard_size of the padded flat vector.
#include <algorithm>
#include <map>

#include "fluxion/collectives.hpp"
#include "fluxion/data_parallel.hpp"
#include "fluxion/errors.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"

namespace fluxion::distributed {
namespace data_parallel_detail {

std::vector<AbstractValue> avals_of(const std::vector<Tensor>& leaves) {
  std::vector<AbstractValue> avals;
  avals.reserve(leaves.size());
  for (const Tensor& t : leaves) avals.push_back(t.aval());
  return avals;
}

/// The leaves' elements raveled and concatenated in order (one leaf: just raveled).
Tensor concat_flat(const std::vector<Tensor>& leaves) {
  std::vector<Tensor> flat;
  flat.reserve(leaves.size());
  for (const Tensor& t : leaves) flat.push_back(ravel(t));
  return flat.size() == 1 ? flat[0] : concatenate(flat, 0);
}

/// `flat`'s elements [offset, offset + size of each aval) reshaped into the avals' shapes, in order.
std::vector<Tensor> split_flat(const Tensor& flat, const std::vector<AbstractValue>& avals) {
  std::vector<Tensor> out;
  out.reserve(avals.size());
  int64_t offset = 0;
  for (const AbstractValue& a : avals) {
    const int64_t n = a.shape.num_elements();
    Tensor piece = (offset == 0 && n == flat.shape()[0]) ? flat : slice(flat, {offset}, {offset + n});
    out.push_back(reshape(piece, a.shape.dims()));
    offset += n;
  }
  return out;
}

}  // namespace data_parallel_detail

std::vector<GradientBucket> plan_gradient_buckets(const std::vector<AbstractValue>& leaves, int64_t bucket_bytes,
                                                  const char* op) {
  if (bucket_bytes <= 0)
    detail::fail<Error>(op, "bucket_bytes is ", bucket_bytes, ". Give a positive number of bytes per bucket.");
  // Leaf sizes grouped by dtype, in order of the dtypes' first appearance.
  std::vector<DType> order;
  std::map<DType, std::vector<int64_t>> sizes;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const AbstractValue& a = leaves[i];
    if (!is_floating(a.dtype))
      detail::fail<DTypeError>(op, "leaf ", i, " of the gradients is ", a,
                               "; only f32 and f64 leaves are reduced. Keep integer and bool state out of the "
                               "gradient pytree (or convert it with fx::astype).");
    if (!sizes.count(a.dtype)) order.push_back(a.dtype);
    sizes[a.dtype].push_back(a.shape.num_elements());
  }
  std::vector<GradientBucket> buckets;
  for (DType d : order) {
    const int64_t capacity = std::max<int64_t>(1, bucket_bytes / dtype_size(d));  // elements per bucket
    int64_t begin = 0, end = 0;                                                   // the open bucket [begin, end)
    for (int64_t n : sizes[d]) {
      if (end > begin && end - begin + n > capacity) {  // the leaf does not fit beside the open bucket's
        buckets.push_back({d, begin, end});
        begin = end;
      }
      while (n > capacity) {  // a leaf larger than a bucket: full buckets of it, its rest stays open
        buckets.push_back({d, end, end + capacity});
        end += capacity;
        begin = end;
        n -= capacity;
      }
      end += n;
    }
    if (end > begin) buckets.push_back({d, begin, end});
  }
  return buckets;
}

std::vector<Tensor> data_parallel_detail::reduce_leaves(const std::vector<Tensor>& leaves,
                                                        const DataParallelOptions& options, bool mean, const char* op) {
  const std::vector<AbstractValue> avals = avals_of(leaves);
  const std::vector<GradientBucket> buckets = plan_gradient_buckets(avals, options.bucket_bytes, op);
  const int64_t members = axis_size(options.axis_name);  // also: an unbound name fails before any work
  std::vector<Tensor> out(leaves.size());
  // One flat buffer per dtype, reduced bucket by bucket, unpacked into that dtype's leaves.
  for (size_t b = 0; b < buckets.size();) {
    const DType d = buckets[b].dtype;
    std::vector<size_t> members_of_dtype;
    std::vector<Tensor> group;
    std::vector<AbstractValue> group_avals;
    for (size_t i = 0; i < leaves.size(); ++i)
      if (avals[i].dtype == d) {
        members_of_dtype.push_back(i);
        group.push_back(leaves[i]);
        group_avals.push_back(avals[i]);
      }
    const Tensor flat = concat_flat(group);
    const int64_t total = flat.shape()[0];
    std::vector<Tensor> reduced;
    for (; b < buckets.size() && buckets[b].dtype == d; ++b) {
      const GradientBucket& k = buckets[b];
      const Tensor piece = (k.begin == 0 && k.end == total) ? flat : slice(flat, {k.begin}, {k.end});
      reduced.push_back(all_sum(piece, options.axis_name));
    }
    Tensor summed = reduced.size() == 1 ? reduced[0] : concatenate(reduced, 0);
    if (mean) summed = summed / static_cast<double>(members);  // a weak scalar: the dtype stays
    const std::vector<Tensor> unpacked = split_flat(summed, group_avals);
    for (size_t j = 0; j < members_of_dtype.size(); ++j) out[members_of_dtype[j]] = unpacked[j];
  }
  // Leaves of a dtype without elements have no bucket: they are returned as they are (empty).
  for (size_t i = 0; i < leaves.size(); ++i)
    if (!out[i].defined()) out[i] = leaves[i];
  return out;
}

// ---------------------------------------------------------------- FlatLayout

FlatLayout::FlatLayout(const std::vector<AbstractValue>& leaves, int64_t num_shards)
    : leaves_(leaves), num_shards_(num_shards) {
  if (leaves.empty())
    detail::fail<Error>("ShardedLayout", "the parameters have no tensor leaves. Pass the parameter pytree.");
  if (num_shards < 1)
    detail::fail<Error>("ShardedLayout", "num_shards is ", num_shards,
                        ". Pass the member count, fx::axis_size(axis_name).");
  dtype_ = leaves[0].dtype;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!is_floating(leaves[i].dtype) || leaves[i].dtype != dtype_)
      detail::fail<DTypeError>("ShardedLayout", "leaf ", i, " is ", leaves[i], " but leaf 0 is ", leaves[0],
                               "; a sharded layout holds parameters of one floating dtype (f32 or f64). Convert "
                               "the leaves with fx::astype, or shard each dtype's parameters separately.");
    size_ += leaves[i].shape.num_elements();
  }
  shard_size_ = (size_ + num_shards - 1) / num_shards;
}

Tensor FlatLayout::flatten(const std::vector<Tensor>& leaves) const {
  if (data_parallel_detail::avals_of(leaves) != leaves_)
    detail::fail<ShapeError>("ShardedLayout::flatten", "the parameters (", leaves.size(),
                             " leaves) do not match the layout's ", leaves_.size(), " leaves of dtype ", dtype_,
                             " and ", size_, " elements. Build the layout from parameters of this structure.");
  Tensor flat = data_parallel_detail::concat_flat(leaves);
  const int64_t padding = padded_size() - size_;
  return padding == 0 ? flat : concatenate({flat, zeros({padding}, dtype_)}, 0);
}

std::vector<Tensor> FlatLayout::unflatten(const Tensor& flat) const {
  if (flat.ndim() != 1 || flat.dtype() != dtype_ || (flat.size() != size_ && flat.size() != padded_size()))
    detail::fail<ShapeError>("ShardedLayout::unflatten", "got ", flat.aval(), " for a layout of ", size_, " elements (",
                             padded_size(), " padded) of dtype ", dtype_,
                             ". Pass the flat parameter vector of this layout.");
  const Tensor unpadded = flat.size() == size_ ? flat : slice(flat, {0}, {size_});
  return data_parallel_detail::split_flat(unpadded, leaves_);
}

void FlatLayout::check_shard(const Tensor& shard, const char* op) const {
  if (shard.ndim() != 1 || shard.size() != shard_size_ || shard.dtype() != dtype_)
    detail::fail<ShapeError>(op, "the shard is ", shard.aval(), " but the layout's shards are ", dtype_, "[",
                             shard_size_, "] (", size_, " parameters over ", num_shards_,
                             " members). Pass the shard made by fx::distributed::shard with this layout.");
}

void FlatLayout::check_axis(const std::string& axis_name, const char* op) const {
  const int64_t members = axis_size(axis_name);
  if (members != num_shards_)
    detail::fail<Error>(op, "axis '", axis_name, "' has ", members, " members but the layout was made for ",
                        num_shards_, " shards. Build the layout with fx::axis_size(\"", axis_name, "\").");
}

Tensor FlatLayout::shard(const std::vector<Tensor>& leaves, const std::string& axis_name) const {
  check_axis(axis_name, "shard");
  const Tensor start = astype(axis_index(axis_name), i64) * shard_size_;
  return lax::dynamic_slice(flatten(leaves), {start}, {shard_size_});
}

std::vector<Tensor> FlatLayout::gather(const Tensor& shard, const std::string& axis_name) const {
  check_shard(shard, "gather");
  check_axis(axis_name, "gather");
  return unflatten(all_gather(shard, axis_name, 0, /*tiled=*/true));
}

// ---------------------------------------------------------------- SgdMomentum

std::pair<Tensor, Tensor> SgdMomentum::update(const Tensor& param, const Tensor& grad, const Tensor& velocity) const {
  if (grad.shape() != param.shape() || velocity.shape() != param.shape())
    detail::fail<ShapeError>("SgdMomentum::update", "param ", param.aval(), ", grad ", grad.aval(), " and velocity ",
                             velocity.aval(), " differ in shape. Pass a gradient and a velocity per parameter.");
  Tensor v = velocity * momentum + grad;
  return {param - v * learning_rate, v};
}

}  // namespace fluxion::distributed
