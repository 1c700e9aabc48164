#!/usr/bin/env bash
# ci/kubeconfig.sh - the cluster credentials of a GitHub Actions job, for
# kctl's Kubernetes backend.
#
#   ci/kubeconfig.sh write FILE    writes a kubeconfig to FILE (mode 0600)
#   ci/kubeconfig.sh token         the exec credential plugin of OIDC mode
#
# write: with $KCTL_KUBECONFIG set (a secret holding a whole kubeconfig) FILE
# is that text.  Else, with $KCTL_CLUSTER_SERVER set and the job allowed an
# OIDC token (permissions: id-token: write, which sets
# $ACTIONS_ID_TOKEN_REQUEST_URL), FILE names the server, its CA
# ($KCTL_CLUSTER_CA: base64 PEM, optional) and this script as an exec
# plugin: kctl runs `ci/kubeconfig.sh token` whenever it needs a token, so a
# session longer than a token's life renews it.  The cluster must accept
# GitHub's issuer (https://token.actions.githubusercontent.com) with the
# audience $KCTL_OIDC_AUDIENCE (default kctl).  Neither: exit 3.
#
# token: asks GitHub for an ID token and prints a client.authentication.k8s.io/v1
# ExecCredential with it and its expiry.  Tokens never reach stdout
# otherwise, nor any log.  Exit 64 on usage errors.
set -euo pipefail
shopt -s inherit_errexit

audience="${KCTL_OIDC_AUDIENCE:-kctl}"

token() {
	if [ -z "${ACTIONS_ID_TOKEN_REQUEST_URL:-}" ] || [ -z "${ACTIONS_ID_TOKEN_REQUEST_TOKEN:-}" ]; then
		echo "kubeconfig.sh: no OIDC token: the job needs permissions: id-token: write" >&2
		exit 3
	fi
	# The request token goes through stdin, not argv.
	printf 'Authorization: bearer %s\n' "$ACTIONS_ID_TOKEN_REQUEST_TOKEN" |
		curl -fsS --retry 3 -H @- "$ACTIONS_ID_TOKEN_REQUEST_URL&audience=$audience" |
		python3 -c '
import base64, json, sys, time
jwt = json.load(sys.stdin)["value"]
payload = jwt.split(".")[1]
claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
    "status": {"token": jwt, "expirationTimestamp":
               time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(claims["exp"]))}}))'
}

write() {
	local file="$1" self
	umask 077
	if [ -n "${KCTL_KUBECONFIG:-}" ]; then
		printf '%s\n' "$KCTL_KUBECONFIG" >"$file"
	elif [ -n "${KCTL_CLUSTER_SERVER:-}" ] && [ -n "${ACTIONS_ID_TOKEN_REQUEST_URL:-}" ]; then
		self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
		{
			echo "apiVersion: v1"
			echo "kind: Config"
			echo "clusters:"
			echo "- name: kctl"
			echo "  cluster:"
			echo "    server: \"$KCTL_CLUSTER_SERVER\""
			if [ -n "${KCTL_CLUSTER_CA:-}" ]; then
				echo "    certificate-authority-data: \"$KCTL_CLUSTER_CA\""
			fi
			echo "users:"
			echo "- name: github-oidc"
			echo "  user:"
			echo "    exec:"
			echo "      apiVersion: client.authentication.k8s.io/v1"
			echo "      command: \"$self\""
			echo "      args: [token]"
			echo "      interactiveMode: Never"
			echo "contexts:"
			echo "- name: kctl"
			echo "  context: {cluster: kctl, user: github-oidc}"
			echo "current-context: kctl"
		} >"$file"
	else
		echo "kubeconfig.sh: no credentials: set the KCTL_KUBECONFIG secret, or KCTL_CLUSTER_SERVER with id-token: write" >&2
		exit 3
	fi
	chmod 600 "$file"
	echo "kubeconfig.sh: wrote $file"
}

case "${1:-}" in
write) [ $# -eq 2 ] || { echo "usage: ci/kubeconfig.sh write FILE" >&2; exit 64; }; write "$2" ;;
token) [ $# -eq 1 ] || { echo "usage: ci/kubeconfig.sh token" >&2; exit 64; }; token ;;
*) echo "usage: ci/kubeconfig.sh write FILE | token" >&2; exit 64 ;;
esac
