// emit_cpp's accumulating rules: reduce_sum/prod/max/min, argmax/argmin, cumsum and dot_general.
// Float sums, products and cumsums accumulate in double and round once, like the CPU kernels
// (backends/cpu/accumulate.hpp), though in index order rather than pairwise; integer ones wrap.
#include "primitives/dot_general.hpp"
#include "primitives/reduction.hpp"
#include "src/codegen_emitter.hpp"

namespace fluxion::codegen_detail {

namespace reduce_rules = primitives::reduction_family;
using Terms = std::vector<std::pair<std::string, int64_t>>;

/// `sum var * stride` over `terms` (zero strides dropped), "0" when empty.
std::string affine(const Terms& terms) {
  std::string e;
  for (const auto& [var, stride] : terms) {
    if (stride == 0) continue;
    e += (e.empty() ? "" : " + ") + var + (stride == 1 ? "" : " * " + std::to_string(stride));
  }
  return e.empty() ? "0" : e;
}

/// Opens one loop per (variable, extent); returns how many to close.
size_t open_loops(Code& code, const std::vector<std::pair<std::string, int64_t>>& loops) {
  for (const auto& [var, extent] : loops)
    code.open("for (int64_t " + var + " = 0; " + var + " < " + std::to_string(extent) + "; ++" + var + ")");
  return loops.size();
}
void close_loops(Code& code, size_t n) {
  for (size_t i = 0; i < n; ++i) code.close();
}

/// The accumulator type of a sum or product of `d` elements: double for floats, the unsigned
/// type of the same width for integers (wrapping).
std::string sum_accumulator(DType d) {
  if (is_floating(d)) return "double";
  return d == DType::i64 ? "uint64_t" : "uint32_t";
}

/// The most result elements a column reduction accumulates in a local array.
inline constexpr int64_t kColumnAccumulator = 2048;

// reduce_*: per result element (the kept dims' loops), the reduced dims' loops in index order.
void emit_reduce(EmitContext& c) {
  const std::string& name = c.eq.primitive->name;
  const auto& axes = c.eq.params->as<reduce_rules::ReduceParams>().axes;
  const Value& x = c.in[0];
  const DType d = x.aval.dtype;
  const std::string t = c_type(d);
  const bool is_sum = name == "reduce_sum", is_prod = name == "reduce_prod", is_max = name == "reduce_max";
  const std::string lim = "std::numeric_limits<" + t + ">::";
  std::string identity;  // the result of reducing nothing
  if (is_sum) identity = t + "(0)";
  else if (is_prod) identity = t + "(1)";
  else if (is_floating(d)) identity = (is_max ? "-" : "") + lim + "infinity()";
  else identity = is_max ? lim + "lowest()" : lim + "max()";
  const int64_t n_out = c.out[0].aval.shape.num_elements();
  if (n_out == 0) return;
  const std::vector<int64_t> strides = strides_of(x.aval.shape);
  std::vector<std::pair<std::string, int64_t>> kept, reduced;
  Terms at;
  int64_t n_reduced = 1;
  for (int64_t dim = 0, a = 0; dim < x.aval.ndim(); ++dim) {
    const bool is_reduced = a < static_cast<int64_t>(axes.size()) && axes[static_cast<size_t>(a)] == dim;
    a += is_reduced;
    const std::string var = (is_reduced ? "r" : "k") + std::to_string(dim);
    (is_reduced ? reduced : kept).push_back({var, x.aval.shape[dim]});
    at.push_back({var, strides[static_cast<size_t>(dim)]});
    if (is_reduced) n_reduced *= x.aval.shape[dim];
  }
  if (n_reduced == 0) {
    c.code.line("std::fill(" + c.out[0].ptr + ", " + c.out[0].ptr + " + " + std::to_string(n_out) + ", " + identity +
                ");");
    return;
  }
  const std::string acc_type = (is_sum || is_prod) ? sum_accumulator(d) : t;
  // Float sums start at -0 (IEEE addition's identity: a sum of -0s is -0).
  const std::string init = is_sum    ? (is_floating(d) ? "-0.0" : acc_type + "(0)")
                           : is_prod ? acc_type + "(1)"
                                     : identity;
  const std::string xv = "static_cast<" + acc_type + ">(" + x.at(affine(at)) + ")";
  // `a` accumulates one element; a NaN sticks in max/min, otherwise the larger (smaller) is kept.
  auto combine_into = [&](const std::string& a) {
    if (is_sum) return a + " = " + a + " + " + xv + ";";
    if (is_prod) return a + " = " + a + " * " + xv + ";";
    const std::string better = is_max ? a + " < v" : "v < " + a;
    if (is_floating(d))
      return "{ const " + t + " v = " + xv + "; if (" + a + " == " + a + " && (v != v || " + better + ")) " + a +
             " = v; }";
    return "{ const " + t + " v = " + xv + "; if (" + better + ") " + a + " = v; }";
  };
  const bool leading = !kept.empty() && !reduced.empty() && axes.back() < static_cast<int64_t>(axes.size());
  if (leading && n_out <= kColumnAccumulator) {
    // The reduced axes lead (column sums): the rows stream through in order into one accumulator per
    // result element, each still combining its elements in index order.
    Terms within;
    for (const auto& [var, stride] : at)
      if (var[0] == 'k') within.push_back({var, stride});
    const std::string a = "acc[" + affine(within) + "]";
    c.code.line(acc_type + " acc[" + std::to_string(n_out) + "];");
    c.code.line("std::fill(acc, acc + " + std::to_string(n_out) + ", " + acc_type + "(" + init + "));");
    const size_t loops = open_loops(c.code, reduced) + open_loops(c.code, kept);
    c.code.line(combine_into(a));
    close_loops(c.code, loops);
    c.code.line("for (int64_t o = 0; o < " + std::to_string(n_out) + "; ++o) " + c.out[0].ptr + "[o] = static_cast<" +
                t + ">(acc[o]);");
    return;
  }
  const std::string combine = combine_into("acc");
  c.code.line("int64_t o = 0;");
  const size_t outer = open_loops(c.code, kept);
  c.code.line(acc_type + " acc = " + init + ";");
  const size_t inner = open_loops(c.code, reduced);
  c.code.line(combine);
  close_loops(c.code, inner);
  c.code.line(c.out[0].ptr + "[o++] = static_cast<" + t + ">(acc);");
  close_loops(c.code, outer);
}

// argmax/argmin: the first extremum along the axis; a NaN is the extremum (the first one wins).
void emit_arg_reduce(EmitContext& c) {
  const bool is_max = c.eq.primitive->name == "argmax";
  const int64_t axis = c.eq.params->as<reduce_rules::ArgParams>().axes.at(0);
  const Value& x = c.in[0];
  if (c.out[0].aval.shape.num_elements() == 0) return;
  const std::vector<int64_t> strides = strides_of(x.aval.shape);
  std::vector<std::pair<std::string, int64_t>> kept;
  Terms base;
  for (int64_t dim = 0; dim < x.aval.ndim(); ++dim) {
    if (dim == axis) continue;
    kept.push_back({"k" + std::to_string(dim), x.aval.shape[dim]});
    base.push_back({"k" + std::to_string(dim), strides[static_cast<size_t>(dim)]});
  }
  const std::string step = std::to_string(strides[static_cast<size_t>(axis)]);
  c.code.line("int64_t o = 0;");
  const size_t loops = open_loops(c.code, kept);
  c.code.line("const int64_t base = " + affine(base) + ";");
  c.code.line("int64_t best = 0;");
  c.code.open("for (int64_t j = 0; j < " + std::to_string(x.aval.shape[axis]) + "; ++j)");
  c.code.line("const " + std::string(x.type()) + " v = " + x.ptr + "[base + j * " + step + "];");
  c.code.open("if (v != v)");
  c.code.line("best = j;");
  c.code.line("break;");
  c.code.close();
  c.code.line(std::string("if (") +
              (is_max ? x.ptr + "[base + best * " + step + "] < v" : "v < " + x.ptr + "[base + best * " + step + "]") +
              ") best = j;");
  c.code.close();
  c.code.line(c.out[0].ptr + "[o++] = static_cast<" + c.out[0].type() + ">(best);");
  close_loops(c.code, loops);
}

// cumsum, cumprod, cummax, cummin, cumlogsumexp: each row along the axis combined sequentially in
// the CPU kernels' accumulator (primitives/cumulative.hpp), rounded per element: double for f32 (and
// for f32 and f64 sums), unsigned for integer sums, wrapping for integer products.
void emit_cumulative(EmitContext& c) {
  const std::string& name = c.eq.primitive->name;
  const Value& x = c.in[0];
  const DType d = x.aval.dtype;
  const auto& p = c.eq.params->as<reduce_rules::CumsumParams>();
  const Shape& shape = x.aval.shape;
  if (shape.num_elements() == 0) return;
  int64_t outer = 1, inner = 1;
  for (int64_t dim = 0; dim < shape.size(); ++dim) {
    if (dim < p.axis) outer *= shape[dim];
    if (dim > p.axis) inner *= shape[dim];
  }
  const int64_t n = shape[p.axis];
  const std::string acc_type = name == "cumsum" ? sum_accumulator(d) : d == DType::f32 ? "double" : x.type();
  const std::string v = "static_cast<" + acc_type + ">(" + x.ptr + "[at])";
  std::string combine;
  if (name == "cumsum") combine = "acc + " + v;
  else if (name == "cummax") combine = "scalar_functions::Max::apply(acc, " + v + ")";
  else if (name == "cummin") combine = "scalar_functions::Min::apply(acc, " + v + ")";
  else if (name == "cumprod" && !is_floating(d))
    combine = "static_cast<" + acc_type + ">(static_cast<unsigned long long>(acc) * static_cast<unsigned long long>(" +
              v + "))";
  else if (name == "cumprod") combine = "acc * " + v;
  c.code.open("for (int64_t row = 0; row < " + std::to_string(outer * inner) + "; ++row)");
  c.code.line("const int64_t base = (row / " + std::to_string(inner) + ") * " + std::to_string(n * inner) +
              " + row % " + std::to_string(inner) + ";");
  c.code.line(acc_type + " acc = 0;");
  c.code.open("for (int64_t s = 0; s < " + std::to_string(n) + "; ++s)");
  c.code.line("const int64_t at = base + " + (p.reverse ? "(" + std::to_string(n - 1) + " - s)" : std::string("s")) +
              " * " + std::to_string(inner) + ";");
  if (name == "cumlogsumexp") {  // log(exp(acc) + exp(x)): the larger plus log1p(exp(smaller - larger))
    c.code.line("const " + acc_type + " v = " + v + ";");
    c.code.open("if (s == 0 || acc != acc || v != v)");
    c.code.line("acc = s == 0 || v != v ? v : acc;");
    c.code.close("} else {");
    c.code.line("const " + acc_type + " hi = acc < v ? v : acc, lo = acc < v ? acc : v;");
    c.code.line("if (lo - lo == lo - lo) acc = hi + static_cast<" + acc_type + ">(::log1p(::exp(lo - hi)));");
    c.code.line("else acc = hi;  // lo is -inf (or both are +inf): nothing to add");
    c.code.close();
  } else {
    c.code.line("acc = s == 0 ? " + v + " : " + combine + ";");
  }
  c.code.line(c.out[0].ptr + "[at] = static_cast<" + x.type() + ">(acc);");
  c.code.close();
  c.code.close();
}

// dot_general: loops over the batch dims and lhs's free dims; then, when rhs's free dims end with
// its last (contiguous) dim, the contraction loops outside rhs's free loops (a row of rhs streams
// into a row of the result: the i-k-j order of a matrix product), else a dot product per element.
/// The most result elements one dot_general block accumulates in a local array (16 KiB of f32).
inline constexpr int64_t kRowAccumulator = 4096;
/// Contraction steps per pass over a block.
inline constexpr int64_t kUnroll = 4;

void emit_dot_general(EmitContext& c) {
  const auto& p = c.eq.params->as<primitives::dot_general_family::DotGeneralParams>();
  const Value &lhs = c.in[0], &rhs = c.in[1];
  const Shape &ls = lhs.aval.shape, &rs = rhs.aval.shape;
  const std::vector<int64_t> lst = strides_of(ls), rst = strides_of(rs), ost = strides_of(c.out[0].aval.shape);
  const int64_t n_out = c.out[0].aval.shape.num_elements();
  if (n_out == 0) return;
  auto contains = [](const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  std::vector<std::pair<std::string, int64_t>> batch_loops, lhs_loops, rhs_loops, contract_loops;
  Terms l_at, r_at, o_at;
  size_t od = 0;
  for (size_t k = 0; k < p.batch.first.size(); ++k, ++od) {
    const std::string v = "b" + std::to_string(k);
    batch_loops.push_back({v, ls[p.batch.first[k]]});
    l_at.push_back({v, lst[static_cast<size_t>(p.batch.first[k])]});
    r_at.push_back({v, rst[static_cast<size_t>(p.batch.second[k])]});
    o_at.push_back({v, ost[od]});
  }
  for (int64_t d = 0; d < ls.size(); ++d) {
    if (contains(p.batch.first, d) || contains(p.contract.first, d)) continue;
    const std::string v = "m" + std::to_string(d);
    lhs_loops.push_back({v, ls[d]});
    l_at.push_back({v, lst[static_cast<size_t>(d)]});
    o_at.push_back({v, ost[od++]});
  }
  int64_t last_rhs_free = -1;
  for (int64_t d = 0; d < rs.size(); ++d) {
    if (contains(p.batch.second, d) || contains(p.contract.second, d)) continue;
    const std::string v = "n" + std::to_string(d);
    rhs_loops.push_back({v, rs[d]});
    r_at.push_back({v, rst[static_cast<size_t>(d)]});
    o_at.push_back({v, ost[od++]});
    last_rhs_free = d;
  }
  for (size_t k = 0; k < p.contract.first.size(); ++k) {
    const std::string v = "c" + std::to_string(k);
    contract_loops.push_back({v, ls[p.contract.first[k]]});
    l_at.push_back({v, lst[static_cast<size_t>(p.contract.first[k])]});
    r_at.push_back({v, rst[static_cast<size_t>(p.contract.second[k])]});
  }
  const std::string t = c.out[0].type();
  const bool floating = is_floating(c.out[0].aval.dtype);
  auto fma_text = [&](const std::string& acc, const std::string& a, const std::string& b) {
    if (floating) return acc + " = " + acc + " + " + a + " * " + b + ";";
    return acc + " = scalar_functions::Add::apply(" + acc + ", scalar_functions::Mul::apply(" + a + ", " + b + "));";
  };
  const std::string out_at = c.out[0].ptr + "[" + affine(o_at) + "]";
  const std::string l_val = lhs.at(affine(l_at)), r_val = rhs.at(affine(r_at));
  const size_t outer = open_loops(c.code, batch_loops) + open_loops(c.code, lhs_loops);
  int64_t row = 1;  // rhs's free elements: one contiguous block of the result per batch and lhs index
  for (const auto& loop : rhs_loops) row *= loop.second;
  if (last_rhs_free == rs.size() - 1 && !contract_loops.empty() && row <= kRowAccumulator) {
    // The block accumulates in a local array (which no pointer can alias, so compilers vectorise
    // the innermost loop) and is stored once.
    Terms block, within;
    for (size_t i = 0; i < o_at.size(); ++i)
      (i < batch_loops.size() + lhs_loops.size() ? block : within).push_back(o_at[i]);
    const std::string acc = "acc[" + affine(within) + "]";
    c.code.line(t + " acc[" + std::to_string(row) + "] = {};");
    if (contract_loops.size() == 1 && contract_loops[0].second >= 2 * kUnroll) {
      // kUnroll contraction steps per pass over the block: each element still adds its products in
      // index order (the same roundings), with a quarter of the block's loads and stores.
      const int64_t extent = contract_loops[0].second;
      c.code.line("int64_t c0 = 0;");
      c.code.open("for (; c0 + " + std::to_string(kUnroll) + " <= " + std::to_string(extent) +
                  "; c0 += " + std::to_string(kUnroll) + ")");
      std::vector<std::string> r_vals;
      for (int64_t u = 0; u < kUnroll; ++u) {
        Terms lu = l_at, ru = r_at;
        for (auto& term : lu)
          if (term.first == "c0") term.first = "(c0 + " + std::to_string(u) + ")";
        for (auto& term : ru)
          if (term.first == "c0") term.first = "(c0 + " + std::to_string(u) + ")";
        c.code.line("const " + t + " a" + std::to_string(u) + " = " + lhs.at(affine(lu)) + ";");
        r_vals.push_back(rhs.at(affine(ru)));
      }
      const size_t n = open_loops(c.code, rhs_loops);
      c.code.line(t + " sum = " + acc + ";");
      for (int64_t u = 0; u < kUnroll; ++u) c.code.line(fma_text("sum", "a" + std::to_string(u), r_vals[u]));
      c.code.line(acc + " = sum;");
      close_loops(c.code, n);
      c.code.close();
      c.code.open("for (; c0 < " + std::to_string(extent) + "; ++c0)");
    } else {
      open_loops(c.code, contract_loops);
    }
    c.code.line("const " + t + " a = " + l_val + ";");
    const size_t n = open_loops(c.code, rhs_loops);
    c.code.line(fma_text(acc, "a", r_val));
    close_loops(c.code, n + (contract_loops.size() == 1 ? 1 : contract_loops.size()));
    c.code.line("std::memcpy(" + c.out[0].ptr + " + " + affine(block) + ", acc, sizeof acc);");
  } else if (last_rhs_free == rs.size() - 1 && !contract_loops.empty()) {
    size_t n = open_loops(c.code, rhs_loops);
    c.code.line(out_at + " = " + t + "(0);");
    close_loops(c.code, n);
    const size_t k = open_loops(c.code, contract_loops);
    c.code.line("const " + t + " a = " + l_val + ";");
    n = open_loops(c.code, rhs_loops);
    c.code.line(fma_text(out_at, "a", r_val));
    close_loops(c.code, n + k);
  } else {
    const size_t n = open_loops(c.code, rhs_loops);
    c.code.line(t + " acc = " + t + "(0);");
    const size_t k = open_loops(c.code, contract_loops);
    c.code.line(fma_text("acc", l_val, r_val));
    close_loops(c.code, k);
    c.code.line(out_at + " = acc;");
    close_loops(c.code, n);
  }
  close_loops(c.code, outer);
}

void add_reduce_rules(std::map<std::string, EmitRule>& table) {
  for (const char* r : {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min"}) table[r] = &emit_reduce;
  table["argmax"] = &emit_arg_reduce;
  table["argmin"] = &emit_arg_reduce;
  for (const char* r : {"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"}) table[r] = &emit_cumulative;
  table["dot_general"] = &emit_dot_general;
}

}  // namespace fluxion::codegen_detail
