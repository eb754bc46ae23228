/// The differential test's inputs: the stored JAX references (data/*.json), the rows of
/// EXPECTED_DIFFERENCES.md, and the comparison of Fluxion's results with a reference.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness.hpp"

namespace diff {

/// One stored reference tensor.
struct RefTensor {
  std::string dtype;  // f64, f32, i32, i64 or bool
  std::vector<int64_t> shape;
  std::vector<double> values;
};

/// One data entry: the inputs JAX used and its results per reference name (see reference_of).
struct Entry {
  std::string name, cpp, dtype;
  std::vector<std::string> checks;
  Args args, batched, tangent;
  std::map<std::string, std::vector<RefTensor>> refs;
};

/// Every entry of every data/*.json, in file then entry order (read once).
const std::vector<Entry>& load_entries();

/// A row of EXPECTED_DIFFERENCES.md: entries matching `pattern` (a glob), checks in `checks`
/// (or all for "*"). kind: convention (a deliberate difference: the check must differ), dtype
/// (dtypes differ on purpose: values are still compared), failure (a Fluxion bug: must differ).
struct Rule {
  std::string pattern, checks_text, kind, reason;
  std::vector<std::string> checks;
  int matched = 0, differed = 0;
};
std::vector<Rule> load_rules();
/// The first rule matching (entry, check), or nullptr.
Rule* find_rule(std::vector<Rule>& rules, const std::string& entry, const std::string& check);
/// Glob with `*` (any run of characters).
bool glob_match(const std::string& pattern, const std::string& text);

/// text is empty when the results equal the reference within the dtype's tolerance.
struct Verdict {
  bool dtype_differs = false;
  bool shape_differs = false;
  double worst = 0;  // the largest |a - b| / tolerance over the compared elements
  std::string text;
};
/// Compares leaves with references: shapes exactly, dtypes (unless ignore_dtype), values within the
/// tolerance of their dtype (f64: 1e-10 relative-ish, f32 on either side: 2e-5; integers and bools,
/// infinities and NaN exactly).
Verdict compare(const Leaves& got, const std::vector<RefTensor>& ref, bool ignore_dtype);

}  // namespace diff
