#!/usr/bin/env bash
# Tests hack/ci-report.sh on a made-up step log and go test -json files of
# two suites: steps in order with failures marked, and the ten slowest tests
# across both files, slowest first. `make test-ci` runs it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A step of .ci/run's older format (no CPU column) among steps with one.
printf 'test-api\t75\t0\t150\nlint-operator\t615\t2\t61\nmake test\t3700\t2\ncopy\t0\t0\t0\n' >"$work/steps.tsv"
# /proc/stat's cpu lines 600 s apart on two cores (100 ticks a second):
# 900 s busy (user 500, nice 100, system 200, irq 50, softirq 30, steal
# 20), 300 s idle (idle 250, iowait 50): 75 %.
tck=$(getconf CLK_TCK)
t() { echo $(($1 * tck)); }
echo "cpu  $(t 1000) $(t 10) $(t 300) $(t 5000) $(t 40) $(t 5) $(t 6) $(t 1) 0 0" >"$work/cpu-start"
echo "cpu  $(t 1500) $(t 110) $(t 500) $(t 5250) $(t 90) $(t 55) $(t 36) $(t 21) 0 0" >"$work/cpu-end"
mkdir "$work/json"
# Twelve tests in two files; test N takes N seconds.
for i in $(seq 1 12); do
	f=$work/json/suite$((i % 2)).json
	printf '{"Action":"run","Package":"example.com/p%d","Test":"TestN%02d"}\n' $((i % 2)) "$i" >>"$f"
	printf '{"Action":"pass","Package":"example.com/p%d","Test":"TestN%02d","Elapsed":%d}\n' $((i % 2)) "$i" "$i" >>"$f"
done

# One failed test whose message sits among a service's log lines.
f=$work/json/suite0.json
printf '{"Action":"run","Package":"example.com/p0","Test":"TestFails"}\n' >>"$f"
printf '{"Action":"output","Package":"example.com/p0","Test":"TestFails","Output":"2026/11/29 07:22:42 ERROR request failed\\n"}\n' >>"$f"
printf '{"Action":"output","Package":"example.com/p0","Test":"TestFails","Output":"    flood_test.go:115: got 200, want 503\\n"}\n' >>"$f"
printf '{"Action":"fail","Package":"example.com/p0","Test":"TestFails","Elapsed":0}\n' >>"$f"

# Benchmarks apart: one failed (reported), one only started (go test -json
# gives a benchmark no pass event; not a failure).
mkdir "$work/bench"
f=$work/bench/bench-m.json
printf '{"Action":"run","Package":"example.com/b","Test":"BenchmarkRuns"}\n' >>"$f"
printf '{"Action":"run","Package":"example.com/b","Test":"BenchmarkFails"}\n' >>"$f"
printf '{"Action":"output","Package":"example.com/b","Test":"BenchmarkFails","Output":"    bench_test.go:42: 3 findings, want 24\\n"}\n' >>"$f"
printf '{"Action":"fail","Package":"example.com/b","Test":"BenchmarkFails","Elapsed":1}\n' >>"$f"

out=$("$root/hack/ci-report.sh" "$work/steps.tsv" "$work/json" 10 "$work/bench" "$work/cpu-start" "$work/cpu-end")
failures=0
check() {
	if grep -qE "$2" <<<"$out"; then echo "ok   $1"; else echo "FAIL $1: no line matching $2 in:"; echo "$out"; failures=$((failures + 1)); fi
}
check "a passed step, its CPU" '^  test-api +1m15s  CPU +2m30s \(2\.0 cores\)$'
check "a failed step, its CPU" '^  lint-operator +10m15s  CPU +1m01s \(0\.1 cores\)  FAILED \(exit 2\)$'
check "the hour-long step, no CPU recorded" '^  make test +61m40s  FAILED \(exit 2\)$'
check "a step of no time" '^  copy +0m00s  CPU +0m00s \(0\.0 cores\)$'
check "the machine's cores" "^ci: the machine's cores over the run: busy 15m00s of 20m00s \(75 %\)$"
slow=$(sed -n '/slowest tests/,/failed tests/p' <<<"$out" | sed '1d;$d' | awk '{ print $2 }' | tr '\n' ' ')
if [[ $slow == "TestN12 TestN11 TestN10 TestN09 TestN08 TestN07 TestN06 TestN05 TestN04 TestN03 " ]]; then
	echo "ok   the ten slowest of both suites, slowest first"
else
	echo "FAIL slowest tests: got \"$slow\" in:"; echo "$out"; failures=$((failures + 1))
fi
check "a failed test named" '^  example.com/p0 TestFails$'
check "its message" '^        flood_test.go:115: got 200, want 503$'
check "a failed benchmark named" '^  example.com/b BenchmarkFails$'
check "its message" '^        bench_test.go:42: 3 findings, want 24$'
if grep -q 'BenchmarkRuns' <<<"$out"; then
	echo "FAIL a benchmark without a fail event among the failed:"; echo "$out"; failures=$((failures + 1))
else
	echo "ok   a started benchmark is not a failure"
fi
if grep -q 'ERROR request failed' <<<"$out"; then
	echo "FAIL a service's log line among the failed tests' lines:"; echo "$out"; failures=$((failures + 1))
else
	echo "ok   no service log lines"
fi
if ((failures)); then
	echo "ci-report: $failures check(s) failed"
	exit 1
fi
echo "ci-report: every check passed"
