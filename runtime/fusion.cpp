// fuse_elementwise: one greedy walk in program order keeping one open group per output shape;
// fused_row_reads: which broadcasts of a group its members read per run instead of per block.
#include "runtime/fusion.hpp"

#include <algorithm>
#include <map>

#include "primitives/conversion.hpp"
#include "primitives/reduction.hpp"
#include "primitives/shape.hpp"
#include "runtime/backend.hpp"

namespace fluxion::runtime {

bool is_fusible_broadcast(const Jaxpr& jaxpr, const Equation& e) {
  // broadcast_in_dim feeding elementwise members is computed per block from its operand, so the
  // broadcast array is never materialised (bias adds, softmax, rank-1 scalings).
  if (e.primitive != &primitives::shape_family::broadcast_in_dim_p() || e.inputs[0].is_literal()) return false;
  const Shape& out = jaxpr.avals[e.outputs[0]].shape;
  return out.num_elements() > 0 && out.size() <= 8 && jaxpr.aval_of(e.inputs[0]).shape.size() > 0;
}

std::optional<FusedReduction> fusible_reduction(const Jaxpr& jaxpr, const Equation& e) {
  if (e.primitive != &primitives::reduction_family::reduce_sum_p() || e.inputs[0].is_literal()) return std::nullopt;
  const AbstractValue& in = jaxpr.aval_of(e.inputs[0]);
  const int64_t n = in.shape.num_elements();
  if ((in.dtype != f32 && in.dtype != f64) || n == 0) return std::nullopt;
  const std::vector<int64_t> axes = e.params->as<primitives::reduction_family::ReduceParams>().axes;
  const int64_t rank = in.shape.size(), k = static_cast<int64_t>(axes.size());
  if (k == 0) return std::nullopt;
  // Axes are sorted and unique: they must be one run of adjacent dims.
  int64_t reduced = 1, inner = 1;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t a = axes[static_cast<size_t>(i)];
    if (a != axes[0] + i) return std::nullopt;
    reduced *= in.shape[a];
  }
  for (int64_t d = axes[0] + k; d < rank; ++d) inner *= in.shape[d];
  if (reduced < 2) return std::nullopt;
  FusedReduction r;
  r.outputs = n / reduced;
  r.row = reduced;
  r.inner = inner;
  return r;
}

bool fusible(const Jaxpr& jaxpr, const Equation& e, const Lowering& lowering) {
  const Primitive& p = *e.primitive;
  // f16/bf16 values are only converted inside groups (where the backend's block kernel can); other half
  // equations (widen_half off) run alone, in f32.
  const bool half_conversion =
      &p == &primitives::conversion_family::convert_element_type_p() && lowering.fuses_half_conversions();
  if (!half_conversion) {
    for (const Atom& a : e.inputs)
      if (is_half(jaxpr.aval_of(a).dtype)) return false;
    for (int32_t v : e.outputs)
      if (is_half(jaxpr.avals[v].dtype)) return false;
  }
  if (lowering.fuses_broadcasts_and_sums() && is_fusible_broadcast(jaxpr, e)) return true;
  if (!p.traits.elementwise || p.traits.view || !lowering.fuses(p)) return false;
  if (e.outputs.size() != 1 || e.inputs.size() > 4) return false;  // 4: the plan's kMaxFusedInputs
  const Shape& out = jaxpr.avals[e.outputs[0]].shape;
  if (out.num_elements() == 0) return false;
  // Inputs are either the output's shape or rank-0 (broadcast inside the block kernel); all of
  // one dtype, which the block kernel receives.
  DType dtype = jaxpr.aval_of(e.inputs[0]).dtype;
  for (const Atom& a : e.inputs) {
    const AbstractValue& av = jaxpr.aval_of(a);
    if (av.dtype != dtype) return false;
    if (!(av.shape == out) && av.shape.size() != 0) return false;
  }
  return true;
}

