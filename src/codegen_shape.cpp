// emit_cpp's data-movement rules: broadcast_in_dim, transpose, the views when their result is
// returned (reshape, squeeze, expand_dims, stop_gradient), slice, pad, concatenate, iota and the
// dynamic slices. Each is one loop nest over the result with the operand's index as an affine
// expression of the loop indices.
#include "primitives/indexing.hpp"
#include "primitives/shape.hpp"
#include "src/codegen_emitter.hpp"

namespace fluxion::codegen_detail {

namespace shape_rules = primitives::shape_family;
namespace indexing_rules = primitives::indexing_family;

/// out (row-major, in loop order) = in[base + sum_k i_k * in_strides[k]] over the result's extents.
void strided_read(EmitContext& c, const Value& in, const std::vector<int64_t>& in_strides, const std::string& base) {
  const Shape& shape = c.out[0].aval.shape;
  if (shape.num_elements() == 0) return;
  c.code.line("int64_t o = 0;");
  loop_nest(c.code, shape.dims(), "i", [&] {
    const std::string idx = index_expr("i", in_strides);
    c.code.line(c.out[0].ptr + "[o++] = " + in.at(base == "0" ? idx : base + " + " + idx) + ";");
  });
}

void emit_broadcast_in_dim(EmitContext& c) {
  const auto& p = c.eq.params->as<shape_rules::BroadcastInDimParams>();
  const Shape& in_shape = c.in[0].aval.shape;
  const std::vector<int64_t> in_strides = strides_of(in_shape);
  std::vector<int64_t> strides(static_cast<size_t>(c.out[0].aval.ndim()), 0);
  for (size_t i = 0; i < p.broadcast_dimensions.size(); ++i)
    if (in_shape[static_cast<int64_t>(i)] != 1) strides[static_cast<size_t>(p.broadcast_dimensions[i])] = in_strides[i];
  strided_read(c, c.in[0], strides, "0");
}

std::string broadcast_expression(const Equation& eq, const Value& in, const std::string& idx) {
  const auto& p = eq.params->as<shape_rules::BroadcastInDimParams>();
  const Shape& in_shape = in.aval.shape;
  const std::vector<int64_t> in_strides = strides_of(in_shape), out_strides = strides_of(p.shape);
  std::string e;
  for (size_t i = 0; i < p.broadcast_dimensions.size(); ++i) {
    if (in_shape[static_cast<int64_t>(i)] == 1) continue;
    const size_t d = static_cast<size_t>(p.broadcast_dimensions[i]);
    std::string term = "(" + idx + ")";  // the result's index along d
    if (out_strides[d] != 1) term += " / " + std::to_string(out_strides[d]);
    if (d > 0) term += " % " + std::to_string(p.shape[static_cast<int64_t>(d)]);
    if (in_strides[i] != 1) term = "(" + term + ") * " + std::to_string(in_strides[i]);
    e += (e.empty() ? "" : " + ") + term;
  }
  return in.at(e.empty() ? "0" : e);
}

void emit_transpose(EmitContext& c) {
  const auto& perm = c.eq.params->as<shape_rules::TransposeParams>().permutation;
  const std::vector<int64_t> in_strides = strides_of(c.in[0].aval.shape);
  std::vector<int64_t> strides;
  for (int64_t d : perm) strides.push_back(in_strides[static_cast<size_t>(d)]);
  strided_read(c, c.in[0], strides, "0");
}

/// A view whose result is returned: the operand's elements, copied.
void emit_copy(EmitContext& c) {
  const int64_t n = c.out[0].aval.shape.num_elements();
  if (c.in[0].ptr.empty()) c.code.line(c.out[0].ptr + "[0] = " + c.in[0].literal + ";");
  else copy_elements(c.code, c.out[0].ptr, c.in[0].ptr, n, c.out[0].aval.dtype);
}

void emit_slice(EmitContext& c) {
  const auto& p = c.eq.params->as<indexing_rules::SliceParams>();
  const std::vector<int64_t> in_strides = strides_of(c.in[0].aval.shape);
  std::vector<int64_t> strides;
  int64_t base = 0;
  for (size_t d = 0; d < in_strides.size(); ++d) {
    strides.push_back(in_strides[d] * p.strides[d]);
    base += p.start_indices[d] * in_strides[d];
  }
  strided_read(c, c.in[0], strides, std::to_string(base));
}

// pad: the result filled with the padding value, then each operand element written at
// low + i * (interior + 1) along every dim, skipped where negative padding cropped it.
void emit_pad(EmitContext& c) {
  const auto& p = c.eq.params->as<indexing_rules::PadParams>();
  const Shape& in_shape = c.in[0].aval.shape;
  const Shape& out_shape = c.out[0].aval.shape;
  const int64_t n = out_shape.num_elements();
  if (n == 0) return;
  c.code.line("std::fill(" + c.out[0].ptr + ", " + c.out[0].ptr + " + " + std::to_string(n) + ", " + c.in[1].at("0") +
              ");");
  if (in_shape.num_elements() == 0) return;
  const std::vector<int64_t> in_strides = strides_of(in_shape), out_strides = strides_of(out_shape);
  const size_t rank = in_strides.size();
  std::string out_index = "0";
  for (size_t d = 0; d < rank; ++d) {
    const std::string i = "i" + std::to_string(d), at = "at" + std::to_string(d);
    c.code.open("for (int64_t " + i + " = 0; " + i + " < " + std::to_string(in_shape[static_cast<int64_t>(d)]) +
                "; ++" + i + ")");
    c.code.line("const int64_t " + at + " = " + std::to_string(p.low[d]) + " + " + i + " * " +
                std::to_string(p.interior[d] + 1) + ";");
    if (p.low[d] < 0 || p.high[d] < 0)
      c.code.line("if (" + at + " < 0 || " + at + " >= " + std::to_string(out_shape[static_cast<int64_t>(d)]) +
                  ") continue;");
    out_index += " + " + at + " * " + std::to_string(out_strides[d]);
  }
  c.code.line(c.out[0].ptr + "[" + out_index + "] = " + c.in[0].at(index_expr("i", in_strides)) + ";");
  for (size_t d = 0; d < rank; ++d) c.code.close();
}

void emit_concatenate(EmitContext& c) {
  const int64_t dim = c.eq.params->as<indexing_rules::ConcatenateParams>().dimension;
  const Shape& out_shape = c.out[0].aval.shape;
  if (out_shape.num_elements() == 0) return;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < out_shape.size(); ++d) {
    if (d < dim) outer *= out_shape[d];
    if (d > dim) inner *= out_shape[d];
  }
  const int64_t out_row = out_shape[dim] * inner, width = dtype_size(c.out[0].aval.dtype);
  c.code.open("for (int64_t o = 0; o < " + std::to_string(outer) + "; ++o)");
  int64_t offset = 0;
  for (const Value& v : c.in) {
    const int64_t row = v.aval.shape[dim] * inner;
    if (row > 0)
      c.code.line("std::memcpy(" + c.out[0].ptr + " + o * " + std::to_string(out_row) + " + " + std::to_string(offset) +
                  ", " + v.ptr + " + o * " + std::to_string(row) + ", " + std::to_string(row * width) + ");");
    offset += row;
  }
  c.code.close();
}

