// Data-parallel and sharded training of a small MLP with fx::distributed. The training code of one member
// is written once, against the axis name "world", and runs unchanged over the processes of an mpirun launch
// or, in one process, as the members of fx::vmap(train, fx::axis_name("world")).
//
//   build/examples/data_parallel full                  the reference: one process, the whole batch
//   mpirun -np 2 build/examples/data_parallel ddp      each rank trains on its share of the batch; the
//                                                      gradients averaged by all_mean_gradients (one all_sum)
//   mpirun -np 2 build/examples/data_parallel ddp-jit  the same step under fx::jit
//   mpirun -np 2 build/examples/data_parallel fsdp     parameters and momentum sharded over the ranks
//   build/examples/data_parallel emulate 4             ddp, ddp-jit and fsdp by 4 members of a named vmap
//   ... [--examples 64] [--hidden 32]                  the batch and the hidden layer's size
// (Open MPI as root in a container also needs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.)
//
// Every run trains 20 steps of SGD with momentum and prints the final full-batch loss, the largest parameter
// difference against the full-batch run relative to the largest parameter (every rank computes that
// reference itself, without collectives) and the median step time. It exits with status 1 when the
// difference exceeds 1e-12 (f64): averaging the members' gradients of equal shares IS the full-batch
// gradient, up to the order of the additions.
#include <fluxion/fluxion.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace fx = fluxion;
namespace dist = fluxion::distributed;

// The parameters: a plain struct, a pytree through Boost.Hana (as in examples/demo.cpp).
struct Mlp {
  fx::Tensor w1, b1, w2, b2;
};
BOOST_HANA_ADAPT_STRUCT(Mlp, w1, b1, w2, b2);

