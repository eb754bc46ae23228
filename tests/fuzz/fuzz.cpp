// The fuzzing loop: generate, check, shrink a failing program and report it.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "fuzz/checks.hpp"

namespace fluxion::fuzz {

namespace {

// Every value id in p (inputs included) that `use` replaces: uses of `from` become `to`.
Program replace_uses(const Program& p, int from, int to) {
  Program q = p;
  for (Node& nd : q.nodes)
    for (int& a : nd.args)
      if (a == from) a = to;
  for (int& o : q.outputs)
    if (o == from) o = to;
  return dead_code_eliminated(q);
}

// Smaller variants of p, the largest reductions first. `top`: the output may change type.
std::vector<Program> candidates(const Program& p, bool top) {
  std::vector<Program> out;
  int n_in = static_cast<int>(p.inputs.size());
  for (size_t o = 0; o < p.outputs.size(); ++o)
    for (int v = 0; v < p.outputs[o]; ++v)
      if (top || p.aval_of(v) == p.aval_of(p.outputs[o])) {
        Program q = p;
        q.outputs[o] = v;
        out.push_back(dead_code_eliminated(q));
      }
  for (int k = static_cast<int>(p.nodes.size()) - 1; k >= 0; --k)
    for (int v = 0; v < n_in + k; ++v)
      if (p.aval_of(v) == p.nodes[static_cast<size_t>(k)].aval) out.push_back(replace_uses(p, n_in + k, v));
  for (size_t k = 0; k < p.nodes.size(); ++k)
    for (size_t s = 0; s < p.nodes[k].subs.size(); ++s)
      for (Program& c : candidates(*p.nodes[k].subs[s], false)) {
        Program q = p;
        q.nodes[k].subs[s] = std::make_shared<Program>(std::move(c));
        out.push_back(std::move(q));
      }
  return out;
}

size_t size_of(const Program& p) {
  size_t n = p.nodes.size();
  for (const Node& nd : p.nodes)
    for (const auto& s : nd.subs) n += size_of(*s);
  return n;
}

std::string jaxpr_of(const Program& p, const std::vector<Tensor>& xs) {
  try {
    std::ostringstream os;
    os << make_jaxpr([&p](const std::vector<Tensor>& v) { return run1(p, v); })(xs);
    return os.str();
  } catch (const std::exception& e) { return std::string("(make_jaxpr threw: ") + e.what() + ")\n"; }
}

}  // namespace

Program shrink(const Program& p, const std::function<bool(const Program&)>& still_fails) {
  Program best = p;
  int budget = 400;  // checks run while shrinking
  for (bool progress = true; progress && budget > 0;) {
    progress = false;
    for (Program& c : candidates(best, true)) {
      if (size_of(c) >= size_of(best)) continue;
      if (--budget < 0) break;
      analyze(c);
      if (still_fails(c)) {
        best = std::move(c);
        progress = true;
        break;
      }
    }
  }
  return best;
}

std::string failure_report(uint64_t seed, Check c, const Program& original, const Program& shrunk,
                           const std::vector<Tensor>& inputs, const Outcome& outcome) {
  std::ostringstream os;
  os.precision(17);
  os << "==== FAILED: " << check_name(c) << ", program seed " << seed << " (rerun: FLUXION_FUZZ_SEED=" << seed
     << " FLUXION_FUZZ_PROGRAMS=1)\n"
     << "shrunk from " << size_of(original) << " to " << size_of(shrunk) << " nodes"
     << (shrunk.reverse_ok ? "" : " (forward mode only)") << ":\n";
  print(os, shrunk);
  os << "its Jaxpr:\n" << jaxpr_of(shrunk, inputs) << "inputs:\n";
  for (size_t i = 0; i < inputs.size(); ++i) os << "  v" << i << " = " << inputs[i] << '\n';
  os << outcome.detail;
  return os.str();
}

void fuzz(uint64_t seed_base, int64_t count, const GenOptions& options, Stats& stats, size_t max_reports) {
  stats.op_counts.resize(static_cast<size_t>(Op::kCount));
  for (int64_t i = 0; i < count; ++i) {
    if (count >= 20000 && i > 0 && i % 10000 == 0)  // long runs: a sign of life on stderr
      std::cerr << "fuzz: " << i << " programs, " << stats.failures.size() << " failure(s) reported" << std::endl;
    uint64_t seed = seed_base + static_cast<uint64_t>(i);
    ++stats.programs;
    Program p;
    try {
      p = generate(seed, options);
    } catch (const std::exception& e) {
      // The generator traces each node: an op refusing a well-typed input is a failure too.
      ++stats.generator_failures;
      if (stats.failures.size() < max_reports)
        stats.failures.push_back("==== FAILED: generating program seed " + std::to_string(seed) + ": " + e.what());
      continue;
    }
    count_ops(p, stats.op_counts);
    stats.forward_only += !p.reverse_ok;
    stats.with_f32 += p.has_f32;
    std::vector<Tensor> xs = make_inputs(p, seed);
    for (size_t k = 0; k < static_cast<size_t>(Check::kCount); ++k) {
      Check c = static_cast<Check>(k);
      uint64_t check_seed = seed * 17 + k;
      Outcome o = run_check(c, p, xs, check_seed);
      if (o.error_ratio > stats.worst_ratio[k]) stats.worst_ratio[k] = o.error_ratio, stats.worst_seed[k] = seed;
      if (c == Check::EagerJit) stats.worst_ulps = std::max(stats.worst_ulps, o.ulps);
      if (o.kind == Outcome::Passed) ++stats.passed[k];
      if (o.kind == Outcome::Skipped) ++stats.skipped[k];
      if (o.kind != Outcome::Failed) continue;
      ++stats.failed[k];
      if (stats.failures.size() >= max_reports) continue;
      Program small =
          shrink(p, [&](const Program& q) { return run_check(c, q, xs, check_seed).kind == Outcome::Failed; });
      stats.failures.push_back(failure_report(seed, c, p, small, xs, run_check(c, small, xs, check_seed)));
    }
  }
}

std::string summary(const Stats& stats) {
  std::ostringstream os;
  os << stats.programs << " random programs (" << stats.forward_only << " forward mode only, " << stats.with_f32
     << " with f32 values, " << stats.generator_failures << " failed to generate)\n";
  for (size_t k = 0; k < static_cast<size_t>(Check::kCount); ++k)
    os << "  " << std::left << std::setw(30) << check_name(static_cast<Check>(k)) << std::right << " passed "
       << std::setw(7) << stats.passed[k] << "  skipped " << std::setw(6) << stats.skipped[k] << "  failed "
       << std::setw(4) << stats.failed[k] << "  worst error/tolerance " << std::setprecision(3) << stats.worst_ratio[k]
       << " (seed " << stats.worst_seed[k] << ")\n";
  os << "  eager vs jit: largest distance " << stats.worst_ulps
     << " ulps (of the element, or of the result's largest element where it is smaller; f32 ulps"
     << " when the program computes in f32)\n  ops generated:";
  for (size_t k = 0; k < stats.op_counts.size(); ++k)
    os << (k % 8 == 0 ? "\n   " : "") << ' ' << op_name(static_cast<Op>(k)) << ' ' << stats.op_counts[k];
  os << '\n';
  return os.str();
}

}  // namespace fluxion::fuzz