void emit_iota(EmitContext& c) {
  const auto& p = c.eq.params->as<indexing_rules::IotaParams>();
  if (p.shape.num_elements() == 0) return;
  c.code.line("int64_t o = 0;");
  loop_nest(c.code, p.shape.dims(), "i", [&] {
    c.code.line(c.out[0].ptr + "[o++] = static_cast<" + c_type(p.dtype) + ">(i" + std::to_string(p.dimension) + ");");
  });
}

/// `const int64_t s<d> = clamp(start_d, 0, n_d - size_d);` for every dim (XLA's clamping).
void clamped_starts(EmitContext& c, size_t first_start, const Shape& operand, const std::vector<int64_t>& sizes) {
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t hi = operand[static_cast<int64_t>(d)] - sizes[d];
    c.code.line("const int64_t s" + std::to_string(d) + " = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(" +
                c.in[first_start + d].at("0") + "), 0), " + std::to_string(hi) + ");");
  }
}

std::string start_offset(const std::vector<int64_t>& strides) {
  std::string e = "0";
  for (size_t d = 0; d < strides.size(); ++d) e += " + s" + std::to_string(d) + " * " + std::to_string(strides[d]);
  return e;
}

void emit_dynamic_slice(EmitContext& c) {
  const auto& sizes = c.eq.params->as<indexing_rules::DynamicSliceParams>().slice_sizes;
  const std::vector<int64_t> in_strides = strides_of(c.in[0].aval.shape);
  if (c.out[0].aval.shape.num_elements() == 0) return;
  clamped_starts(c, 1, c.in[0].aval.shape, sizes);
  c.code.line("const int64_t base = " + start_offset(in_strides) + ";");
  strided_read(c, c.in[0], in_strides, "base");
}

