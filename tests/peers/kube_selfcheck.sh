#!/usr/bin/env bash
# tests/peers/kube_selfcheck.sh - end-to-end check of the Kubernetes test
# peers: kube_cluster.sh (through with-kube.sh) and fake_kubelet.py.
#
#   tests/peers/kube_selfcheck.sh        # 0 pass, 1 fail, 77 skip
#
# Without KUBE_SERVER in the environment it re-runs itself under with-kube.sh;
# with it, it uses that cluster (and leaves it running).
#   PYTHON=/usr/bin/python3  picks the interpreter for fake_kubelet.py
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${KUBE_SERVER:-}" ]; then
	exec "$here/with-kube.sh" "$0" "$@"
fi
command -v jq >/dev/null || { echo "SKIP: jq missing" >&2; exit 77; }

ns=$KUBE_NAMESPACE
work=$(mktemp -d "${TMPDIR:-/tmp}/kube-selfcheck.XXXXXX")
fails=0
kl_pid=

ok() { printf 'ok   %s\n' "$*" >&2; }
bad() { printf 'FAIL %s\n' "$*" >&2; fails=$((fails + 1)); }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

cleanup() {
	if [ -n "$kl_pid" ]; then
		kill -TERM "$kl_pid" 2>/dev/null
		wait "$kl_pid" 2>/dev/null
	fi
	if [ $fails -ne 0 ]; then
		echo "---- fake kubelet log ($work/kubelet.err)" >&2
		tail -n 40 "$work/kubelet.err" >&2
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# k METHOD PATH [BODY] [extra curl args...]: prints the body, then the HTTP
# status on a last line of its own.
k() {
	local m=$1 p=$2 b=${3:-}
	shift 3 2>/dev/null || shift $#
	curl -sS --max-time 20 --cacert "$KUBE_CA" -X "$m" -H 'Content-Type: application/json' \
		${b:+--data-binary "$b"} -w '\n%{http_code}' "$@" "$KUBE_SERVER$p"
}
admin() { k "$1" "$2" "${3:-}" -H "Authorization: Bearer $KUBE_ADMIN_TOKEN"; }
code() { tail -n 1; }
body() { sed '$d'; }

# wait_jq SECONDS PATH FILTER: until the admin GET of PATH satisfies FILTER
wait_jq() {
	local t=$(($1 * 10)) out
	while [ $t -gt 0 ]; do
		out=$(admin GET "$2" | body)
		if printf '%s' "$out" | jq -e "$3" >/dev/null 2>&1; then
			printf '%s' "$out"
			return 0
		fi
		sleep 0.1
		t=$((t - 1))
	done
	printf '%s' "$out"
	return 1
}

job_json() { # name command-string backoffLimit [extra spec json]
	jq -nc --arg n "$1" --arg c "$2" --argjson bl "$3" --arg out "$work/out" --argjson extra "${4:-{\}}" '{
		apiVersion: "batch/v1", kind: "Job",
		metadata: {name: $n, labels: {app: "kube-selfcheck"}},
		spec: ({backoffLimit: $bl, template: {
			metadata: {labels: {app: "kube-selfcheck"}},
			spec: {restartPolicy: "Never", containers: [{
				name: "main", image: "example.invalid/evalpod:test",
				command: ["/bin/sh", "-c", $c],
				env: [{name: "POD_NAME", valueFrom: {fieldRef: {fieldPath: "metadata.name"}}},
				      {name: "GREETING", value: "hello-$(POD_NAME)"},
				      {name: "OUT", value: $out}]}]}}} + $extra)}'
}
pod_json() { # name command-string [annotations json] [extra spec json]
	jq -nc --arg n "$1" --arg c "$2" --argjson ann "${3:-{\}}" --argjson extra "${4:-{\}}" '{
		apiVersion: "v1", kind: "Pod",
		metadata: {name: $n, labels: {app: "kube-selfcheck"}, annotations: $ann},
		spec: ({restartPolicy: "Never", terminationGracePeriodSeconds: 2, containers: [{
			name: "main", image: "example.invalid/tool:1", command: ["/bin/sh", "-c", $c]}]} + $extra)}'
}

