#!/usr/bin/env bash
# run-github-test.sh TEST-BINARY - runs test-github against the GitHub double.
#
# Makes a throwaway CA and a server certificate for localhost and 127.0.0.1,
# starts tests/peers/github_double.py over TLS with a token made for this
# run, exports GITHUB_DOUBLE (https://localhost:PORT), GITHUB_DOUBLE_CA,
# GITHUB_DOUBLE_TOKEN and GITHUB_DOUBLE_REPO, runs TEST-BINARY and exits with
# its status.  The double and the temporary directory go away on any exit.
# Exits 77 (ctest's skip code) when python3 or openssl is missing.
set -euo pipefail

test_bin=${1:?usage: run-github-test.sh TEST-BINARY}
here=$(cd "$(dirname "$0")" && pwd)
double=$here/../peers/github_double.py

for tool in python3 openssl; do
	if ! command -v "$tool" >/dev/null; then
		echo "run-github-test: skipped: $tool not found"
		exit 77
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-github-test.XXXXXX")
double_pid=

cleanup() {
	if [ -n "$double_pid" ]; then
		kill "$double_pid" 2>/dev/null || true
		wait "$double_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

make_certs() {
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=kctl github test CA" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-keyout "$tmp/ca.key" -out "$tmp/ca.pem" 2>"$tmp/openssl.log"
	openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
		-keyout "$tmp/server.key" -out "$tmp/server.csr" 2>>"$tmp/openssl.log"
	cat >"$tmp/server.ext" <<-EOT
		basicConstraints=critical,CA:FALSE
		keyUsage=critical,digitalSignature,keyEncipherment
		extendedKeyUsage=serverAuth
		subjectAltName=DNS:localhost,IP:127.0.0.1
	EOT
	openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
		-CAcreateserial -days 2 -extfile "$tmp/server.ext" \
		-out "$tmp/server.pem" 2>>"$tmp/openssl.log"
}

if ! make_certs; then
	echo "run-github-test: openssl failed:" >&2
	cat "$tmp/openssl.log" >&2
	exit 1
fi

# A token shaped like GitHub's fine-grained ones, new for every run.
token="github_pat_$(openssl rand -hex 20)"
repo=kctl-test/tracking
python3 "$double" --tls "$tmp/server.pem" "$tmp/server.key" --token "$token" \
	--repo "$repo" >"$tmp/double.port" 2>"$tmp/double.log" &
double_pid=$!
port=
for _ in $(seq 100); do
	if [ -s "$tmp/double.port" ]; then
		port=$(head -n 1 "$tmp/double.port")
		break
	fi
	if ! kill -0 "$double_pid" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
if ! [[ $port =~ ^[0-9]+$ ]]; then
	echo "run-github-test: the double did not start:" >&2
	cat "$tmp/double.log" >&2
	exit 1
fi

# Only loopback traffic, and no CA from the environment.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
unset CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
export GITHUB_DOUBLE=https://localhost:$port
export GITHUB_DOUBLE_CA=$tmp/ca.pem
export GITHUB_DOUBLE_TOKEN=$token
export GITHUB_DOUBLE_REPO=$repo
export TMPDIR=$tmp

status=0
"$test_bin" || status=$?
if [ "$status" -ne 0 ] && [ -s "$tmp/double.log" ]; then
	echo "run-github-test: the double's log:" >&2
	tail -n 40 "$tmp/double.log" >&2
fi
exit "$status"
