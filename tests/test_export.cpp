// fx::export_fn / fx::load_exported: every registry sample through the text and binary forms (params
// and outputs bit for bit), loaded functions under jit, vmap, grad and jvp, argument checks, versions,
// custom rules, and the files the fresh-process reader (export_reader.cpp) loads.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <fluxion/fluxion.hpp>
#include <fluxion/params_io.hpp>

#include "export_util.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using export_test::bit_mismatch;
using export_test::Params;
using fluxion::Tensor;
using fluxion::testing::compare_tensors;
using fluxion::testing::message_of;
using fluxion::testing::random_tensor;

namespace {

using SampleFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// "" when the equations of `a` and `b` have the same primitives and params (params compared with
/// equals(), or by their saved fields where equals() compares identities).
std::string params_mismatch(const fx::Jaxpr& a, const fx::Jaxpr& b) {
  if (a.equations.size() != b.equations.size())
    return std::to_string(a.equations.size()) + " equations instead of " + std::to_string(b.equations.size());
  for (size_t i = 0; i < a.equations.size(); ++i) {
    const fx::Equation &x = a.equations[i], &y = b.equations[i];
    if (x.primitive != y.primitive) return "equation " + std::to_string(i) + ": " + x.primitive->name;
    if (!x.params->equals(*y.params) && !fx::same_saved_params(*x.params, *y.params))
      return "equation " + std::to_string(i) + " (" + x.primitive->name + "): params differ";
  }
  return "";
}

/// True when some equation (at any depth of the saved form) calls a custom rule.
bool has_custom_calls(const fx::Jaxpr& j) {
  for (const fx::Equation& e : j.equations) {
    if (e.primitive->callee && !e.primitive->load_params) return true;
    if (e.primitive->callee && has_custom_calls(e.primitive->callee(*e.params))) return true;
  }
  return false;
}

/// Saves `e` in `format`, loads it back and checks: the file re-saves to the same bytes, the Jaxpr's
/// params equal `traced`'s (unless custom calls were replaced), and the outputs equal `want` bit for bit.
std::string round_trip(const fx::Exported& e, const fx::Jaxpr& traced, const std::vector<Tensor>& inputs,
                       const std::vector<Tensor>& want, fx::ExportFormat format) {
  const std::string bytes = e.serialize(format);
  fx::Exported g = fx::parse_exported(bytes, "sample");
  if (g.serialize(format) != bytes) return "saving the loaded function gives other bytes";
  if (!has_custom_calls(traced)) {
    std::string m = params_mismatch(g.jaxpr(), traced);
    if (!m.empty()) return m;
  }
  return bit_mismatch(g.call_flat(inputs), want);
}

}  // namespace

TEST_CASE("export: every registry sample round-trips through the text and binary forms") {
  size_t checked = 0, eqns_checked = 0;
  for (const auto& [name, family] : fx::testing::sample_registry()) {
    for (fx::DType dt : {fx::f32, fx::f64}) {
      for (const fx::testing::Sample& s : family.make(dt)) {
        CAPTURE(name);
        CAPTURE(s.label);
        SampleFn fn = s.fn;
        // The params of the staged (unoptimized) equations, saved and loaded directly.
        fx::Jaxpr staged = fx::make_jaxpr([&](const std::vector<Tensor>& in) { return fn(in); })(s.inputs);
        for (const fx::Equation& eq : staged.equations) {
          if (!eq.primitive->load_params) continue;
          fx::ParamsWriter w;
          eq.params->save(w);
          fx::ParamsReader r(w.fields(), eq.primitive->name, "test");
          std::shared_ptr<const fx::Params> back = eq.primitive->load_params(r);
          r.check_all_read();
          CHECK_MESSAGE((back->equals(*eq.params) || fx::same_saved_params(*back, *eq.params)), eq.primitive->name);
          ++eqns_checked;
        }
        auto jitted = fx::jit([fn](const std::vector<Tensor>& in) { return fn(in); });
        const std::vector<Tensor> want = jitted(s.inputs);
        const fx::Exported e = fx::export_fn(jitted, s.inputs);
        const fx::Jaxpr& traced = jitted.lower(s.inputs).first->jaxpr();
        CHECK(bit_mismatch(e.call_flat(s.inputs), want) == "");
        CHECK(round_trip(e, traced, s.inputs, want, fx::ExportFormat::text) == "");
        CHECK(round_trip(e, traced, s.inputs, want, fx::ExportFormat::binary) == "");
        ++checked;
      }
    }
  }
  MESSAGE(checked, " samples, ", eqns_checked, " staged equations");
  CHECK(checked > 300);
}

