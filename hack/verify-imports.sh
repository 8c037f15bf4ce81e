#!/usr/bin/env bash
# hack/verify-imports.sh: the module layering rules (docs/architecture.md),
# checked on the packages each module builds (go list -deps, tests left
# out: a test may start another component as users do). `make verify` runs
# it; hack/verify-imports_test.sh breaks each rule on a copy of the tree.
#
#   1. A component's code imports no other component, nothing under test/
#      or hack/: components meet through the contracts (api/, operator/api,
#      results-api/api) and the wire.
#   2. A contract package imports no internal/ package of the repository,
#      so any client can import it.
#   3. A component's go.mod requires no other component's module, not even
#      for tests: a test meets another component as users do, its binary
#      over the wire (test/support/resultsapitest runs results-api's).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off GOFLAGS=-mod=mod

repo=github.com/crowsnest-dev/crowsnest
components=(operator uploader results-api matcher notifier kubectl-crowsnest)
# The contract packages, as module:package-pattern.
contracts=(api:./... operator/api:./... results-api:./api/...)
# Test helpers inside a product module, for its own tests only (no other
# module may require it, rule 3): the packages that may import test/ code.
# An entry that no longer exists fails, so the list only shrinks.
ALLOWED_TEST_HELPERS=(
	results-api/internal/apitest
	results-api/internal/store/storetest
)

failures=0
fail() {
	echo "verify-imports: $*" >&2
	failures=$((failures + 1))
}

# deps MODULE PATTERN: the repository's packages MODULE's PATTERN builds.
deps() {
	(cd "$1" && go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "$2") | grep "^$repo/" || true
}

# owner PKG: the module (directory) of one of the repository's packages,
# the longest module path that prefixes it.
modules=$(git ls-files '*go.mod' ':!:**/testdata/**' | xargs -n1 dirname | sort -r)
owner() {
	local rel=${1#"$repo"/} m
	for m in $modules; do
		if [[ $rel == "$m" || $rel == "$m"/* ]]; then
			echo "$m"
			return
		fi
	done
	echo "${rel%%/*}"
}

# Rule 1, per package and its direct imports: every package of the module
# is listed, so nothing is reached through another without being checked.
for c in "${components[@]}" api operator/api; do
	while read -r from imports; do
		[[ " ${ALLOWED_TEST_HELPERS[*]} " == *" ${from#"$repo"/} "* ]] && continue
		for pkg in $imports; do
			[[ $pkg == "$repo"/* ]] || continue
			m=$(owner "$pkg")
			case $m in
			"$c" | "$c"/api | api | operator/api) ;;
			test/* | hack/*) fail "$from imports $pkg (under $m/): product code may not import test or hack code" ;;
			results-api) [[ $pkg == "$repo/results-api/api" || $pkg == "$repo/results-api/api/"* ]] ||
				fail "$from imports $pkg: another component's package (only its contract, results-api/api, may be imported)" ;;
			*) fail "$from imports $pkg (module $m): another component's package" ;;
			esac
		done
	done < <(cd "$c" && go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)
done
for h in "${ALLOWED_TEST_HELPERS[@]}"; do
	[[ -d $h ]] || fail "ALLOWED_TEST_HELPERS lists $h, which no longer exists: remove the entry"
done

for spec in "${contracts[@]}"; do
	m=${spec%%:*} pattern=${spec#*:}
	while read -r pkg; do
		[[ $pkg == */internal/* || $pkg == */internal ]] && fail "contract $m/$pattern imports $pkg: contracts import no internal package"
	done < <(deps "$m" "$pattern")
done

for c in "${components[@]}"; do
	while read -r req; do
		[[ -z $req ]] && continue
		dep=${req#"$repo"/}
		[[ " ${components[*]} " == *" $dep "* ]] || continue
		fail "$c/go.mod requires $dep, another component's module: meet it over the wire or through a contract or test/ helper"
	done < <(cd "$c" && go mod edit -json | jq -r '.Require[]?.Path' | grep "^$repo/" || true)
done

if ((failures > 0)); then
	echo "verify-imports: $failures violation(s) of the layering rules (docs/architecture.md)" >&2
	exit 1
fi
echo "verify-imports: ${#components[@]} components and ${#contracts[@]} contracts keep the layering rules"
