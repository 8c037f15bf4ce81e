#!/usr/bin/env bash
# Evaluates the Tiltfile offline with the pinned Tilt (make verify-tiltfile).
# A throwaway kubeconfig names the kind context without any reachable server:
# `tilt alpha tiltfile-result` runs the whole Tiltfile (helm() renders the
# chart with bin/helm, images and resources are registered) without a cluster.
# Checks: the evaluation succeeds and registers the expected resources and
# images, every image is a custom_build by hack/tools/imagebuild pushed to
# the registry (no Docker), the uploader image is matched in the operator's
# env; on the stack's context (crowsnest-stack) with its environment no
# bundled Postgres, samples or Vite server, and without it a refusal; and
# another context is refused.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$ROOT/bin:$PATH"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

kubeconfig() { # kubeconfig CONTEXT
	cat <<YAML
apiVersion: v1
kind: Config
clusters: [{name: offline, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: offline, user: {}}]
contexts: [{name: $1, context: {cluster: offline, user: offline}}]
current-context: $1
YAML
}

kubeconfig kind-crowsnest >"$tmp/kind.yaml"
start=$(date +%s.%N)
KUBECONFIG="$tmp/kind.yaml" timeout 120 tilt alpha tiltfile-result -f Tiltfile >"$tmp/result.json" 2>"$tmp/stderr" || {
	cat "$tmp/stderr" >&2
	echo "verify-tiltfile: evaluation failed" >&2
	exit 1
}
end=$(date +%s.%N)

python3 - "$tmp/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
manifests = {m["Name"]: m for m in r.get("Manifests", [])}
want = ["crowsnest-operator", "crowsnest-results-api", "crowsnest-nats", "crowsnest-postgres", "crowsnest-matcher", "crowsnest-notifier",
        "web-dev", "dev-secrets", "web", "cache", "worker", "ignored"]
missing = [w for w in want if w not in manifests]
if missing:
    sys.exit("verify-tiltfile: resources missing: %s (have %s)" % (missing, sorted(manifests)))
if r.get("Error"):
    sys.exit("verify-tiltfile: %s" % r["Error"])

def targets(name):
    return {t["selector"]: t for t in manifests[name].get("ImageTargets") or []}

op = targets("crowsnest-operator")
if sorted(op) != ["crowsnest-operator", "crowsnest-uploader"]:
    sys.exit("verify-tiltfile: operator images = %s, want its own and the uploader" % sorted(op))
if not op["crowsnest-uploader"].get("matchInEnvVars"):
    sys.exit("verify-tiltfile: the uploader image is not matched in env vars")
images = dict(op)
for name in ("crowsnest-results-api", "crowsnest-matcher", "crowsnest-notifier"):
    images.update(targets(name))
if sorted(images) != ["crowsnest-matcher", "crowsnest-notifier", "crowsnest-operator", "crowsnest-results-api", "crowsnest-uploader"]:
    sys.exit("verify-tiltfile: images = %s" % sorted(images))
for sel, t in sorted(images.items()):
    bd = t.get("BuildDetails") or {}
    cmd = " ".join(bd.get("args") or [])
    name = sel[len("crowsnest-"):]
    if t.get("DockerImageName") or bd.get("outputMode") != "remote":
        sys.exit("verify-tiltfile: %s is not a custom_build pushed by the builder (skips_local_docker): %s" % (sel, json.dumps(t)[:300]))
    if "bin/imagebuild build -component %s " % name not in cmd or "bin/imagebuild push" not in cmd or "$EXPECTED_REF" not in cmd:
        sys.exit("verify-tiltfile: %s is not built and pushed by hack/tools/imagebuild: %s" % (sel, cmd))
print("verify-tiltfile: %d resources; %d images built by hack/tools/imagebuild and pushed to Tilt's registry; the uploader matched in the operator's env vars" % (len(manifests), len(images)))
PY
echo "verify-tiltfile: evaluated in $(python3 -c "print(round($end-$start, 2))")s"

# The local stack's cluster (context crowsnest-stack), in the environment
# its dev.env exports (here: values that, like the stack's, turn the bundled
# Postgres off) and with tilt ci's defaults (no Vite server, no
# port-forwards): no postgres, samples or web-dev resources, no forwards.
kubeconfig crowsnest-stack >"$tmp/stack.yaml"
printf 'postgres: {enabled: false}\n' >"$tmp/stack-values.yaml"
printf 'postgres://crowsnest@127.0.0.1:9/crowsnest' >"$tmp/database-url"
KUBECONFIG="$tmp/stack.yaml" CROWSNEST_DEV_REGISTRY=127.0.0.1:9/crowsnest CROWSNEST_DEV_VALUES="$tmp/stack-values.yaml" \
	CROWSNEST_DEV_DATABASE_URL_FILE="$tmp/database-url" timeout 120 tilt alpha tiltfile-result -f Tiltfile -- --web-dev=false --port-forwards=false \
	>"$tmp/stack.json" 2>"$tmp/stderr" || {
	cat "$tmp/stderr" >&2
	echo "verify-tiltfile: evaluation on the stack's context failed" >&2
	exit 1
}
python3 - "$tmp/stack.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
manifests = {m["Name"]: m for m in r.get("Manifests", [])}
want = ["crowsnest-operator", "crowsnest-results-api", "crowsnest-nats", "crowsnest-matcher", "crowsnest-notifier", "dev-secrets"]
missing = [w for w in want if w not in manifests]
extra = [m for m in manifests if m in ("crowsnest-postgres", "web-dev", "web", "cache", "worker", "ignored")]
if missing or extra:
    sys.exit("verify-tiltfile: on the stack: resources missing %s, unexpected %s (have %s)" % (missing, extra, sorted(manifests)))
secrets_env = json.dumps(manifests["dev-secrets"])
if "CROWSNEST_DEV_CONTEXT=crowsnest-stack" not in secrets_env:
    sys.exit("verify-tiltfile: dev-secrets does not get the stack's context: %s" % secrets_env[:300])
print("verify-tiltfile: on crowsnest-stack: %d resources (no bundled Postgres, samples or Vite server)" % len(manifests))
PY

KUBECONFIG="$tmp/stack.yaml" timeout 120 tilt alpha tiltfile-result -f Tiltfile >/dev/null 2>"$tmp/stderr" && {
	echo "verify-tiltfile: the Tiltfile ran on crowsnest-stack without the stack's environment" >&2
	exit 1
}
grep -q 'needs CROWSNEST_DEV_REGISTRY' "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
echo "verify-tiltfile: crowsnest-stack without the stack's dev.env refused"

kubeconfig gke_prod >"$tmp/prod.yaml"
if KUBECONFIG="$tmp/prod.yaml" timeout 120 tilt alpha tiltfile-result -f Tiltfile >/dev/null 2>"$tmp/stderr"; then
	echo "verify-tiltfile: the Tiltfile accepted context gke_prod" >&2
	exit 1
fi
grep -q 'refusing Kubernetes context "gke_prod"' "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
echo "verify-tiltfile: context gke_prod refused"
