#!/usr/bin/env bash
# Tests hack/module-skew.sh --check offline, on throwaway modules that
# require one dependency (replaced by local folders, so nothing is
# downloaded): two modules at the same version pass, at different versions
# fail naming the dependency, both versions and the modules that select them,
# and a module whose build list cannot load fails rather than passing.
# `make test-ci` runs it.
set -euo pipefail
hack=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod GOPROXY=off
cd "$work"

# dep VERSION: a local copy of example.com/dep at VERSION.
dep() {
	mkdir -p "dep$1"
	printf 'module example.com/dep\n\ngo 1.26.0\n' >"dep$1/go.mod"
	printf 'package dep\n\nconst V = "%s"\n' "$1" >"dep$1/dep.go"
}
# mod NAME VERSION: a module whose package imports example.com/dep at VERSION.
mod() {
	mkdir -p "$1"
	printf 'module example.com/%s\n\ngo 1.26.0\n\nrequire example.com/dep v%s\n\nreplace example.com/dep v%s => ../dep%s\n' "$1" "$2" "$2" "$2" >"$1/go.mod"
	printf 'package %s\n\nimport "example.com/dep"\n\nconst V = dep.V\n' "$1" >"$1/$1.go"
}
dep 1.0.0
dep 1.1.0

failures=0
# expect NAME pass|fail [MESSAGE...]: run the check on MODULES (the global
# mods); it must pass, or fail with every MESSAGE (fixed strings) in its output.
expect() {
	local name=$1 want=$2 out rc=0
	shift 2
	out=$("$hack/module-skew.sh" --check "${mods[@]}" 2>&1) || rc=$?
	if [[ $want == pass && $rc != 0 ]]; then
		echo "FAIL $name: the check failed:"; echo "$out"; failures=$((failures + 1)); return
	elif [[ $want == fail && $rc == 0 ]]; then
		echo "FAIL $name: the check passed:"; echo "$out"; failures=$((failures + 1)); return
	fi
	for msg in "$@"; do
		if [[ $out != *"$msg"* ]]; then
			echo "FAIL $name: want \"$msg\" in:"; echo "$out"; failures=$((failures + 1)); return
		fi
	done
	echo "ok   $name"
}

mod a 1.0.0
mod b 1.0.0
mods=(a b)
expect "same version" pass

mod c 1.1.0
mods=(a b c)
expect "one module at another version" fail "example.com/dep" "v1.0.0" "v1.1.0" " a b" " c" "align the go.mod files"

mkdir broken
printf 'module example.com/broken\n\ngo 1.26.0\n' >broken/go.mod
printf 'package broken\n\nimport "example.com/missing"\n' >broken/broken.go
mods=(a broken)
expect "a module that does not load" fail "go list failed in broken"

((failures == 0)) || { echo "$failures failure(s)"; exit 1; }
