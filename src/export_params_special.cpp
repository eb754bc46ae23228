// save / load of the params that are not ParamsOf: the scatter family's dimension numbers, the control
// flow primitives' sub-Jaxprs and counts, and jit_call's sub-Jaxpr. Loaders check counts against the
// sub-Jaxprs before building anything that indexes with them.
#include <limits>

#include "fluxion/jit.hpp"
#include "fluxion/params_io.hpp"
#include "primitives/control_flow_params.hpp"
#include "primitives/scatter.hpp"

namespace fluxion {

namespace export_params_detail {

constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();

const char* mode_name(GatherScatterMode m) { return m == GatherScatterMode::clip ? "clip" : "fill_or_drop"; }

GatherScatterMode read_mode(ParamsReader& r) {
  std::string m = r.string("mode");
  if (m == "clip") return GatherScatterMode::clip;
  if (m == "fill_or_drop") return GatherScatterMode::fill_or_drop;
  r.fail("the mode '" + m + "' is neither 'clip' nor 'fill_or_drop'");
}

size_t count_in(ParamsReader& r, const char* name, size_t limit, const char* what) {
  int64_t v = r.int64_in(name, 0, kMaxCount);
  if (static_cast<size_t>(v) > limit)
    r.fail(std::string("'") + name + "' is " + std::to_string(v) + " but the " + what + " has " +
           std::to_string(limit));
  return static_cast<size_t>(v);
}

}  // namespace export_params_detail

namespace primitives::scatter_family {

void GatherParams::save(ParamsWriter& w) const {
  w.ints("offset_dims", dnums.offset_dims);
  w.ints("collapsed_slice_dims", dnums.collapsed_slice_dims);
  w.ints("start_index_map", dnums.start_index_map);
  w.ints("operand_batching_dims", dnums.operand_batching_dims);
  w.ints("start_indices_batching_dims", dnums.start_indices_batching_dims);
  w.ints("slice_sizes", slice_sizes);
  w.string("mode", export_params_detail::mode_name(mode));
  w.float64("fill_value", fill_value);
}

std::shared_ptr<const Params> GatherParams::load(ParamsReader& r) {
  lax::GatherDimensionNumbers d;
  d.offset_dims = r.ints("offset_dims");
  d.collapsed_slice_dims = r.ints("collapsed_slice_dims");
  d.start_index_map = r.ints("start_index_map");
  d.operand_batching_dims = r.ints("operand_batching_dims");
  d.start_indices_batching_dims = r.ints("start_indices_batching_dims");
  Ints sizes = r.ints("slice_sizes");
  GatherScatterMode mode = export_params_detail::read_mode(r);
  return std::make_shared<GatherParams>(std::move(d), std::move(sizes), mode, r.float64("fill_value"));
}

void ScatterParams::save(ParamsWriter& w) const {
  w.ints("update_window_dims", dnums.update_window_dims);
  w.ints("inserted_window_dims", dnums.inserted_window_dims);
  w.ints("scatter_dims_to_operand_dims", dnums.scatter_dims_to_operand_dims);
  w.ints("operand_batching_dims", dnums.operand_batching_dims);
  w.ints("scatter_indices_batching_dims", dnums.scatter_indices_batching_dims);
  w.string("mode", export_params_detail::mode_name(mode));
}

std::shared_ptr<const Params> ScatterParams::load(ParamsReader& r) {
  lax::ScatterDimensionNumbers d;
  d.update_window_dims = r.ints("update_window_dims");
  d.inserted_window_dims = r.ints("inserted_window_dims");
  d.scatter_dims_to_operand_dims = r.ints("scatter_dims_to_operand_dims");
  d.operand_batching_dims = r.ints("operand_batching_dims");
  d.scatter_indices_batching_dims = r.ints("scatter_indices_batching_dims");
  return std::make_shared<ScatterParams>(std::move(d), export_params_detail::read_mode(r));
}

}  // namespace primitives::scatter_family

namespace cond_detail {

void CondParams::save(ParamsWriter& w) const {
  w.int64("num_branches", static_cast<int64_t>(branches.size()));
  for (size_t i = 0; i < branches.size(); ++i) w.jaxpr(("branch" + std::to_string(i)).c_str(), branches[i].jaxpr());
}

std::shared_ptr<const Params> CondParams::load(ParamsReader& r) {
  int64_t n = r.int64_in("num_branches", 1, 1 << 16);
  std::vector<SubJaxpr> branches;
  for (int64_t i = 0; i < n; ++i) {
    std::shared_ptr<const Jaxpr> b = r.jaxpr(("branch" + std::to_string(i)).c_str());
    if (i > 0 && b->invars.size() != branches[0].jaxpr().invars.size())
      r.fail("branch " + std::to_string(i) + " takes another number of operands than branch 0");
    branches.emplace_back(Jaxpr(*b));
  }
  return std::make_shared<CondParams>(std::move(branches));
}

}  // namespace cond_detail

namespace while_detail {

void WhileParams::save(ParamsWriter& w) const {
  w.int64("max_steps", max_steps);
  w.int64("num_cond_consts", num_cond_consts);
  w.int64("num_body_consts", num_body_consts);
  w.jaxpr("cond", cond.jaxpr());
  w.jaxpr("body", body.jaxpr());
}

std::shared_ptr<const Params> WhileParams::load(ParamsReader& r) {
  using export_params_detail::count_in;
  std::shared_ptr<const Jaxpr> c = r.jaxpr("cond"), b = r.jaxpr("body");
  int64_t steps = r.int64("max_steps");
  size_t ncc = count_in(r, "num_cond_consts", c->invars.size(), "cond Jaxpr's input list");
  size_t nbc = count_in(r, "num_body_consts", b->invars.size(), "body Jaxpr's input list");
  if (c->invars.size() - ncc != b->invars.size() - nbc || b->outputs.size() != b->invars.size() - nbc)
    r.fail("the cond and body Jaxprs do not take and return the same loop carry");
  for (size_t i = 0; i + nbc < b->invars.size(); ++i)
    if (c->avals[c->invars[ncc + i]] != b->avals[b->invars[nbc + i]])
      r.fail("the cond and body Jaxprs take different loop carries");
  if (c->outputs.size() != 1 || c->out_avals()[0] != AbstractValue{Shape{}, boolean})
    r.fail("the cond Jaxpr does not return one bool[]");
  return std::make_shared<WhileParams>(Jaxpr(*c), Jaxpr(*b), static_cast<int64_t>(ncc), static_cast<int64_t>(nbc),
                                       steps);
}

}  // namespace while_detail

namespace scan_detail {

void ScanParams::save(ParamsWriter& w) const {
  w.int64("length", length);
  w.boolean("reverse", reverse);
  w.int64("num_consts", num_consts);
  w.int64("num_carry", num_carry);
  w.jaxpr("jaxpr", body.jaxpr());
}

std::shared_ptr<const Params> ScanParams::load(ParamsReader& r) {
  using export_params_detail::count_in;
  std::shared_ptr<const Jaxpr> b = r.jaxpr("jaxpr");
  int64_t length = r.int64_in("length", 0, std::numeric_limits<int64_t>::max());
  bool reverse = r.boolean("reverse");
  size_t nc = count_in(r, "num_consts", b->invars.size(), "body Jaxpr's input list");
  size_t ncar = count_in(r, "num_carry", b->invars.size() - nc, "body Jaxpr's input list (after the constants)");
  if (ncar > b->outputs.size()) r.fail("'num_carry' exceeds the body Jaxpr's outputs");
  return std::make_shared<ScanParams>(Jaxpr(*b), nc, ncar, length, reverse);
}

}  // namespace scan_detail

namespace checkpoint_detail {

void CheckpointParams::save(ParamsWriter& w) const { w.jaxpr("jaxpr", body.jaxpr()); }

std::shared_ptr<const Params> CheckpointParams::load(ParamsReader& r) {
  return std::make_shared<CheckpointParams>(Jaxpr(*r.jaxpr("jaxpr")));
}

}  // namespace checkpoint_detail

void JitCallParams::save(ParamsWriter& w) const {
  w.string("name", name_);
  w.jaxpr("jaxpr", *jaxpr_);
}

std::shared_ptr<const Params> JitCallParams::load(ParamsReader& r) {
  std::string name = r.string("name");
  return std::make_shared<JitCallParams>(r.jaxpr("jaxpr"), std::move(name));
}

}  // namespace fluxion
