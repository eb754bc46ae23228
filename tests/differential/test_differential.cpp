// The differential test: every catalogue function (cat_*.cpp) under every transform its data entry
// lists, compared with the references JAX computed (data/*.json, made by generate.py), so CI needs no
// JAX. Rows of EXPECTED_DIFFERENCES.md name the checks that differ on purpose or by a known bug;
// every other check must agree, and every row must still match a difference (else it is stale).
// FLUXION_DIFF_ONLY=<glob> runs only the matching entries; FLUXION_DIFF_VERBOSE=1 prints each check.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "data.hpp"
#include "harness.hpp"

namespace {

using namespace diff;

struct Tally {
  int run = 0, pass = 0, known = 0, fail = 0;
};

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

/// Runs one check and compares it with its reference; the verdict's text is empty when equal.
Verdict run_check(const Entry& e, const std::string& check, const Fn& f, bool ignore_dtype) {
  auto ref = e.refs.find(check);  // a reference of the check's own, else the shared one
  if (ref == e.refs.end()) ref = e.refs.find(reference_of(check));
  if (ref == e.refs.end()) return Verdict{false, false, 0, "no reference '" + reference_of(check) + "' in the data"};
  try {
    Leaves got = is_forward_check(check) ? run_forward_check(check, f, e.args, e.batched, e.tangent)
                                         : run_reverse_check(check, f, e.args, e.batched, e.tangent);
    return compare(got, ref->second, ignore_dtype);
  } catch (const std::exception& ex) {
    std::string what = ex.what();
    return Verdict{false, false, 0, "threw: " + what.substr(0, what.find('\n'))};
  }
}

}  // namespace

TEST_CASE("differential: the catalogue, the stored references and EXPECTED_DIFFERENCES.md agree") {
  const Catalogue cat = catalogue();
  const std::vector<Entry>& entries = load_entries();
  std::map<std::string, int> used;
  for (const Entry& e : entries) {
    INFO("entry " << e.name);
    CHECK_MESSAGE(cat.find(e.cpp) != nullptr, "no C++ function '" << e.cpp << "' (add it to a cat_*.cpp file)");
    used[e.cpp]++;
  }
  for (const auto& [name, fn] : cat.all())
    CHECK_MESSAGE(used.count(name), "catalogue function '" << name << "' has no reference data: run generate.py");
  CHECK(cat.size() >= 150);
  CHECK(!load_rules().empty());
}

TEST_CASE("differential: Fluxion equals JAX on every catalogue function under every transform") {
  const auto t0 = std::chrono::steady_clock::now();
  const Catalogue cat = catalogue();
  const std::vector<Entry>& entries = load_entries();
  std::vector<Rule> rules = load_rules();
  const char* only = env("FLUXION_DIFF_ONLY");
  const bool verbose = env("FLUXION_DIFF_VERBOSE") != nullptr;
  std::map<std::string, Tally> per_check;
  std::vector<std::string> failures;
  int n_entries = 0, n_f32 = 0;
  for (const Entry& e : entries) {
    if (only && !glob_match(only, e.name)) continue;
    const Fn* f = cat.find(e.cpp);
    if (!f) continue;  // reported by the test case above
    ++n_entries;
    n_f32 += e.dtype == "f32";
    for (const std::string& check : e.checks) {
      Rule* rule = find_rule(rules, e.name, check);
      Verdict v = run_check(e, check, *f, rule && rule->kind == "dtype");
      Tally& t = per_check[check];
      ++t.run;
      if (rule) ++rule->matched;
      // A dtype row excuses the dtype only: its values must still agree.
      const bool excused = rule && (rule->kind == "dtype" ? v.text.empty() && v.dtype_differs : !v.text.empty());
      if (excused) {
        ++rule->differed;
        ++t.known;
      } else if (v.text.empty()) {
        ++t.pass;
      } else {
        ++t.fail;
        failures.push_back(e.name + " [" + check + "]: " + v.text);
      }
      if (verbose)
        std::cout << e.name << " [" << check << "]: " << (v.text.empty() ? "ok" : v.text) << " (error/tolerance "
                  << v.worst << ")\n";
    }
  }
  Tally total;
  std::cout << "differential: " << n_entries << " entries run (" << n_f32 << " of them f32), " << cat.size()
            << " C++ catalogue functions\n"
            << "  check        run   pass  known  FAIL\n";
  for (const auto& [check, t] : per_check) {
    std::cout << "  " << std::left << std::setw(10) << check << std::right << std::setw(6) << t.run << std::setw(7)
              << t.pass << std::setw(7) << t.known << std::setw(6) << t.fail << "\n";
    total.run += t.run, total.pass += t.pass, total.known += t.known, total.fail += t.fail;
  }
  std::cout << "  " << std::left << std::setw(10) << "total" << std::right << std::setw(6) << total.run << std::setw(7)
            << total.pass << std::setw(7) << total.known << std::setw(6) << total.fail << "  ("
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s)\n";
  std::map<std::string, int> known_by_reason;
  for (const Rule& r : rules) known_by_reason[r.kind + ": " + r.reason] += r.differed;
  for (const auto& [reason, n] : known_by_reason)
    if (n) std::cout << "  known " << reason << " — " << n << " checks\n";
  for (const std::string& f : failures) std::cout << "FAIL " << f << "\n";
  CHECK_MESSAGE(failures.empty(), failures.size() << " checks differ from JAX (listed above as FAIL)");
  if (only) return;  // a partial run cannot tell stale rows
  for (const Rule& r : rules) {
    INFO("EXPECTED_DIFFERENCES.md row `" << r.pattern << "` | " << r.checks_text << " | " << r.kind);
    CHECK_MESSAGE(r.matched > 0, "the row matches no check: fix or remove it");
    CHECK_MESSAGE((r.matched == 0 || r.differed > 0), "no check of the row differs any more: remove the row");
  }
}
