#!/usr/bin/env bash
# run-http-test.sh TEST-BINARY - runs test-http against loopback peers.
#
# Makes a throwaway CA and a server certificate for localhost and 127.0.0.1,
# starts tests/peers/http_peer.py twice (plain HTTP and HTTPS), exports
# HTTP_PEER, HTTPS_PEER and HTTPS_CA, runs TEST-BINARY and exits with its
# status.  The peers and the temporary directory go away on any exit.
# Exits 77 (ctest's skip code) when python3 or openssl is missing.
set -euo pipefail

test_bin=${1:?usage: run-http-test.sh TEST-BINARY}
here=$(cd "$(dirname "$0")" && pwd)
peer=$here/../peers/http_peer.py

for tool in python3 openssl; do
	if ! command -v "$tool" >/dev/null; then
		echo "run-http-test: skipped: $tool not found"
		exit 77
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-http-test.XXXXXX")
peer_pids=()

cleanup() {
	local pid
	for pid in "${peer_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

make_certs() {
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=kctl test CA" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-keyout "$tmp/ca.key" -out "$tmp/ca.pem" 2>"$tmp/openssl.log"
	openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
		-keyout "$tmp/server.key" -out "$tmp/server.csr" 2>>"$tmp/openssl.log"
	cat >"$tmp/server.ext" <<-EOF
		basicConstraints=critical,CA:FALSE
		keyUsage=critical,digitalSignature,keyEncipherment
		extendedKeyUsage=serverAuth
		subjectAltName=DNS:localhost,IP:127.0.0.1
	EOF
	openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
		-CAcreateserial -days 2 -extfile "$tmp/server.ext" \
		-out "$tmp/server.pem" 2>>"$tmp/openssl.log"
}

# start_peer NAME ARGS... - starts a peer and sets $port to the port it prints.
start_peer() {
	local name=$1 i
	shift
	python3 "$peer" "$@" >"$tmp/$name.port" 2>"$tmp/$name.log" &
	peer_pids+=("$!")
	port=
	for i in $(seq 100); do
		if [ -s "$tmp/$name.port" ]; then
			port=$(head -n 1 "$tmp/$name.port")
			break
		fi
		if ! kill -0 "$!" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if ! [[ $port =~ ^[0-9]+$ ]]; then
		echo "run-http-test: the $name peer did not start:" >&2
		cat "$tmp/$name.log" >&2
		exit 1
	fi
}

if ! make_certs; then
	echo "run-http-test: openssl failed:" >&2
	cat "$tmp/openssl.log" >&2
	exit 1
fi

start_peer http
http_port=$port
start_peer https --tls "$tmp/server.pem" "$tmp/server.key"
https_port=$port

# Only loopback traffic: no proxy may see it, and the "system store" case
# must not find our CA through the environment.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
unset CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
export HTTP_PEER=http://127.0.0.1:$http_port
export HTTPS_PEER=https://localhost:$https_port
export HTTPS_CA=$tmp/ca.pem

status=0
"$test_bin" || status=$?
exit "$status"
