#!/usr/bin/env bash
# Lists the dependencies that Crowsnest's code modules build at different
# versions, each version with the modules that select it. Every module builds
# with GOWORK=off, so each selects its own versions; a package compiles once
# per set of dependency versions, and a skew in a small module low in the
# graph (golang.org/x/net, x/sys, protobuf, logr) makes the whole Kubernetes
# tree above it compile again for every group of modules (see make
# compile-counts). Aligning the versions in the go.mod files removes those
# compiles. Reads each module's build list for its packages and tests (go
# list, nothing is compiled).
#
# With --check it fails when any dependency is skewed; `make verify` runs it
# over every code module but hack/tools/coredns, whose Kubernetes tree is
# CoreDNS's own (it compiles once, for the chart's DNS, whatever we pin).
#
#   hack/module-skew.sh [--check] [MODULE...]   (default: every code module,
#   from the repository's root; MODULE folders are relative to the caller)
set -euo pipefail
check=0
if [[ ${1:-} == --check ]]; then check=1; shift; fi
mods=("$@")
if ! ((${#mods[@]})); then
	cd "$(dirname "$0")/.."
	mapfile -t mods < <(hack/modules.sh code)
fi

skew=$(for m in "${mods[@]}"; do
	(cd "$m" && GOWORK=off go list -deps -test -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}' ./... |
		sort -u | sed "s#\$# $m#") || { echo "module-skew: go list failed in $m" >&2; exit 1; }
done | awk '
	$1 ~ /^github.com\/crowsnest-dev\/crowsnest/ { next }
	{ key = $1 SUBSEP $2; if (!(key in who)) { n[$1]++; vers[$1] = vers[$1] " " $2 } who[key] = who[key] " " $3 }
	END {
		for (d in n) if (n[d] > 1) {
			printf "%s\n", d
			split(substr(vers[d], 2), v, " ")
			for (i in v) printf "  %-40s%s\n", v[i], who[d SUBSEP v[i]]
		}
	}')
[[ -z $skew ]] || echo "$skew"
if ((check)) && [[ -n $skew ]]; then
	echo "module-skew: the dependencies above build at different versions in different modules, so the packages above them compile once per version; align the go.mod files (go get DEP@VERSION in the modules listed with the older one, then go mod tidy)" >&2
	exit 1
fi
