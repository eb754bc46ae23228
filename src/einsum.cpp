// einsum (include/fluxion/einsum.hpp): parse the subscripts into one label per operand dim (ellipsis
// dims get labels of their own), then lower: per operand, stretchable size-1 ellipsis dims dropped,
// diagonals of repeated labels taken (a transpose, a reshape to n*n and a slice with stride n + 1:
// exact, no mask), labels no other operand or the output uses summed; then pairs contracted by one
// dot_general each in the planner's greedy order; finally the labels left out of the output summed
// and the rest transposed into the output's order.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "fluxion/einsum.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"

namespace fluxion {
namespace einsum_detail {

/// A letter's character code, or kEllipsisLabel + k for the k-th broadcast (ellipsis) dim.
using Label = int;
constexpr Label kEllipsisLabel = 1000;
using Labels = std::vector<Label>;

/// The parsed subscripts: one label per dim of every operand, the output's labels, each label's size
/// (ellipsis labels: the broadcast size).
struct Spec {
  std::vector<Labels> inputs;
  Labels output;
  std::map<Label, int64_t> sizes;
};

std::string label_name(Label l) {
  if (l >= kEllipsisLabel) return "... dim " + std::to_string(l - kEllipsisLabel);
  return std::string(1, static_cast<char>(l));
}

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// One term: its letters before and after a '...' (all in `before` without one).
struct Term {
  std::string before, after;
  bool ellipsis = false;
  size_t letters() const { return before.size() + after.size(); }
};

Term parse_term(const std::string& subscripts, const std::string& term, const std::string& whose) {
  Term t;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (is_letter(c)) {
      (t.ellipsis ? t.after : t.before) += c;
    } else if (c == '.') {
      if (term.compare(i, 3, "...") != 0)
        detail::fail<Error>("einsum", "subscripts \"", subscripts, "\": ", whose, "'s term \"", term,
                            "\" has a '.' that is not part of '...'. Write broadcast dims as '...'.");
      if (t.ellipsis)
        detail::fail<Error>("einsum", "subscripts \"", subscripts, "\": ", whose, "'s term \"", term,
                            "\" has more than one '...'. Use at most one per term.");
      t.ellipsis = true;
      i += 2;
    } else {
      detail::fail<Error>("einsum", "subscripts \"", subscripts, "\": ", whose, "'s term \"", term,
                          "\" has the invalid character '", c, "'. Use letters a-z, A-Z and '...'.");
    }
  }
  return t;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep) parts.emplace_back();
    else parts.back() += c;
  }
  return parts;
}

