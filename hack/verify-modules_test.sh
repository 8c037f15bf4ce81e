#!/usr/bin/env bash
# Tests hack/verify-modules.sh on a copy of the tree (tracked and untracked
# files, git-ignored ones left out): the copy passes as it is, and fails,
# naming the module, when it is broken in each way the check promises to
# catch. `make test-ci` runs it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$root" && git ls-files -z -co --exclude-standard) | (cd "$root" && tar --null -T - -cf -) | (cd "$work" && tar -xf -)
cd "$work"
git init -q && git add -A && git -c user.name=test -c user.email=test@example.invalid commit -qm copy && git tag base

failures=0
# expect NAME pass|fail [MESSAGE]: run the check on the copy as it is now;
# it must pass, or fail with MESSAGE (a fixed string) in its output. Then
# the copy is reset to the tree as it was.
expect() {
	local name=$1 want=$2 msg=${3:-} out rc=0
	out=$(hack/verify-modules.sh 2>&1) || rc=$?
	if [[ $want == pass && $rc != 0 ]]; then
		echo "FAIL $name: the check failed on a good tree:"; echo "$out"; failures=$((failures + 1))
	elif [[ $want == fail && $rc == 0 ]]; then
		echo "FAIL $name: the check passed:"; echo "$out"; failures=$((failures + 1))
	elif [[ $want == fail && $out != *"$msg"* ]]; then
		echo "FAIL $name: want \"$msg\" in:"; echo "$out"; failures=$((failures + 1))
	else
		echo "ok   $name"
	fi
	git reset -q --hard base && git clean -qfd
}
commit() { git add -A && git -c user.name=test -c user.email=test@example.invalid commit -qm "$1"; }
# module DIR: a module with a package and a test.
module() {
	mkdir -p "$1"
	printf 'module example.com/%s\n\ngo 1.26.0\n' "$1" >"$1/go.mod"
	printf 'package x\n\n// F is one.\nfunc F() int { return 1 }\n' >"$1/x.go"
	printf 'package x\n\nimport "testing"\n\nfunc TestF(t *testing.T) { _ = F() }\n' >"$1/x_test.go"
}

expect "the tree as it is" pass

# Suites run go test with GOWORK=off, and tests that call make (the image
# builder's) pass it on: the module list still comes from go.work.
if out=$(GOWORK=off hack/modules.sh make 2>&1) && [[ $out == *"ok:modules"* ]]; then
	echo "ok   the module list under GOWORK=off"
else
	echo "FAIL the module list under GOWORK=off:"; echo "$out"; failures=$((failures + 1))
fi

module newmod
expect "an untracked module" fail "newmod has a go.mod git does not track"

module newmod && commit "a module no suite tests"
expect "a module no suite tests" fail "newmod has tests, but no test suite"

module newmod && printf '\nsuite_newmod := newmod\nGO_SUITES += newmod\n' >>Makefile && commit "a module with a suite"
expect "a new module with a suite of its own" pass

mkdir -p api/testdata/fixture && printf 'module example.com/fixture\n' >api/testdata/fixture/go.mod && commit "testdata"
expect "a go.mod under testdata (not a module of the tree)" pass

mkdir -p empty && printf 'module example.com/empty\n\ngo 1.26.0\n' >empty/go.mod && commit "no Go files"
expect "a module without Go files" fail "empty has a go.mod but no Go files"

mkdir -p hack/tools/bad && printf 'module example.com/bad\n\ngo 1.26.0\n' >hack/tools/bad/go.mod &&
	printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "example.com/tool"\n\t"fmt"\n)\n' >hack/tools/bad/tools.go && commit "a wrapper with code"
expect "a tool wrapper that imports more than blank imports" fail 'hack/tools/bad/tools.go: a tool wrapper holds only blank imports'

go work use ./hack/tools/kube && commit "go.work uses a wrapper"
expect "go.work using a tool wrapper" fail "go.work uses hack/tools/kube, which is no code module"

sed -i 's#^suite_api := api$#suite_api := api uploader#' Makefile && commit "two suites"
expect "a module in two suites" fail "uploader is in 2 test suites"

sed -i 's#^suite_chart := test/chart$#suite_chart := test/chart deploy#' Makefile && commit "a suite on no module"
expect "a suite naming no module" fail "make test-chart tests deploy, which is no code module"

printf '\nGO_MODULES := api\n' >>Makefile && commit "a hand list"
expect "a hand-written GO_MODULES" fail "the Makefile's GO_MODULES differs"

sed -i 's#^\t"hack/tools/tilt: #\t"hack/tools/gone: #' hack/modules.sh && commit "stale untidied"
expect "a stale UNTIDIED entry" fail "UNTIDIED names hack/tools/gone"

if ((failures)); then
	echo "verify-modules: $failures case(s) failed"
	exit 1
fi
echo "verify-modules: every case passed"
