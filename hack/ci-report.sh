#!/usr/bin/env bash
# The timing report .ci/run prints at its end (also after a failure):
# every step's wall time, CPU time and exit status, in the order they
# finished, from the step log (lines "STEP SECONDS STATUS [CPU_SECONDS]":
# .ci/run's own steps and each make target that records itself, see
# `timed` in the Makefile), then how busy the machine's cores were over the
# run (CPU_START: the first line of /proc/stat when the run began; CPU_END
# defaults to /proc/stat now), then the
# ten slowest tests across every suite's go test -json output (gotestsum
# tool slowest; subtests count as tests), then each failed test's own
# lines (its t.Log/t.Error output, indented by go test; a service's log
# lines on stderr are not), so a failure's message is not lost among them.
#
# A benchmark's JSON (BENCH_JSON_DIR) counts for the failures only.
#
#   hack/ci-report.sh STEP_LOG JSON_DIR [N] [BENCH_JSON_DIR] [CPU_START [CPU_END]]
set -euo pipefail
steps=$1 json=$2 n=${3:-10} bench=${4:-} cpu_start=${5:-} cpu_end=${6:-/proc/stat}
cd "$(dirname "$0")/.."

echo "ci: step times"
if [[ -s "$steps" ]]; then
	awk -F'\t' '{
		s = $2; cpu = ""
		if ($4 != "") cpu = sprintf("  CPU %3dm%02ds (%.1f cores)", $4 / 60, $4 % 60, (s > 0 ? $4 / s : 0))
		printf "  %-32s %3dm%02ds%s%s\n", $1, s / 60, s % 60, cpu, ($3 == 0 ? "" : "  FAILED (exit " $3 ")")
	}' "$steps"
else
	echo "  (no steps recorded)"
fi

# The cpu line of /proc/stat: user nice system idle iowait irq softirq
# steal (guest time is within user), in clock ticks over every core.
if [[ -n $cpu_start && -s $cpu_start ]]; then
	tck=$(getconf CLK_TCK)
	{ head -n 1 "$cpu_start"; head -n 1 "$cpu_end"; } | awk -v tck="$tck" '
		{ busy[NR] = $2 + $3 + $4 + $7 + $8 + $9; idle[NR] = $5 + $6 }
		END {
			b = (busy[2] - busy[1]) / tck; all = b + (idle[2] - idle[1]) / tck
			printf "ci: the machine'"'"'s cores over the run: busy %dm%02ds of %dm%02ds (%d %%)\n", b / 60, b % 60, all / 60, all % 60, (all > 0 ? 100 * b / all : 0)
		}'
fi

shopt -s nullglob
files=("$json"/*.json)
benchfiles=()
if [[ -n $bench ]]; then benchfiles=("$bench"/*.json); fi
echo "ci: the $n slowest tests of ${#files[@]} go test -json files in $json"
if ((${#files[@]} == 0)); then
	echo "  (none)"
elif [[ ! -x bin/gotestsum ]]; then
	echo "  (bin/gotestsum missing: hack/tools.sh gotestsum)"
else
	cat "${files[@]}" | bin/gotestsum tool slowest --threshold 0 --num "$n" | sed 's/^/  /'
fi

failed=$(cat "${files[@]}" "${benchfiles[@]}" /dev/null | jq -rn --argjson max 30 '
	[inputs | select(.Test != null)] | group_by(.Package + " " + .Test)
	| map(select(any(.[]; .Action == "fail"))) | .[]
	| "  \(.[0].Package) \(.[0].Test)",
	  ([.[] | select(.Action == "output") | .Output | select(test("^\\s+\\S")) | rtrimstr("\n")] | .[:$max][] | "    " + .)
' 2>/dev/null) || failed="  (jq could not read $json)"
if [[ -n $failed ]]; then
	echo "ci: the failed tests' own lines (first 30 each)"
	echo "$failed"
fi
