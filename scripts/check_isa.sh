#!/usr/bin/env bash
# Fails when a library or object file holds an instruction beyond baseline x86-64 (AVX, AVX2, FMA,
# BMI, AVX-512) in a function that is not a dispatched variant, naming the functions. A portable
# Fluxion library may hold them only in the run-time dispatched kernels (backends/cpu/isa.hpp):
# functions whose names carry isa_avx2 / fluxion_eigen_avx2 (AVX2-level only) or isa_avx512 /
# fluxion_eigen_avx512, and GCC target_clones clones ([clone .avx2], [clone .arch_x86_64_v4], ...).
#   bash scripts/check_isa.sh [--expect-variants] [--objdump PATH] FILE...
# --expect-variants: also fail unless the AVX2 and AVX-512 variants are there and use their ISA
# (a variant compiled without its flags would pass the first check vacuously).
set -euo pipefail
expect=0
objdump=objdump
files=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --expect-variants) expect=1 ;;
    --objdump) objdump=$2; shift ;;
    *) files+=("$1") ;;
  esac
  shift
done
[[ ${#files[@]} -gt 0 ]] || { echo "usage: check_isa.sh [--expect-variants] [--objdump PATH] FILE..." >&2; exit 2; }
for f in "${files[@]}"; do
  [[ -f $f ]] || { echo "check_isa: no such file: $f" >&2; exit 2; }
done

"$objdump" -d -C --no-show-raw-insn "${files[@]}" | awk -v expect="$expect" '
  function level(mnemonic, operands) {
    # AVX-512: zmm registers, mask registers, the 16 extra xmm/ymm registers, mask instructions.
    if (operands ~ /%zmm|%k[0-7]|%[xy]mm(1[6-9]|2[0-9]|3[01])/ || mnemonic ~ /^k(mov|and|or|xor|not|shift|test|add|unpck|ortest)/)
      return 2
    # AVX/AVX2/FMA/F16C (VEX, mnemonics v*, except the virtualization instructions), BMI1/2, LZCNT, MOVBE.
    # Not tzcnt: GCC emits it for generic x86-64 as rep bsf, which older CPUs run as bsf (the same
    # result for the nonzero operands GCC uses it on).
    if (operands ~ /%ymm/ || (mnemonic ~ /^v/ && mnemonic !~ /^(verr|verw|vm(call|launch|resume|read|write|xon|xoff|ptrld|ptrst|clear|func|run|load|save|mcall))$/))
      return 1
    if (mnemonic ~ /^(andn|bextr|blsi|blsmsk|blsr|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx|lzcnt|movbe)$/)
      return 1
    return 0
  }
  function allowed(name) {  # the highest level a function may use
    if (name ~ /isa_avx512|fluxion_eigen_avx512|\[clone \.(avx512[a-z0-9_]*|arch_x86_64_v4)\]/) return 2
    if (name ~ /isa_avx2|fluxion_eigen_avx2|\[clone \.(avx2|fma|arch_x86_64_v3)\]/) return 1
    return 0
  }
  function finish() {
    if (fn == "") return
    if (used > allowed(fn)) {
      bad++
      if (bad <= 20) printf("  %s uses %s (e.g. %s)\n", fn, used == 2 ? "AVX-512" : "AVX/AVX2", example)
    }
    if (fn ~ /isa_avx512::/ && used == 2) seen512 = 1
    if (fn ~ /isa_avx2::/ && used == 1) seen2 = 1
  }
  /^[0-9a-f]+ <.*>:$/ { finish(); fn = substr($0, index($0, "<") + 1); sub(/>:$/, "", fn); used = 0; example = ""; next }
  /^ +[0-9a-f]+:\t/ {
    line = $0; sub(/^ +[0-9a-f]+:\t/, "", line)
    n = split(line, parts, /[ \t]+/)
    i = 1
    while (i < n && parts[i] ~ /^(rep|repz|repe|repnz|repne|lock|notrack|bnd|data16|addr32|cs|ds|\{evex\}|\{vex\}|\{vex3\})$/) i++
    operands = ""
    for (j = i + 1; j <= n; j++) operands = operands " " parts[j]
    l = level(parts[i], operands)
    if (l > used) { used = l; example = line }
    total++
  }
  END {
    finish()
    if (total == 0) { print "check_isa: no instructions disassembled"; exit 2 }
    if (bad > 0) { printf("check_isa: %d function(s) outside the dispatched variants use instructions beyond baseline x86-64\n", bad); exit 1 }
    if (expect && !(seen2 && seen512)) {
      printf("check_isa: expected the dispatched variants (isa_avx2 using AVX2: %s, isa_avx512 using AVX-512: %s)\n", seen2 ? "yes" : "no", seen512 ? "yes" : "no")
      exit 1
    }
    printf("check_isa: %d instructions; only the dispatched variants go beyond baseline x86-64\n", total)
  }'
