#!/usr/bin/env bash
# ci/image.sh - builds the evalpod image (docker/Dockerfile) on a machine that
# reaches Debian's package mirrors but no container registry:
#
#   1. a Debian 12 base image made from Debian's packages by mmdebstrap
#      (minbase variant), cached as a tarball under $KCTL_IMAGE_CACHE
#      (default ~/.cache/kctl/image) and imported as localhost/kctl-debian:12;
#   2. docker/Dockerfile built on top of it by podman (daemonless), with
#      --build-arg BASE=localhost/kctl-debian:12.
#
#   bash ci/image.sh [--tag TAG] [--build-arg NAME=VALUE]... [--rebuild-base]
#                    [--print-env]
#
# --tag names the image (default localhost/evalpod:dev).  --build-arg is
# passed to the build (POCL=0: the image for GPU node pools, without PoCL).  --rebuild-base makes
# the base again even when a cached one is there (its age is printed).
# --print-env prints the podman options a container needs on this machine
# (see below) and exits.
#
# The OCI runtime: crun, podman's default, refuses to start containers on a
# host with cgroups v1 and v2 mixed ("hybrid"), and both runtimes are refused
# rlimits above the host's hard limits when kctl runs without
# CAP_SYS_RESOURCE (in a container, say).  So the script tries crun first and
# falls back to runc, with nofile and nproc set within the host's limits.
# tests/cli/image.py starts containers with the same options, read from
# --print-env.
#
# Exit status: 0 built (the image's name and size are printed last), 1 a step
# failed (its output says which), 2 usage, 77 this machine cannot build
# containers at all (no podman, or no runtime that starts one), with why.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=localhost/evalpod:dev
rebuild=0
print_env=0
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--tag) tag=${2:?--tag needs a name}; shift 2 ;;
	--build-arg) args+=(--build-arg "${2:?--build-arg needs NAME=VALUE}"); shift 2 ;;
	--rebuild-base) rebuild=1; shift ;;
	--print-env) print_env=1; shift ;;
	*) echo "usage: ci/image.sh [--tag TAG] [--build-arg NAME=VALUE]... [--rebuild-base] [--print-env]" >&2; exit 2 ;;
	esac
done

say() { echo "ci/image.sh: $*" >&2; }

if ! command -v podman >/dev/null 2>&1; then
	say "podman is not installed (apt-get install podman runc mmdebstrap): cannot build the image here"
	exit 77
fi

# Limits a container may be given: at most the host's hard limits, so that
# setting them needs no privilege.
hard_nofile=$(ulimit -Hn)
hard_nproc=$(ulimit -Hu)
[ "$hard_nofile" = unlimited ] && hard_nofile=1048576
[ "$hard_nproc" = unlimited ] && hard_nproc=65536
nofile=$((hard_nofile < 65536 ? hard_nofile : 65536))
nproc=$((hard_nproc / 2 < 4096 ? hard_nproc / 2 : 4096))
ulimits=(--ulimit "nofile=$((nofile < 1024 ? nofile : 1024)):$nofile" --ulimit "nproc=$nproc:$nproc")

base_ref=localhost/kctl-debian:12
cache=${KCTL_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kctl/image}
mkdir -p "$cache"

# The runtime that starts a container here: crun, else runc.  Probed with
# the base image, which must exist first.
make_base() {
	local tar=$cache/debian12-minbase.tar
	if [ "$rebuild" = 1 ] || [ ! -s "$tar" ]; then
		if ! command -v mmdebstrap >/dev/null 2>&1; then
			say "mmdebstrap is not installed (apt-get install mmdebstrap): cannot make the base image"
			exit 77
		fi
		say "making a Debian 12 base with mmdebstrap (minbase) into $tar"
		mmdebstrap --quiet --variant=minbase bookworm "$cache/new-base.tar"
		mv -f "$cache/new-base.tar" "$tar"
	else
		say "base: $tar, made $(( ($(date +%s) - $(stat -c %Y "$tar")) / 86400 )) day(s) ago (--rebuild-base makes it again)"
	fi
	if ! podman image exists "$base_ref" ||
		[ "$(podman image inspect -f '{{index .Labels "kctl.base.mtime"}}' "$base_ref" 2>/dev/null)" != "$(stat -c %Y "$tar")" ]; then
		podman import --change "LABEL kctl.base.mtime=$(stat -c %Y "$tar")" \
			--change 'CMD ["/bin/bash"]' "$tar" "$base_ref" >/dev/null
	fi
}

runtime=
pick_runtime() {
	local r out
	for r in crun runc; do
		command -v "$r" >/dev/null 2>&1 || continue
		if out=$(podman --runtime "$r" run --rm --network none "${ulimits[@]}" "$base_ref" true 2>&1); then
			runtime=$r
			return 0
		fi
		say "runtime $r cannot start a container here: $(echo "$out" | tail -1)"
	done
	say "no OCI runtime (crun, runc) starts a container on this machine: cannot build or run the image"
	exit 77
}

make_base
pick_runtime

if [ "$print_env" = 1 ]; then
	printf '%s\n' --runtime "$runtime" "${ulimits[@]}"
	exit 0
fi

say "building docker/Dockerfile as $tag on $base_ref (runtime $runtime)"
podman --runtime "$runtime" build "${ulimits[@]}" --network host --pull=never \
	--build-arg "BASE=$base_ref" --build-arg "JOBS=$(nproc)" ${args[@]+"${args[@]}"} \
	-f docker/Dockerfile -t "$tag" .
size=$(podman image inspect -f '{{.Size}}' "$tag")
say "built $tag: $((size / 1048576)) MiB ($size bytes)"
echo "$tag $size"
