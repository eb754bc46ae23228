// emit_cpp (issue 33): the emitted C++ is compiled with the system compiler inside the test, run on
// the inputs the library used, and its results compared with the library's: every registry sample
// of a supported primitive (all in one generated file and one compile), the MLP gradient and an RK4
// scan. Unsupported primitives give the emit-time error that lists what is supported.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

#include <fluxion/fluxion.hpp>

#include "codegen_problems.hpp"
#include "sample_eval.hpp"
#include "samples.hpp"
#include "src/codegen_emitter.hpp"

namespace fx = fluxion;
using fx::Tensor;
using fx::testing::compare_tensors;

#ifndef FLUXION_TEST_CXX
#define FLUXION_TEST_CXX "c++"
#endif

namespace {

/// One emitted function and what it is checked against.
struct Case {
  std::string name, label;
  fx::Jaxpr jaxpr;
  std::vector<Tensor> inputs, expected;
};

/// This process's scratch folder for the emitted sources and executables (about 50 MB), removed at
/// exit unless FLUXION_TEST_KEEP_CODEGEN is set (to read the generated code).
struct WorkDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("fluxion_codegen_" + std::to_string(::getpid()));
  WorkDir() { std::filesystem::create_directories(path); }
  ~WorkDir() {
    std::error_code ignored;
    if (!std::getenv("FLUXION_TEST_KEEP_CODEGEN")) std::filesystem::remove_all(path, ignored);
  }
};

std::filesystem::path work_dir() {
  static const WorkDir dir;
  return dir.path;
}

const void* bytes_of(const Tensor& t) { return t.concrete().array().data(); }
size_t nbytes_of(const fx::AbstractValue& a) {
  return static_cast<size_t>(a.shape.num_elements() * fx::dtype_size(a.dtype));
}

/// A main() that, per case in order, reads the inputs from argv[1], calls the case's function and
/// appends its outputs to argv[2]. One small function per case: compilers optimise a main() of
/// thousands of blocks slowly.
std::string driver(const std::vector<Case>& cases) {
  std::ostringstream os;
  os << "#include <cstdio>\n#include <vector>\n"
     << "static std::vector<unsigned char> get(std::FILE* f, size_t n) {\n"
     << "  std::vector<unsigned char> b(n + 8);\n  if (n && std::fread(b.data(), 1, n, f) != n) throw 1;\n"
     << "  return b;\n}\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    os << "static void run_case_" << k << "(std::FILE* in, std::FILE* out) {\n";
    const auto ins = c.jaxpr.in_avals(), outs = c.jaxpr.out_avals();
    std::string args;
    for (size_t i = 0; i < ins.size(); ++i) {
      os << "  auto a" << i << " = get(in, " << nbytes_of(ins[i]) << ");\n";
      args += (args.empty() ? "" : ", ") + std::string("reinterpret_cast<const ") +
              fx::codegen_detail::c_type(ins[i].dtype) + "*>(a" + std::to_string(i) + ".data())";
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      os << "  std::vector<unsigned char> r" << i << "(" << nbytes_of(outs[i]) + 8 << ");\n";
      args += (args.empty() ? "" : ", ") + std::string("reinterpret_cast<") +
              fx::codegen_detail::c_type(outs[i].dtype) + "*>(r" + std::to_string(i) + ".data())";
    }
    os << "  " << c.name << "(" << args << ");\n";
    for (size_t i = 0; i < outs.size(); ++i)
      os << "  std::fwrite(r" << i << ".data(), 1, " << nbytes_of(outs[i]) << ", out);\n";
    os << "}\n";
  }
  os << "int main(int argc, char** argv) {\n  if (argc != 3) return 2;\n"
     << "  std::FILE* in = std::fopen(argv[1], \"rb\");\n  std::FILE* out = std::fopen(argv[2], \"wb\");\n"
     << "  if (!in || !out) return 3;\n";
  for (size_t k = 0; k < cases.size(); ++k) os << "  run_case_" << k << "(in, out);\n";
  os << "  std::fclose(out);\n  return 0;\n}\n";
  return os.str();
}