void broadcast_layout(const Jaxpr& jaxpr, const Equation& e, std::vector<int64_t>& dims, std::vector<int64_t>& src) {
  const Shape& in = jaxpr.aval_of(e.inputs[0]).shape;
  const Shape& out = jaxpr.avals[e.outputs[0]].shape;
  const std::vector<int64_t> bd = e.params->as<primitives::shape_family::BroadcastInDimParams>().broadcast_dimensions;
  const std::vector<int64_t> in_strides = in.strides();
  std::vector<int64_t> strides(static_cast<size_t>(out.size()), 0);
  for (size_t i = 0; i < bd.size(); ++i)
    if (in[static_cast<int64_t>(i)] != 1) strides[static_cast<size_t>(bd[i])] = in_strides[i];
  dims.clear();
  src.clear();
  for (int64_t d = 0; d < out.size(); ++d) {
    const int64_t n = out[d], st = strides[static_cast<size_t>(d)];
    if (n == 1) continue;
    if (!dims.empty() && src.back() == st * n) {
      dims.back() *= n;
      src.back() = st;
      continue;
    }
    dims.push_back(n);
    src.push_back(st);
  }
  if (dims.empty()) {
    dims.push_back(1);
    src.push_back(0);
  }
}

namespace fusion_detail {
// Broadcasts along trailing dims with runs at least this long are read per run by members with a
// row kernel instead of being filled into a block. Measured (65536 elements, one or two readers):
// runs of 8+ win or tie in f32 and f64; at 5-6 single readers still win but two readers lose; at
// 2-4 the per-run overhead costs more than the fill.
constexpr int64_t kMinRowRun = 8;

/// The run length of fusible broadcast `e` when it is constant along trailing dims and its runs
/// read consecutive operand elements (run r is operand element r), else 0.
int64_t row_run_of(const Jaxpr& jaxpr, const Equation& e) {
  std::vector<int64_t> dims, src;
  broadcast_layout(jaxpr, e, dims, src);
  const bool rows = (dims.size() == 2 && src[0] == 1 && src[1] == 0) || (dims.size() == 1 && src[0] == 0);
  return rows ? dims.back() : 0;
}

/// Program order, except that each sum a group may end with (fusible_reduction) comes right after
/// the fusible equation computing its operand: a product reading that operand first would close
/// the group before the sum could join it, and the sum would be a separate pass over its operand
/// (measured: bench/RESULTS.md). A sum reads one value, so the order stays valid.
std::vector<int32_t> reductions_first(const Jaxpr& jaxpr, const Lowering& lowering) {
  const auto count = static_cast<int32_t>(jaxpr.equations.size());
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(count));
  std::vector<bool> computed_in_group(jaxpr.avals.size(), false), moved(static_cast<size_t>(count), false);
  std::vector<std::vector<int32_t>> sums_of(jaxpr.avals.size());
  for (int32_t i = 0; i < count; ++i) {
    const Equation& e = jaxpr.equations[i];
    if (lowering.fuses_broadcasts_and_sums() && fusible_reduction(jaxpr, e) && computed_in_group[e.inputs[0].var]) {
      sums_of[e.inputs[0].var].push_back(i);
      moved[static_cast<size_t>(i)] = true;
    } else if (fusible(jaxpr, e, lowering)) {
      for (int32_t v : e.outputs) computed_in_group[v] = true;
    }
  }
  for (int32_t i = 0; i < count; ++i) {
    if (moved[static_cast<size_t>(i)]) continue;
    order.push_back(i);
    for (int32_t v : jaxpr.equations[i].outputs) order.insert(order.end(), sums_of[v].begin(), sums_of[v].end());
  }
  return order;
}
}  // namespace fusion_detail

void GroupVars::assign(const Jaxpr& jaxpr, const std::vector<int32_t>& group) {
  for (int32_t v : vars_) local_[static_cast<size_t>(v)] = -1;
  vars_.clear();
  auto add = [&](int32_t v) {
    if (local_[static_cast<size_t>(v)] >= 0) return;
    local_[static_cast<size_t>(v)] = static_cast<int32_t>(vars_.size());
    vars_.push_back(v);
  };
  for (int32_t eq : group) {
    const Equation& e = jaxpr.equations[eq];
    for (const Atom& a : e.inputs)
      if (!a.is_literal()) add(a.var);
    for (int32_t v : e.outputs) add(v);
  }
}