Spec parse(const std::string& subscripts, const std::vector<Shape>& shapes) {
  std::string s;
  for (char c : subscripts)
    if (c != ' ') s += c;
  const size_t arrow = s.find("->");
  if (arrow != std::string::npos && s.find("->", arrow + 2) != std::string::npos)
    detail::fail<Error>("einsum", "subscripts \"", subscripts, "\" have more than one '->'. Write inputs->output.");
  const std::string lhs = s.substr(0, arrow);
  const std::vector<std::string> terms = split(lhs, ',');
  if (shapes.empty()) detail::fail<ShapeError>("einsum", "needs at least one operand, got none.");
  if (terms.size() != shapes.size())
    detail::fail<ShapeError>("einsum", "subscripts \"", subscripts, "\" have ", terms.size(), " input term(s) but ",
                             shapes.size(), " operand(s) were given. Give one comma-separated term per operand.");
  Spec spec;
  std::vector<Term> parsed;
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string whose = "operand " + std::to_string(i);
    parsed.push_back(parse_term(subscripts, terms[i], whose));
    const Term& t = parsed.back();
    const int64_t rank = static_cast<int64_t>(shapes[i].size()), named = static_cast<int64_t>(t.letters());
    if (t.ellipsis ? named > rank : named != rank)
      detail::fail<ShapeError>("einsum", "subscripts \"", subscripts, "\": ", whose, "'s term \"", terms[i], "\" has ",
                               named, " label(s) but the operand has shape ", shapes[i], " (rank ", rank,
                               "). Give one label per dim", t.ellipsis ? "" : ", or '...' for the leading ones", ".");
    if (t.ellipsis) ellipsis_rank = std::max(ellipsis_rank, rank - named);
  }
  // Labels per operand dim, with the sizes checked (ellipsis dims right-aligned and broadcast).
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Term& t = parsed[i];
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    const int64_t own = t.ellipsis ? rank - static_cast<int64_t>(t.letters()) : 0;
    Labels labels;
    for (char c : t.before) labels.push_back(c);
    for (int64_t k = 0; k < own; ++k) labels.push_back(kEllipsisLabel + static_cast<Label>(ellipsis_rank - own + k));
    for (char c : t.after) labels.push_back(c);
    for (int64_t d = 0; d < rank; ++d) {
      const Label l = labels[static_cast<size_t>(d)];
      const int64_t size = shapes[i][d];
      auto it = spec.sizes.find(l);
      if (it == spec.sizes.end()) {
        spec.sizes[l] = size;
      } else if (it->second != size) {
        if (l >= kEllipsisLabel && (it->second == 1 || size == 1)) {
          it->second = std::max(it->second, size);
          continue;
        }
        // Name the first operand that gave the label its size.
        size_t first = 0;
        for (; first < i; ++first)
          if (std::find(spec.inputs[first].begin(), spec.inputs[first].end(), l) != spec.inputs[first].end()) break;
        if (l >= kEllipsisLabel)
          detail::fail<ShapeError>("einsum", "subscripts \"", subscripts, "\": the '...' dims of operand ", first, " ",
                                   shapes[first], " and operand ", i, " ", shapes[i],
                                   " do not broadcast. They must be equal or 1, aligned from the right.");
        detail::fail<ShapeError>("einsum", "subscripts \"", subscripts, "\": label '", label_name(l), "' has size ",
                                 it->second, " in operand ", first, " ", shapes[first], " but ", size, " in operand ",
                                 i, " ", shapes[i], ". Every dim with one label must have one size.");
      }
    }
    spec.inputs.push_back(labels);
  }
  Labels ellipsis_labels;
  for (int64_t k = 0; k < ellipsis_rank; ++k) ellipsis_labels.push_back(kEllipsisLabel + static_cast<Label>(k));
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis dims, then the letters used once, in sorted order.
    std::map<Label, int> uses;
    for (const Term& t : parsed)
      for (char c : t.before + t.after) ++uses[c];
    spec.output = ellipsis_labels;
    for (const auto& [l, n] : uses)
      if (n == 1) spec.output.push_back(l);
    return spec;
  }
  const std::string rhs = s.substr(arrow + 2);
  const Term out = parse_term(subscripts, rhs, "the output");
  for (char c : out.before) spec.output.push_back(c);
  if (out.ellipsis) spec.output.insert(spec.output.end(), ellipsis_labels.begin(), ellipsis_labels.end());
  for (char c : out.after) spec.output.push_back(c);
  std::set<char> seen;
  for (char c : out.before + out.after) {
    if (!seen.insert(c).second)
      detail::fail<Error>("einsum", "subscripts \"", subscripts, "\": the output repeats label '", c,
                          "'. Name each output dim once (a diagonal is taken with a repeat in an input term).");
    if (!spec.sizes.count(c))
      detail::fail<Error>("einsum", "subscripts \"", subscripts, "\": output label '", c,
                          "' appears in no input term. Every output label must label some operand dim.");
  }
  return spec;
}