/// Compiles `source` (with -std=c++17 -O2) into an executable named `stem`; returns its path, or ""
/// after printing the compiler's output.
std::string compile(const std::string& source, const std::string& stem, const std::string& flags = "-O2") {
  const auto cpp = work_dir() / (stem + ".cpp"), exe = work_dir() / stem, log = work_dir() / (stem + ".log");
  std::ofstream(cpp) << source;
  // FLUXION_TEST_CODEGEN_FLAGS adds flags, e.g. "-fsanitize=address,undefined" to check the emitted
  // code's memory accesses.
  const char* extra = std::getenv("FLUXION_TEST_CODEGEN_FLAGS");
  const std::string cmd = std::string(FLUXION_TEST_CXX) + " -std=c++17 " + flags + " " + (extra ? extra : "") + " -o " +
                          exe.string() + " " + cpp.string() + " > " + log.string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    MESSAGE("compiling the emitted code failed: ", cmd, "\n", text.str().substr(0, 4000));
    return "";
  }
  return exe.string();
}

/// Runs the compiled cases; returns their outputs (empty when the run failed).
std::vector<std::vector<Tensor>> run(const std::string& exe, const std::vector<Case>& cases) {
  const auto in_path = work_dir() / "inputs.bin", out_path = work_dir() / "outputs.bin";
  {
    std::FILE* f = std::fopen(in_path.c_str(), "wb");
    for (const Case& c : cases)
      for (const Tensor& t : c.inputs)
        if (const size_t n = nbytes_of(t.aval())) std::fwrite(bytes_of(t), 1, n, f);  // empty: no data pointer
    std::fclose(f);
  }
  if (std::system((exe + " " + in_path.string() + " " + out_path.string()).c_str()) != 0) return {};
  std::vector<std::vector<Tensor>> results;
  std::FILE* f = std::fopen(out_path.c_str(), "rb");
  for (const Case& c : cases) {
    std::vector<Tensor> outs;
    for (const fx::AbstractValue& a : c.jaxpr.out_avals()) {
      Tensor t = fx::empty(a);
      const size_t n = nbytes_of(a);
      if (n && std::fread(t.array().data(), 1, n, f) != n) return {};
      outs.push_back(t);
    }
    results.push_back(outs);
  }
  std::fclose(f);
  return results;
}

/// True when the two tensors have equal bits, or NaN at the same places.
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.aval() != b.aval()) return false;
  const size_t n = nbytes_of(a.aval());
  if (n == 0 || std::memcmp(bytes_of(a), bytes_of(b), n) == 0) return true;  // empty: no data pointers
  if (!fx::is_floating(a.dtype())) return false;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::isnan(x[i]) && std::isnan(y[i])) && std::memcmp(&x[i], &y[i], sizeof(double)) != 0) return false;
  return true;
}

// Primitives whose emitted result may differ from eager in the last bits: the CPU evaluates these
// transcendental functions with Eigen's vectorised forms (primitives/scalar_functions.hpp), and
// sums and products in another order. Everything else must match bit for bit.
const std::set<std::string>& rounding_may_differ() {
  static const std::set<std::string> s = {
      "sin",    "cos",      "tan",      "exp",   "log",   "log1p",      "expm1",           "sqrt",
      "rsqrt",  "tanh",     "logistic", "pow",   "atan2", "reduce_sum", "reduce_prod",     "dot_general",
      "cumsum", "jit_call", "scan",     "while", "cond",  "checkpoint", "custom_jvp_call", "custom_vjp_call"};
  return s;
}

}  // namespace

