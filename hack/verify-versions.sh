#!/usr/bin/env bash
# Fails when a pinned version in hack/versions.env (the one source of truth)
# disagrees with a place that has to repeat it: wrapper go.mod files, the
# client libraries' k8s.io versions, the default images in code and chart,
# test constants, the copied kwok stages. `make verify` runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/versions.env

fail=0
# check WHAT WANT FILE PATTERN: the first match of the extended regex
# PATTERN in FILE (its first capture group) must equal WANT.
check() {
	local what=$1 want=$2 file=$3 pattern=$4 got
	got=$(sed -nE "s#.*${pattern}.*#\1#p" "$file" | head -1)
	if [[ "$got" != "$want" ]]; then
		echo "versions: $file has $what ${got:-<missing>}, hack/versions.env says $want" >&2
		fail=1
	fi
}
# check_all WHAT WANT FILE PATTERN: every match must equal WANT (at least one).
check_all() {
	local what=$1 want=$2 file=$3 pattern=$4 got n=0
	while read -r got; do
		n=$((n + 1))
		if [[ "$got" != "$want" ]]; then
			echo "versions: $file has $what $got, hack/versions.env says $want" >&2
			fail=1
		fi
	done < <(sed -nE "s#.*${pattern}.*#\1#p" "$file")
	if ((n == 0)); then
		echo "versions: $file has no $what" >&2
		fail=1
	fi
}

staging="v0.${KUBE_VERSION#v1.}" # k8s.io/api etc. for kubernetes v1.X.Y are v0.X.Y

# Kubernetes: the wrapper that builds the control plane, every staging pin,
# the client libraries of every module, and the tests that expect the version.
check "k8s.io/kubernetes" "$KUBE_VERSION" hack/tools/kube/go.mod '^require k8s\.io/kubernetes (v[0-9.]+)'
check_all "a k8s.io staging replace" "$staging" hack/tools/kube/go.mod '=> k8s\.io/[a-z-]+ (v[0-9.]+)'
for mod in operator/api operator results-api test/support test/stack test/chart; do
	check_all "k8s.io/api" "$staging" "$mod/go.mod" '^\s*k8s\.io/api (v[0-9.]+)'
done
check "KubeVersion" "$KUBE_VERSION" test/chart/render.go 'KubeVersion = "(v[0-9.]+)"'
check "the expected kube-apiserver version" "$KUBE_VERSION" test/support/kubetest/kubetest_test.go 'GitVersion != "(v[0-9.]+)"'

# etcd: the wrapper's require and every sibling replace.
check "etcd server" "$ETCD_VERSION" hack/tools/etcd/go.mod 'require go\.etcd\.io/etcd/server/v3 (v[0-9.]+)'
check_all "an etcd replace" "$ETCD_VERSION" hack/tools/etcd/go.mod '=> go\.etcd\.io/etcd/[a-z/0-9]+ (v[0-9.]+)'

# Grype: the tools module, and the default scan image in operator and chart (the
# stack scans with the image make images builds from GRYPE_VERSION).
check "github.com/anchore/grype" "$GRYPE_VERSION" hack/tools/grype/go.mod '^\s*github\.com/anchore/grype (v[0-9.]+)'
check "DefaultGrypeImage" "$GRYPE_VERSION" operator/internal/scanjob/labels.go 'DefaultGrypeImage = "ghcr.io/crowsnest-dev/crowsnest-grype:(v[0-9.]+)"'
check "grypeImage.tag" "$GRYPE_VERSION" helm/crowsnest/values.yaml '^    tag: (v0\.[0-9.]+)$'

# NATS: the server the tests embed, and the image the chart bundles.
check "nats-server" "$NATS_SERVER_VERSION" test/support/go.mod '^\s*github\.com/nats-io/nats-server/v2 (v[0-9.]+)'
check "nats.image.tag" "$NATS_SERVER_VERSION" helm/crowsnest/values.yaml '^    tag: (v2\.[0-9.]+)$'

# kwok: the stages copied into the local stack.
check "kwok stages" "$KWOK_VERSION" test/stack/internal/controlplane/stages/NOTICE 'sigs\.k8s\.io/kwok (v[0-9.]+)'

if ((fail)); then
	echo "versions: fix the places above or hack/versions.env" >&2
	exit 1
fi
echo "versions: every pin agrees with hack/versions.env"