RowReads fused_row_reads(const Jaxpr& jaxpr, const std::vector<int32_t>& group, const GroupVars& vars,
                         const Lowering& lowering) {
  RowReads r;
  r.row.assign(vars.size(), 0);
  r.source.assign(vars.size(), -1);
  r.full.assign(vars.size(), false);
  r.member_rows.assign(group.size(), false);
  for (int32_t eq : group) {
    const Equation& e = jaxpr.equations[eq];
    if (!is_fusible_broadcast(jaxpr, e)) continue;
    const int64_t run = fusion_detail::row_run_of(jaxpr, e);
    if (run < fusion_detail::kMinRowRun) continue;
    r.row[vars[e.outputs[0]]] = run;
    r.source[vars[e.outputs[0]]] = e.inputs[0].var;
  }
  for (size_t m = 0; m < group.size(); ++m) {
    const Equation& e = jaxpr.equations[group[m]];
    bool any = false, ok = lowering.fuses_rows(*e.primitive);  // never broadcasts or reductions
    int64_t run = 0;
    for (const Atom& a : e.inputs) {
      if (a.is_literal() || r.row[vars[a.var]] == 0) continue;
      ok = ok && (run == 0 || run == r.row[vars[a.var]]);
      run = r.row[vars[a.var]];
      any = true;
    }
    r.member_rows[m] = any && ok;
    if (any && !ok)
      for (const Atom& a : e.inputs)
        if (!a.is_literal() && r.row[vars[a.var]] > 0) r.full[vars[a.var]] = true;
  }
  return r;
}

std::vector<std::vector<int32_t>> fuse_elementwise(const Jaxpr& jaxpr, const Lowering& lowering) {
  std::vector<std::vector<int32_t>> steps;
  // Open groups by output shape; group_of[var] is the open group producing var (-1: none).
  std::map<std::vector<int64_t>, std::vector<int32_t>> open;
  std::vector<int> open_id(jaxpr.avals.size(), -1);
  std::map<std::vector<int64_t>, int> ids;
  std::vector<std::vector<int64_t>> key_of_id;
  auto close = [&](int id) {
    auto it = open.find(key_of_id[id]);
    if (it == open.end() || ids[it->first] != id) return;
    for (int32_t eq : it->second)
      for (int32_t v : jaxpr.equations[eq].outputs) open_id[v] = -1;
    steps.push_back(std::move(it->second));
    ids.erase(it->first);
    open.erase(it);
  };
  // Outputs of reductions that end a group: readers always wait for the whole group.
  std::vector<bool> reduced(jaxpr.avals.size(), false);
  int next_id = 0;
  for (int32_t i : fusion_detail::reductions_first(jaxpr, lowering)) {
    const Equation& e = jaxpr.equations[i];
    // A sum (fusible_reduction) of a value computed by an open group joins it (the group keeps
    // per-output sums instead of writing the value out for a separate reduction kernel).
    if (lowering.fuses_broadcasts_and_sums() && fusible_reduction(jaxpr, e) && open_id[e.inputs[0].var] >= 0) {
      const int id = open_id[e.inputs[0].var];
      auto it = ids.find(jaxpr.aval_of(e.inputs[0]).shape.dims());
      if (it != ids.end() && it->second == id) {
        open[it->first].push_back(i);
        open_id[e.outputs[0]] = id;
        reduced[e.outputs[0]] = true;
        continue;
      }
    }
    const bool fuse = fusible(jaxpr, e, lowering);
    std::vector<int64_t> key;
    if (fuse) key = jaxpr.avals[e.outputs[0]].shape.dims();
    // Values read from other open groups must be computed first: close those groups.
    for (const Atom& a : e.inputs) {
      if (a.is_literal() || open_id[a.var] < 0) continue;
      int id = open_id[a.var];
      if (fuse && !reduced[a.var]) {
        auto it = ids.find(key);
        if (it != ids.end() && it->second == id) continue;  // same group
      }
      close(id);
    }
    if (!fuse) {
      steps.push_back({i});
      continue;
    }
    auto it = ids.find(key);
    int id;
    if (it == ids.end()) {
      id = next_id++;
      ids[key] = id;
      key_of_id.push_back(key);
      open[key] = {};
    } else {
      id = it->second;
    }
    open[key].push_back(i);
    for (int32_t v : e.outputs) open_id[v] = id;
  }
  // Close what is left in creation order.
  std::vector<std::pair<int, std::vector<int64_t>>> rest;
  for (const auto& [k, id] : ids) rest.emplace_back(id, k);
  std::sort(rest.begin(), rest.end());
  for (const auto& r : rest) close(r.first);
  return steps;
}

}  // namespace fluxion::runtime
