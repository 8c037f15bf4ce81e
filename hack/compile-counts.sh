#!/usr/bin/env bash
# Summarises a compile log of hack/compile-log.sh (CROWSNEST_COUNT_COMPILES=1):
# compiles in total and per flavour, and how many times each heavy package
# compiled, per flavour. A heavy package stands for its tree: Kubernetes'
# k8s.io/api/core/v1 and Grype's grype/vulnerability compile whenever the
# trees around them do. Each compile is a build-cache miss, so a package
# counted twice in one flavour was built with different dependencies (for
# instance two modules that select different versions of golang.org/x/net).
#
#   hack/compile-counts.sh LOG [PACKAGE...]
set -euo pipefail
log=${1:?usage: hack/compile-counts.sh LOG [PACKAGE...]}
shift
pkgs=("$@")
((${#pkgs[@]})) || pkgs=(k8s.io/api/core/v1 github.com/anchore/grype/grype/vulnerability)
[[ -f "$log" ]] || { echo "compile-counts: no log at $log (run with CROWSNEST_COUNT_COMPILES=1)" >&2; exit 1; }

awk -v heavy="${pkgs[*]}" '
	BEGIN { n = split(heavy, h, " "); for (i = 1; i <= n; i++) want[h[i]] = 1 }
	{
		total++; flavour[$2]++; seen[$1] = 1
		if ($1 in want) { count[$1]++; by[$1 SUBSEP $2]++ }
	}
	END {
		printf "compiles: %d (%d packages)\n", total, length(seen)
		for (f in flavour) printf "  %-40s %6d\n", f, flavour[f] | "sort"
		close("sort")
		for (i = 1; i <= n; i++) {
			p = h[i]
			printf "%s: %d\n", p, count[p] + 0
			for (k in by) { split(k, parts, SUBSEP); if (parts[1] == p) printf "  %-40s %6d\n", parts[2], by[k] | "sort" }
			close("sort")
		}
	}' "$log"
