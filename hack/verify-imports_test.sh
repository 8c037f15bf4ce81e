#!/usr/bin/env bash
# Tests hack/verify-imports.sh on a copy of the tree (tracked and untracked
# files, git-ignored ones left out): the copy passes as it is, and fails,
# naming the violation, when each layering rule is broken. `make test-ci`
# runs it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$root" && git ls-files -z -co --exclude-standard) | (cd "$root" && tar --null -T - -cf -) | (cd "$work" && tar -xf -)
cd "$work"
git init -q && git add -A && git -c user.name=test -c user.email=test@example.invalid commit -qm copy && git tag base

failures=0
# expect NAME pass|fail [MESSAGE]: as hack/verify-modules_test.sh's.
expect() {
	local name=$1 want=$2 msg=${3:-} out rc=0
	out=$(hack/verify-imports.sh 2>&1) || rc=$?
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
repo=github.com/crowsnest-dev/crowsnest
# code FILE IMPORT: a Go file in FILE's package importing IMPORT.
code() {
	local pkg
	pkg=$(basename "$(dirname "$1")")
	printf 'package %s\n\nimport _ "%s"\n' "${pkg//-/}" "$2" >"$1"
}

expect "the tree as it is" pass

code operator/internal/bus/layering.go "$repo/test/support/pgtest"
expect "a component imports test code" fail "operator/internal/bus imports $repo/test/support/pgtest (under test/support/): product code may not import test or hack code"

code operator/internal/bus/layering.go "$repo/results-api/internal/report"
expect "a component imports another component" fail "operator/internal/bus imports $repo/results-api/internal/report: another component's package"

code api/scan/layering.go "$repo/test/support/pgtest"
expect "a contract imports test code" fail "api/scan imports $repo/test/support/pgtest"

code results-api/api/layering.go "$repo/results-api/internal/authz"
expect "a contract imports an internal package" fail "imports $repo/results-api/internal/authz: contracts import no internal package"

(cd notifier && GOWORK=off go mod edit -require "$repo/results-api@v0.0.0" -replace "$repo/results-api=../results-api")
expect "a component requires another component's module" fail "notifier/go.mod requires results-api, another component's module"

# The requires issue 26 removed: tests reached results-api in process.
(cd operator && GOWORK=off go mod edit -require "$repo/results-api@v0.0.0" -replace "$repo/results-api=../results-api")
expect "a component requires another component's module for its tests" fail "operator/go.mod requires results-api, another component's module"

sed -i 's#^ALLOWED_TEST_HELPERS=($#&\n\tresults-api/gone#' hack/verify-imports.sh
expect "a test-helper allowance no longer needed" fail "ALLOWED_TEST_HELPERS lists results-api/gone, which no longer exists: remove the entry"

if ((failures > 0)); then
	echo "verify-imports_test: $failures failure(s)"
	exit 1
fi
echo "verify-imports_test: every rule breaks the check"