TEST_CASE("export: collectives keep their axis names and run under the vmap that binds them") {
  auto f = [](const Tensor& x) {
    return fx::all_sum(x, "i") * 2.0 + fx::all_max(x, "i") + fx::sum(fx::all_gather(x, "i"), {0});
  };
  // Traced where the axis is bound (a collective's shape rule reads the axis size), run likewise.
  Tensor members = random_tensor({4, 3}, fx::f64, 6);
  fx::Exported e;
  Tensor want = fx::vmap(
      [&](const Tensor& m) {
        e = fx::export_fn(f, m);
        return f(m);
      },
      {}, {}, fx::axis_name("i"))(members);
  std::string text = e.serialize(fx::ExportFormat::text);
  CHECK(text.find("axis_name='i'") != std::string::npos);
  // A file with an impossible axis size is refused (the shape rules divide by it).
  std::string zero = text;
  for (size_t at; (at = zero.find("axis_size=4")) != std::string::npos;) zero.replace(at, 11, "axis_size=0");
  CHECK(message_of<fx::Error>([&] { fx::parse_exported(zero, "z"); }).find("has size 0") != std::string::npos);
  for (fx::ExportFormat format : {fx::ExportFormat::text, fx::ExportFormat::binary}) {
    fx::Exported g = fx::parse_exported(e.serialize(format), "collectives");
    CHECK(params_mismatch(g.jaxpr(), e.jaxpr()) == "");
    Tensor got = fx::vmap([&](const Tensor& m) { return g(m)[0]; }, {}, {}, fx::axis_name("i"))(members);
    CHECK(compare_tensors(got, want) == "");
  }
}

namespace {

struct Mlp {
  Params params;
  Tensor x, y;
};

Mlp make_mlp() {
  Mlp m;
  m.params["w1"] = random_tensor({3, 5}, fx::f64, 1);
  m.params["b1"] = random_tensor({5}, fx::f64, 2);
  m.params["w2"] = random_tensor({5, 2}, fx::f64, 3);
  m.params["b2"] = random_tensor({2}, fx::f64, 4);
  m.x = random_tensor({4, 3}, fx::f64, 5);
  m.y = random_tensor({4, 2}, fx::f64, 6);
  return m;
}

/// A name of this process's own in the temporary directory (test runs may overlap).
std::filesystem::path temp_path(const std::string& name) {
  static const std::string tag = std::to_string(std::random_device()());
  return std::filesystem::temp_directory_path() / (tag + "_" + name);
}

fx::Exported reload(const fx::Exported& e, const std::string& file) {
  const std::string path = temp_path(file).string();
  e.save(path);
  fx::Exported g = fx::load_exported(path);
  std::filesystem::remove(path);
  return g;
}

}  // namespace

