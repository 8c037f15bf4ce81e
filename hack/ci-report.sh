#!/usr/bin/env bash
# The timing report .ci/run prints at its end (also after a failure):
# every step's wall time and exit status, in the order they finished, from
# the step log (lines "STEP SECONDS STATUS": .ci/run's own steps and each
# make target that records itself, see `timed` in the Makefile), then the
# ten slowest tests across every suite's go test -json output (gotestsum
# tool slowest; subtests count as tests), then each failed test's own
# lines (its t.Log/t.Error output, indented by go test; a service's log
# lines on stderr are not), so a failure's message is not lost among them.
#
# A benchmark's JSON (BENCH_JSON_DIR) counts for the failures only.
#
#   hack/ci-report.sh STEP_LOG JSON_DIR [N] [BENCH_JSON_DIR]
set -euo pipefail
steps=$1 json=$2 n=${3:-10} bench=${4:-}
cd "$(dirname "$0")/.."

echo "ci: step times"
if [[ -s "$steps" ]]; then
	awk -F'\t' '{ s = $2; printf "  %-32s %3dm%02ds%s\n", $1, s / 60, s % 60, ($3 == 0 ? "" : "  FAILED (exit " $3 ")") }' "$steps"
else
	echo "  (no steps recorded)"
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
