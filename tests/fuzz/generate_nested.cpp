// The random program generator: control flow (cond, switch_, scan, fori_loop, while_loop) and
// transforms inside the program (grad, jvp, vmap, jit, checkpoint), each holding sub-programs
// that may close over the enclosing program's values; the top-level program; and analyze().
#include <algorithm>

#include "fuzz/generator.hpp"

namespace fluxion::fuzz {

namespace {

bool small(const AbstractValue& a, int64_t n) { return a.shape.num_elements() <= n; }

AbstractValue without_leading(const AbstractValue& a) {
  return AbstractValue{Shape(a.shape.dims().begin() + 1, a.shape.dims().end()), a.dtype};
}

bool is_branch(Op op) { return op == Op::Cond || op == Op::Switch; }

// True when reverse mode cannot go through `nd` by nature: a while_loop without max_steps, or a
// fori_loop with Tensor bounds (a while_loop underneath).
bool blocks_reverse(const Node& nd) {
  return (nd.op == Op::WhileLoop && nd.ints[0] < 0) || (nd.op == Op::ForiLoop && nd.flag);
}

void analyze_into(Program& top, const Program& p, int depth) {
  for (const AbstractValue& a : p.inputs) top.has_f32 = top.has_f32 || a.dtype == f32;
  for (const Node& nd : p.nodes) {
    top.has_f32 = top.has_f32 || nd.aval.dtype == f32;
    if (blocks_reverse(nd)) top.reverse_ok = false;
    if (is_branch(nd.op) && nd.flag && depth == 0) top.data_predicates = true;
    for (const auto& sub : nd.subs) analyze_into(top, *sub, depth + 1);
  }
}

}  // namespace

void analyze(Program& p) {
  p.reverse_ok = true;
  p.has_f32 = false;
  p.data_predicates = false;
  analyze_into(p, p, 0);
}

bool Generator::allowed(const Scope& s, Op op) const {
  if (!s.reverse_needed) return true;
  Node nd;
  nd.op = op;
  nd.ints = {0};
  return !blocks_reverse(nd);
}

std::shared_ptr<Program> Generator::sub_program(const Scope& parent, Op kind,
                                                const std::vector<AbstractValue>& in_avals,
                                                const std::vector<Info>& in_infos, int counter,
                                                const std::vector<const AbstractValue*>& targets, double carry_limit,
                                                std::vector<Info>& out_infos) {
  auto prog = std::make_shared<Program>();
  prog->inputs = in_avals;
  Scope s;
  s.p = prog.get();
  s.info = in_infos;
  s.depth = parent.depth + 1;
  s.reverse_needed = parent.reverse_needed || kind == Op::GradOf;
  s.counter = counter;
  int last = fill(s, uniform(1, 3));
  for (size_t k = 0; k < targets.size(); ++k) {
    int id = k == 0 ? last : pick(s, [](int) { return true; });
    if (targets[k]) id = coerce(s, id, *targets[k]);
    if (k == 0 && carry_limit > 0) id = bounded(s, id, carry_limit);
    prog->outputs.push_back(id);
  }
  for (int id : prog->outputs) out_infos.push_back(s.info[static_cast<size_t>(id)]);
  *prog = dead_code_eliminated(*prog);
  return prog;
}

int Generator::control_flow(Scope& s) {
  Node nd;
  nd.op = chance(0.6) ? Op::Cond : Op::Switch;
  if (!allowed(s, nd.op)) return -1;
  std::vector<int> ops{pick(s, [&](int i) { return small(s.p->aval_of(i), 16); })};
  if (ops[0] < 0) return -1;
  if (chance(0.4)) ops.push_back(pick(s, [](int) { return true; }));
  // Predicates on data only at the top level, where eager runs log them (finite differences skip
  // points on the other side of a branch); in a loop body, on the loop counter; else constants.
  if (s.depth == 0 && chance(0.6)) {
    nd.flag = true;
    nd.args = {pick(s, [](int) { return true; })};
    nd.x = nd.op == Op::Cond ? real(-0.5, 0.5) : real(-1.5, -0.2);
    nd.y = real(0.2, 1.5);
  } else if (s.counter >= 0 && chance(0.7)) {
    nd.flag = true;
    nd.args = {s.counter};
    nd.x = uniform(0, 2) + 0.5;
    nd.y = nd.x + uniform(1, 2);
  } else if (nd.op == Op::Cond) {
    nd.constant = scalar<bool>(chance(0.5));
  } else {
    nd.constant = scalar<int32_t>(uniform(-1, 3));  // clamped into the valid range
  }
  nd.args.insert(nd.args.end(), ops.begin(), ops.end());
  std::vector<AbstractValue> avals;
  std::vector<Info> infos;
  for (int o : ops) avals.push_back(s.p->aval_of(o)), infos.push_back(s.info[static_cast<size_t>(o)]);
  AbstractValue target = avals[0];
  Info out{0, false};
  for (int b = nd.op == Op::Cond ? 2 : uniform(2, 3); b > 0; --b) {
    std::vector<Info> outs;
    nd.subs.push_back(sub_program(s, nd.op, avals, infos, -1, {&target}, 0, outs));
    out.bound = std::max(out.bound, outs[0].bound);
    out.repeats = out.repeats || outs[0].repeats;
  }
  return add(s, nd, out);
}

int Generator::loop(Scope& s) {
  Node nd;
  int which = uniform(0, 2);
  if (!allowed(s, Op::Scan)) return -1;  // any loop is control flow
  int c = pick(s, [&](int i) { return small(s.p->aval_of(i), 16); });
  if (c < 0) return -1;
  AbstractValue cv = s.p->aval_of(c);
  Info ic = s.info[static_cast<size_t>(c)];
  double limit = std::max(ic.bound, 1.0);
  std::vector<int> closed;
  if (chance(0.4)) closed.push_back(pick(s, [](int) { return true; }));
  std::vector<AbstractValue> avals;
  std::vector<Info> infos;
  std::vector<Info> outs;
  if (which == 0) {
    nd.op = Op::Scan;
    int xs = pick(s, [&](int i) {
      AbstractValue v = s.p->aval_of(i);
      return v.ndim() >= 1 && v.shape[0] <= 4 && small(v, 24);
    });
    if (xs < 0) return -1;
    nd.args = {c, xs};
    avals = {cv, without_leading(s.p->aval_of(xs))};
    Info slice = s.info[static_cast<size_t>(xs)];
    slice.token = fresh_token();
    infos = {Info{limit, ic.repeats, ic.token}, slice};  // the carry starts as c
  } else {
    nd.op = which == 1 ? Op::ForiLoop : Op::WhileLoop;
    nd.args = {c};
    int64_t trips = uniform(0, 4);
    if (nd.op == Op::ForiLoop) {
      int64_t lo = uniform(0, 2);
      nd.ints = {lo, lo + trips};
      nd.flag = !s.reverse_needed && chance(0.2);  // Tensor bounds: a while_loop, forward mode only
    } else {
      nd.n = trips;
      bool bounded = s.reverse_needed || chance(0.75);  // max_steps, or forward mode only
      nd.ints = {bounded ? uniform(std::max<int>(0, static_cast<int>(trips) - 1), static_cast<int>(trips) + 2) : -1};
    }
    avals = {AbstractValue{Shape{}, cv.dtype}, cv};
    infos = {Info{6, false, fresh_token()}, Info{limit, ic.repeats, ic.token}};
  }
  for (int k : closed) avals.push_back(s.p->aval_of(k)), infos.push_back(s.info[static_cast<size_t>(k)]);
  nd.args.insert(nd.args.end(), closed.begin(), closed.end());
  if (nd.op == Op::Scan) {
    nd.subs.push_back(sub_program(s, nd.op, avals, infos, -1, {&cv, nullptr}, limit, outs));
    nd.flag = chance(0.3);
    nd.n = chance(0.5) ? 1 : 0;
    AbstractValue y = nd.subs[0]->aval_of(nd.subs[0]->outputs[1]);
    if (nd.n == 1 && y.shape.num_elements() * s.p->aval_of(nd.args[1]).shape[0] > kMaxElements) nd.n = 0;
    return add(s, nd, nd.n == 0 ? outs[0] : outs[1]);
  }
  nd.subs.push_back(sub_program(s, nd.op, avals, infos, 0, {&cv}, limit, outs));
  return add(s, nd, outs[0]);
}

int Generator::inner_transform(Scope& s) {
  Node nd;
  static const Op ops[] = {Op::GradOf,       Op::JvpOf,     Op::VmapOf,   Op::JitOf,
                           Op::CheckpointOf, Op::CustomJvp, Op::CustomVjp};
  nd.op = ops[uniform(0, 6)];
  if (nd.op == Op::CustomJvp || nd.op == Op::CustomVjp) return custom_rule(s, nd.op);
  if (!allowed(s, nd.op)) return -1;
  int a = pick(s, [&](int i) {
    AbstractValue v = s.p->aval_of(i);
    return small(v, 16) && (nd.op != Op::VmapOf || v.ndim() >= 1);
  });
  if (a < 0) return -1;
  AbstractValue av = s.p->aval_of(a);
  nd.args = {a};
  nd.n = 1;  // arguments passed to the transformed function; the rest are closed over
  if (nd.op == Op::JvpOf) {
    int t = pick(s, [&](int j) { return s.p->aval_of(j) == av; });
    if (chance(0.3)) nd.constant = constant(av, -1, 1);
    else nd.args.push_back(t), nd.n = 2;
  }
  if ((nd.op == Op::JitOf || nd.op == Op::CheckpointOf) && chance(0.4)) {
    nd.args.push_back(pick(s, [](int) { return true; }));
    nd.n = 2;
  }
  if (chance(0.4)) nd.args.push_back(pick(s, [](int) { return true; }));
  std::vector<AbstractValue> avals;
  std::vector<Info> infos;
  for (size_t i = 0; i < nd.args.size(); ++i) {
    if (nd.op == Op::JvpOf && nd.n == 2 && i == 1) continue;  // the tangent is not an input of f
    avals.push_back(s.p->aval_of(nd.args[i]));
    infos.push_back(s.info[static_cast<size_t>(nd.args[i])]);
  }
  if (nd.op == Op::VmapOf) avals[0] = without_leading(avals[0]), infos[0].token = fresh_token();
  AbstractValue scalar_target{Shape{}, av.dtype};
  std::vector<Info> outs;
  nd.subs.push_back(sub_program(s, nd.op, avals, infos, -1, {nd.op == Op::GradOf ? &scalar_target : nullptr}, 0, outs));
  Info out = outs[0];
  // Derivatives have no bound the generator tracks: squashed before use.
  if (nd.op == Op::GradOf || nd.op == Op::JvpOf) out = Info{1e3, true};
  return add(s, nd, out);
}

int Generator::custom_rule(Scope& s, Op op) {
  Node nd;
  nd.op = op;
  int a = pick(s, [](int) { return true; });
  Info ia = s.info[static_cast<size_t>(a)];
  nd.args = {a};
  if (op == Op::CustomVjp) return add(s, nd, Info{ia.bound * ia.bound, ia.repeats});
  Shape as = s.p->aval_of(a).shape;
  int b = pick(s, [&](int j) {
    AbstractValue bv = s.p->aval_of(j);
    return (bv.shape == as || bv.shape.size() == 0 || as.size() == 0) && bv.dtype == s.p->aval_of(a).dtype;
  });
  nd.args.push_back(b);
  return add(s, nd, Info{ia.bound, ia.repeats || s.info[static_cast<size_t>(b)].repeats});
}

Program Generator::top() {
  Program p;
  for (int n = uniform(1, 3); n > 0; --n) {
    int r = uniform(0, 19);
    int rank = r < 2 ? 0 : r < 9 ? 1 : r < 17 ? 2 : 3;
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(uniform(1, rank == 3 ? 3 : 4));
    p.inputs.push_back(AbstractValue{Shape(dims), chance(0.08) ? f32 : f64});
  }
  Scope s;
  s.p = &p;
  for (size_t i = 0; i < p.inputs.size(); ++i) s.info.push_back(Info{2, false, fresh_token()});
  int last = fill(s, uniform(1, opt_.max_nodes));
  // Values nothing uses join the result (last + sum(v)), so that no generated node is dead code.
  std::vector<bool> used(static_cast<size_t>(p.num_values()), false);
  for (const Node& nd : p.nodes)
    for (int a : nd.args) used[static_cast<size_t>(a)] = true;
  int n_in = static_cast<int>(p.inputs.size()), joined = 0, end = last;
  for (int v = n_in; v < end && joined < 3; ++v) {
    if (used[static_cast<size_t>(v)]) continue;
    Node total;
    total.op = Op::Sum;
    total.args = {v};
    Info iv = s.info[static_cast<size_t>(v)];
    int t = add(s, total, Info{iv.bound * static_cast<double>(p.aval_of(v).shape.num_elements()), iv.repeats});
    Node plus;
    plus.op = Op::Add;
    plus.args = {last, t};
    Info il = s.info[static_cast<size_t>(last)];
    last = add(s, plus, Info{il.bound + s.info[static_cast<size_t>(t)].bound, il.repeats});
    ++joined;
  }
  p.outputs = {last};
  Program out = dead_code_eliminated(p);
  analyze(out);
  return out;
}

Program generate(uint64_t seed, const GenOptions& options) {
  Generator g(seed * 0x9e3779b97f4a7c15ULL + 1, options);
  return g.top();
}

}  // namespace fluxion::fuzz