namespace {

constexpr int64_t kInputs = 8, kSteps = 20;
constexpr double kTolerance = 1e-12;
const dist::SgdMomentum kOptimizer{/*learning_rate=*/0.05, /*momentum=*/0.9};

fx::Tensor forward(const Mlp& p, const fx::Tensor& x) {
  return fx::matmul(fx::tanh(fx::matmul(x, p.w1) + p.b1), p.w2) + p.b2;
}

/// The mean squared error over the examples given: the full batch, or one member's share of it.
fx::Tensor loss(const Mlp& p, const fx::Tensor& x, const fx::Tensor& y) {
  fx::Tensor err = forward(p, x) - y;
  return fx::mean(err * err);
}

/// A fixed synthetic regression problem and starting point, the same on every rank (no randomness).
struct Problem {
  fx::Tensor x, y;
  Mlp init;
};
Problem make_problem(int64_t examples, int64_t hidden) {
  fx::Tensor x = fx::reshape(fx::sin(fx::linspace(0.0, 40.0, examples * kInputs)), {examples, kInputs});
  fx::Tensor y = fx::sin(fx::matmul(x, fx::reshape(fx::linspace(-1.0, 1.0, kInputs), {kInputs, 1}))) + 0.1;
  Mlp init{fx::reshape(fx::sin(fx::linspace(0.0, 9.0, kInputs * hidden)), {kInputs, hidden}) * 0.5, fx::zeros({hidden}),
           fx::reshape(fx::cos(fx::linspace(0.0, 5.0, hidden)), {hidden, 1}) * 0.3, fx::zeros({1})};
  return {x, y, init};
}

Mlp zeros_like(const Mlp& p) {
  return fx::tree_map([](const fx::Tensor& t) { return fx::zeros_like(t); }, p);
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// ---- the training loops of one member (rank) on its share (x, y); step times appended to `step_ms` ----

/// Plain training on the examples given: the full-batch reference when given the whole batch.
Mlp train_full(const Mlp& init, const fx::Tensor& x, const fx::Tensor& y, std::vector<double>& step_ms) {
  Mlp p = init, velocity = zeros_like(init);
  for (int64_t s = 0; s < kSteps; ++s) {
    auto start = Clock::now();
    std::tie(p, velocity) = kOptimizer.update(p, fx::grad(loss)(p, x, y), velocity);
    step_ms.push_back(ms_since(start));
  }
  return p;
}

/// DDP: every member holds all the parameters; the gradients of the members' local losses are averaged.
std::pair<Mlp, Mlp> ddp_step(const Mlp& p, const Mlp& velocity, const fx::Tensor& x, const fx::Tensor& y) {
  Mlp local = fx::grad(loss)(p, x, y);
  Mlp averaged = dist::all_mean_gradients(local, {"world"});  // one all_sum per 25 MiB bucket
  return kOptimizer.update(p, averaged, velocity);
}

Mlp train_ddp(const Mlp& init, const fx::Tensor& x, const fx::Tensor& y, bool jit, std::vector<double>& step_ms) {
  auto jitted_step = fx::jit(ddp_step);  // staged once: the all_sum is one equation of the compiled step
  Mlp p = init, velocity = zeros_like(init);
  for (int64_t s = 0; s < kSteps; ++s) {
    auto start = Clock::now();
    std::tie(p, velocity) = jit ? jitted_step(p, velocity, x, y) : ddp_step(p, velocity, x, y);
    step_ms.push_back(ms_since(start));
  }
  return p;
}

/// FSDP: every member holds one shard of the flat parameter vector and the momentum of that shard only.
/// The loss all_gathers the parameters; its gradient with respect to the shard arrives reduce_scatter'd.
Mlp train_fsdp(const Mlp& init, const fx::Tensor& x, const fx::Tensor& y, std::vector<double>& step_ms) {
  const dist::ShardedLayout<Mlp> layout(init, fx::axis_size("world"));
  fx::Tensor shard = dist::shard(init, layout, "world");
  fx::Tensor velocity = fx::zeros({layout.shard_size()});
  auto sharded_loss = [&](const fx::Tensor& s) {
    return fx::all_mean(loss(dist::gather(s, layout, "world"), x, y), "world");  // the full-batch loss
  };
  for (int64_t s = 0; s < kSteps; ++s) {
    auto start = Clock::now();
    std::tie(shard, velocity) = kOptimizer.update(shard, fx::grad(sharded_loss)(shard), velocity);
    step_ms.push_back(ms_since(start));
  }
  return dist::gather(shard, layout, "world");  // the whole parameters, for the comparison
}

Mlp train(const std::string& mode, const Mlp& init, const fx::Tensor& x, const fx::Tensor& y,
          std::vector<double>& step_ms) {
  if (mode == "ddp") return train_ddp(init, x, y, false, step_ms);
  if (mode == "ddp-jit") return train_ddp(init, x, y, true, step_ms);
  return train_fsdp(init, x, y, step_ms);
}

// ---- comparing and reporting ----

/// max |got - want| / max |want| over all parameters.
double relative_difference(const Mlp& got, const Mlp& want) {
  double diff = 0, scale = 0;
  std::vector<fx::Tensor> g = fx::tree_leaves(got), w = fx::tree_leaves(want);
  for (size_t i = 0; i < g.size(); ++i) {
    diff = std::max(diff, fx::max(fx::abs(g[i] - w[i])).item<double>());
    scale = std::max(scale, fx::max(fx::abs(w[i])).item<double>());
  }
  return diff / scale;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// One line per run, `key=value` (bench/data_parallel.sh reads it); false when the difference is too large.
bool report(const std::string& mode, int64_t members, const char* how, const Mlp& got, const Mlp& reference,
            const Problem& problem, const std::vector<double>& step_ms, bool print) {
  const double diff = relative_difference(got, reference);
  if (print)
    std::printf(
        "mode=%-8s members=%lld (%s) final_loss=%.12g max_rel_diff=%.3g step_ms=%.4f grad_bytes=%lld "
        "buckets=%lld\n",
        mode.c_str(), static_cast<long long>(members), how, loss(got, problem.x, problem.y).item<double>(), diff,
        median(step_ms), static_cast<long long>(dist::gradient_bytes(got)),
        static_cast<long long>(dist::gradient_bucket_count(got)));
  if (diff > kTolerance)
    std::fprintf(stderr, "%s: the parameters differ from the full-batch run by %.3g relative (> %g)\n", mode.c_str(),
                 diff, kTolerance);
  return diff <= kTolerance;
}

/// Rows [member * rows / members, (member + 1) * rows / members) of t: a member's contiguous share.
fx::Tensor share(const fx::Tensor& t, int64_t member, int64_t members) {
  const int64_t rows = t.shape()[0] / members;
  return fx::slice(t, {member * rows, 0}, {(member + 1) * rows, t.shape()[1]});
}

int usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s full | ddp | ddp-jit | fsdp | emulate N  [--examples 64] [--hidden 32]\n"
               "  ddp, ddp-jit and fsdp run under mpirun (mpirun -np 2 %s ddp); emulate N runs them in one\n"
               "  process as N members of fx::vmap(..., fx::axis_name(\"world\")).\n",
               program, program);
  return 2;
}

int run(int argc, char** argv) {
  if (argc < 2) return usage(argv[0]);
  const std::string mode = argv[1];
  int64_t members = 1, examples = 64, hidden = 32;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--examples" && i + 1 < argc) examples = std::atoll(argv[++i]);
    else if (arg == "--hidden" && i + 1 < argc) hidden = std::atoll(argv[++i]);
    else if (mode == "emulate" && i == 2) members = std::atoll(argv[i]);
    else return usage(argv[0]);
  }
  const bool known = mode == "full" || mode == "ddp" || mode == "ddp-jit" || mode == "fsdp" || mode == "emulate";
  if (!known || members < 1 || examples < 1 || hidden < 1) return usage(argv[0]);