mkdir -p "$work/out"
jobs=/apis/batch/v1/namespaces/$ns/jobs
pods=/api/v1/namespaces/$ns/pods

# --- authentication and RBAC --------------------------------------------
r=$(k GET "/api/v1/namespaces/$ns" "" --cert "$KUBE_ADMIN_CERT" --key "$KUBE_ADMIN_KEY" | code)
[ "$r" = 200 ] && ok "admin client certificate authenticates (200)" || bad "admin cert GET namespace: $r"
r=$(k POST "$jobs" "$(job_json rbac-probe true 0)" -H "Authorization: Bearer $KUBE_USER_TOKEN" | code)
[ "$r" = 403 ] && ok "user token (kctl-test, no groups) gets 403 creating a Job" || bad "user token create Job: $r (want 403)"
r=$(k POST "$jobs" "$(job_json rbac-probe true 0)" --cert "$KUBE_USER_CERT" --key "$KUBE_USER_KEY" | code)
[ "$r" = 403 ] && ok "user cert (kctl-cert-user) gets 403 creating a Job" || bad "user cert create Job: $r (want 403)"
r=$(k GET "$jobs" "" | code)
[ "$r" = 403 ] && ok "anonymous request gets 403" || bad "anonymous list: $r (want 403)"
role=$(jq -nc '{apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: {name: "kctl-jobs"},
	rules: [{apiGroups: ["batch"], resources: ["jobs"], verbs: ["create", "get", "list", "watch", "delete"]}]}')
rb=$(jq -nc '{apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: {name: "kctl-jobs"},
	roleRef: {apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "kctl-jobs"},
	subjects: [{kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "kctl-test"}]}')
admin POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$ns/roles" "$role" | code | grep -q 201 || bad "create Role"
admin POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$ns/rolebindings" "$rb" | code | grep -q 201 || bad "create RoleBinding"
t=0
while :; do
	r=$(k GET "$jobs" "" -H "Authorization: Bearer $KUBE_USER_TOKEN" | code)
	[ "$r" = 200 ] || [ $t -ge 50 ] && break
	sleep 0.1
	t=$((t + 1))
done
[ "$r" = 200 ] && ok "after a Role+RoleBinding the user token may list Jobs" || bad "user list after RoleBinding: $r"
r=$(k GET "$pods" "" -H "Authorization: Bearer $KUBE_USER_TOKEN" | code)
[ "$r" = 403 ] && ok "...but still not Pods (403)" || bad "user list pods: $r (want 403)"

# --- the fake kubelet ------------------------------------------------------
"${PYTHON:-python3}" "$here/fake_kubelet.py" --server "$KUBE_SERVER" --ca "$KUBE_CA" \
	--token "$KUBE_ADMIN_TOKEN" --namespace "$ns" --label-selector app=kube-selfcheck \
	--map /bin/sh=/bin/sh --log-dir "$work/podlogs" --oom-exit --fail-image-pull never-pulls \
	2>"$work/kubelet.err" &
kl_pid=$!

# Job 1: succeeds; checks $(VAR) expansion, fieldRef, $$ escapes, env.
t0=$(now)
cmd='echo $(GREETING) > $OUT/x; printf "%s\n" '"'"'$$(GREETING)'"'"' >> $OUT/x; env | sort > $OUT/env'
r=$(admin POST "$jobs" "$(job_json ok-job "$cmd" 0 '{"ttlSecondsAfterFinished": 600}')")
[ "$(printf '%s' "$r" | code)" = 201 ] || bad "create ok-job: $r"
printf '%s' "$r" | body | jq -e '.spec.ttlSecondsAfterFinished == 600' >/dev/null &&
	ok "ttlSecondsAfterFinished is kept (TTLAfterFinished gate on)" ||
	echo "note: ttlSecondsAfterFinished was dropped (feature gate off)" >&2
if j=$(wait_jq 60 "$jobs/ok-job" '.status.conditions[]? | select(.type == "Complete" and .status == "True")'); then
	ok "ok-job reached Complete in $(since "$t0") s (succeeded=$(printf '%s' "$j" | jq .status.succeeded))"
	echo "timing job-complete $(since "$t0")" >&2