TEST_CASE("export: jit(grad(mlp)) loaded composes with jit, vmap, grad and jvp like the original") {
  Mlp m = make_mlp();
  auto grads = fx::jit(fx::grad(export_test::mlp_loss));
  for (const char* file : {"fluxion_mlp.fxt", "fluxion_mlp.fxb"}) {
    CAPTURE(file);
    fx::Exported g = reload(fx::export_fn(grads, m.params, m.x, m.y).named("mlp_grad"), file);
    CHECK(g.name() == "mlp_grad");
    CHECK(fx::to_string(g.in_tree()) == "tuple(map{'b1': leaf, 'b2': leaf, 'w1': leaf, 'w2': leaf}, leaf, leaf)");
    auto loaded = [g](const Params& p, const Tensor& x, const Tensor& y) { return g.call<Params>(p, x, y); };

    const Params want = grads(m.params, m.x, m.y), got = loaded(m.params, m.x, m.y);
    for (const auto& [k, v] : want) CHECK(bit_mismatch(got.at(k), v) == "");
    const Params got_jit = fx::jit(loaded)(m.params, m.x, m.y);
    for (const auto& [k, v] : want) CHECK(compare_tensors(got_jit.at(k), v) == "");

    // vmap over a batch of inputs (a leading axis of 2 on x).
    Tensor xs = random_tensor({2, 4, 3}, fx::f64, 9);
    auto w1_of = [&](auto fn) { return [fn, &m](const Tensor& x) { return fn(m.params, x, m.y).at("w1"); }; };
    CHECK(compare_tensors(fx::vmap(w1_of(loaded))(xs), fx::vmap(w1_of(grads))(xs)) == "");

    // grad and jvp through the loaded gradient (second derivatives).
    auto sum_w1 = [&](auto fn) { return [fn, &m](const Tensor& x) { return fx::sum(fn(m.params, x, m.y).at("w1")); }; };
    CHECK(compare_tensors(fx::grad(sum_w1(loaded))(m.x), fx::grad(sum_w1(grads))(m.x)) == "");
    Tensor t = random_tensor({4, 3}, fx::f64, 10);
    auto [p1, t1] = fx::jvp(sum_w1(loaded), m.x, t);
    auto [p2, t2] = fx::jvp(sum_w1(grads), m.x, t);
    CHECK(compare_tensors(p1, p2) == "");
    CHECK(compare_tensors(t1, t2) == "");
  }
}

TEST_CASE("export: jit(grad(scan)) loaded composes with jit, vmap and grad") {
  Tensor w = random_tensor({3}, fx::f64, 11), xs = random_tensor({5, 3}, fx::f64, 12);
  auto grads = fx::jit(fx::grad(export_test::scan_loss));
  fx::Exported e = fx::export_fn(grads, w, xs);
  bool has_scan = false;
  for (const fx::Equation& eq : e.jaxpr().equations) has_scan |= eq.primitive->name == "scan";
  CHECK(has_scan);
  for (const char* file : {"fluxion_scan.fxt", "fluxion_scan.fxb"}) {
    CAPTURE(file);
    fx::Exported g = reload(e, file);
    auto loaded = [g](const Tensor& w, const Tensor& xs) { return g.call<Tensor>(w, xs); };
    CHECK(bit_mismatch(loaded(w, xs), grads(w, xs)) == "");
    CHECK(compare_tensors(fx::jit(loaded)(w, xs), grads(w, xs)) == "");
    Tensor ws = random_tensor({4, 3}, fx::f64, 13);
    auto of_w = [&](auto fn) { return [fn, &xs](const Tensor& w) { return fn(w, xs); }; };
    CHECK(compare_tensors(fx::vmap(of_w(loaded))(ws), fx::vmap(of_w(grads))(ws)) == "");
    auto sum_of = [&](auto fn) { return [fn, &xs](const Tensor& w) { return fx::sum(fn(w, xs) * w); }; };
    CHECK(compare_tensors(fx::grad(sum_of(loaded))(w), fx::grad(sum_of(grads))(w)) == "");
  }
}