void emit_dynamic_update_slice(EmitContext& c) {
  const Shape& shape = c.in[0].aval.shape;
  const Shape& update = c.in[1].aval.shape;
  copy_elements(c.code, c.out[0].ptr, c.in[0].ptr, shape.num_elements(), c.out[0].aval.dtype);
  if (update.num_elements() == 0) return;
  const std::vector<int64_t> strides = strides_of(shape);
  clamped_starts(c, 2, shape, update.dims());
  c.code.line("const int64_t base = " + start_offset(strides) + ";");
  c.code.line("int64_t u = 0;");
  loop_nest(c.code, update.dims(), "i", [&] {
    c.code.line(c.out[0].ptr + "[base + " + index_expr("i", strides) + "] = " + c.in[1].at("u++") + ";");
  });
}

// gather and scatter_add along `axis` (x = [prefix, n, suffix], result or updates = [prefix, indices,
// suffix]), every index clamped into [0, n) like XLA.
void emit_take(EmitContext& c) {
  const bool is_gather = c.eq.primitive->name == "gather";
  const int64_t axis = c.eq.params->as<indexing_rules::AxisParams>().axis;
  const Value &x = c.in[0], &indices = c.in[1];
  const Shape& shape = x.aval.shape;
  int64_t prefix = 1, suffix = 1;
  for (int64_t d = 0; d < shape.size(); ++d) {
    if (d < axis) prefix *= shape[d];
    if (d > axis) suffix *= shape[d];
  }
  const int64_t n = shape[axis], count = indices.aval.shape.num_elements();
  if (!is_gather) copy_elements(c.code, c.out[0].ptr, x.ptr, shape.num_elements(), x.aval.dtype);
  if (prefix * count * suffix == 0) return;
  const std::string sfx = std::to_string(suffix);
  c.code.open("for (int64_t p = 0; p < " + std::to_string(prefix) + "; ++p)");
  c.code.open("for (int64_t q = 0; q < " + std::to_string(count) + "; ++q)");
  c.code.line("const int64_t k = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(" + indices.at("q") +
              "), 0), " + std::to_string(n - 1) + ");");
  c.code.open("for (int64_t s = 0; s < " + sfx + "; ++s)");
  const std::string at_x = "(p * " + std::to_string(n) + " + k) * " + sfx + " + s";
  const std::string at_taken = "(p * " + std::to_string(count) + " + q) * " + sfx + " + s";
  if (is_gather) {
    c.code.line(c.out[0].ptr + "[" + at_taken + "] = " + x.ptr + "[" + at_x + "];");
  } else {
    const std::string dst = c.out[0].ptr + "[" + at_x + "]";
    c.code.line(dst + " = scalar_functions::Add::apply(" + dst + ", " + c.in[2].at(at_taken) + ");");
  }
  c.code.close();
  c.code.close();
  c.code.close();
}

bool is_view(const std::string& name) {
  return name == "reshape" || name == "squeeze" || name == "expand_dims" || name == "stop_gradient";
}

void add_shape_rules(std::map<std::string, EmitRule>& table) {
  table["broadcast_in_dim"] = &emit_broadcast_in_dim;
  table["transpose"] = &emit_transpose;
  for (const char* view : {"reshape", "squeeze", "expand_dims"}) table[view] = &emit_copy;
  table["slice"] = &emit_slice;
  table["pad"] = &emit_pad;
  table["concatenate"] = &emit_concatenate;
  table["iota"] = &emit_iota;
  table["dynamic_slice"] = &emit_dynamic_slice;
  table["dynamic_update_slice"] = &emit_dynamic_update_slice;
  table["gather"] = &emit_take;
  table["scatter_add"] = &emit_take;
}

}  // namespace fluxion::codegen_detail
