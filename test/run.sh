#!/usr/bin/env bash
# Runs each Catch2 test binary given, prints its output, and ends with one summary line
# "N passed, N failed" counting test cases over all binaries. Exit 1 if any failed.
set -u
passed=0 failed=0 bad_bins=()
for bin in "$@"; do
  echo "=== $bin"
  out=$("$bin" 2>&1); rc=$?
  printf '%s\n' "$out" | tail -n 40
  # Catch2 v2 ends with "All tests passed (A assertions in N test cases)" or
  # "test cases: N | P passed | F failed".
  if [[ $out =~ All\ tests\ passed\ \([0-9]+\ assertions?\ in\ ([0-9]+)\ test\ cases?\) ]]; then
    passed=$((passed + BASH_REMATCH[1]))
  elif [[ $out =~ test\ cases:\ +([0-9]+)\ \|\ +([0-9]+)\ passed\ \|\ +([0-9]+)\ failed ]]; then
    passed=$((passed + BASH_REMATCH[2])); failed=$((failed + BASH_REMATCH[3]))
  elif [[ $out =~ test\ cases:\ +([0-9]+)\ \|\ +([0-9]+)\ failed ]]; then
    failed=$((failed + BASH_REMATCH[2]))
  else
    failed=$((failed + 1))
  fi
  [ $rc -ne 0 ] && bad_bins+=("$bin")
done
[ ${#bad_bins[@]} -gt 0 ] && echo "failing: ${bad_bins[*]}"
echo "tests: $passed passed, $failed failed"
[ $failed -eq 0 ] && [ ${#bad_bins[@]} -eq 0 ]
