#!/usr/bin/env bash
# tests/peers/with-kube.sh COMMAND [ARGS...]
#
# Brings up a throw-away control plane with kube_cluster.sh, exports the
# KUBE_* variables it prints, runs COMMAND, and tears the cluster down
# however COMMAND ends.  Exits with COMMAND's status; 77 (skip) or 1 when the
# cluster could not be built or started.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ $# -eq 0 ]; then
	echo "usage: $0 COMMAND [ARGS...]" >&2
	exit 2
fi

vars=$("$here/kube_cluster.sh" start)
rc=$?
if [ $rc -ne 0 ]; then
	exit $rc
fi
eval "$vars"
export KUBE_DIR KUBE_SERVER KUBE_CA KUBE_ADMIN_TOKEN KUBE_USER_TOKEN \
	KUBE_ADMIN_CERT KUBE_ADMIN_KEY KUBE_USER_CERT KUBE_USER_KEY \
	KUBE_NAMESPACE KUBECONFIG_ADMIN KUBECONFIG_USER

cleanup() { "$here/kube_cluster.sh" stop "$KUBE_DIR"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$@"
rc=$?
exit $rc
