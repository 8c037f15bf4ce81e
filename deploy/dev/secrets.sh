#!/usr/bin/env bash
# Creates the dev loop's Secrets once (run by the Tiltfile before the chart):
# the Postgres password with its URL, results-api's write token, and the
# NATS users' passwords. They are
# random, made here and stored only in the cluster. The dev values point the
# chart at them because Tilt renders the chart with `helm template`, where
# lookup sees no cluster: a generated password would change on every
# Tiltfile reload and lock results-api out of the existing database.
#
# CROWSNEST_DEV_CONTEXT is the cluster's context (the Tiltfile passes its
# own). With CROWSNEST_DEV_DATABASE_URL_FILE (the local stack's cluster
# writes it: an external Postgres, postgres.enabled=false) the database
# Secret holds that URL, replaced whenever it changes (a restarted stack).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CONTEXT=${CROWSNEST_DEV_CONTEXT:-kind-crowsnest}
NS=crowsnest-system
k() { kubectl --context "$CONTEXT" "$@"; }

k apply -f "$ROOT/deploy/dev/namespace.yaml"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
umask 077
random() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

if [[ -n ${CROWSNEST_DEV_DATABASE_URL_FILE:-} ]]; then
	k -n "$NS" create secret generic crowsnest-dev-postgres --from-file=url="$CROWSNEST_DEV_DATABASE_URL_FILE" \
		--dry-run=client -o yaml | k apply -f -
elif ! k -n "$NS" get secret crowsnest-dev-postgres >/dev/null 2>&1; then
	pw=$(random)
	printf '%s' "$pw" >"$tmp/password"
	printf 'postgres://crowsnest:%s@crowsnest-postgres.%s.svc:5432/crowsnest?sslmode=disable' "$pw" "$NS" >"$tmp/url"
	k -n "$NS" create secret generic crowsnest-dev-postgres --from-file="$tmp/password" --from-file="$tmp/url"
fi
if ! k -n "$NS" get secret crowsnest-dev-write-token >/dev/null 2>&1; then
	random >"$tmp/token"
	k -n "$NS" create secret generic crowsnest-dev-write-token --from-file="$tmp/token"
fi
if ! k -n "$NS" get secret crowsnest-dev-nats-users >/dev/null 2>&1; then
	# NATS passwords, one per user: letters and digits only (nats-server
	# re-parses a password taken from the environment as a config value).
	for u in operator results-api matcher notifier reader; do random >"$tmp/$u"; done
	k -n "$NS" create secret generic crowsnest-dev-nats-users --from-file="$tmp/operator" \
		--from-file="$tmp/results-api" --from-file="$tmp/matcher" --from-file="$tmp/notifier" --from-file="$tmp/reader"
fi
echo "dev Secrets ready in $NS"
