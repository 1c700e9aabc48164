#!/usr/bin/env bash
# tests/peers/swift_s3.sh - a throw-away S3 endpoint on loopback that really
# checks AWS Signature V4, for the tests of the S3 client.
#
# It is OpenStack Swift (Debian 12: 2.30.1) with the s3api and tempauth
# middleware: one node, one replica, four servers (proxy, object, container,
# account).  Configs, rings, data, logs and pids all live in one directory.
#
#   eval "$(tests/peers/swift_s3.sh start)"     # exit 77: Swift unavailable
#   ...                                          # use $S3_ENDPOINT etc.
#   tests/peers/swift_s3.sh stop "$SWIFT_S3_DIR"
#
# start prints these assignments on stdout (everything else goes to stderr):
#   SWIFT_S3_DIR  the work dir        S3_ENDPOINT    http://127.0.0.1:PORT
#   S3_ACCESS_KEY test:tester         S3_SECRET_KEY  testing
#   S3_REGION     us-east-1           (path-style addressing, service "s3")
#
# Environment:
#   SWIFT_S3_PORT        proxy port; object/container/account use +1/+2/+3
#                        and +4 is named as the (absent) memcached.  Default:
#                        a free block of 5 ports picked at random.
#   SWIFT_S3_DIR         work dir (default: a new mktemp dir under $TMPDIR)
#   SWIFT_S3_TTL         seconds after which every server is killed anyway
#                        (default 3600), so a forgotten store goes away
#   SWIFT_S3_WAIT        seconds to wait for the servers (default 60)
#   SWIFT_S3_NO_INSTALL  if set, never run apt-get: exit 77 when missing
#   SWIFT_S3_KEEP        if set, stop leaves the work dir (logs) in place
#
# Exit status of start: 0 up, 1 failed (log tails on stderr), 77 Swift is
# not installed and cannot be installed (the caller should skip).
set -euo pipefail