else
	bad "ok-job not Complete: $(printf '%s' "$j" | jq -c .status)"
fi
pod=$(admin GET "$pods?labelSelector=job-name%3Dok-job" | body | jq -r '.items[0].metadata.name')
want="hello-$pod"
if [ "$(sed -n 1p "$work/out/x" 2>/dev/null)" = "$want" ] && [ "$(sed -n 2p "$work/out/x")" = '$(GREETING)' ]; then
	ok "command saw \$(GREETING)=$want and \$\$(GREETING) stayed literal"
else
	bad "output file: $(cat "$work/out/x" 2>&1) (want $want / \$(GREETING))"
fi
envnames=$(cut -d= -f1 "$work/out/env" 2>/dev/null | grep -v '^PWD$\|^SHLVL$\|^_$' | tr '\n' ' ')
[ "$envnames" = "GREETING HOME OUT PATH POD_NAME " ] || [ "$envnames" = "GREETING HOME OUT PATH POD_NAME TMPDIR " ] &&
	ok "process env is the container env + PATH/HOME/TMPDIR ($envnames)" || bad "process env: $envnames"
p=$(admin GET "$pods/$pod" | body)
printf '%s' "$p" | jq -e '.status.phase == "Succeeded" and .status.containerStatuses[0].state.terminated.exitCode == 0
	and .status.containerStatuses[0].state.terminated.reason == "Completed" and (.status.startTime | length) > 0' >/dev/null &&
	ok "pod status: Succeeded, terminated exitCode 0 reason Completed" || bad "pod status: $(printf '%s' "$p" | jq -c .status)"

# Job 2: exits 3 with backoffLimit 0.
t0=$(now)
admin POST "$jobs" "$(job_json fail-job 'echo failing; exit 3' 0)" | code | grep -q 201 || bad "create fail-job"
if j=$(wait_jq 60 "$jobs/fail-job" '.status.conditions[]? | select(.type == "Failed" and .status == "True" and .reason == "BackoffLimitExceeded")'); then
	ok "fail-job reached Failed/BackoffLimitExceeded in $(since "$t0") s"
else
	bad "fail-job: $(printf '%s' "$j" | jq -c .status)"
fi
p=$(admin GET "$pods?labelSelector=job-name%3Dfail-job" | body | jq '.items[0]')
printf '%s' "$p" | jq -e '.status.phase == "Failed" and .status.containerStatuses[0].state.terminated.exitCode == 3
	and .status.containerStatuses[0].state.terminated.reason == "Error"' >/dev/null &&
	ok "failed pod: exitCode 3 reason Error" || bad "failed pod status: $(printf '%s' "$p" | jq -c .status)"

# TTLAfterFinished: a finished Job with ttlSecondsAfterFinished 1 goes away.
t0=$(now)
admin POST "$jobs" "$(job_json ttl-job true 0 '{"ttlSecondsAfterFinished": 1}')" | code | grep -q 201 || bad "create ttl-job"
t=0
while [ "$(admin GET "$jobs/ttl-job" | code)" != 404 ] && [ $t -lt 300 ]; do sleep 0.1; t=$((t + 1)); done
[ $t -lt 300 ] && ok "ttl-job was deleted by the TTL-after-finished controller $(since "$t0") s after creation" ||
	bad "ttl-job still there after 30 s"

# Unmapped command -> ContainerCannotRun.
admin POST "$pods" "$(jq -nc '{apiVersion: "v1", kind: "Pod", metadata: {name: "unmapped", labels: {app: "kube-selfcheck"}},
	spec: {restartPolicy: "Never", containers: [{name: "c", image: "x", command: ["/usr/bin/not-mapped", "-v"]}]}}')" |
	code | grep -q 201 || bad "create unmapped pod"
wait_jq 30 "$pods/unmapped" '.status.phase == "Failed" and .status.containerStatuses[0].state.terminated.reason == "ContainerCannotRun"' >/dev/null &&
	ok "unmapped command: Failed/ContainerCannotRun" || bad "unmapped pod"

