#!/usr/bin/env bash
# with-s3.sh COMMAND [ARG...] - runs COMMAND with a real S3 store on loopback.
#
# Starts OpenStack Swift with s3api (tests/peers/swift_s3.sh, which checks
# every signature) and tests/peers/fault_proxy.py in front of it, exports
#   S3_ENDPOINT S3_ACCESS_KEY S3_SECRET_KEY S3_REGION   the store
#   FAULT_PROXY                                       http://127.0.0.1:PORT, the proxy
# runs COMMAND and exits with its status.  Both peers stop on any exit.
# Exits 77 (ctest's skip code) when Swift is not installed and cannot be.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: with-s3.sh COMMAND [ARG...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
proxy_pid=
SWIFT_S3_DIR=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-with-s3.XXXXXX")

cleanup() {
	if [ -n "$proxy_pid" ]; then
		kill "$proxy_pid" 2>/dev/null || true
		wait "$proxy_pid" 2>/dev/null || true
	fi
	if [ -n "$SWIFT_S3_DIR" ]; then
		bash "$here/swift_s3.sh" stop "$SWIFT_S3_DIR" >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

status=0
bash "$here/swift_s3.sh" start >"$tmp/env" 2>"$tmp/swift.log" || status=$?
if [ "$status" -ne 0 ]; then
	cat "$tmp/swift.log" >&2
	exit "$status"
fi
eval "$(cat "$tmp/env")"
export S3_ENDPOINT S3_ACCESS_KEY S3_SECRET_KEY S3_REGION SWIFT_S3_DIR

python3 "$here/fault_proxy.py" --upstream "$S3_ENDPOINT" >"$tmp/proxy.port" \
	2>"$tmp/proxy.log" &
proxy_pid=$!
port=
for _ in $(seq 100); do
	if [ -s "$tmp/proxy.port" ]; then
		port=$(head -n 1 "$tmp/proxy.port")
		break
	fi
	kill -0 "$proxy_pid" 2>/dev/null || break
	sleep 0.1
done
if ! [[ $port =~ ^[0-9]+$ ]]; then
	echo "with-s3: the fault proxy did not start:" >&2
	cat "$tmp/proxy.log" >&2
	exit 1
fi
export FAULT_PROXY=http://127.0.0.1:$port

# Loopback only: no proxy from the environment may see the traffic.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

status=0
"$@" || status=$?
exit "$status"