bool contains(const Labels& ls, Label l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

/// Labels of operand `i` that must survive its own preprocessing: used by the output or another
/// operand, without repeats and without stretchable size-1 ellipsis dims (in first-use order).
Labels surviving(const Spec& spec, const std::vector<Labels>& operands, size_t i, const Shape* shape) {
  Labels out;
  for (size_t d = 0; d < operands[i].size(); ++d) {
    const Label l = operands[i][d];
    if (contains(out, l)) continue;
    if (shape && l >= kEllipsisLabel && (*shape)[static_cast<int64_t>(d)] == 1 && spec.sizes.at(l) != 1) continue;
    bool used = contains(spec.output, l);
    for (size_t j = 0; j < operands.size() && !used; ++j) used = j != i && contains(operands[j], l);
    if (used) out.push_back(l);
  }
  return out;
}

double elements(const Spec& spec, const Labels& ls) {
  double n = 1;
  for (Label l : ls) n *= static_cast<double>(spec.sizes.at(l));
  return n;
}

/// The greedy order: each step, the pair whose result has the fewest elements, then the fewest
/// multiply-adds, then the first in (i, j) order; the result replaces the pair at the end of the list.
std::vector<std::pair<int64_t, int64_t>> plan(const Spec& spec, std::vector<Labels> ops) {
  std::vector<std::pair<int64_t, int64_t>> steps;
  while (ops.size() > 1) {
    double best_size = 0, best_cost = 0;
    size_t bi = 0, bj = 1;
    Labels best_result;
    for (size_t i = 0; i < ops.size(); ++i)
      for (size_t j = i + 1; j < ops.size(); ++j) {
        Labels all = ops[i], result;
        for (Label l : ops[j])
          if (!contains(all, l)) all.push_back(l);
        for (Label l : all) {
          bool keep = contains(spec.output, l);
          for (size_t k = 0; k < ops.size() && !keep; ++k) keep = k != i && k != j && contains(ops[k], l);
          if (keep) result.push_back(l);
        }
        const double size = elements(spec, result), cost = elements(spec, all);
        if ((i == 0 && j == 1) || size < best_size || (size == best_size && cost < best_cost)) {
          best_size = size, best_cost = cost, bi = i, bj = j, best_result = result;
        }
      }
    steps.emplace_back(static_cast<int64_t>(bi), static_cast<int64_t>(bj));
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(bj));
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(bi));
    ops.push_back(best_result);
  }
  return steps;
}

/// A tensor with one label per dim.
struct Labeled {
  Tensor x;
  Labels labels;
};

/// x summed over its labels that are not in `keep`.
Labeled sum_except(Labeled a, const Labels& keep) {
  std::vector<int64_t> axes;
  Labels rest;
  for (size_t d = 0; d < a.labels.size(); ++d) {
    if (contains(keep, a.labels[d])) rest.push_back(a.labels[d]);
    else axes.push_back(static_cast<int64_t>(d));
  }
  if (axes.empty()) return a;
  return {lax::reduce_sum(a.x, axes), rest};
}

/// The diagonal over dims p < q (equal sizes n): both moved last, merged to n*n, every (n+1)-th kept.
Labeled diagonal(const Labeled& a, size_t p, size_t q) {
  std::vector<int64_t> perm;
  Labels labels;
  for (size_t d = 0; d < a.labels.size(); ++d)
    if (d != p && d != q) perm.push_back(static_cast<int64_t>(d)), labels.push_back(a.labels[d]);
  perm.push_back(static_cast<int64_t>(p));
  perm.push_back(static_cast<int64_t>(q));
  Tensor t = lax::transpose(a.x, perm);
  const int64_t n = a.x.shape()[static_cast<int64_t>(p)];
  std::vector<int64_t> merged(t.shape().begin(), t.shape().end() - 2);
  merged.push_back(n * n);
  t = lax::reshape(t, Shape(merged));
  std::vector<int64_t> start(merged.size(), 0), limit = merged, strides(merged.size(), 1);
  strides.back() = n + 1;
  t = lax::slice(t, start, limit, strides);
  labels.push_back(a.labels[p]);
  return {t, labels};
}

