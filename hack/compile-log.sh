#!/usr/bin/env bash
# A -toolexec wrapper that counts compiles: it runs the tool unchanged and,
# for each package the compiler builds (a build-cache miss), appends
# "PACKAGE FLAVOUR" to $CROWSNEST_COMPILE_LOG. FLAVOUR tells the builds that
# cannot share the package apart: race or norace, trimpath or paths,
# cgo=CGO_ENABLED (1 when unset), GOOS/GOARCH (the go command sets them).
# The tool's -V=full answer (part of the build cache key) passes through
# untouched, so a run with the wrapper hits the same cache entries as one
# without (hack/compile-counts_test.sh checks it).
# The Makefile sets it up under CROWSNEST_COUNT_COMPILES=1;
# hack/compile-counts.sh summarises the log.
set -euo pipefail
tool=$1
shift
if [[ ${tool##*/} == compile && ${1:-} != -V=full && -n ${CROWSNEST_COMPILE_LOG:-} ]]; then
	args=("$@")
	# Long argument lists come in a response file (@FILE, one per line).
	for a in "$@"; do [[ $a == @* && -f ${a#@} ]] && mapfile -t -O "${#args[@]}" args <"${a#@}"; done
	pkg="" race=norace trim=paths
	for ((i = 0; i < ${#args[@]}; i++)); do
		case ${args[i]} in
		-p) pkg=${args[i + 1]} ;;
		-race) race=race ;;
		# go build -trimpath adds a rewrite of the source folder to the
		# import path after the rewrite of $WORK.
		-trimpath) [[ ${args[i + 1]} == *\;* ]] && trim=trimpath ;;
		esac
	done
	printf '%s %s,%s,cgo=%s,%s/%s\n' "${pkg:-?}" "$race" "$trim" "${CGO_ENABLED:-1}" \
		"${GOOS:-host}" "${GOARCH:-host}" >>"$CROWSNEST_COMPILE_LOG"
fi
exec "$tool" "$@"