me=${0##*/}
PY=/usr/bin/python3          # Debian's python has the swift modules; pyenv's not
PKGS=(swift-proxy swift-object swift-container swift-account)
SERVERS=(object container account proxy)

say() { echo "$me: $*" >&2; }

# --- stopping ------------------------------------------------------------

# A pid is ours while it is alive (not a zombie) and its command line names
# this store's config dir; that guards against pid reuse and other stores.
ours() {
	local pid=$1 dir=$2 state
	state=$(sed 's/^.*) \(.\).*$/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
	[ "$state" != Z ] || return 1
	grep -qaF "$dir/etc/" "/proc/$pid/cmdline" 2>/dev/null
}

stop_store() {
	local dir=$1 pid sig try left
	if [ -f "$dir/pids" ]; then
		# TERM first; after about 5 s whatever is left gets KILL.
		for try in $(seq 0 50); do
			left=0
			sig=0
			[ "$try" -eq 0 ] && sig=TERM
			[ "$try" -eq 50 ] && sig=KILL
			while read -r pid; do
				ours "$pid" "$dir" || continue
				left=1
				[ "$sig" = 0 ] || kill -s "$sig" "$pid" 2>/dev/null || true
			done <"$dir/pids"
			[ "$left" -eq 1 ] || break
			sleep 0.1
		done
		rm -f "$dir/pids"
	fi
	# Only a dir this script created (marker file) is ever removed.
	if [ -z "${SWIFT_S3_KEEP:-}" ] && [ -f "$dir/.swift_s3_made_me" ]; then
		rm -rf "$dir"
	fi
}

# --- packages ------------------------------------------------------------

missing_pkgs() {
	local p
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			echo "$p"
	done
}

ensure_packages() {
	local missing sudo="" apt
	if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
		say "no dpkg/apt-get here: cannot provide OpenStack Swift; skipping"
		exit 77
	fi
	missing=$(missing_pkgs | tr '\n' ' ')
	[ -n "${missing// /}" ] || return 0
	if [ -n "${SWIFT_S3_NO_INSTALL:-}" ]; then
		say "missing packages: $missing(SWIFT_S3_NO_INSTALL is set); skipping"
		exit 77
	fi
	if [ "$(id -u)" -ne 0 ]; then
		# -n: never wait for a password inside a test run
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			sudo="sudo -n"
		else
			say "missing packages: $missing- need root or password-less sudo"
			say "to install them (or run ci/deps.sh); skipping"
			exit 77
		fi
	fi
	say "installing $missing(once, about 30 s)"
	# Lock::Timeout: parallel test runs may all want to install at once.
	apt="$sudo env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=300"
	# shellcheck disable=SC2086  # word splitting of $apt and $missing wanted
	if ! $apt install --no-install-recommends $missing >&2; then
		# stale package lists are the usual reason; refresh once and retry
		if ! { $apt update >&2 && $apt install --no-install-recommends $missing >&2; }; then
			say "could not install $missing; skipping"
			exit 77
		fi
	fi
}

# --- ports ---------------------------------------------------------------

# Prints a base port B such that B..B+4 can all be bound on 127.0.0.1, or
# checks the given base.  Bind with SO_REUSEADDR, as Swift does, so sockets
# in TIME_WAIT do not count as taken but any listener does.  Random bases
# stay below the kernel's ephemeral range so client sockets cannot squat.
pick_ports() {
	"$PY" - "${1:-}" <<'EOF'
import random, socket, sys

def free(base):
    held = []
    try:
        for p in range(base, base + 5):
            s = socket.socket()
            held.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        for s in held:
            s.close()

if sys.argv[1]:
    sys.exit(0 if free(int(sys.argv[1])) else 1)
for _ in range(100):
    base = random.randrange(20000, 32700)
    if free(base):
        print(base)
        sys.exit(0)
sys.exit(1)
EOF
}

# --- configuration -------------------------------------------------------

# conf NAME PORT PIPELINE: the [DEFAULT] and pipeline every server shares.
conf() {
	cat <<EOF
# written by $me
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $2
# give up on a taken port at once (the default retries for 30 s)
bind_timeout = 1
# a single process per server, no worker forking
workers = 0
user = $(id -un)
# rings are looked up here; swift.conf always comes from /etc/swift
swift_dir = $DIR/etc
devices = $DIR/node
mount_check = false
disable_fallocate = true
log_level = INFO

[pipeline:main]
pipeline = $3

[filter:healthcheck]
use = egg:swift#healthcheck
EOF
}

write_configs() {
	local name port=$BASE
	for name in object container account; do
		port=$((port + 1))
		{
			conf "$name" "$port" "healthcheck $name-server"
			printf '\n[app:%s-server]\nuse = egg:swift#%s\n' "$name" "$name"
		} >"$DIR/etc/$name-server.conf"
	done

	# s3api must come before tempauth (it turns the S3 signature into
	# something tempauth checks); slo is what S3 multipart uploads use.
	{
		conf proxy "$BASE" "catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server"
		cat <<EOF

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:s3api]
use = egg:swift#s3api
location = us-east-1

[filter:tempauth]
use = egg:swift#tempauth
# account "test", user "tester", key "testing" = S3 access key "test:tester"
user_test_tester = testing .admin

# tempauth refuses S3 requests without a memcache client object.  Nothing
# listens on this port; the proxy logs connection errors and carries on.
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$((BASE + 4))
EOF
		# section name (as in the pipeline) : entry point in swift's egg
		for f in catch_errors:catch_errors gatekeeper:gatekeeper \
			proxy-logging:proxy_logging listing_formats:listing_formats \
			copy:copy slo:slo dlo:dlo; do
			printf '\n[filter:%s]\nuse = egg:swift#%s\n' "${f%%:*}" "${f#*:}"
		done
	} >"$DIR/etc/proxy-server.conf"
}

# One device "d1", one replica, 2^8 partitions per ring, built through the
# RingBuilder API in one interpreter: swift-ring-builder would need nine
# separate python start-ups (create, add, rebalance per ring; ~4.5 s).
build_rings() {
	"$PY" - "$DIR/etc" "$BASE" <<'EOF'
import sys
from swift.common.ring import RingBuilder

etc, base = sys.argv[1], int(sys.argv[2])
for offset, name in ((1, "object"), (2, "container"), (3, "account")):
    rb = RingBuilder(8, 1, 1)       # part_power, replicas, min_part_hours
    rb.add_dev({"id": 0, "region": 1, "zone": 1, "ip": "127.0.0.1",
                "port": base + offset, "device": "d1", "weight": 100})
    rb.rebalance()
    rb.get_ring().save("%s/%s.ring.gz" % (etc, name))
EOF
}

# --- running -------------------------------------------------------------

launch() {
	local name
	: >"$DIR/pids"
	for name in "${SERVERS[@]}"; do
		# timeout passes TERM on to the server.  The servers call setsid()
		# themselves, so stop signals every recorded pid (wrapper and
		# server) instead of a process group.  -v: log to the console.
		nohup timeout "$TTL" "swift-$name-server" "$DIR/etc/$name-server.conf" -v \
			</dev/null >"$DIR/log/$name.log" 2>&1 &
		echo $! >>"$DIR/pids"
	done
}

# Polls GET /healthcheck on all four ports until each says OK; fails early
# when a server process is gone.  Exit 0 ready, 1 not.
wait_ready() {
	"$PY" - "$BASE" "$WAIT" "$DIR/pids" <<'EOF'
import http.client, sys, time

base, wait = int(sys.argv[1]), float(sys.argv[2])
with open(sys.argv[3]) as f:
    pids = f.read().split()
todo = {base, base + 1, base + 2, base + 3}
deadline = time.monotonic() + wait
while todo:
    for pid in pids:
        try:
            with open("/proc/%s/stat" % pid) as f:
                alive = f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            alive = False
        if not alive:
            sys.stderr.write("server process %s exited\n" % pid)
            sys.exit(1)
    for port in sorted(todo):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/healthcheck")
            if c.getresponse().read() == b"OK":
                todo.discard(port)
            c.close()
        except OSError:
            pass
    if todo and time.monotonic() > deadline:
        sys.stderr.write("no healthcheck answer on port(s) %s\n" % sorted(todo))
        sys.exit(1)
    if todo:
        time.sleep(0.1)
EOF
}

record_children() {
	local w kids=""
	while read -r w; do
		kids+=" $(cat "/proc/$w/task/$w/children" 2>/dev/null || true)"
	done <"$DIR/pids"
	for w in $kids; do echo "$w"; done >>"$DIR/pids"
}

show_logs() {
	local f
	for f in "$DIR"/log/*.log; do
		[ -f "$f" ] || continue
		echo "--- $f (last 25 lines)" >&2
		tail -n 25 "$f" >&2
	done
}

start() {
	ensure_packages
	if [ ! -r /etc/swift/swift.conf ]; then
		# the servers read the hash prefix/suffix from here, nowhere else
		say "/etc/swift/swift.conf is missing or unreadable (comes with swift package)"
		exit 1
	fi

	TTL=${SWIFT_S3_TTL:-3600}
	WAIT=${SWIFT_S3_WAIT:-60}
	if [ -n "${SWIFT_S3_DIR:-}" ]; then
		DIR=$SWIFT_S3_DIR
		mkdir -p "$DIR"
	else
		DIR=$(mktemp -d "${TMPDIR:-/tmp}/swift-s3.XXXXXX")
		: >"$DIR/.swift_s3_made_me"
	fi
	DIR=$(cd "$DIR" && pwd -P)
	mkdir -p "$DIR/etc" "$DIR/node/d1" "$DIR/log"

	# The object server keeps metadata in user.* xattrs; tmpfs before
	# Linux 6.6 has none, and the failure would only show on the first PUT.
	if ! "$PY" -c 'import os,sys; os.setxattr(sys.argv[1], "user.swift_s3", b"1")' \
		"$DIR/node/d1" 2>/dev/null; then
		say "$DIR does not support user.* xattrs; set SWIFT_S3_DIR or TMPDIR elsewhere"
		stop_store "$DIR"
		exit 1
	fi

	local _
	for _ in 1 2 3; do
		if [ -n "${SWIFT_S3_PORT:-}" ]; then
			BASE=$SWIFT_S3_PORT
			if ! pick_ports "$BASE"; then
				say "a port in 127.0.0.1:$BASE..$((BASE + 4)) is taken (SWIFT_S3_PORT)"
				stop_store "$DIR"
				exit 1
			fi
		else
			BASE=$(pick_ports) || {
				say "found no free block of 5 ports"
				stop_store "$DIR"
				exit 1
			}
		fi
		write_configs
		build_rings
		launch
		if wait_ready; then
			record_children
			printf '%s=%q\n' SWIFT_S3_DIR "$DIR" S3_ENDPOINT "http://127.0.0.1:$BASE" \
				S3_ACCESS_KEY test:tester S3_SECRET_KEY testing S3_REGION us-east-1
			return 0
		fi
		record_children
		# Another start (parallel test) may have grabbed a port between our
		# check and the servers' bind: pick new ports and try again.
		if [ -z "${SWIFT_S3_PORT:-}" ] && grep -qs "Could not bind" "$DIR"/log/*.log; then
			say "lost a port race on base $BASE; retrying"
			SWIFT_S3_KEEP=1 stop_store "$DIR"
			continue
		fi
		break
	done
	say "Swift did not come up; logs in $DIR/log"
	show_logs
	SWIFT_S3_KEEP=1 stop_store "$DIR"
	exit 1
}

case "${1:-}" in
start) start ;;
stop) stop_store "${2:?usage: $me stop DIR}" ;;
*)
	echo "usage: $me start | stop DIR" >&2
	exit 2
	;;
esac
