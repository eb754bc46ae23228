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
// Every run trains 20 steps of SGD with momentum and prints the full-batch loss before and after, the largest
// parameter difference against the full-batch run relative to the largest parameter (every rank computes that
// reference itself, without collectives), the median step time and what this process sent through
// collectives per step (fx::collective_stats). Exit status: 1 when the difference exceeds 1e-12 (f64):
// averaging the members' gradients of equal shares IS the full-batch gradient, up to the order of the
// additions; 2 for bad arguments or an error; 3 when the build has no MPI (bench/data_parallel.sh).
#include <fluxion/fluxion.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
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
  /// SGD with momentum; the learning rate shrinks as the hidden layer grows (so does the curvature along w2),
  /// which keeps training stable at every size.
  dist::SgdMomentum optimizer;
};
Problem make_problem(int64_t examples, int64_t hidden) {
  fx::Tensor x = fx::reshape(fx::sin(fx::linspace(0.0, 40.0, examples * kInputs)), {examples, kInputs});
  fx::Tensor y = fx::sin(fx::matmul(x, fx::reshape(fx::linspace(-1.0, 1.0, kInputs), {kInputs, 1}))) + 0.1;
  Mlp init{fx::reshape(fx::sin(fx::linspace(0.0, 9.0, kInputs * hidden)), {kInputs, hidden}) * 0.5, fx::zeros({hidden}),
           fx::reshape(fx::cos(fx::linspace(0.0, 5.0, hidden)), {hidden, 1}) *
               (2.0 / std::sqrt(static_cast<double>(hidden))),
           fx::zeros({1})};
  return {x, y, init, dist::SgdMomentum{/*learning_rate=*/0.5 / static_cast<double>(hidden), /*momentum=*/0.9}};
}