TEST_CASE("emit_cpp: every registry sample of a supported primitive matches eager, one compile") {
  const std::vector<std::string> list = fx::emit_cpp_supported_primitives();
  const std::set<std::string> supported(list.begin(), list.end());
  CHECK(supported.count("dot_general"));
  CHECK(supported.count("scan"));
  std::vector<Case> cases;
  std::vector<std::string> primitive_of;
  std::set<std::string> refused, staged;
  std::string source;
  for (const auto& [primitive, samples] : fx::testing::sample_registry()) {
    for (fx::DType dtype : {fx::f32, fx::f64}) {
      for (const fx::testing::Sample& s : samples.make(dtype)) {
        if (s.collective_form) continue;  // staged under vmap: not the primitive itself
        staged.insert(primitive);
        fx::Jaxpr j = fx::testing::stage_sample(s);
        const std::string name = "sample_" + std::to_string(cases.size());
        try {
          source += fx::emit_cpp(j, name);
        } catch (const fx::NotImplementedError& e) {
          INFO(primitive, " ", s.label, ": ", e.what());
          CHECK(supported.count(primitive) == 0);
          CHECK(std::string(e.what()).find("[emit_cpp] primitive '" + primitive +
                                           "' is not supported by the C++ emitter (supported: ") == 0);
          refused.insert(primitive);
          continue;
        }
        CHECK_MESSAGE(supported.count(primitive), primitive, " emitted though not listed as supported");
        cases.push_back(Case{name, s.label, std::move(j), s.inputs, s.fn(s.inputs)});
        primitive_of.push_back(primitive);
      }
    }
  }
  // Every registered primitive is either supported or refused with the error.
  for (const fx::Primitive* p : fx::all_primitives())
    if (staged.count(p->name) && !supported.count(p->name))
      CHECK_MESSAGE(refused.count(p->name), p->name, " is neither supported nor refused");
  std::string supported_list, refused_list;
  for (const std::string& p : list) supported_list += " " + p;
  for (const std::string& r : refused) refused_list += " " + r;
  MESSAGE(cases.size(), " samples of ", supported.size(), " supported primitives; ", refused.size(),
          " refused:", refused_list, "; supported:", supported_list);
  REQUIRE(cases.size() > 200);

  const std::string exe = compile(source + driver(cases), "samples");
  REQUIRE(!exe.empty());
  const auto results = run(exe, cases);
  REQUIRE(results.size() == cases.size());
  int exact = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    for (size_t i = 0; i < results[k].size(); ++i) {
      INFO(primitive_of[k], " ", cases[k].label, " output ", i);
      const Tensor &got = results[k][i], &want = cases[k].expected[i];
      REQUIRE(got.aval() == want.aval());
      if (rounding_may_differ().count(primitive_of[k])) {
        CHECK(compare_tensors(got, want) == "");
        CHECK(fx::testing::zero_sign_mismatch(got, want) == "");
      } else {
        CHECK_MESSAGE(same_bits(got, want), "emitted ", got, " eager ", want);
        ++exact;
      }
    }
  }
  MESSAGE(exact, " outputs compared bit for bit");
}

TEST_CASE("emit_cpp: bad names and unsupported primitives are clear errors at emit time") {
  const fx::Jaxpr j = fx::make_jaxpr([](const Tensor& x) { return fx::sin(x); })(fx::zeros({3}));
  CHECK_THROWS_WITH_AS(fx::emit_cpp(j, "2fast"), doctest::Contains("is not a C identifier"), fx::Error);
  CHECK_THROWS_WITH_AS(fx::emit_cpp(j, "a-b"), doctest::Contains("is not a C identifier"), fx::Error);
  const fx::Jaxpr sorted = fx::make_jaxpr([](const Tensor& x) { return fx::sort(x); })(fx::zeros({3}));
  CHECK_THROWS_WITH_AS(
      fx::emit_cpp(sorted, "f"),
      doctest::Contains("[emit_cpp] primitive 'sort' is not supported by the C++ emitter (supported: "),
      fx::NotImplementedError);
  // f16/bf16 compute in f32 inside the library; the emitter has no 2-byte storage type and says so.
  const fx::Jaxpr half = fx::make_jaxpr([](const Tensor& x) { return fx::sin(x); })(fx::zeros({3}, fx::bf16));
  CHECK_THROWS_WITH_AS(fx::emit_cpp(half, "f"), doctest::Contains("dtype bf16"), fx::DTypeError);
}

TEST_CASE("emit_cpp: the jit'd MLP gradient compiles with -std=c++17 -O2 and matches fx::jit") {
  namespace cp = fx::testing::codegen_problems;
  for (fx::DType dtype : {fx::f64, fx::f32}) {
    const std::vector<Tensor> a = cp::mlp_args(32, 8, 16, 3, dtype);
    auto jitted = fx::jit(cp::mlp_grad());
    auto [g1, g2, g3, g4] = jitted(a[0], a[1], a[2], a[3], a[4], a[5]);
    Case c{"mlp_grad", "mlp", cp::mlp_grad_jaxpr(a), a, {g1, g2, g3, g4}};
    const std::string exe = compile(fx::emit_cpp(c.jaxpr, c.name) + driver({c}), "mlp");
    REQUIRE(!exe.empty());
    const auto results = run(exe, {c});
    REQUIRE(results.size() == 1);
    for (size_t i = 0; i < 4; ++i) {
      INFO(fx::dtype_name(dtype), " gradient ", i);
      CHECK(compare_tensors(results[0][i], c.expected[i]) == "");
    }
  }
}

