// Cost of the transforms relative to the function itself (the cheap-gradient principle puts a
// gradient at 3-4x the function), and per-sample gradients by vmap(grad) against a loop of grads.
//   ./build/bench/bench_transforms --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <fluxion/fluxion.hpp>

namespace fx = fluxion;

namespace {

struct Mlp {
  fx::Tensor w1, b1, w2, b2;
};

fx::Tensor filled(std::vector<int64_t> shape, double scale, fx::DType dt = fx::f32) {
  int64_t n = fx::checked_num_elements("bench", shape);
  return fx::astype(fx::reshape(fx::sin(fx::linspace(0.0, 50.0, n)) * scale, shape), dt);
}

Mlp make_mlp(int64_t in, int64_t hidden, int64_t out) {
  return Mlp{filled({in, hidden}, 0.05), filled({hidden}, 0.1), filled({hidden, out}, 0.05), filled({out}, 0.1)};
}

fx::Tensor mlp_loss(const Mlp& p, const fx::Tensor& x, const fx::Tensor& onehot) {
  fx::Tensor h = fx::tanh(fx::matmul(x, p.w1) + p.b1);
  fx::Tensor logits = fx::matmul(h, p.w2) + p.b2;
  return -fx::mean(fx::sum(fx::log_softmax(logits, -1) * onehot, {-1}));
}

// sum(tanh(x) * x + exp(-x^2)): the elementwise workload W1 of the jit issue.
fx::Tensor elementwise(const fx::Tensor& x) { return fx::sum(fx::tanh(x) * x + fx::exp(-(x * x))); }

void function_elementwise(benchmark::State& state) {
  fx::Tensor x = filled({state.range(0)}, 2.0);
  for (auto _ : state) benchmark::DoNotOptimize(elementwise(x));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void grad_elementwise(benchmark::State& state) {
  fx::Tensor x = filled({state.range(0)}, 2.0);
  auto g = fx::grad(elementwise);
  for (auto _ : state) benchmark::DoNotOptimize(g(x));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

BENCHMARK(function_elementwise)->Name("ratio/elementwise/function")->Arg(1000000)->Unit(benchmark::kMillisecond);
BENCHMARK(grad_elementwise)->Name("ratio/elementwise/grad")->Arg(1000000)->Unit(benchmark::kMillisecond);

struct MlpCase {
  Mlp p;
  fx::Tensor x, onehot;
  MlpCase(int64_t batch, int64_t in, int64_t hidden, int64_t out)
      : p(make_mlp(in, hidden, out)),
        x(filled({batch, in}, 1.0)),
        onehot(fx::astype(fx::remainder(fx::arange(batch * out), fx::full({}, static_cast<double>(out), fx::i32)) ==
                              fx::full({}, 3.0, fx::i32),
                          fx::f32)) {
    onehot = fx::reshape(onehot, {batch, out});
  }
};

}  // namespace

BOOST_HANA_ADAPT_STRUCT(Mlp, w1, b1, w2, b2);

namespace {

void function_mlp(benchmark::State& state) {
  MlpCase c(state.range(0), 784, 512, 10);
  for (auto _ : state) benchmark::DoNotOptimize(mlp_loss(c.p, c.x, c.onehot));
}

void grad_mlp(benchmark::State& state) {
  MlpCase c(state.range(0), 784, 512, 10);
  auto vg = fx::value_and_grad(mlp_loss);
  for (auto _ : state) benchmark::DoNotOptimize(vg(c.p, c.x, c.onehot));
}

BENCHMARK(function_mlp)->Name("ratio/mlp_784_512_10/function")->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK(grad_mlp)->Name("ratio/mlp_784_512_10/value_and_grad")->Arg(256)->Unit(benchmark::kMillisecond);

// Per-example loss on one example (x: [in], onehot: [out]).
fx::Tensor example_loss(const Mlp& p, const fx::Tensor& x, const fx::Tensor& onehot) {
  return mlp_loss(p, fx::expand_dims(x, 0), fx::expand_dims(onehot, 0));
}

void per_sample_vmap(benchmark::State& state) {
  MlpCase c(state.range(0), 784, 128, 10);
  auto per_sample = fx::vmap(fx::grad(example_loss), fx::in_axes(fx::none, 0, 0));
  for (auto _ : state) benchmark::DoNotOptimize(per_sample(c.p, c.x, c.onehot));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void per_sample_loop(benchmark::State& state) {
  int64_t batch = state.range(0);
  MlpCase c(batch, 784, 128, 10);
  std::vector<fx::Tensor> xs, ys;
  for (int64_t i = 0; i < batch; ++i) {
    xs.push_back(fx::squeeze(fx::slice(c.x, {i, 0}, {i + 1, 784}), {0}));
    ys.push_back(fx::squeeze(fx::slice(c.onehot, {i, 0}, {i + 1, 10}), {0}));
  }
  auto g = fx::grad(example_loss);
  for (auto _ : state)
    for (int64_t i = 0; i < batch; ++i) benchmark::DoNotOptimize(g(c.p, xs[i], ys[i]));
  state.SetItemsProcessed(state.iterations() * batch);
}

BENCHMARK(per_sample_vmap)->Name("per_sample/vmap_grad/mlp_784_128_10")->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK(per_sample_loop)->Name("per_sample/loop_of_grad/mlp_784_128_10")->Arg(64)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
