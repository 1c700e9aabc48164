#!/usr/bin/env bash
# tests/peers/kube_build.sh - make sure kube-apiserver and
# kube-controller-manager v1.20.2 exist in the per-user cache, building them
# from Debian 12's `kubernetes` source package when they don't.
#
#   tests/peers/kube_build.sh          # prints the bin dir on stdout
#
# Cache: ${KCTL_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kctl/kube-v1.20.2}/bin
# Exit:  0 the binaries are there, 77 they can't be had here (no packages, no
#        source, KCTL_KUBE_NO_BUILD set), 1 the build itself failed.
#
# Env:   KCTL_KUBE_CACHE     cache dir (see above)
#        KCTL_KUBE_NO_BUILD  if set, never build: exit 77 when not cached
#        KCTL_KUBE_NO_INSTALL if set, never run apt-get: exit 77 when a
#                            package is missing
#        KCTL_KUBE_KEEP_TREE keep the build tree (debugging)
# Progress and errors go to stderr; only the bin dir goes to stdout.
set -euo pipefail

want=v1.20.2
cache=${KCTL_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kctl/kube-$want}
bindir=$cache/bin
pkgs=(golang-go etcd-server rsync jq golang-github-modern-go-reflect2-dev)

say() { printf 'kube_build: %s\n' "$*" >&2; }
skip() { say "SKIP: $*"; exit 77; }
die() { say "ERROR: $*"; exit 1; }

have_bins() {
	local b
	for b in kube-apiserver kube-controller-manager; do
		[ -x "$bindir/$b" ] || return 1
		"$bindir/$b" --version 2>/dev/null | grep -qw "$want" || return 1
	done
}

missing_pkgs() {
	local p
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			printf '%s\n' "$p"
	done
}

