#!/usr/bin/env bash
# Runs test binaries (test/run.sh) with every sanitizer's reports sent to files in DIR/reports,
# so that those of child processes (the provisioner, the fake API server) are not lost in their
# logs; any report fails the run. Used by make sanitize and make tsan (mk/fuzz.mk).
# Usage: test/sanitized_run.sh NAME DIR TEST...
# Sanitized binaries use several times the CPU: one test binary per CPU at a time (TEST_JOBS).
set -u
name=$1 dir=$2
shift 2
rm -rf "$dir/reports"
mkdir -p "$dir/reports"
reports=$(realpath "$dir/reports")
# ASan and UBSan share one log_path (the last set wins), so both name the same; TSan its own.
ASAN_OPTIONS=log_path=$reports/report:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
UBSAN_OPTIONS=log_path=$reports/report:print_stacktrace=1 \
TSAN_OPTIONS=log_path=$reports/report:halt_on_error=0:second_deadlock_stack=1 \
TEST_JOBS=${TEST_JOBS:-$(nproc)} \
  bash test/run.sh "$@"
rc=$?
if [ -n "$(ls "$reports")" ]; then
  for f in "$reports"/*; do echo "=== $name report $f"; cat "$f"; done
  echo "$name: $(ls "$reports" | wc -l) report(s) in $dir/reports/"
  exit 1
fi
echo "$name: no reports$([ $rc -eq 0 ] || echo ', but test failures (above)')"
exit $rc