TEST_CASE("export: arguments of the wrong shape, dtype, count or static value are clear errors") {
  auto f = [](const Tensor& a, const Tensor& b, int k) { return fx::sum(b, {1}) * a * static_cast<double>(k); };
  Tensor a = random_tensor({3}, fx::f32, 1), b = random_tensor({3, 5}, fx::f32, 2);
  fx::Exported g = fx::parse_exported(fx::export_fn(f, a, b, 3).named("f").serialize(fx::ExportFormat::text), "t");
  CHECK(bit_mismatch(g(a, b, 3), {f(a, b, 3)}) == "");
  CHECK(message_of<fx::Error>([&] {
          g(a, random_tensor({3, 4}, fx::f32, 3), 3);
        }) ==
        "[exported 'f'] argument 1 has f32[3,4], expected f32[3,5]. Exported functions take the shapes and dtypes "
        "they were exported for; export again for others.");
  CHECK(message_of<fx::Error>([&] {
          g(a, random_tensor({3, 5}, fx::f64, 3), 3);
        }).find("argument 1 has f64[3,5], expected f32[3,5]") != std::string::npos);
  CHECK(message_of<fx::Error>([&] { g(a, b); }).find("called with 2 arguments, expected 3") != std::string::npos);
  CHECK(message_of<fx::Error>([&] { g(a, b, 4); }).find("argument 2 is value('4'), expected value('3')") !=
        std::string::npos);
  CHECK(message_of<fx::Error>([&] {
          g(a, std::vector<Tensor>{b}, 3);
        }).find("argument 1 is vector(leaf), expected leaf") != std::string::npos);
  CHECK(message_of<fx::Error>([&] { g.call_flat({a}); }).find("called with 1 tensor, expected 2") != std::string::npos);
  CHECK(message_of<fx::Error>([&] {
          g.call<std::pair<Tensor, Tensor>>(a, b, 3);
        }).find("the result is leaf but call<T> asks for a std::pair") != std::string::npos);
  CHECK(message_of<fx::Error>([] { fx::Exported().jaxpr(); }).find("this Exported is empty") != std::string::npos);
}

TEST_CASE("export: files of a newer version, unknown primitives and missing files are refused by name") {
  Tensor x = random_tensor({4}, fx::f32, 1);
  fx::Exported e = fx::export_fn([](const Tensor& x) { return fx::sin(x) * 2.0; }, x);
  std::string text = e.serialize(fx::ExportFormat::text);
  REQUIRE(text.rfind("fluxion-exported 1\n", 0) == 0);
  std::string newer = "fluxion-exported 7\n" + text.substr(19);
  CHECK(message_of<fx::Error>([&] { fx::parse_exported(newer, "file 'new.fxt'"); }) ==
        "[load_exported] file 'new.fxt' has format version 7 but this build reads versions up to 1. Load it with a "
        "newer Fluxion, or export it again with this one.");
  std::string binary = e.serialize(fx::ExportFormat::binary);
  binary[8] = 7;
  const uint32_t crc = fx::export_detail::crc32(binary.data(), binary.size() - 4);
  for (int i = 0; i < 4; ++i) binary[binary.size() - 4 + i] = static_cast<char>(crc >> (8 * i));
  CHECK(message_of<fx::Error>([&] { fx::parse_exported(binary, "b"); }).find("has format version 7") !=
        std::string::npos);
  std::string unknown = text;
  unknown.replace(unknown.find(" = sin "), 7, " = sinq ");
  CHECK(message_of<fx::Error>([&] { fx::parse_exported(unknown, "u"); }).find("unknown primitive 'sinq'") !=
        std::string::npos);
  CHECK(message_of<fx::Error>([] { fx::load_exported("/nonexistent/f.fxt"); }).find("cannot open") !=
        std::string::npos);
}