# The runtime packages are wanted even with cached binaries (etcd, jq).
ensure_pkgs() {
	local miss sudo=
	mapfile -t miss < <(missing_pkgs)
	[ ${#miss[@]} -eq 0 ] && return 0
	[ -n "${KCTL_KUBE_NO_INSTALL:-}" ] && skip "missing packages ${miss[*]} (KCTL_KUBE_NO_INSTALL is set)"
	command -v apt-get >/dev/null || skip "missing packages ${miss[*]} and no apt-get"
	if [ "$(id -u)" -ne 0 ]; then
		sudo -n true 2>/dev/null || skip "missing packages ${miss[*]}; not root and no password-less sudo"
		sudo="sudo -n"
	fi
	say "installing ${miss[*]}"
	if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${miss[@]}" >&2; then
		$sudo apt-get update -qq >&2 || true
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${miss[@]}" >&2 ||
			skip "apt-get could not install ${miss[*]}"
	fi
}

# Turn the machine's deb822 / one-line "deb" entries into deb-src lines for a
# private source list, so the system's apt config stays as it is.
write_src_list() {
	local f
	{
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -r "$f" ] || continue
			awk '
				function flush(   n, i, s, opt) {
					if (uris != "" && suites != "" && types ~ /deb/) {
						opt = (key != "") ? "[signed-by=" key "] " : ""
						n = split(suites, s, /[ \t]+/)
						for (i = 1; i <= n; i++)
							if (s[i] != "") print "deb-src " opt uris " " s[i] " " comps
					}
					types = uris = suites = comps = key = ""
				}
				/^[ \t]*#/ { next }
				/^[ \t]*$/ { flush(); next }
				{
					k = $1; sub(/:$/, "", k); $1 = ""; sub(/^[ \t]+/, "")
					if (k == "Types") types = $0
					else if (k == "URIs") { split($0, u, /[ \t]+/); uris = u[1] }
					else if (k == "Suites") suites = $0
					else if (k == "Components") comps = $0
					else if (k == "Signed-By") key = $0
				}
				END { flush() }' "$f"
		done
		for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
			[ -r "$f" ] || continue
			sed -n 's/^[[:space:]]*deb[[:space:]]\+/deb-src /p' "$f"
		done
	} | awk '!seen[$0]++'
}

fetch_source() { # $1 = work dir; leaves the tree in $1/k8s
	local w=$1 o
	mkdir -p "$w/apt/lists/partial" "$w/dl"
	write_src_list >"$w/apt/src.list"
	[ -s "$w/apt/src.list" ] || skip "no apt mirror found in /etc/apt to fetch the kubernetes source from"
	say "private source list: $(tr '\n' ';' <"$w/apt/src.list")"
	o=(-o "Dir::Etc::SourceList=$w/apt/src.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$w/apt/lists" -o "Dir::Cache=$w/apt/cache"
		-o "APT::Sandbox::User=$(id -un)" -o Debug::NoLocking=1)
	apt-get "${o[@]}" -qq update >&2 || skip "apt-get update of the deb-src list failed (no mirror access?)"
	(cd "$w/dl" && apt-get "${o[@]}" -qq source --download-only kubernetes >&2) ||
		skip "could not download the Debian source package 'kubernetes'"
	local tarball
	tarball=$(ls "$w"/dl/kubernetes_*.orig.tar.* 2>/dev/null | head -1)
	[ -n "$tarball" ] || skip "no kubernetes orig tarball in the source package"
	say "unpacking $(basename "$tarball")"
	mkdir -p "$w/k8s"
	tar -xf "$tarball" -C "$w/k8s" --strip-components=1
	rm -rf "$w/dl" "$w/apt"
}

build() {
	local w t0 rc
	w=$(mktemp -d "${TMPDIR:-/tmp}/kctl-kube-build.XXXXXX")
	# shellcheck disable=SC2064
	[ -n "${KCTL_KUBE_KEEP_TREE:-}" ] || trap "rm -rf '$w'" EXIT
	fetch_source "$w"
	local r2=/usr/share/gocode/src/github.com/modern-go/reflect2
	[ -d "$r2" ] || die "$r2 missing (package golang-github-modern-go-reflect2-dev)"
	# Go >= 1.18 breaks the vendored reflect2 1.0.1 (panics decoding maps):
	# use Debian's 1.0.2 instead.
	rm -rf "$w/k8s/vendor/github.com/modern-go/reflect2"
	cp -r "$r2" "$w/k8s/vendor/github.com/modern-go/reflect2"
	say "building (about 5 min on 2 cores; log: $w/build.log)"
	t0=$(date +%s)
	rc=0
	(cd "$w/k8s" && nice -n 10 make WHAT="cmd/kube-apiserver cmd/kube-controller-manager") >"$w/build.log" 2>&1 || rc=$?
	if [ $rc -ne 0 ]; then
		tail -n 30 "$w/build.log" >&2
		cp "$w/build.log" "$cache/build-failed.log" 2>/dev/null || true
		die "make failed (rc $rc); log kept in $cache/build-failed.log"
	fi
	say "built in $(($(date +%s) - t0)) s"
	local arch out
	arch=$(go env GOARCH 2>/dev/null || echo amd64)
	out=$w/k8s/_output/local/bin/linux/$arch
	rm -rf "$cache/bin.new"
	mkdir -p "$cache/bin.new"
	cp "$out/kube-apiserver" "$out/kube-controller-manager" "$cache/bin.new/"
	rm -rf "$bindir"
	mv "$cache/bin.new" "$bindir"
	printf 'built %s from Debian source package kubernetes (reflect2 1.0.2 vendored) on %s in %s s\n' \
		"$want" "$(date -u +%FT%TZ)" "$(($(date +%s) - t0))" >"$cache/BUILD-INFO"
}

if have_bins; then
	ensure_pkgs
	echo "$bindir"
	exit 0
fi
[ -n "${KCTL_KUBE_NO_BUILD:-}" ] && skip "no cached $want binaries in $bindir (KCTL_KUBE_NO_BUILD is set)"
command -v flock >/dev/null || skip "flock (util-linux) missing"
mkdir -p "$cache" || skip "cannot create $cache"
exec 9>"$cache/.lock"
if ! flock -n 9; then
	say "another kube_build.sh holds $cache/.lock; waiting"
	flock 9
fi
if have_bins; then # the other caller built them
	ensure_pkgs
	echo "$bindir"
	exit 0
fi
ensure_pkgs
build
have_bins || die "built binaries in $bindir do not report $want"
say "ready: $bindir"
echo "$bindir"