# activeDeadlineSeconds.
admin POST "$pods" "$(pod_json deadline 'sleep 60' '{}' '{"activeDeadlineSeconds": 2}')" | code | grep -q 201 || bad "create deadline pod"
wait_jq 30 "$pods/deadline" '.status.phase == "Failed" and .status.reason == "DeadlineExceeded"' >/dev/null &&
	ok "activeDeadlineSeconds: Failed/DeadlineExceeded" || bad "deadline pod: $(admin GET "$pods/deadline" | body | jq -c .status)"

# Image pull failure, by flag and by annotation.
admin POST "$pods" "$(pod_json pullfail 'true' '{}' '{"containers": [{"name": "c", "image": "reg/never-pulls:1", "command": ["/bin/sh"]}]}')" |
	code | grep -q 201 || bad "create pullfail pod"
admin POST "$pods" "$(pod_json pullfail2 'true' '{"fake-kubelet.kctl.test/image-pull-backoff": "true"}')" | code | grep -q 201 || bad "create pullfail2"
for n in pullfail pullfail2; do
	wait_jq 30 "$pods/$n" '.status.phase == "Pending" and .status.containerStatuses[0].state.waiting.reason == "ImagePullBackOff"' >/dev/null &&
		ok "$n: Pending/ImagePullBackOff" || bad "$n: $(admin GET "$pods/$n" | body | jq -c .status)"
done

# OOM: exit 137 with --oom-exit, and the oom-after annotation.
admin POST "$pods" "$(pod_json oom 'kill -9 $$$$')" | code | grep -q 201 || bad "create oom pod"
admin POST "$pods" "$(pod_json oom2 'sleep 60' '{"fake-kubelet.kctl.test/oom-after": "1"}')" | code | grep -q 201 || bad "create oom2"
for n in oom oom2; do
	wait_jq 30 "$pods/$n" '.status.phase == "Failed" and .status.containerStatuses[0].state.terminated.reason == "OOMKilled"
		and .status.containerStatuses[0].state.terminated.exitCode == 137' >/dev/null &&
		ok "$n: Failed/OOMKilled exit 137" || bad "$n: $(admin GET "$pods/$n" | body | jq -c .status)"
done

# Deletion kills the process.
admin POST "$pods" "$(pod_json doomed "echo \$\$\$\$ > $work/out/doomed.pid; exec sleep 120")" | code | grep -q 201 || bad "create doomed"
wait_jq 30 "$pods/doomed" '.status.phase == "Running"' >/dev/null || bad "doomed never Running"
t=0
while [ ! -s "$work/out/doomed.pid" ] && [ $t -lt 50 ]; do sleep 0.1; t=$((t + 1)); done
dpid=$(cat "$work/out/doomed.pid" 2>/dev/null)
admin DELETE "$pods/doomed" | code | grep -q 200 || bad "delete doomed"
t=0
while [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null && [ $t -lt 100 ]; do sleep 0.1; t=$((t + 1)); done
[ -n "$dpid" ] && ! kill -0 "$dpid" 2>/dev/null && ok "deleting the pod killed its process ($dpid) in $((t / 10)).$((t % 10)) s" ||
	bad "doomed process $dpid still alive after delete"

# OnFailure restarts in place.
admin POST "$pods" "$(pod_json flaky "[ -e $work/out/flaky ] && exit 0; touch $work/out/flaky; exit 1" '{}' '{"restartPolicy": "OnFailure"}')" |
	code | grep -q 201 || bad "create flaky"
wait_jq 30 "$pods/flaky" '.status.phase == "Succeeded" and .status.containerStatuses[0].restartCount == 1' >/dev/null &&
	ok "restartPolicy OnFailure: restarted once, then Succeeded" || bad "flaky: $(admin GET "$pods/flaky" | body | jq -c .status)"

# The kubelet must survive a dropped watch: it keeps working after a relist.
kill -0 "$kl_pid" 2>/dev/null && ok "fake kubelet still running" || bad "fake kubelet died"

if [ $fails -eq 0 ]; then
	echo "kube_selfcheck: all checks passed" >&2
	exit 0
fi
echo "kube_selfcheck: $fails check(s) failed" >&2
exit 1