TEST_CASE("export: f16 and bf16 functions round-trip, constants and results bit for bit") {
  for (fx::DType half : {fx::f16, fx::bf16}) {
    CAPTURE(fx::dtype_name(half));
    Tensor x = fx::astype(random_tensor({2, 3}, fx::f32, 21), half);
    Tensor w = fx::astype(random_tensor({3, 4}, fx::f32, 22), half);
    auto f = [w](const Tensor& x) { return fx::sum(fx::tanh(fx::matmul(x, w)) * 0.3, {1}); };
    fx::Exported e =
        fx::export_fn(fx::jit(fx::grad([&](const Tensor& x) { return fx::sum(fx::astype(f(x), fx::f32)); })), x);
    for (fx::ExportFormat format : {fx::ExportFormat::text, fx::ExportFormat::binary}) {
      fx::Exported g = fx::parse_exported(e.serialize(format), "half");
      CHECK(g.serialize(format) == e.serialize(format));
      CHECK(g.in_avals()[0].dtype == half);
      CHECK(bit_mismatch(g(x), e(x)) == "");
    }
  }
}

TEST_CASE("export: doubles, NaN payloads and negative zeros round-trip bit for bit") {
  const uint64_t payload_bits = 0x7ff8000000000123ULL;
  double nan_payload = 0;
  std::memcpy(&nan_payload, &payload_bits, sizeof nan_payload);
  Tensor x = random_tensor({3}, fx::f64, 1);
  auto f = [nan_payload](const Tensor& x) {
    Tensor c = fx::from_vector(std::vector<double>{0.1, -0.0, 1e-310}, fx::Shape{3});
    Tensor nans = fx::from_vector(std::vector<double>{nan_payload, nan_payload, nan_payload}, fx::Shape{3});
    return std::make_pair(x * 0.1 + c + fx::where(x > 100.0, nans, -0.0), x * nan_payload);
  };
  fx::Exported e = fx::export_fn(f, x);
  CHECK(e.serialize(fx::ExportFormat::text).find("#230100000000f87f:f64") != std::string::npos);
  for (fx::ExportFormat format : {fx::ExportFormat::text, fx::ExportFormat::binary}) {
    fx::Exported g = fx::parse_exported(e.serialize(format), "doubles");
    CHECK(g.serialize(format) == e.serialize(format));
    CHECK(bit_mismatch(g(x), fx::tree_leaves(fx::jit(f)(x))) == "");
  }
}

TEST_CASE("export: custom rules are replaced by their primal function") {
  auto doubled_sin = fx::custom_jvp([](const Tensor& x) { return fx::sin(x); },
                                    [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                                      const Tensor& x = std::get<0>(p);
                                      return std::pair<Tensor, Tensor>{fx::sin(x), fx::cos(x) * 2.0 * std::get<0>(t)};
                                    });
  auto f = [doubled_sin](const Tensor& x) { return fx::sum(doubled_sin(x)); };
  Tensor x = random_tensor({4}, fx::f64, 3);
  fx::Exported g = reload(fx::export_fn(f, x), "fluxion_custom.fxt");
  for (const fx::Equation& eq : g.jaxpr().equations) CHECK(eq.primitive->name.find("custom") == std::string::npos);
  CHECK(bit_mismatch(g(x)[0], fx::jit(f)(x)) == "");
  // The loaded function differentiates its primal body: cos, not the custom rule's 2·cos.
  Tensor d = fx::grad([&](const Tensor& x) { return g(x)[0]; })(x);
  CHECK(compare_tensors(d, fx::cos(x)) == "");
}

