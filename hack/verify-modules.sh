#!/usr/bin/env bash
# Fails when the module list (hack/modules.sh, which the Makefile reads)
# misses or misclassifies a Go module:
#   - a go.mod git does not track (the list holds tracked ones only);
#   - a "code" module without Go files of its own, or a wrapper whose
#     tools.go imports anything but blank imports;
#   - an UNTIDIED entry or a go.work "use" that is no code module;
#   - a code module with tests that no test suite of the Makefile runs, or a
#     module in two suites, or a suite naming what is no code module;
#   - Makefile lists that differ from hack/modules.sh's.
# `make verify` runs it; hack/verify-modules_test.sh breaks a copy of the
# tree in each of these ways and expects this check to fail.
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
problem() { echo "modules: $*" >&2; fail=1; }

# Untracked go.mod files (outside testdata, not git-ignored).
while read -r f; do
	[[ -n $f ]] && problem "${f%/go.mod} has a go.mod git does not track, so the module list misses it: git add it"
done < <(git ls-files --others --exclude-standard -- '*go.mod' ':!:**/testdata/**')

classes=$(hack/modules.sh classes)
code=$(awk '$1 == "code" { print $2 }' <<<"$classes")
all=$(hack/modules.sh all)

# Code modules need Go files; wrappers only blank imports.
gofiles=$(git ls-files -- '*.go' | hack/modules.sh owners)
for m in $code; do
	grep -q "^$m " <<<"$gofiles" || problem "$m has a go.mod but no Go files: neither a code module nor a tool wrapper (tools.go, //go:build tools)"
done
for m in $(awk '$1 == "wrapper" { print $2 }' <<<"$classes"); do
	for f in $(awk -v m="$m" '$1 == m { print $2 }' <<<"$gofiles"); do
		# Every import spec (single line or in a block) must be `_ "path"`.
		bad=$(awk '
			/^import \(/ { block = 1; next }
			block && /^\)/ { block = 0; next }
			block && NF && $1 !~ /^\/\// { print }
			/^import [^(]/ { sub(/^import /, ""); print }' "$f" | grep -v '^\s*_ "' || true)
		[[ -z $bad ]] || problem "$f: a tool wrapper holds only blank imports (_ \"path\"), found: $(tr -s '\n\t' ' ' <<<"$bad")"
	done
done

for m in $(hack/modules.sh untidied-list); do
	grep -qxF "$m" <<<"$all" || problem "hack/modules.sh UNTIDIED names $m, which has no tracked go.mod"
done
for m in $(hack/modules.sh workspace); do
	grep -qxF "$m" <<<"$code" || problem "go.work uses $m, which is no code module of the list"
done

# The Makefile's view: its lists and suites.
listing=$(make --no-print-directory -s list-modules)
[[ "$(sed -n 's/^code //p' <<<"$listing" | tr ' ' '\n' | sort)" == "$(sort <<<"$code")" ]] ||
	problem "the Makefile's GO_MODULES differs from hack/modules.sh code: $(sed -n 's/^code //p' <<<"$listing")"
[[ "$(sed -n 's/^wrapper //p' <<<"$listing" | tr ' ' '\n' | sed '/^$/d' | sort)" == "$(hack/modules.sh wrapper)" ]] ||
	problem "the Makefile's GO_WRAPPER_MODULES differs from hack/modules.sh wrapper"
suites=$(awk '$1 == "suite" { for (i = 3; i <= NF; i++) print $i, $2 }' <<<"$listing")
for m in $(hack/modules.sh tested); do
	n=$(awk -v m="$m" '$1 == m' <<<"$suites" | wc -l)
	if ((n == 0)); then
		problem "$m has tests, but no test suite of the Makefile runs them: add it to a suite_NAME (or GO_SUITES)"
	elif ((n > 1)); then
		problem "$m is in $n test suites ($(awk -v m="$m" '$1 == m { printf "%s ", $2 }' <<<"$suites")): its tests would run twice"
	fi
done
while read -r m target; do
	[[ -z $m ]] || grep -qxF "$m" <<<"$code" || problem "make $target tests $m, which is no code module"
done <<<"$suites"

if ((fail)); then
	echo "modules: fix the module list (hack/modules.sh) or the Makefile's suites" >&2
	exit 1
fi
echo "modules: $(wc -w <<<"$code") code modules, $(hack/modules.sh wrapper | wc -l) tool wrappers, each tested by one suite"
