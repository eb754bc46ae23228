// The registry-driven primitive suite: every registered primitive has samples; on each sample
// the CPU kernels equal the reference kernels (f32 and f64; zeros with their signs), the shape
// rule gives the expected avals, and the bad inputs raise the expected error with a
// DESIGN.md-style message.
#include <doctest/doctest.h>

#include <iostream>
#include <map>
#include <string>

#include "sample_eval.hpp"

namespace fx = fluxion;
using fx::testing::sample_registry;

using fx::testing::equation_inputs;
using fx::testing::stage_sample;
using fx::testing::zero_sign_mismatch;

TEST_CASE("registry: every registered primitive has samples and bad inputs") {
  for (const fx::Primitive* p : fx::all_primitives()) {
    CAPTURE(p->name);
    auto it = sample_registry().find(p->name);
    CHECK_MESSAGE(it != sample_registry().end(), "primitive '" << p->name << "' has no samples");
    if (it == sample_registry().end()) continue;
    CHECK_MESSAGE(it->second.bad.size() >= 2, "primitive '" << p->name << "' needs >= 2 bad inputs");
    bool has_cpu = p->kernel(fx::Backend::cpu) != nullptr;
    bool has_reference = p->kernel(fx::Backend::reference) != nullptr;
    CHECK_MESSAGE(has_cpu, "no cpu kernel");
    CHECK_MESSAGE(has_reference, "no reference kernel");
  }
  for (const auto& [name, s] : sample_registry()) {
    CAPTURE(name);
    CHECK_MESSAGE(fx::find_primitive(name) != nullptr, "samples for unregistered primitive '" << name << "'");
  }
}

TEST_CASE("registry: cpu kernels equal reference kernels and shape rules match, f32 and f64") {
  int64_t checks = 0;
  std::map<std::string, double> worst;
  for (const fx::Primitive* p : fx::all_primitives()) {
    auto it = sample_registry().find(p->name);
    if (it == sample_registry().end()) continue;
    for (fx::DType dt : {fx::f32, fx::f64}) {
      for (const fx::testing::Sample& s : it->second.make(dt)) {
        if (s.collective_form) continue;  // no single equation to compare (samples.hpp)
        CAPTURE(p->name);
        CAPTURE(s.label);
        fx::Jaxpr j = stage_sample(s);
        fx::typecheck(j);
        REQUIRE_MESSAGE(j.equations.size() == 1, "sample must bind exactly one primitive:\n" << j);
        REQUIRE(j.equations[0].primitive == p);
        std::vector<fx::Tensor> in = equation_inputs(j, s);
        const fx::Params& params = *j.equations[0].params;
        auto ref = fx::eval_primitive(*p, in, params, fx::Backend::reference);
        auto cpu = fx::eval_primitive(*p, in, params, fx::Backend::cpu);
        REQUIRE(ref.size() == s.expected.size());
        REQUIRE(cpu.size() == s.expected.size());
        for (size_t k = 0; k < ref.size(); ++k) {
          CHECK_MESSAGE(ref[k].aval() == s.expected[k],
                        "shape rule gave " << ref[k].aval() << ", expected " << s.expected[k]);
          std::string diff = fx::testing::compare_tensors(cpu[k], ref[k], &worst[p->name]);
          CHECK_MESSAGE(diff.empty(), "cpu vs reference: " << diff);
          diff = zero_sign_mismatch(cpu[k], ref[k]);
          CHECK_MESSAGE(diff.empty(), "cpu vs reference: " << diff);
          ++checks;
        }
        // Eager bind (the user's path) agrees with the kernels too.
        auto eager = s.fn(s.inputs);
        for (size_t k = 0; k < eager.size(); ++k) CHECK(fx::testing::compare_tensors(eager[k], cpu[k]).empty());
      }
    }
  }
  std::cout << "[primitives] " << checks << " cpu-vs-reference output checks over " << fx::all_primitives().size()
            << " primitives\n";
  for (const auto& [name, w] : worst)
    if (w > 0) std::cout << "  worst relative error " << name << ": " << w << "\n";
}

TEST_CASE("registry: bad inputs raise the expected fluxion::Error with a [primitive] message") {
  int64_t checks = 0;
  for (const auto& [name, s] : sample_registry()) {
    for (const fx::testing::BadInput& b : s.bad) {
      CAPTURE(name);
      CAPTURE(b.label);
      bool threw = false;
      try {
        b.run();
      } catch (const fx::Error& e) {
        threw = true;
        CHECK_MESSAGE(b.is_expected(e), "wrong error type; expected " << b.type_name << ", message: " << e.what());
        std::string msg = e.what();
        CHECK_MESSAGE(msg.rfind("[", 0) == 0, "message must start with [where]: " << msg);
        CHECK_MESSAGE(msg.find(b.message_contains) != std::string::npos,
                      "message '" << msg << "' lacks '" << b.message_contains << "'");
      } catch (const std::exception& e) {
        threw = true;
        FAIL("not a fluxion::Error: " << e.what());
      }
      CHECK_MESSAGE(threw, "no exception");
      ++checks;
    }
  }
  std::cout << "[primitives] " << checks << " bad-input checks\n";
}
