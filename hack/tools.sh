#!/usr/bin/env bash
# Installs Crowsnest's pinned tools into bin/ (git-ignored). Each tool is built
# from the Go module proxy once and cached in $CROWSNEST_CACHE (default
# ~/.cache/crowsnest), keyed by version and wrapper-module checksum, so a fresh
# clone on the same machine links the cached binary instead of rebuilding.
#
#   hack/tools.sh kube|etcd|coredns|kube-router|nats-server|controller-gen|golangci-lint|helm|kwok|oapi-codegen|gotestsum|tilt|kind|grype|actionlint ...
set -euo pipefail
shopt -s inherit_errexit
export GOWORK=off

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/versions.env
source "$ROOT/hack/versions.env"
CACHE=${CROWSNEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crowsnest}
BIN=$ROOT/bin
mkdir -p "$CACHE" "$BIN/k8s"

log() { printf '[tools] %s\n' "$*" >&2; }

# with_lock NAME CMD...: one builder per cache entry, even with make -j.
with_lock() {
	local name=$1; shift
	exec {fd}>"$CACHE/.$name.lock"
	flock "$fd"
	"$@"
	exec {fd}>&-
}

# link SRC DST: point bin/ at the cached binary.
link() { ln -sfn "$1" "$2"; }

# go_install NAME PKG VERSION: tools whose go.mod has no replace directives.
go_install() {
	local name=$1 pkg=$2 version=$3
	local dir="$CACHE/$name-$version"
	if [[ ! -x "$dir/$name" ]]; then
		log "building $name $version (first run only)"
		local start=$SECONDS
		GOBIN="$dir" GOFLAGS="${GOFLAGS:-} -mod=mod" CGO_ENABLED=0 go install -trimpath "$pkg@$version"
		log "built $name in $((SECONDS - start))s"
	fi
	link "$dir/$name" "$BIN/$name"
}

# wrapper_key DIR: a cache key for a wrapper module's exact dependency set.
wrapper_key() { cat "$1/go.mod" "$1/go.sum" "$1/tools.go" | sha256sum | cut -c1-12; }

# build_wrapper NAME MODDIR LDFLAGS PKG...: tools that need a wrapper module
# (their own go.mod has replace directives that `go install` refuses). Prints
# the cache folder holding the binaries; a .built stamp marks it complete.
build_wrapper() {
	local name=$1 moddir=$2 ldflags=$3; shift 3
	local dir
	dir="$CACHE/$name-$(wrapper_key "$moddir")"
	if [[ ! -f "$dir/.built" ]]; then
		log "building $name (first run only; this takes minutes)"
		local start=$SECONDS
		rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
		(cd "$moddir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod" go build -trimpath -ldflags "$ldflags" -o "$dir.tmp/" "$@")
		rm -rf "$dir" && mv "$dir.tmp" "$dir"
		touch "$dir/.built"
		log "built $name in $((SECONDS - start))s"
	fi
	echo "$dir"
}

kube() {
	local v=$KUBE_VERSION minor
	minor=$(cut -d. -f2 <<<"$v")
	local pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
		k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
	local ld="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ld+=" -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
	done
	local dir
	dir=$(build_wrapper kube "$ROOT/hack/tools/kube" "$ld" "${pkgs[@]}")
	for p in "${pkgs[@]}"; do link "$dir/${p##*/}" "$BIN/k8s/${p##*/}"; done
	link "$dir/kubectl" "$BIN/kubectl"
}

etcd() {
	local dir
	dir=$(build_wrapper etcd "$ROOT/hack/tools/etcd" "-s -w" go.etcd.io/etcd/server/v3)
	# The module root go.etcd.io/etcd/server/v3 builds a binary named "server".
	[[ -x "$dir/etcd" ]] || mv "$dir/server" "$dir/etcd"
	link "$dir/etcd" "$BIN/k8s/etcd"
}

