#!/usr/bin/env bash
# tests/peers/kube_cluster.sh - a throw-away Kubernetes v1.20.2 control plane
# (etcd + kube-apiserver + kube-controller-manager) on 127.0.0.1.
#
#   eval "$(tests/peers/kube_cluster.sh start [DIR])"   # 0 up, 1 failed, 77 skip
#   tests/peers/kube_cluster.sh stop "$KUBE_DIR"
#   tests/peers/kube_cluster.sh restart-apiserver "$KUBE_DIR" [DOWN_S] [SIGNAL]
#
# `start` prints shell assignments (and nothing else) on stdout; progress,
# timings and, on failure, log tails go to stderr.  There is no node and no
# scheduler: run tests/peers/fake_kubelet.py to play the node.
#
# Env: KUBE_TTL   servers are killed after this many seconds anyway (3600)
#      KUBE_WAIT  seconds to wait for readiness (90)
#      KUBE_KEEP  if set, `stop` keeps DIR (logs in DIR/log)
#      KUBE_FEATURE_GATES  feature gates for apiserver and KCM
#                 (default TTLAfterFinished=true; set empty for none)
#      KCTL_KUBE_CACHE / KCTL_KUBE_NO_BUILD  see kube_build.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ns=kctl-test

say() { printf 'kube_cluster: %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

port_free() { # $1 port: nothing listening or bound there
	[ -z "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]
}

pick_ports() { # sets P0..P2: three free consecutive ports
	local i base
	for i in $(seq 1 50); do
		base=$((20000 + RANDOM % 12000))
		if port_free "$base" && port_free $((base + 1)) && port_free $((base + 2)); then
			P0=$base P1=$((base + 1)) P2=$((base + 2))
			return 0
		fi
	done
	return 1
}

# Stop the process groups listed in DIR/pids whose names are given; the
# leaders are `timeout` processes, each leading its own process group.
stop_group() { # $1 dir, $2.. names
	local d=$1 name pid pids=() names=() t i
	shift
	[ -r "$d/pids" ] || return 0
	while read -r name pid; do
		case " $* " in *" $name "*) ;; *) continue ;; esac
		# only if the pid still runs something of ours
		if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$d/"; then
			pids+=("$pid")
			names+=("$name")
		fi
	done <"$d/pids"
	[ ${#pids[@]} -eq 0 ] && return 0
	for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
	t=0
	while [ $t -lt 50 ]; do
		alive=0
		for pid in "${pids[@]}"; do
			pgrep -g "$pid" >/dev/null 2>&1 && alive=1
		done
		[ $alive -eq 0 ] && return 0
		sleep 0.1
		t=$((t + 1))
	done
	for i in "${!pids[@]}"; do
		pid=${pids[$i]}
		if pgrep -g "$pid" >/dev/null 2>&1; then
			say "${names[$i]} (process group $pid) ignored TERM for 5 s; sending KILL"
			kill -KILL -- "-$pid" 2>/dev/null || true
		fi
	done
	sleep 0.2
}

do_stop() {
	local d=${1:?usage: kube_cluster.sh stop DIR} t0
	t0=$(now)
	[ -d "$d" ] || { say "no such dir $d"; return 0; }
	d=$(cd "$d" && pwd)
	# All at once: the data is thrown away, and this takes 2-3 s where
	# stopping etcd after the apiserver takes 5.
	stop_group "$d" kube-controller-manager kube-apiserver etcd
	echo "stop $(since "$t0")" >>"$d/timings" 2>/dev/null || true
	say "stopped in $(since "$t0") s"
	if [ -z "${KUBE_KEEP:-}" ] && [ -e "$d/.created-by-kube_cluster" ]; then
		rm -rf "$d"
	fi
}

# Run a server in the background under `timeout`, in its own process group,
# with its output in DIR/log/NAME.log.  Records "NAME PID" in DIR/pids.
spawn() { # $1 name, $2.. command
	local name=$1
	shift
	timeout -k 5 "${KUBE_TTL:-3600}" "$@" </dev/null >"$D/log/$name.log" 2>&1 &
	echo "$name $!" >>"$D/pids"
	eval "pid_${name//-/_}=$!"
}

alive() { # $1 name
	local v="pid_${1//-/_}"
	kill -0 "${!v}" 2>/dev/null
}

fail() {
	local f
	say "ERROR: $*"
	for f in "$D"/log/*.log; do
		[ -e "$f" ] || continue
		say "---- tail of $f"
		tail -n 25 "$f" >&2
	done
	do_stop "$D"
	exit 1
}

gen_pki() {
	local p=$D/pki
	mkdir -p "$p"
	(
		cd "$p"
		exec >/dev/null 2>&1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 7 \
			-subj "/CN=kctl-test-ca-$(basename "$D")"
		printf '%s\n' 'basicConstraints=CA:FALSE' 'keyUsage=digitalSignature,keyEncipherment' \
			'extendedKeyUsage=serverAuth' \
			'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1' >server.ext
		printf '%s\n' 'basicConstraints=CA:FALSE' 'keyUsage=digitalSignature,keyEncipherment' \
			'extendedKeyUsage=clientAuth' >client.ext
		issue() { # name subject ext
			openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
			openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
				-out "$1.crt" -days 7 -extfile "$3"
			rm -f "$1.csr"
		}
		issue apiserver "/CN=kube-apiserver" server.ext
		issue admin "/O=system:masters/CN=kctl-cert-admin" client.ext
		issue user "/CN=kctl-cert-user" client.ext
		openssl genrsa -out sa.key 2048
		openssl rsa -in sa.key -pubout -out sa.pub
	) || return 1
	chmod 600 "$p"/*.key
	ADMIN_TOKEN=admin-$(openssl rand -hex 16)
	USER_TOKEN=user-$(openssl rand -hex 16)
	{
		echo "$ADMIN_TOKEN,kctl-admin,kctl-admin-uid,system:masters"
		echo "$USER_TOKEN,kctl-test,kctl-test-uid"
	} >"$p/tokens.csv"
	chmod 600 "$p/tokens.csv"
}

write_kubeconfig() { # $1 file, $2 token
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kctl-test
  cluster:
    server: $SERVER
    certificate-authority: $D/pki/ca.crt
users:
- name: u
  user:
    token: $2
contexts:
- name: kctl-test
  context:
    cluster: kctl-test
    user: u
    namespace: $ns
current-context: kctl-test
EOF
	chmod 600 "$1"
}

api() { # method path [json] ; admin token; prints body, returns curl's rc
	curl -sS --max-time 10 --cacert "$D/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
		-H 'Content-Type: application/json' -X "$1" ${3:+--data-binary "$3"} "$SERVER$2"
}

start_etcd() {
	local i t
	for i in 1 2 3; do
		pick_ports || fail "no free ports"
		ETCD_URL=http://127.0.0.1:$P0
		rm -rf "$D/etcd"
		spawn etcd etcd --name kctl-test --data-dir "$D/etcd" \
			--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
			--listen-peer-urls "http://127.0.0.1:$P1" --initial-advertise-peer-urls "http://127.0.0.1:$P1" \
			--initial-cluster "kctl-test=http://127.0.0.1:$P1" \
			--listen-metrics-urls "http://127.0.0.1:$P2"
		for t in $(seq 1 200); do
			curl -sf --max-time 2 "$ETCD_URL/health" >/dev/null 2>&1 && return 0
			alive etcd || break
			sleep 0.1
		done
		alive etcd && fail "etcd did not become healthy"
		grep -q 'address already in use' "$D/log/etcd.log" || fail "etcd exited"
		say "etcd lost a port race; retrying"
		sed -i '/^etcd /d' "$D/pids"
	done
	fail "etcd could not bind"
}

start_apiserver() {
	local i t p=$D/pki
	for i in 1 2 3; do
		pick_ports || fail "no free ports"
		PORT=$P0
		SERVER=https://127.0.0.1:$PORT
		spawn kube-apiserver "$BIN/kube-apiserver" \
			--etcd-servers="$ETCD_URL" \
			--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$PORT" \
			--endpoint-reconciler-type=none \
			--tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
			--client-ca-file="$p/ca.crt" --token-auth-file="$p/tokens.csv" \
			--authorization-mode=RBAC \
			--service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
			--service-account-issuer=https://kubernetes.default.svc.cluster.local \
			--service-cluster-ip-range=10.0.0.0/24 \
			--cert-dir="$D/apiserver-certs" \
			${GATES:+--feature-gates="$GATES"}
		for t in $(seq 1 $((WAIT * 10))); do
			[ "$(curl -s --max-time 2 --cacert "$p/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
				"$SERVER/readyz" 2>/dev/null)" = ok ] && return 0
			alive kube-apiserver || break
			sleep 0.1
		done
		alive kube-apiserver && fail "kube-apiserver not ready after $WAIT s"
		grep -q 'address already in use' "$D/log/kube-apiserver.log" || fail "kube-apiserver exited"
		say "kube-apiserver lost a port race; retrying"
		sed -i '/^kube-apiserver /d' "$D/pids"
	done
	fail "kube-apiserver could not bind"
}

do_start() {
	local t0 t1 t
	t0=$(now)
	WAIT=${KUBE_WAIT:-90}
	GATES=${KUBE_FEATURE_GATES-TTLAfterFinished=true}
	local rc=0
	BIN=$("$here/kube_build.sh") || rc=$?
	[ $rc -eq 0 ] || exit $rc
	for c in etcd openssl curl ss timeout pgrep; do
		command -v "$c" >/dev/null || { say "SKIP: $c missing"; exit 77; }
	done
	if [ -n "${1:-}" ]; then
		mkdir -p "$1"
		D=$(cd "$1" && pwd)
		[ -e "$D/pids" ] && { say "ERROR: $D already holds a cluster"; exit 1; }
	else
		D=$(mktemp -d "${TMPDIR:-/tmp}/kctl-kube.XXXXXX")
		touch "$D/.created-by-kube_cluster"
	fi
	mkdir -p "$D/log"
	: >"$D/pids"
	: >"$D/timings"
	echo "build-check $(since "$t0")" >>"$D/timings"

	t=$(now)
	gen_pki || fail "openssl failed"
	echo "pki $(since "$t")" >>"$D/timings"

	t=$(now)
	start_etcd
	echo "etcd $(since "$t")" >>"$D/timings"

	t=$(now)
	start_apiserver
	echo "apiserver-ready $(since "$t")" >>"$D/timings"

	write_kubeconfig "$D/admin.kubeconfig" "$ADMIN_TOKEN"
	write_kubeconfig "$D/user.kubeconfig" "$USER_TOKEN"

	t=$(now)
	spawn kube-controller-manager "$BIN/kube-controller-manager" \
		--kubeconfig="$D/admin.kubeconfig" --leader-elect=false \
		--port=0 --secure-port=0 --bind-address=127.0.0.1 --address=127.0.0.1 \
		--service-account-private-key-file="$D/pki/sa.key" --root-ca-file="$D/pki/ca.crt" \
		--cluster-signing-cert-file="$D/pki/ca.crt" --cluster-signing-key-file="$D/pki/ca.key" \
		--controllers='*' ${GATES:+--feature-gates="$GATES"}

	local out
	out=$(api POST /api/v1/namespaces "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}") ||
		fail "namespace create: $out"
	# Pods are refused until the KCM gave the namespace a default
	# ServiceAccount with a token Secret.
	for t1 in $(seq 1 $((WAIT * 10))); do
		out=$(api GET "/api/v1/namespaces/$ns/serviceaccounts/default" 2>/dev/null) || true
		if printf '%s' "$out" | grep -q '"secrets"'; then
			break
		fi
		alive kube-controller-manager || fail "kube-controller-manager exited"
		[ "$t1" -ge $((WAIT * 10)) ] && fail "no default ServiceAccount in $ns after $WAIT s"
		sleep 0.1
	done
	echo "kcm-serviceaccount $(since "$t")" >>"$D/timings"
	echo "start-total $(since "$t0")" >>"$D/timings"

	{
		printf 'KUBE_DIR=%q\n' "$D"
		printf 'KUBE_SERVER=%q\n' "$SERVER"
		printf 'KUBE_CA=%q\n' "$D/pki/ca.crt"
		printf 'KUBE_ADMIN_TOKEN=%q\n' "$ADMIN_TOKEN"
		printf 'KUBE_USER_TOKEN=%q\n' "$USER_TOKEN"
		printf 'KUBE_ADMIN_CERT=%q\n' "$D/pki/admin.crt"
		printf 'KUBE_ADMIN_KEY=%q\n' "$D/pki/admin.key"
		printf 'KUBE_USER_CERT=%q\n' "$D/pki/user.crt"
		printf 'KUBE_USER_KEY=%q\n' "$D/pki/user.key"
		printf 'KUBE_NAMESPACE=%q\n' "$ns"
		printf 'KUBECONFIG_ADMIN=%q\n' "$D/admin.kubeconfig"
		printf 'KUBECONFIG_USER=%q\n' "$D/user.kubeconfig"
	} >"$D/env"
	say "up in $(since "$t0") s at $SERVER ($(tr '\n' ' ' <"$D/timings"))"
	cat "$D/env"
}

# Restarts kube-apiserver on the same port with the same flags: SIGNAL
# (TERM: a graceful shutdown) to its process group, KILL after 30 s, DOWN_S
# seconds with nothing listening, then the server again; returns once it
# listens (not once it is ready: RBAC may still be loading).
do_restart_apiserver() { # $1 dir, $2 seconds down, $3 signal
	local d=${1:?usage: kube_cluster.sh restart-apiserver DIR [DOWN_S] [SIGNAL]}
	local down=${2:-0} sig=${3:-TERM} pid t port args=()
	d=$(cd "$d" && pwd)
	pid=$(awk '$1 == "kube-apiserver" { p = $2 } END { print p }' "$d/pids")
	if [ -z "$pid" ] || ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$d/"; then
		say "ERROR: no kube-apiserver of $d runs"
		return 1
	fi
	# timeout -k 5 TTL kube-apiserver FLAGS...
	mapfile -d '' args <"/proc/$pid/cmdline"
	args=("${args[@]:4}")
	port=$(printf '%s\n' "${args[@]}" | sed -n 's/^--secure-port=//p')
	kill -"$sig" -- "-$pid" 2>/dev/null || true
	for t in $(seq 1 300); do
		pgrep -g "$pid" >/dev/null 2>&1 || break
		sleep 0.1
	done
	if pgrep -g "$pid" >/dev/null 2>&1; then
		say "kube-apiserver ignored $sig for 30 s; sending KILL"
		kill -KILL -- "-$pid" 2>/dev/null || true
		sleep 0.5
	fi
	echo "apiserver-down $(date +%s.%N)" >>"$d/timings"
	sleep "$down"
	D=$d
	sed -i '/^kube-apiserver /d' "$D/pids"
	mv -f "$D/log/kube-apiserver.log" "$D/log/kube-apiserver.$pid.log" 2>/dev/null || true
	spawn kube-apiserver "${args[@]}"
	for t in $(seq 1 $((${KUBE_WAIT:-90} * 10))); do
		[ -n "$(ss -Htln "( sport = :$port )" 2>/dev/null)" ] && break
		alive kube-apiserver || fail "kube-apiserver did not come back"
		sleep 0.1
	done
	echo "apiserver-up $(date +%s.%N)" >>"$d/timings"
	say "kube-apiserver restarted ($sig, ${down} s down) on port $port"
}

case "${1:-}" in
start) shift; do_start "$@" ;;
stop) shift; do_stop "$@" ;;
restart-apiserver) shift; do_restart_apiserver "$@" ;;
*)
	echo "usage: $0 start [DIR] | stop DIR | restart-apiserver DIR [DOWN_S] [SIGNAL]" >&2
	exit 2
	;;
esac
