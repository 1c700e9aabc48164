#!/usr/bin/env bash
# ci/deps.sh - installs what a fresh Debian 12 machine lacks to build, run
# and test kctl and evalpod.  Installs nothing that is already there; uses
# sudo when not run as root.
set -euo pipefail

# --build: only what builds and runs kctl and evalpod (a GitHub runner, an
# image's build stage), with names that Debian and Ubuntu share; LLVM's
# llvm-dis (stage 5) as the distribution's default version.
if [ "${1:-}" = --build ]; then
	pkgs=(build-essential cmake pkg-config git ca-certificates python3 binutils llvm
		pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo
		libyaml-dev libjansson-dev libcurl4-openssl-dev libssl-dev libsqlite3-dev libbsd-dev)
elif [ $# -gt 0 ]; then
	echo "usage: ci/deps.sh [--build]" >&2
	exit 2
else
pkgs=(
	build-essential cmake pkg-config git
	pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo
	libyaml-dev libjansson-dev libcurl4-openssl-dev libssl-dev libsqlite3-dev libbsd-dev
	llvm-15 binutils          # llvm-dis-15 and objdump for stage 5 (IR analysis)
	libopenblas-dev           # the yardstick of bench/examples.sh
	python3 python3-yaml openssl ca-certificates clang-format
	clang libclang-rt-14-dev  # libFuzzer for tests/fuzz (ci/test.sh fuzzes each harness 20 s)
	swift-proxy swift-object swift-container swift-account  # S3 store of tests/peers/swift_s3.sh
	chromium                  # headless checks of HTML reports (tests/cli/browser.py)
	libclblast-dev            # CLBlast SGEMM, the second yardstick of bench/examples.sh
	podman runc mmdebstrap    # the evalpod image: ci/image.sh builds it, tests/cli/image.py runs it
)

# Kubernetes test peers (tests/peers/kube_build.sh, kube_cluster.sh): Go, rsync,
# jq and reflect2 1.0.2 to build kube-apiserver/kube-controller-manager v1.20.2
# from Debian's source package, and etcd to back the apiserver.
kube_pkgs=(golang-go etcd-server rsync jq golang-github-modern-go-reflect2-dev)
pkgs+=("${kube_pkgs[@]}")

# Schema checks of rendered manifests (tests/schema/validate.mjs): Node.js and
# npm; then "npm ci --prefix tests/schema" installs the pinned packages
# (Debian 12 ships node 18; kubernetes-models 4.5.1 needs node >= 14).  Only
# when missing: a NodeSource nodejs bundles npm and conflicts with Debian's.
schema_pkgs=()
command -v node >/dev/null 2>&1 || schema_pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || schema_pkgs+=(npm)
pkgs+=("${schema_pkgs[@]}")
fi

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo=sudo
fi
echo "ci/deps.sh: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
