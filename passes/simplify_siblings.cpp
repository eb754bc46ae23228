// The sibling-product rule of simplify.
//
// Matrix-vector products that share their matrix (the same variable, in the same operand
// position, with equal params and no batch dims) and whose vectors have equal avals become one
// product with the N vectors stacked as columns: the matrix is read once instead of N times
// (measured: bench/RESULTS.md). The first product's equation is rewritten with every later
// sibling whose vector is already defined; each later output is then replaced by its column of
// the stacked product (Sweep::replace_later), and its equation dropped.
#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "passes/simplify.hpp"

namespace fluxion::passes {
namespace simplify_siblings {

using simplify_detail::Sweep;

/// Shared matrices smaller than this many elements are left alone: reading them twice is cheap,
/// and two small GEMVs beat a concatenation, a thin product and two slices.
constexpr int64_t kMinSharedElements = int64_t(1) << 16;

/// The position (0: lhs, 1: rhs) of the vector operand of a dot_general with no batch dims whose
/// other operand is at least kMinSharedElements large, or -1.
int vector_side(const Sweep& s, const Equation& e) {
  if (e.primitive != &dot_general_family::dot_general_p() ||
      !e.params->as<dot_general_family::DotGeneralParams>().batch.first.empty())
    return -1;
  const AbstractValue l = s.aval(e.inputs[0]), r = s.aval(e.inputs[1]);
  if (r.shape.size() == 1 && l.shape.size() >= 2 && l.shape.num_elements() >= kMinSharedElements) return 1;
  if (l.shape.size() == 1 && r.shape.size() >= 2 && r.shape.num_elements() >= kMinSharedElements) return 0;
  return -1;
}

/// The later products reading `shared` on the other side of `side` with e's params, whose
/// vectors are defined by now and have the aval of e's; their vectors are appended to `vectors`.
std::vector<const Equation*> later_siblings(Sweep& s, const Equation& e, int side, std::vector<Atom>& vectors) {
  const Atom shared = e.inputs[1 - side];
  std::vector<const Equation*> out;
  for (const Equation* later : s.later_readers(shared)) {
    if (later->primitive != e.primitive || later->outputs.size() != 1 || !later->params->equals(*e.params)) continue;
    if (vector_side(s, *later) != side || later->inputs[1 - side].is_literal() ||
        later->inputs[1 - side].var != shared.var)
      continue;
    // An output already replaced (by an earlier product's stack) is defined by now: leave it.
    if (s.available(Atom::of_var(later->outputs[0]))) continue;
    const std::optional<Atom> vector = s.available(later->inputs[side]);
    if (!vector || s.aval(*vector) != s.aval(vectors.front())) continue;
    out.push_back(later);
    vectors.push_back(*vector);
  }
  return out;
}

std::optional<Atom> sibling_products(Sweep& s, const Equation& e, const AbstractValue& out) {
  const int side = vector_side(s, e);
  if (side < 0 || e.inputs[1 - side].is_literal()) return std::nullopt;
  std::vector<Atom> vectors{e.inputs[side]};
  const std::vector<const Equation*> siblings = later_siblings(s, e, side, vectors);
  if (siblings.empty()) return std::nullopt;
  // The vectors as the columns of a [k, N] operand: its contracting dim 0 is theirs, and the
  // product's new dim (last for a rhs, first for a lhs) indexes the N results.
  const int64_t n = static_cast<int64_t>(vectors.size());
  const Params& params = *e.params;
  std::vector<int64_t> dims(out.shape.dims());
  dims.insert(side == 1 ? dims.end() : dims.begin(), n);
  std::vector<Atom> args{e.inputs[1 - side]};
  args.insert(args.end(), vectors.begin(), vectors.end());
  const std::optional<Atom> all = s.emit({Shape(dims), out.dtype}, args, [&](const std::vector<Tensor>& x) {
    const Tensor columns = fluxion::stack(std::vector<Tensor>(x.begin() + 1, x.end()), 1);
    const AxisPair& contract = params.as<dot_general_family::DotGeneralParams>().contract;
    return side == 1 ? lax::dot_general(x[0], columns, contract, {{}, {}})
                     : lax::dot_general(columns, x[0], contract, {{}, {}});
  });
  if (!all) return std::nullopt;
  const int64_t stack_dim = side == 1 ? static_cast<int64_t>(dims.size()) - 1 : 0;
  auto column = [&](int64_t j) {
    return s.emit(out, {*all}, [&](const std::vector<Tensor>& x) {
      std::vector<int64_t> start(dims.size(), 0), limit(dims);
      start[static_cast<size_t>(stack_dim)] = j, limit[static_cast<size_t>(stack_dim)] = j + 1;
      return lax::squeeze(lax::slice(x[0], start, limit, {}), {stack_dim});
    });
  };
  std::vector<Atom> columns;
  for (int64_t j = 0; j < n; ++j) {
    const std::optional<Atom> c = column(j);
    if (!c) return std::nullopt;
    columns.push_back(*c);
  }
  for (size_t i = 0; i < siblings.size(); ++i) s.replace_later(siblings[i]->outputs[0], columns[i + 1]);
  return columns[0];
}

}  // namespace simplify_siblings
}  // namespace fluxion::passes
