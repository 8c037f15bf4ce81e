#!/usr/bin/env bash
# The one list of Crowsnest's Go modules, derived from the tree: every go.mod
# git tracks, outside testdata/. Each module is in exactly one class:
#
#   wrapper     its own .go files are all tools.go files (//go:build tools,
#               blank imports only) that pin a tool: tidy-checked (their
#               dependency set is the cache key of the tool binaries), not
#               linted or tested.
#   untidied    listed in UNTIDIED below with the reason: nothing in CI
#               touches it.
#   code        everything else: linted, tidy-checked and tested.
#
# Code modules named in go.work are "workspace" modules; the rest are
# "standalone" (built with GOWORK=off only, e.g. matcher keeps Grype's tree).
# The Makefile takes its lists from here; hack/verify-modules.sh checks that
# the tree holds nothing the classes miss.
#
#   hack/modules.sh all|code|wrapper|untidied|workspace|standalone   one module a line
#   hack/modules.sh classes         "CLASS MODULE" lines
#   hack/modules.sh make            CLASS:MODULE words for the Makefile
#   hack/modules.sh tested          modules with test files of their own
#   hack/modules.sh untidied-list   the UNTIDIED entries as written
#   hack/modules.sh owners          "MODULE PATH" for each path on stdin
#   hack/modules.sh packages REGEX  "MODULE:./PKG/,..." whose tests match REGEX
set -euo pipefail
cd "$(dirname "$0")/.."

# UNTIDIED: module and reason. Tilt is not in CI (make dev, make
# verify-tiltfile): a tidy check would download its whole module graph.
UNTIDIED=(
	"hack/tools/tilt: not in CI; tidy would download Tilt's whole module graph"
)

# all: every tracked go.mod's folder, testdata excluded.
all() { git ls-files -- '*go.mod' ':!:**/testdata/**' | sed -n 's#/go\.mod$##p' | sort; }

untidied() { printf '%s\n' "${UNTIDIED[@]}" | cut -d: -f1; }

# owners: for each path on stdin, "MODULE PATH" with the deepest module
# holding it (paths outside every module are dropped).
owners() {
	{ all | sed 's/^/module /'; sed 's/^/path /'; } | awk '
		$1 == "module" { mods[++n] = $2; next }
		{
			best = ""
			for (i = 1; i <= n; i++)
				if (index($2 "/", mods[i] "/") == 1 && length(mods[i]) > length(best)) best = mods[i]
			if (best != "") print best, $2
		}'
}

# classify: "CLASS MODULE" for every module. A module is a wrapper when it
# has Go files of its own (not of a module nested in it) and each is a
# tools.go behind the tools build tag.
classify() {
	local tagged
	# The tools.go files that carry the tag (the only ones worth reading).
	tagged=$(git grep -l -e '^//go:build tools$' -- '*/tools.go') || (($? == 1))
	{
		untidied | sed 's/^/untidied /'
		all | sed 's/^/module /'
		sed 's/^/tagged /' <<<"$tagged"
		git ls-files -- '*.go' | owners | sed 's/^/go /'
	} | awk '
		$1 == "untidied" { skip[$2] = 1; next }
		$1 == "module" { mods[++n] = $2; next }
		$1 == "tagged" { tagged[$2] = 1; next }
		$1 == "go" { files[$2]++; if (!tagged[$3]) other[$2]++ }
		END {
			for (i = 1; i <= n; i++) {
				m = mods[i]
				if (skip[m]) print "untidied " m
				else if (files[m] > 0 && !other[m]) print "wrapper " m
				else print "code " m
			}
		}'
}

# tested: the modules with test files of their own.
tested() { git ls-files -- '*_test.go' | owners | cut -d' ' -f1 | sort -u; }

# workspace: the modules go.work uses, without their leading ./.
workspace() { go work edit -json go.work | sed -nE 's#^\s*"DiskPath": "\./?([^"]+)".*#\1#p' | sort; }

# packages REGEX: "MODULE:./PKG/,./PKG/" for each module whose test files
# match REGEX (a line of them, e.g. '^func Benchmark'), one line a module.
packages() {
	git grep -l -e "$1" -- '*_test.go' | xargs -r -n1 dirname | sort -u | owners | awk '
		{
			rel = substr($2, length($1) + 2)
			pkgs[$1] = pkgs[$1] (pkgs[$1] == "" ? "" : ",") "./" rel (rel == "" ? "" : "/")
		}
		END { for (m in pkgs) print m ":" pkgs[m] }' | sort
}

case ${1:-} in
packages) packages "${2:?packages needs a regular expression}" ;;
tested) tested ;;
untidied-list) untidied ;;
owners) owners ;;
all) all ;;
code | wrapper | untidied) classify | awk -v c="$1" '$1 == c { print $2 }' ;;
workspace) workspace ;;
standalone) comm -23 <(classify | awk '$1 == "code" { print $2 }') <(workspace) ;;
classes) classify ;;
# make: CLASS:MODULE words for the Makefile (workspace:MODULE for go.work's
# modules), then ok:modules, which the Makefile requires.
make)
	classify | tr ' ' :
	workspace | sed 's/^/workspace:/'
	echo ok:modules
	;;
*) echo "usage: hack/modules.sh all|code|wrapper|untidied|workspace|standalone|classes|make|tested|owners|packages REGEX" >&2; exit 2 ;;
esac