Labeled preprocess(const Spec& spec, const std::vector<Labels>& operands, size_t i, const Tensor& x) {
  const Labels keep = surviving(spec, operands, i, &x.shape());
  Labeled a{x, operands[i]};
  // Stretchable size-1 ellipsis dims: dropped, so that the other operands' sizes apply.
  std::vector<int64_t> drop;
  Labels kept_labels;
  for (size_t d = 0; d < a.labels.size(); ++d) {
    const Label l = a.labels[d];
    if (l >= kEllipsisLabel && x.shape()[static_cast<int64_t>(d)] == 1 && spec.sizes.at(l) != 1)
      drop.push_back(static_cast<int64_t>(d));
    else kept_labels.push_back(l);
  }
  if (!drop.empty()) a = {lax::squeeze(a.x, drop), kept_labels};
  for (bool repeated = true; repeated;) {
    repeated = false;
    for (size_t p = 0; p < a.labels.size() && !repeated; ++p)
      for (size_t q = p + 1; q < a.labels.size() && !repeated; ++q)
        if (a.labels[p] == a.labels[q]) a = diagonal(a, p, q), repeated = true;
  }
  return sum_except(a, keep);
}

/// One dot_general: shared labels still needed are batch dims, the other shared ones contracted.
Labeled contract(Labeled a, Labeled b, const Labels& keep) {
  Labels keep_a = keep, keep_b = keep;
  keep_a.insert(keep_a.end(), b.labels.begin(), b.labels.end());
  keep_b.insert(keep_b.end(), a.labels.begin(), a.labels.end());
  a = sum_except(a, keep_a);
  b = sum_except(b, keep_b);
  AxisPair contracting, batch;
  Labels out;
  for (size_t d = 0; d < a.labels.size(); ++d) {
    const auto it = std::find(b.labels.begin(), b.labels.end(), a.labels[d]);
    if (it == b.labels.end()) continue;
    auto& pair = contains(keep, a.labels[d]) ? batch : contracting;
    pair.first.push_back(static_cast<int64_t>(d));
    pair.second.push_back(static_cast<int64_t>(it - b.labels.begin()));
    if (&pair == &batch) out.push_back(a.labels[d]);
  }
  for (Label l : a.labels)
    if (!contains(b.labels, l)) out.push_back(l);
  for (Label l : b.labels)
    if (!contains(a.labels, l)) out.push_back(l);
  return {lax::dot_general(a.x, b.x, contracting, batch), out};
}

}  // namespace einsum_detail

std::vector<std::pair<int64_t, int64_t>> einsum_path(const std::string& subscripts, const std::vector<Shape>& shapes) {
  using namespace einsum_detail;
  const Spec spec = parse(subscripts, shapes);
  std::vector<Labels> ops;
  for (size_t i = 0; i < shapes.size(); ++i) ops.push_back(surviving(spec, spec.inputs, i, &shapes[i]));
  return plan(spec, ops);
}

Tensor einsum(const std::string& subscripts, const std::vector<Tensor>& operands) {
  using namespace einsum_detail;
  std::vector<Shape> shapes;
  for (const Tensor& x : operands) shapes.push_back(x.shape());
  const Spec spec = parse(subscripts, shapes);
  DType dtype = operands[0].dtype();
  for (const Tensor& x : operands) dtype = promote_types(dtype, x.dtype());
  std::vector<Labeled> ops;
  for (size_t i = 0; i < operands.size(); ++i)
    ops.push_back(preprocess(spec, spec.inputs, i, astype(operands[i], dtype)));
  std::vector<Labels> label_sets;
  for (const Labeled& a : ops) label_sets.push_back(a.labels);
  for (const auto& [i, j] : plan(spec, label_sets)) {
    Labels keep = spec.output;
    for (size_t k = 0; k < ops.size(); ++k)
      if (k != static_cast<size_t>(i) && k != static_cast<size_t>(j))
        keep.insert(keep.end(), ops[k].labels.begin(), ops[k].labels.end());
    Labeled result = contract(ops[static_cast<size_t>(i)], ops[static_cast<size_t>(j)], keep);
    ops.erase(ops.begin() + j);
    ops.erase(ops.begin() + i);
    ops.push_back(result);
  }
  Labeled last = sum_except(ops[0], spec.output);
  std::vector<int64_t> perm;
  for (Label l : spec.output)
    perm.push_back(std::find(last.labels.begin(), last.labels.end(), l) - last.labels.begin());
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == static_cast<int64_t>(d);
  return identity ? last.x : lax::transpose(last.x, perm);
}

}  // namespace fluxion
