#!/usr/bin/env bash
# clang-format (.clang-format at the root) over the files that follow it: the folders and files
# written or restructured since the style was set. Older files join the list as they are touched.
#   bash scripts/format.sh          # rewrite them in place
#   bash scripts/format.sh --check  # exit 1 and list the files clang-format would change
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
tool=$(command -v clang-format-14 || command -v clang-format || true)
if [[ -z $tool ]]; then
  echo "clang-format is not installed (Debian: apt-get install clang-format); skipping"
  exit 77
fi
files=$(ls runtime/*.?pp passes/*.?pp primitives/*.hpp primitives/indexing_*.cpp backends/cpu/plan_runner.?pp \
  backends/cpu/tile_program_compiler.?pp backends/cpu/row_sums.hpp backends/cpu/broadcast_copy.hpp \
  backends/cpu/gemm*.hpp 2>/dev/null)
if [[ ${1:-} == --check ]]; then
  bad=0
  for f in $files; do
    if ! "$tool" "$f" | cmp -s - "$f"; then echo "not formatted: $f"; bad=1; fi
  done
  [[ $bad == 0 ]] && echo "$(echo "$files" | wc -w) files follow .clang-format"
  exit $bad
fi
"$tool" -i $files
