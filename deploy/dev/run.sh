#!/bin/sh
# Dev-only supervisor for Tilt's live_update (deploy/dev/Dockerfile):
#   run.sh /app/binary ARGS...  runs the binary, restarting it whenever it exits;
#   run.sh reload               moves the synced /app/new/binary into place and
#                               stops the running one, which then restarts.
set -eu
if [ "${1:-}" = reload ]; then
	mv -f /app/new/binary /app/binary
	chmod +x /app/binary
	kill "$(cat /app/app.pid)"
	exit 0
fi
trap 'kill "$(cat /app/app.pid)" 2>/dev/null; exit 0' TERM INT
while :; do
	"$@" &
	echo $! >/app/app.pid
	wait $! || echo "run.sh: $1 exited with $?; restarting" >&2
	sleep 1
done
