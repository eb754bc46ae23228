#!/usr/bin/env bash
# clang-format (.clang-format at the root) over every C++ and CUDA source file of the repository.
#   bash scripts/format.sh          # rewrite them in place
#   bash scripts/format.sh --check  # exit 1 and list the files clang-format would change
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
tool=$(command -v clang-format-14 || command -v clang-format || true)
if [[ -z $tool ]]; then
  echo "clang-format is not installed (Debian: apt-get install clang-format); skipping"
  exit 77
fi
files=$(git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh' 2>/dev/null)
if [[ -z $files ]]; then  # not a git checkout (an unpacked archive): every source under the folders
  files=$(find src include primitives transforms passes runtime backends tests bench examples \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null)
fi
if [[ ${1:-} == --check ]]; then
  bad=0
  for f in $files; do
    if ! "$tool" "$f" | cmp -s - "$f"; then echo "not formatted: $f"; bad=1; fi
  done
  [[ $bad == 0 ]] && echo "$(echo "$files" | wc -w) files follow .clang-format"
  exit $bad
fi
"$tool" -i $files
