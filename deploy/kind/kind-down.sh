#!/usr/bin/env bash
# Deletes the kind cluster and the local registry that kind-up.sh created.
set -euo pipefail
CLUSTER=${CROWSNEST_KIND_CLUSTER:-crowsnest}
REG_NAME=${CROWSNEST_REGISTRY_NAME:-crowsnest-registry}
kind delete cluster --name "$CLUSTER"
docker rm -f "$REG_NAME" >/dev/null 2>&1 || true
