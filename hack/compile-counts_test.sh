#!/usr/bin/env bash
# Tests the compile counter (hack/compile-log.sh as -toolexec, summarised by
# hack/compile-counts.sh) on a throwaway module whose package is new to the
# build cache: a build logs the package once per flavour it compiles in,
# nothing when the cache already holds it — also when that cache entry came
# from a build without the wrapper, so the counter sees what a normal run
# compiles — and the summary counts per flavour. `make test-ci` runs it.
set -euo pipefail
hack=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CROWSNEST_COMPILE_LOG=$work/compiles.log GOWORK=off GOFLAGS=
unset GOOS GOARCH CGO_ENABLED

cd "$work"
mkdir -p lib
printf 'module example.com/countme\n\ngo 1.26.0\n' >go.mod
# A package no build cache holds yet: its source is unique to this run.
printf 'package lib\n\n// ID is unique to one test run.\nconst ID = "%s-%s"\n' "$$" "$(date +%s%N)" >lib/lib.go
printf 'package main\n\nimport "example.com/countme/lib"\n\nfunc main() { println(lib.ID) }\n' >main.go

failures=0
# want WHAT N: the log has N compiles of example.com/countme/lib with
# flavour WHAT (a fixed string, e.g. norace,paths).
want() {
	local got
	got=$(grep -c "^example.com/countme/lib $1," "$CROWSNEST_COMPILE_LOG" 2>/dev/null || true)
	if [[ ${got:-0} != "$2" ]]; then
		echo "FAIL: $2 compile(s) of lib as $1 wanted, the log has ${got:-0}:"
		cat "$CROWSNEST_COMPILE_LOG" 2>/dev/null || true
		failures=$((failures + 1))
	else
		echo "ok   $2 compile(s) of lib as $1"
	fi
}
counted() { go build -toolexec="$hack/compile-log.sh" "$@" -o /dev/null .; }

# Built once without the wrapper: with it, the same build is a cache hit.
go build -o /dev/null .
counted
want norace,paths, 0
# New flavours compile again, each once.
counted -race
want race,paths,cgo=1 1
CGO_ENABLED=0 counted -trimpath
want norace,trimpath,cgo=0 1
CGO_ENABLED=0 counted -trimpath
want norace,trimpath,cgo=0 1

summary=$("$hack/compile-counts.sh" "$CROWSNEST_COMPILE_LOG" example.com/countme/lib)
if ! grep -q '^example.com/countme/lib: 2$' <<<"$summary" || ! grep -qE '^  race,paths,cgo=1,[a-z0-9]+/[a-z0-9]+ +1$' <<<"$summary"; then
	echo "FAIL: the summary does not count lib twice, once with -race:"; echo "$summary"
	failures=$((failures + 1))
else
	echo "ok   summary: $(grep -c . <<<"$summary") lines, lib counted twice"
fi

if ((failures)); then
	echo "compile-counts: $failures check(s) failed"
	exit 1
fi
echo "compile-counts: every check passed"
