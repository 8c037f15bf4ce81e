#!/usr/bin/env bash
# Creates the kind cluster "crowsnest" with a local registry on localhost:5001,
# following kind's local-registry guide (KEP-1755 local registry hosting).
# Idempotent: re-running keeps the registry and the cluster.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER=${CROWSNEST_KIND_CLUSTER:-crowsnest}
REG_NAME=${CROWSNEST_REGISTRY_NAME:-crowsnest-registry}
REG_PORT=${CROWSNEST_REGISTRY_PORT:-5001}
REG_IMAGE=registry:2.8.3

if [[ $(docker inspect -f '{{.State.Running}}' "$REG_NAME" 2>/dev/null || true) != true ]]; then
	docker run -d --restart=always -p "127.0.0.1:${REG_PORT}:5000" --network bridge --name "$REG_NAME" "$REG_IMAGE"
fi

if ! kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
	kind create cluster --name "$CLUSTER" --config "$ROOT/deploy/kind/cluster.yaml"
fi

# Every node resolves localhost:${REG_PORT} to the registry container.
dir="/etc/containerd/certs.d/localhost:${REG_PORT}"
for node in $(kind get nodes --name "$CLUSTER"); do
	docker exec "$node" mkdir -p "$dir"
	printf '[host."http://%s:5000"]\n' "$REG_NAME" | docker exec -i "$node" cp /dev/stdin "$dir/hosts.toml"
done

if [[ $(docker inspect -f '{{json .NetworkSettings.Networks.kind}}' "$REG_NAME") == null ]]; then
	docker network connect kind "$REG_NAME"
fi

kubectl --context "kind-$CLUSTER" apply -f "$ROOT/deploy/kind/local-registry-hosting.yaml"
echo "kind cluster $CLUSTER is up; registry localhost:${REG_PORT}. Next: make dev"