TEST_CASE("emit_cpp: an RK4 pendulum in fx::scan, 100 steps, matches fx::jit") {
  namespace cp = fx::testing::codegen_problems;
  const Tensor params = fx::tensor<double>({9.81, 0.3}), s0 = fx::tensor<double>({1.2, 0.0});
  auto jitted = fx::jit([](const Tensor& p, const Tensor& s) { return cp::pendulum_rk4(p, s, 100, 0.01); });
  auto [final_state, thetas] = jitted(params, s0);
  Case c{"pendulum", "rk4", cp::pendulum_jaxpr(params, s0, 100, 0.01), {params, s0}, {final_state, thetas}};
  const std::string code = fx::emit_cpp(c.jaxpr, c.name);
  CHECK(code.find("for (int64_t step = 0; step < 100; ++step)") != std::string::npos);  // a loop, not unrolled
  const std::string exe = compile(code + driver({c}), "pendulum");
  REQUIRE(!exe.empty());
  const auto results = run(exe, {c});
  REQUIRE(results.size() == 1);
  CHECK(compare_tensors(results[0][0], final_state) == "");
  CHECK(compare_tensors(results[0][1], thetas) == "");
}

TEST_CASE("emit_cpp: fused chains, broadcasts, views and repeated or input outputs match eager bit for bit") {
  auto program = [](const Tensor& x, const Tensor& y, const Tensor& s) {
    Tensor a = x * y + s;  // broadcasts of a vector and of a scalar, fused into the loop
    Tensor b = fx::where(a > 0.0, a, -a * 0.5);
    Tensor e = fx::transpose(fx::reshape(fx::stop_gradient(b), {3, 4}));  // views alias b
    return std::make_tuple(e, a, x, fx::sum(b), e);
  };
  const Tensor x = fx::from_vector<double>({1.5, -2, 0.25, -0.0, 3, -1, 2, 0.5, -4, 1, -0.75, 2.5}, fx::Shape{4, 3});
  const Tensor y = fx::tensor<double>({2.0, -0.5, 1.25}), s = fx::scalar<double>(-0.125);
  const auto [e, a, x_out, total, e2] = program(x, y, s);
  Case c{"chain", "chain", fx::make_jaxpr(program)(x, y, s), {x, y, s}, {e, a, x_out, total, e2}};
  const std::string code = fx::emit_cpp(c.jaxpr, c.name);
  CHECK(code.find("(computed in its reader's loop)") != std::string::npos);
  const std::string exe = compile(code + driver({c}), "chain");
  REQUIRE(!exe.empty());
  const auto results = run(exe, {c});
  REQUIRE(results.size() == 1);
  for (size_t i = 0; i < 5; ++i) {
    INFO("output ", i, ": emitted ", results[0][i], " eager ", c.expected[i]);
    CHECK(same_bits(results[0][i], c.expected[i]));
  }
}

TEST_CASE("emit_cpp: cond and while_loop take the path of their inputs") {
  auto program = [](const Tensor& x) {
    Tensor y = fx::cond(
        fx::sum(x) > 0.0, [](const Tensor& v) { return v * 2.0; }, [](const Tensor& v) { return v - 1.0; }, x);
    Tensor z = fx::while_loop([](const Tensor& v) { return fx::sum(v) < 100.0; },
                              [](const Tensor& v) { return v * 1.5 + 1.0; }, y);
    return std::make_pair(y, z);
  };
  const Tensor positive = fx::tensor<double>({1.0, 2.0, 0.5}), negative = fx::tensor<double>({-1.0, 2.0, -3.5});
  const fx::Jaxpr j = fx::make_jaxpr(program)(positive);
  std::vector<Case> cases;
  for (const Tensor& x : {positive, negative}) {
    const auto [y, z] = program(x);
    cases.push_back(Case{"branchy", "branchy", j, {x}, {y, z}});
  }
  const std::string exe = compile(fx::emit_cpp(j, "branchy") + driver(cases), "branchy");
  REQUIRE(!exe.empty());
  const auto results = run(exe, cases);
  REQUIRE(results.size() == 2);
  for (size_t k = 0; k < 2; ++k)
    for (size_t i = 0; i < 2; ++i) {
      INFO("case ", k, " output ", i, ": emitted ", results[k][i], " eager ", cases[k].expected[i]);
      CHECK(compare_tensors(results[k][i], cases[k].expected[i]) == "");
    }
}