Mlp zeros_like(const Mlp& p) {
  return fx::tree_map([](const fx::Tensor& t) { return fx::zeros_like(t); }, p);
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// What a training loop measured: each step's time, and what this process sent through collectives during
/// the steps (fx::collective_stats: zero under the named vmap, where no process talks to another).
struct StepLog {
  std::vector<double> ms;
  fx::CollectiveStats sent;
  void start() { fx::reset_collective_stats(); }
  void finish() { sent = fx::collective_stats(); }
};

// ---- the training loops of one member (rank) on its share (x, y) ----

/// Plain training on the examples given: the full-batch reference when given the whole batch.
Mlp train_full(const Problem& problem, const fx::Tensor& x, const fx::Tensor& y, StepLog& log) {
  Mlp p = problem.init, velocity = zeros_like(problem.init);
  log.start();
  for (int64_t s = 0; s < kSteps; ++s) {
    auto start = Clock::now();
    std::tie(p, velocity) = problem.optimizer.update(p, fx::grad(loss)(p, x, y), velocity);
    log.ms.push_back(ms_since(start));
  }
  log.finish();
  return p;
}

/// DDP: every member holds all the parameters; the gradients of the members' local losses are averaged.
std::pair<Mlp, Mlp> ddp_step(const Mlp& p, const Mlp& velocity, const fx::Tensor& x, const fx::Tensor& y,
                             const dist::SgdMomentum& optimizer) {
  Mlp local = fx::grad(loss)(p, x, y);
  Mlp averaged = dist::all_mean_gradients(local, {"world"});  // one all_sum per 25 MiB bucket
  return optimizer.update(p, averaged, velocity);
}

Mlp train_ddp(const Problem& problem, const fx::Tensor& x, const fx::Tensor& y, bool jit, StepLog& log) {
  auto step = [opt = problem.optimizer](const Mlp& p, const Mlp& v, const fx::Tensor& xs, const fx::Tensor& ys) {
    return ddp_step(p, v, xs, ys, opt);
  };
  auto jitted_step = fx::jit(step);  // staged once: the all_sum is one equation of the compiled step
  Mlp p = problem.init, velocity = zeros_like(problem.init);
  log.start();
  for (int64_t s = 0; s < kSteps; ++s) {
    auto start = Clock::now();
    std::tie(p, velocity) = jit ? jitted_step(p, velocity, x, y) : step(p, velocity, x, y);
    log.ms.push_back(ms_since(start));
  }
  log.finish();
  return p;
}

/// FSDP: every member holds one shard of the flat parameter vector and the momentum of that shard only.
/// The loss all_gathers the parameters; its gradient with respect to the shard arrives reduce_scatter'd.
Mlp train_fsdp(const Problem& problem, const fx::Tensor& x, const fx::Tensor& y, StepLog& log) {
  const dist::ShardedLayout<Mlp> layout(problem.init, fx::axis_size("world"));
  fx::Tensor shard = dist::shard(problem.init, layout, "world");
  fx::Tensor velocity = fx::zeros({layout.shard_size()});
  auto sharded_loss = [&](const fx::Tensor& s) {
    return fx::all_mean(loss(dist::gather(s, layout, "world"), x, y), "world");  // the full-batch loss
  };
  log.start();
  for (int64_t s = 0; s < kSteps; ++s) {
    auto start = Clock::now();
    std::tie(shard, velocity) = problem.optimizer.update(shard, fx::grad(sharded_loss)(shard), velocity);
    log.ms.push_back(ms_since(start));
  }
  log.finish();
  return dist::gather(shard, layout, "world");  // the whole parameters, for the comparison
}

Mlp train(const std::string& mode, const Problem& problem, const fx::Tensor& x, const fx::Tensor& y, StepLog& log) {
  if (mode == "ddp") return train_ddp(problem, x, y, false, log);
  if (mode == "ddp-jit") return train_ddp(problem, x, y, true, log);
  return train_fsdp(problem, x, y, log);
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
/// sent_per_step: the bytes this process handed to collectives per step; grad_bytes is the lower bound of what
/// one all_sum of the gradient must send.
bool report(const std::string& mode, int64_t members, const char* how, const Mlp& got, const Mlp& reference,
            const Problem& problem, const StepLog& log, bool print) {
  const double diff = relative_difference(got, reference);
  if (print)
    std::printf(
        "mode=%-8s members=%lld (%s) loss=%.6g->%.12g max_rel_diff=%.3g step_ms=%.4f grad_bytes=%lld "
        "buckets=%lld sent_per_step=%lld calls_per_step=%.3g\n",
        mode.c_str(), static_cast<long long>(members), how, loss(problem.init, problem.x, problem.y).item<double>(),
        loss(got, problem.x, problem.y).item<double>(), diff, median(log.ms),
        static_cast<long long>(dist::gradient_bytes(got)), static_cast<long long>(dist::gradient_bucket_count(got)),
        static_cast<long long>(log.sent.bytes_sent / kSteps), static_cast<double>(log.sent.calls) / kSteps);
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
  StepLog full_log;
  const Mlp reference = train_full(problem, problem.x, problem.y, full_log);  // every rank computes it
  if (mode == "full") return report("full", 1, "one process", reference, reference, problem, full_log, true) ? 0 : 1;

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
      StepLog log;
      auto member = [&](const fx::Tensor& x, const fx::Tensor& y) { return train(m, problem, x, y, log); };
      // out_axes none: the trained parameters are the same on every member (the check that they are).
      Mlp got = fx::vmap(member, fx::in_axes(0, 0), fx::out_axes(fx::none), fx::axis_name("world"))(xs, ys);
      ok = report(m, members, "named vmap", got, reference, problem, log, true) && ok;
    }
    return ok ? 0 : 1;
  }

  // ddp, ddp-jit, fsdp: one process per member.
  if (!dist::launched()) {
    std::fprintf(stderr, "%s runs one process per member: mpirun -np 2 %s %s (or, in one process: %s emulate 2)\n",
                 mode.c_str(), argv[0], mode.c_str(), argv[0]);
    return 2;
  }
  if (!dist::compiled()) {
    std::fprintf(stderr, "%s: this build of Fluxion has no MPI; reconfigure with Open MPI installed\n", mode.c_str());
    return 3;  // bench/data_parallel.sh: a missing feature of the build, not a failure
  }
  dist::init();  // the world group, under the axis name "world"
  const int64_t rank = dist::rank(), size = dist::size();
  if (examples % size != 0) {
    std::fprintf(stderr, "%lld examples do not split evenly over %lld ranks\n", static_cast<long long>(examples),
                 static_cast<long long>(size));
    dist::finalize();
    return 2;
  }
  StepLog log;
  Mlp got = train(mode, problem, share(problem.x, rank, size), share(problem.y, rank, size), log);
  // Every rank checks its own parameters; rank 0 prints.
  const bool ok = report(mode, size, "mpirun", got, reference, problem, log, rank == 0);
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