TEST_CASE("export: fresh-process files (read back by export_reader)") {
  const char* env = std::getenv("FLUXION_EXPORT_DIR");
  const std::filesystem::path dir = env ? std::filesystem::path(env) : temp_path("fluxion_export_files");
  std::filesystem::create_directories(dir);
  std::ofstream manifest(dir / "manifest.txt");
  size_t n = 0;
  auto write = [&](const fx::Exported& e, const std::vector<Tensor>& leaves, const std::vector<Tensor>& want) {
    const std::string name = "case" + std::to_string(n++);
    e.save((dir / (name + ".fxt")).string());
    e.save((dir / (name + ".fxb")).string());
    fx::save_tensors((dir / (name + ".in")).string(), leaves);
    fx::save_tensors((dir / (name + ".out")).string(), want);
    manifest << name << "\n";
  };
  for (const auto& [prim, family] : fx::testing::sample_registry())
    for (const fx::testing::Sample& s : family.make(fx::f32)) {
      SampleFn fn = s.fn;
      auto jitted = fx::jit([fn](const std::vector<Tensor>& in) { return fn(in); });
      write(fx::export_fn(jitted, s.inputs), s.inputs, jitted(s.inputs));
    }
  Mlp m = make_mlp();
  auto grads = fx::jit(fx::grad(export_test::mlp_loss));
  std::vector<Tensor> leaves = fx::tree_leaves(std::make_tuple(m.params, m.x, m.y));
  write(fx::export_fn(grads, m.params, m.x, m.y), leaves, fx::tree_leaves(grads(m.params, m.x, m.y)));
  Tensor w = random_tensor({3}, fx::f64, 11), xs = random_tensor({5, 3}, fx::f64, 12);
  auto scan_grads = fx::jit(fx::grad(export_test::scan_loss));
  write(fx::export_fn(scan_grads, w, xs), {w, xs}, {scan_grads(w, xs)});
  manifest.close();
  CHECK(n > 150);
  // The same check in this process (export_reader repeats it in a fresh one).
  std::vector<Tensor> got =
      fx::load_exported((dir / "case0.fxb").string()).call_flat(fx::load_tensors((dir / "case0.in").string()));
  CHECK(bit_mismatch(got, fx::load_tensors((dir / "case0.out").string())) == "");
  if (!env) std::filesystem::remove_all(dir);
}

namespace {

/// Params with no save(): what custom rules' params are like, on a primitive made for this test.
struct OpaqueParams final : fx::Params {
  void print(std::ostream& os) const override { os << "opaque"; }
  bool equals(const fx::Params& o) const override { return dynamic_cast<const OpaqueParams*>(&o) != nullptr; }
  size_t hash() const override { return 1; }
  std::shared_ptr<const fx::Params> clone() const override { return std::make_shared<OpaqueParams>(); }
};

std::vector<fx::AbstractValue> same_aval(const fx::Primitive&, const std::vector<fx::AbstractValue>& in,
                                         const fx::Params&) {
  return {in[0]};
}

std::shared_ptr<const fx::Params> load_opaque(fx::ParamsReader&) { return std::make_shared<OpaqueParams>(); }

}  // namespace

TEST_CASE("export: params that cannot be saved fail at export time, naming the primitive") {
  fx::Primitive unsaveable;
  unsaveable.name = "opaque_op";
  unsaveable.shape_rule = &same_aval;
  unsaveable.load_params = &load_opaque;
  fx::Primitive loaderless = unsaveable;
  loaderless.name = "loaderless_op";
  loaderless.load_params = nullptr;
  const std::pair<const fx::Primitive*, const char*> cases[] = {
      {&unsaveable, "the params of 'opaque_op' cannot be saved"},
      {&loaderless, "the primitive 'loaderless_op' has params but no loader"}};
  for (const auto& [p, message] : cases) {
    fx::Jaxpr j;
    const int32_t a = j.new_var(fx::AbstractValue{fx::Shape{3}, fx::f32});
    const int32_t b = j.new_var(fx::AbstractValue{fx::Shape{3}, fx::f32});
    j.invars = {a};
    j.equations.push_back(fx::Equation{p, std::make_shared<OpaqueParams>(), {fx::Atom::of_var(a)}, {b}});
    j.outputs = {fx::Atom::of_var(b)};
    auto call = std::make_shared<const fx::JitCallParams>(std::make_shared<const fx::Jaxpr>(j), "t");
    fx::TreeDesc args;
    args.kind = fx::TreeDesc::Kind::tuple;
    args.children.resize(1);
    CHECK(message_of<fx::Error>([&] { fx::export_detail::make_exported(call, args, fx::TreeDesc{}); }).find(message) !=
          std::string::npos);
  }
}
