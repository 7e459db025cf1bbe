#!/usr/bin/env bash
# Runs the Catch2 test binaries given, TEST_JOBS at a time, prints each one's output as it
# ends, and ends with one summary line "N passed, N failed" counting test cases over all
# binaries. Exit 1 if any failed.
# Each test makes its own directories, ports and fake API server, and most of a binary's time
# is spent waiting for the provisioner and the fake, so binaries run side by side: TEST_JOBS
# defaults to twice the CPUs (TEST_JOBS=1: one after another). The longest binaries of earlier
# runs (their seconds are kept in build/test-times) start first.
set -u
jobs=${TEST_JOBS:-$(( $(nproc 2>/dev/null || echo 1) * 2 ))}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
times=build/test-times
out_dir=$(mktemp -d /tmp/hp-run-XXXXXX)
trap 'rm -rf "$out_dir"' EXIT

# The binaries, longest first by the seconds they took last; one never timed by the seconds its
# namesake of another kind of build took (build/asan/test/e2e_quota by build/test/e2e_quota's:
# in CI from a clean clone, make test has timed them all by then), and one never timed at all
# first of all.
order=$(for bin in "$@"; do
  t=$(awk -v b="$bin" -v n="${bin##*/}" '
        $1 == b { t = $2 }
        { k = $1; sub(/.*\//, "", k) }
        k == n && other == "" { other = $2 }
        END { print (t != "" ? t : (other != "" ? other : 1e9)) }' "$times" 2>/dev/null)
  printf '%s %s\n' "${t:-1e9}" "$bin"
done | sort -g -r -k1,1 | cut -d' ' -f2-)

passed=0 failed=0 bad_bins=() timed=()
declare -A running=() started=() log=()
Collect() {  # the binary of process $1 ended with exit status $2
  local pid=$1 rc=$2 bin=${running[$1]} out took
  took=$(( SECONDS - started[$1] ))
  out=$(cat "${log[$1]}")
  echo "=== $bin (${took} s)"
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
  [ "$rc" -ne 0 ] && bad_bins+=("$bin")
  timed+=("$bin $took")
  unset "running[$pid]"
}
WaitOne() {
  local pid rc
  wait -n -p pid; rc=$?
  Collect "$pid" "$rc"
}

i=0
for bin in $order; do
  while [ "${#running[@]}" -ge "$jobs" ]; do WaitOne; done
  i=$((i + 1))
  "$bin" >"$out_dir/$i" 2>&1 &
  running[$!]=$bin started[$!]=$SECONDS log[$!]=$out_dir/$i
done
while [ "${#running[@]}" -gt 0 ]; do WaitOne; done

# Keep the times of binaries not run this time.
if mkdir -p "$(dirname "$times")" 2>/dev/null; then
  { printf '%s\n' "${timed[@]}"
    [ -f "$times" ] && awk 'NR == FNR { seen[$1] = 1; next } !($1 in seen)' <(printf '%s\n' "${timed[@]}") "$times"
  } >"$times.new"
  mv "$times.new" "$times"
fi
[ ${#bad_bins[@]} -gt 0 ] && echo "failing: ${bad_bins[*]}"
echo "tests: $passed passed, $failed failed"
[ $failed -eq 0 ] && [ ${#bad_bins[@]} -eq 0 ]
