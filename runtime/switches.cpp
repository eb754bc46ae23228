// Optimization switches (runtime/switches.hpp): a bit set, parsed from FLUXION_DISABLE on first use.
#include "runtime/switches.hpp"

#include <array>
#include <atomic>
#include <cstdlib>
#include <sstream>

#include "fluxion/errors.hpp"

namespace fluxion::runtime {
namespace switches_detail {

struct Entry {
  const char* name;
  const char* what;
};

constexpr size_t kCount = static_cast<size_t>(Switch::count);
constexpr std::array<Entry, kCount> kTable = {{
    {"simplify", "the simplify pass as a whole (every rule group below)"},
    {"algebra", "simplify: units, negation, movement chains, select"},
    {"seeds", "simplify: products with identity and diagonal seed matrices"},
    {"products", "simplify: products of broadcasts done on the unbroadcast values, transposes moved"},
    {"siblings", "simplify: products of one matrix with several vectors stacked into one product"},
    {"gram", "simplify: x^T diag(s) x as one gram(x, s); transposes of symmetric values dropped"},
    {"cse", "common-subexpression elimination"},
    {"widen_half", "f16/bf16 equations rewritten as converts around f32 equations, so that fusion keeps f32 inside"},
    {"fusion", "plan: elementwise chains and reductions fused into one pass over blocks"},
    {"tiles", "plan: large products computed tile by tile inside the fused group reading them"},
    {"side_by_side", "plan: independent kernels run side by side, one thread each"},
    {"buffer_reuse", "plan: intermediates share buffers by liveness"},
    {"register_programs", "cpu: fused f32/f64 chains kept in vector registers"},
    {"blas", "cpu: OpenBLAS / oneDNN for large products (Eigen's product otherwise)"},
    {"small_linalg", "cpu: linear systems of n <= 8 solved by fixed-size kernels (a batch of them under vmap)"},
    {"loops", "scan/while/fori bodies run step after step on one held plan state, carries exchanged in place"},
}};

std::atomic<uint32_t> g_disabled{0};

uint32_t parse(const std::string& names) {
  uint32_t bits = 0;
  std::stringstream in(names);
  std::string item;
  while (std::getline(in, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) continue;
    size_t i = 0;
    while (i < kCount && item != kTable[i].name) ++i;
    if (i == kCount) {
      std::string known;
      for (const Entry& e : kTable) known += (known.empty() ? "" : ", ") + std::string(e.name);
      detail::fail<Error>("FLUXION_DISABLE", "unknown optimization '", item, "' in \"", names, "\". Known: ", known,
                          ".");
    }
    bits |= uint32_t(1) << i;
  }
  return bits;
}

/// Reads FLUXION_DISABLE once. A function-local static, not std::call_once: call_once's TLS
/// trampolines do not resolve in clang-repl (notebooks). A throw (an unknown name) leaves it unread,
/// so the next query reports it again.
void read_environment() {
  static const bool read = [] {
    const char* env = std::getenv("FLUXION_DISABLE");
    if (env) g_disabled.store(parse(env), std::memory_order_relaxed);
    return true;
  }();
  (void)read;
}

}  // namespace switches_detail

bool enabled(Switch s) {
  switches_detail::read_environment();
  return !(switches_detail::g_disabled.load(std::memory_order_relaxed) >> static_cast<uint32_t>(s) & 1u);
}

const char* switch_name(Switch s) { return switches_detail::kTable[static_cast<size_t>(s)].name; }

std::string describe_switches() {
  std::string out;
  for (const auto& e : switches_detail::kTable) out += std::string(e.name) + "  " + e.what + "\n";
  return out;
}

void set_disabled(const std::string& names) {
  switches_detail::read_environment();  // so a later first use does not overwrite this
  switches_detail::g_disabled.store(switches_detail::parse(names), std::memory_order_relaxed);
}

std::string disabled() {
  std::string out;
  for (size_t i = 0; i < switches_detail::kCount; ++i)
    if (!enabled(static_cast<Switch>(i)))
      out += (out.empty() ? "" : ",") + std::string(switches_detail::kTable[i].name);
  return out;
}

}  // namespace fluxion::runtime
