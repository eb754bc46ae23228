// The loader on damaged files: every truncation and thousands of random byte mutations of a small
// exported function (text and binary, the binary also re-sealed with a valid checksum so that the damage
// reaches the record parser) give a fluxion::Error or a function that loads and runs — never another
// exception, a crash or a hang. scripts/test.sh runs it under ASan and UBSan.
#include <doctest/doctest.h>

#include <random>

#include <fluxion/fluxion.hpp>

#include "export_util.hpp"
#include "samples.hpp"

namespace fx = fluxion;
using fluxion::Tensor;
using fluxion::testing::random_tensor;

namespace {

struct Outcome {
  size_t loaded = 0, refused = 0;
};

/// Loads `bytes` and, when it loads with the original's argument avals, runs it. A fluxion::Error is
/// a refusal; anything else escapes and fails the test.
void attempt(const std::string& bytes, const fx::Exported& original, const std::vector<Tensor>& args, Outcome& o) {
  try {
    fx::Exported g = fx::parse_exported(bytes, "fuzzed");
    if (g.in_avals() == original.in_avals()) g.call_flat(args);
    ++o.loaded;
  } catch (const fx::Error&) { ++o.refused; }
}

void reseal(std::string& binary) {
  const uint32_t crc = fx::export_detail::crc32(binary.data(), binary.size() - 4);
  for (int i = 0; i < 4; ++i) binary[binary.size() - 4 + i] = static_cast<char>(crc >> (8 * i));
}

/// A small function with a constant, literals, params and a nested Jaxpr (scan).
fx::Exported small_function(std::vector<Tensor>& args) {
  Tensor w = random_tensor({2}, fx::f32, 1), xs = random_tensor({3, 2}, fx::f32, 2);
  args = {w, xs};
  auto f = [](const Tensor& w, const Tensor& xs) {
    Tensor c = fx::from_vector(std::vector<float>{0.5f, -1.5f}, fx::Shape{2});
    return export_test::scan_loss(w * c, xs) + fx::sum(fx::reshape(xs, {6}) * 0.25);
  };
  return fx::export_fn(f, w, xs);
}

}  // namespace

TEST_CASE("export fuzz: every truncation is refused or loads, never crashes") {
  std::vector<Tensor> args;
  fx::Exported e = small_function(args);
  for (fx::ExportFormat format : {fx::ExportFormat::text, fx::ExportFormat::binary}) {
    const std::string bytes = e.serialize(format);
    Outcome o;
    for (size_t n = 0; n < bytes.size(); ++n) attempt(bytes.substr(0, n), e, args, o);
    MESSAGE(bytes.size(), " truncations: ", o.refused, " refused, ", o.loaded, " loaded");
    CHECK(o.refused + o.loaded == bytes.size());
    if (format == fx::ExportFormat::binary) CHECK(o.loaded == 0);  // the checksum covers every byte
  }
}

TEST_CASE("export fuzz: random byte mutations are refused or load, never crash") {
  std::vector<Tensor> args;
  fx::Exported e = small_function(args);
  std::mt19937_64 rng(20261207);
  for (int mode = 0; mode < 3; ++mode) {  // text, binary re-sealed, binary as damaged
    const std::string original = e.serialize(mode == 0 ? fx::ExportFormat::text : fx::ExportFormat::binary);
    Outcome o;
    const int tries = 2000;
    for (int t = 0; t < tries; ++t) {
      std::string bytes = original;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) {
        const size_t at = rng() % bytes.size();
        // Text: mostly plausible characters (digits, separators), so mutations get past the tokenizer.
        static const char plausible[] = "0123456789abcxyz-.,:()[]{}'@# =\n";
        bytes[at] = mode == 0 && rng() % 2 ? plausible[rng() % (sizeof plausible - 1)]
                                           : static_cast<char>(bytes[at] ^ static_cast<char>(1 + rng() % 255));
      }
      if (mode == 1) reseal(bytes);
      attempt(bytes, e, args, o);
    }
    MESSAGE("mode ", mode, ": ", o.refused, " refused, ", o.loaded, " loaded");
    CHECK(o.refused + o.loaded == static_cast<size_t>(tries));
    if (mode == 2) CHECK(o.loaded == 0);
    CHECK(o.refused > 0);
  }
}