# coredns: the local stack's cluster DNS, CoreDNS's own main with the plugins
# the stack uses (hack/tools/coredns/main.go; the version is that module's
# require), keyed by the wrapper's go.mod, go.sum and main.go.
coredns() {
	local moddir=$ROOT/hack/tools/coredns v
	v=$(sed -nE 's#^require github\.com/coredns/coredns (v[0-9.]+)$#\1#p' "$moddir/go.mod")
	local dir
	dir="$CACHE/coredns-$v-$(cat "$moddir/go.mod" "$moddir/go.sum" "$moddir/main.go" | sha256sum | cut -c1-12)"
	if [[ ! -x "$dir/coredns" ]]; then
		log "building coredns $v (first run only; minutes)"
		local start=$SECONDS
		rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
		(cd "$moddir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod" go build -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$v" -o "$dir.tmp/coredns" .)
		rm -rf "$dir" && mv "$dir.tmp" "$dir"
		log "built coredns in $((SECONDS - start))s"
	fi
	link "$dir/coredns" "$BIN/coredns"
}

# kube-router: the local stack's NetworkPolicy enforcer (its firewall
# controller only; test/stack/internal/netpol), pinned in
# hack/tools/kube-router/go.mod, keyed by that module's exact dependency set.
kube_router() {
	local moddir=$ROOT/hack/tools/kube-router v
	v=$(sed -nE 's#^require github\.com/cloudnativelabs/kube-router/v2 (v[0-9.]+)$#\1#p' "$moddir/go.mod")
	local p=github.com/cloudnativelabs/kube-router/v2/pkg/version
	local dir
	dir=$(build_wrapper "kube-router-$v" "$moddir" "-s -w -X $p.Version=$v -X $p.BuildDate=1970-01-01T00:00:00Z" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router)
	link "$dir/kube-router" "$BIN/kube-router"
}

# tilt: its own build, because Tilt needs cgo (tree-sitter) and its fork of
# apimachinery is not in the checksum database. The module carries no web UI
# (a JavaScript app built outside Go), and without one `tilt up` and
# `tilt ci` refuse to start ("JS/CSS files are not available"): the build
# uses a copy of the module with webui/index.html, a page pointing at the
# CLI, embedded in its place (a go build -overlay may not touch the module
# cache).
tilt() {
	local moddir="$ROOT/hack/tools/tilt"
	local dir
	dir="$CACHE/tilt-$TILT_VERSION-$(cat "$moddir/go.mod" "$moddir/go.sum" "$moddir/tools.go" "$moddir/webui/index.html" | sha256sum | cut -c1-12)"
	if [[ ! -x "$dir/tilt" ]]; then
		log "building tilt (first run only; several minutes)"
		local start=$SECONDS src work
		# go mod download, not go list -m: on an empty module cache
		# go list -m prints an empty Dir instead of fetching the module.
		src=$(cd "$moddir" && GONOSUMDB=github.com/tilt-dev GOFLAGS="${GOFLAGS:-} -mod=mod" go mod download -json github.com/tilt-dev/tilt | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
		[[ -n "$src" && -d "$src" ]] || { log "tilt: go mod download gave no module directory"; return 1; }
		work="$dir.tmp"
		rm -rf "$work" && mkdir -p "$work/wrapper"
		cp -r "$src" "$work/tilt" && chmod -R u+w "$work/tilt"
		cp "$moddir/webui/index.html" "$work/tilt/pkg/assets/build/index.html"
		cp "$moddir/go.mod" "$moddir/go.sum" "$moddir/tools.go" "$work/wrapper/"
		(cd "$work/wrapper" && go mod edit -replace "github.com/tilt-dev/tilt=$work/tilt" &&
			GONOSUMDB=github.com/tilt-dev CGO_ENABLED=1 GOFLAGS="${GOFLAGS:-} -mod=mod" go build -trimpath -ldflags "-s -w -X main.version=${TILT_VERSION#v} -X main.date=1970-01-01" -o "$work/tilt.bin" github.com/tilt-dev/tilt/cmd/tilt)
		rm -rf "$dir" && mkdir -p "$dir" && mv "$work/tilt.bin" "$dir/tilt" && rm -rf "$work"
		log "built tilt in $((SECONDS - start))s"
	fi
	link "$dir/tilt" "$BIN/tilt"
}

# grype: the grype CLI (cached, keyed by the wrapper module) plus the project's
# own vulndb and fixtures commands from the same module (rebuilt every call;
# Go's build cache makes that a second or two once grype's packages are built).
grype() {
	local moddir=$ROOT/hack/tools/grype v=${GRYPE_VERSION#v}
	local ld="-s -w -X main.version=$v -X main.gitDescription=$GRYPE_VERSION -X main.gitCommit=none -X main.buildDate=1970-01-01T00:00:00Z"
	local dir
	dir=$(GOWORK=off build_wrapper grype "$moddir" "$ld" github.com/anchore/grype/cmd/grype)
	link "$dir/grype" "$BIN/grype"
	(cd "$moddir" && GOWORK=off CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod" go build -trimpath -o "$BIN/" ./cmd/vulndb ./cmd/fixtures)
}

install_one() {
	case $1 in
	kube) with_lock kube kube ;;
	etcd) with_lock etcd etcd ;;
	coredns) with_lock coredns coredns ;;
	kube-router) with_lock kube-router kube_router ;;
	nats-server) with_lock nats-server go_install nats-server github.com/nats-io/nats-server/v2 "$NATS_SERVER_VERSION" ;;
	controller-gen) with_lock controller-gen go_install controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "$CONTROLLER_GEN_VERSION" ;;
	golangci-lint) with_lock golangci-lint go_install golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_LINT_VERSION" ;;
	helm) with_lock helm go_install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" ;;
	kwok) with_lock kwok go_install kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION" ;;
	oapi-codegen) with_lock oapi-codegen go_install oapi-codegen github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen "$OAPI_CODEGEN_VERSION" ;;
	tilt) with_lock tilt tilt ;;
	kind) with_lock kind go_install kind sigs.k8s.io/kind "$KIND_VERSION" ;;
	gotestsum) with_lock gotestsum go_install gotestsum gotest.tools/gotestsum "$GOTESTSUM_VERSION" ;;
	actionlint) with_lock actionlint go_install actionlint github.com/rhysd/actionlint/cmd/actionlint "$ACTIONLINT_VERSION" ;;
	grype) with_lock grype grype ;;
	*) echo "unknown tool: $1" >&2; return 2 ;;
	esac
}

for tool in "$@"; do install_one "$tool"; done