  const Problem problem = make_problem(examples, hidden);
  std::vector<double> full_ms;
  const Mlp reference = train_full(problem.init, problem.x, problem.y, full_ms);  // every rank computes it
  if (mode == "full") return report("full", 1, "one process", reference, reference, problem, full_ms, true) ? 0 : 1;

  if (mode == "emulate") {
    if (examples % members != 0) {
      std::fprintf(stderr, "emulate %lld: the %lld examples must split evenly\n", static_cast<long long>(members),
                   static_cast<long long>(examples));
      return 2;
    }
    // Member r of the named vmap gets rows [r, r + 1) * examples / members, as rank r would.
    fx::Tensor xs = fx::reshape(problem.x, {members, examples / members, kInputs});
    fx::Tensor ys = fx::reshape(problem.y, {members, examples / members, 1});
    bool ok = true;
    for (const std::string m : {"ddp", "ddp-jit", "fsdp"}) {
      std::vector<double> step_ms;
      auto member = [&](const fx::Tensor& x, const fx::Tensor& y) { return train(m, problem.init, x, y, step_ms); };
      // out_axes none: the trained parameters are the same on every member (the check that they are).
      Mlp got = fx::vmap(member, fx::in_axes(0, 0), fx::out_axes(fx::none), fx::axis_name("world"))(xs, ys);
      ok = report(m, members, "named vmap", got, reference, problem, step_ms, true) && ok;
    }
    return ok ? 0 : 1;
  }

  // ddp, ddp-jit, fsdp: one process per member.
  if (!dist::launched()) {
    std::fprintf(stderr, "%s runs one process per member: mpirun -np 2 %s %s (or, in one process: %s emulate 2)\n",
                 mode.c_str(), argv[0], mode.c_str(), argv[0]);
    return 2;
  }
  dist::init();  // the world group, under the axis name "world"
  const int64_t rank = dist::rank(), size = dist::size();
  if (examples % size != 0) {
    std::fprintf(stderr, "%lld examples do not split evenly over %lld ranks\n", static_cast<long long>(examples),
                 static_cast<long long>(size));
    dist::finalize();
    return 2;
  }
  std::vector<double> step_ms;
  Mlp got = train(mode, problem.init, share(problem.x, rank, size), share(problem.y, rank, size), step_ms);
  // Every rank checks its own parameters; rank 0 prints.
  const bool ok = report(mode, size, "mpirun", got, reference, problem, step_ms, rank == 0);
  dist::finalize();
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const fx::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
