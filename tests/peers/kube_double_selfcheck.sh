#!/usr/bin/env bash
# tests/peers/kube_double_selfcheck.sh - checks tests/peers/kube_double.py with
# curl: auth, create/list/get/watch/delete, 409, 422 causes, 410 on an old
# resourceVersion, bookmarks, exec pods, Indexed Jobs, podFailurePolicy,
# suspend + admit, API faults, pod faults and the v1.20 behaviour.
#
#   tests/peers/kube_double_selfcheck.sh     # 0 pass, 1 fail, 77 skip
#   PYTHON=/usr/bin/python3 tests/peers/kube_double_selfcheck.sh
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}
for t in curl openssl "$PYTHON"; do
	command -v "$t" >/dev/null || { echo "SKIP: $t missing" >&2; exit 77; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/kube-double-check.XXXXXX")
pids=()
passes=0
fails=0
t0=$(date +%s.%N)
stamp() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%5.1fs", b - a }'; }
ok() { printf 'ok   %s %s\n' "$(stamp)" "$*" >&2; passes=$((passes + 1)); }
bad() { printf 'FAIL %s\n' "$*" >&2; fails=$((fails + 1)); }
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	if [ $fails -ne 0 ]; then
		echo "---- double stderr" >&2
		tail -n 30 "$work"/double*.err >&2
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# Certificates: a CA, a server certificate for 127.0.0.1, a client one (CN alice).
(
	cd "$work" &&
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 \
			-subj /CN=kube-double-ca &&
		openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 &&
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >ext &&
		openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out srv.crt -days 1 -extfile ext &&
		openssl req -newkey rsa:2048 -nodes -keyout cli.key -out cli.csr -subj /CN=alice &&
		openssl x509 -req -in cli.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out cli.crt -days 1
) >/dev/null 2>&1 || { bad "openssl could not make certificates"; exit 1; }

# start NAME ARGS...: runs a double, sets B (base URL) and P (port).
start() {
	local name=$1
	shift
	exec 3< <(exec "$PYTHON" "$here/kube_double.py" --tls "$work/srv.crt" "$work/srv.key" \
		--client-ca "$work/ca.crt" --token secret=admin --lifetime 300 "$@" \
		2>"$work/$name.err")
	pids+=($!)
	read -r -t 20 P <&3 || { bad "$name did not print its port"; exit 1; }
	B=https://127.0.0.1:$P
}
k() { curl -sS --cacert "$work/ca.crt" -H 'Authorization: Bearer secret' "$@"; }
# post PATH JSON: POST, body in $work/out, status code on stdout
post() { k -o "$work/out" -w '%{http_code}' -H 'Content-Type: application/json' -d "$2" "$B$1"; }
get() { k -o "$work/out" -w '%{http_code}' "$B$1"; }
ctl() { curl -sS --cacert "$work/ca.crt" -H 'Content-Type: application/json' "$@" "$B/__control__"; }
# j EXPR [FILE]: a Python expression over the JSON document d (default: $work/out)
j() { "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[2])); r=eval(sys.argv[1]); print(r if isinstance(r,str) else json.dumps(r))' "$1" "${2:-$work/out}"; }
# events FILE: one "TYPE rv reason-or-name" line per watch event
events() { "$PYTHON" -c '
import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l); o = e["object"]
    print(e["type"], o["metadata"].get("resourceVersion", "-"), o.get("reason") or o["metadata"].get("name", "-"))
' "$1"; }
# wait_job NS NAME COND: polls until the Job has condition COND True (10 s)
wait_job() {
	local i
	for i in $(seq 100); do
		get "/apis/batch/v1/namespaces/$1/jobs/$2" >/dev/null
		if [ "$(j "[c['type'] for c in d['status'].get('conditions',[]) if c['status']=='True']")" != "[]" ] &&
			j "[c['type'] for c in d['status'].get('conditions',[]) if c['status']=='True']" | grep -q "\"$3\""; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}
job() { # job NAME [SPEC-EXTRA-JSON] [CONTAINER-EXTRA-JSON] [RESTART]
	printf '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"%s","labels":{"suite":"check"}},"spec":{%s"template":{"spec":{"restartPolicy":"%s","containers":[{"name":"main","image":"evalpod:1"%s}]}}}}' \
		"$1" "${2:+$2,}" "${4:-Never}" ",${3:-\"command\":[\"evalpod\",\"-c\",\"exit 0\"]}"
}
J=/apis/batch/v1/namespaces/ns1/jobs

start double --run exec --map evalpod=/bin/sh --bookmark-interval 0.3 --history 200

# -- auth and version
c=$(curl -sS --cacert "$work/ca.crt" -o "$work/out" -w '%{http_code}' "$B/version")
[ "$c" = 401 ] && [ "$(j "d['reason']")" = Unauthorized ] && ok "no credentials: 401 Unauthorized Status" || bad "no credentials: $c"
c=$(curl -sS --cacert "$work/ca.crt" -H 'Authorization: Bearer wrong' -o /dev/null -w '%{http_code}' "$B/version")
[ "$c" = 401 ] && ok "wrong token: 401" || bad "wrong token: $c"
c=$(get /version)
[ "$c" = 200 ] && [ "$(j "d['gitVersion']")" = v1.30.0 ] && ok "token: /version v1.30.0" || bad "version: $c"
c=$(curl -sS --cacert "$work/ca.crt" --cert "$work/cli.crt" --key "$work/cli.key" -o /dev/null -w '%{http_code}' "$B/version")
[ "$c" = 200 ] && ok "client certificate accepted" || bad "client cert: $c"

# -- create, 409, 422
c=$(post $J "$(job j1)")
[ "$c" = 201 ] && [ -n "$(j "d['metadata']['uid']")" ] && [ "$(j "d['metadata']['generation']")" = 1 ] &&
	[ "$(j "d['spec']['selector']['matchLabels']['batch.kubernetes.io/controller-uid']==d['metadata']['uid']")" = true ] &&
	ok "create: 201 with uid, generation, selector" || bad "create: $c $(cat "$work/out")"
rv1=$(j "d['metadata']['resourceVersion']")
c=$(post $J "$(job j1)")
[ "$c" = 409 ] && [ "$(j "d['reason'],d['details']")" = '["AlreadyExists", {"name": "j1", "group": "batch", "kind": "jobs"}]' ] &&
	ok "duplicate: 409 AlreadyExists" || bad "duplicate: $c $(cat "$work/out")"
c=$(post $J '{"metadata":{"name":"bad"},"spec":{"template":{"spec":{"containers":[{"name":"main"}]}}}}')
[ "$c" = 422 ] && [ "$(j "sorted((x['reason'],x['field']) for x in d['details']['causes'])")" = '[["FieldValueNotSupported", "spec.template.spec.restartPolicy"], ["FieldValueRequired", "spec.template.spec.containers[0].image"]]' ] &&
	ok "invalid: 422 with causes" || bad "invalid: $c $(cat "$work/out")"
c=$(post "$J?fieldValidation=Strict" '{"metadata":{"name":"strict"},"spec":{"bogus":1,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"x"}]}}}}')
[ "$c" = 400 ] && j "d['message']" | grep -q 'unknown field "spec.bogus"' && ok "fieldValidation=Strict: 400" || bad "strict: $c"

# -- run to completion, list, watch replay
wait_job ns1 j1 Complete && ok "j1 completes" || bad "j1 did not complete"
c=$(get "$J?labelSelector=suite%3Dcheck,job-name+notin+(x,y),!nothere")
[ "$c" = 200 ] && [ "$(j "[i['metadata']['name'] for i in d['items']]")" = '["j1"]' ] && [ -n "$(j "d['metadata']['resourceVersion']")" ] &&
	ok "list with labelSelector" || bad "list: $c $(cat "$work/out")"
c=$(get "/api/v1/namespaces/ns1/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3Dj1")
[ "$(j "[i['status']['phase'] for i in d['items']]")" = '["Succeeded"]' ] && ok "j1's pod Succeeded" || bad "pods: $(cat "$work/out")"
k -o "$work/w" "$B$J?watch=1&resourceVersion=$rv1&timeoutSeconds=1&allowWatchBookmarks=true"
events "$work/w" >"$work/ev"
grep -q '^MODIFIED' "$work/ev" && grep -q '^BOOKMARK' "$work/ev" && ! grep -q '^ADDED' "$work/ev" &&
	ok "watch from rv replays MODIFIED, sends BOOKMARK, ends at timeoutSeconds" || bad "watch: $(cat "$work/ev")"
"$PYTHON" -c 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1])]; b=[x for x in e if x["type"]=="BOOKMARK"][0]["object"]; assert set(b)=={"kind","apiVersion","metadata"} and list(b["metadata"])==["resourceVersion"], b' "$work/w" &&
	ok "BOOKMARK carries kind/apiVersion/metadata.resourceVersion only" || bad "bookmark shape"
k -o "$work/w" "$B$J?watch=true&timeoutSeconds=1"
[ "$(events "$work/w" | awk '{print $1}' | sort -u)" = ADDED ] && ok "watch without rv: ADDED for existing objects" || bad "initial watch: $(events "$work/w")"
ctl -d '{"compact": true}' >/dev/null
k -o "$work/w" "$B$J?watch=1&resourceVersion=$rv1&timeoutSeconds=5"
events "$work/w" | grep -q '^ERROR - Expired' && j "d['object']['code']" "$work/w" | grep -q 410 &&
	ok "watch from a compacted rv: ERROR 410 Expired" || bad "410: $(cat "$work/w")"

# -- exec pods, Indexed
c=$(post $J "$(job ex1 '' '"command":["evalpod","-c","echo hi $(FOO) $JOB_COMPLETION_INDEX"],"env":[{"name":"FOO","value":"bar"}]')")
wait_job ns1 ex1 Complete && ok "exec Job completes" || bad "exec: $c $(cat "$work/out")"
get "/api/v1/namespaces/ns1/pods?labelSelector=job-name%3Dex1" >/dev/null
pod=$(j "d['items'][0]['metadata']['name']")
[ "$(k "$B/api/v1/namespaces/ns1/pods/$pod/log")" = "hi bar" ] && ok "exec: \$(FOO) expanded, log served" || bad "exec log: $(k "$B/api/v1/namespaces/ns1/pods/$pod/log")"
post $J "$(job ix '"completionMode":"Indexed","completions":3,"parallelism":3' '"command":["evalpod","-c","test -n \"$JOB_COMPLETION_INDEX\" && exit 0; exit 3"]')" >/dev/null
wait_job ns1 ix Complete && [ "$(j "d['status']['completedIndexes'],d['status']['succeeded']")" = '["0-2", 3]' ] &&
	ok "Indexed 3 completions: completedIndexes 0-2" || bad "indexed: $(cat "$work/out")"
get "/api/v1/namespaces/ns1/pods?labelSelector=job-name%3Dix" >/dev/null
[ "$(j "sorted(i['metadata']['annotations']['batch.kubernetes.io/job-completion-index'] for i in d['items'])")" = '["0", "1", "2"]' ] &&
	ok "Indexed pods carry the completion-index annotation" || bad "index annotations"

# -- podFailurePolicy, backoffLimit, suspend + admit
post $J "$(job pfp '"backoffLimit":5,"podFailurePolicy":{"rules":[{"action":"FailJob","onExitCodes":{"operator":"In","values":[1]}}]}' '"command":["evalpod","-c","exit 1"]')" >/dev/null
wait_job ns1 pfp Failed && [ "$(j "[c['reason'] for c in d['status']['conditions'] if c['type']=='Failed']")" = '["PodFailurePolicy"]' ] &&
	ok "podFailurePolicy FailJob on exit code 1" || bad "pfp: $(cat "$work/out")"
ctl -d '{"pod_faults": {"bl": "fail:2"}}' >/dev/null
post $J "$(job bl '"backoffLimit":1')" >/dev/null
wait_job ns1 bl Failed && [ "$(j "[c['reason'] for c in d['status']['conditions'] if c['type']=='Failed'], d['status']['failed']")" = '[["BackoffLimitExceeded"], 2]' ] &&
	ok "backoffLimit 1: two failed pods, BackoffLimitExceeded" || bad "backoff: $(cat "$work/out")"
post $J "$(job sus '"suspend":true')" >/dev/null
sleep 0.5
get "/api/v1/namespaces/ns1/pods?labelSelector=job-name%3Dsus" >/dev/null
[ "$(j "len(d['items'])")" = 0 ] && ok "suspended Job creates no pods" || bad "suspended: pods exist"
[ "$(ctl -d '{"admit": "sus"}')" = '{"ok":true,"admitted":1}' ] && wait_job ns1 sus Complete && ok "admit: the Job runs and completes" || bad "admit"
c=$(k -o "$work/out" -w '%{http_code}' -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"template":{"spec":{"restartPolicy":"OnFailure"}}}}' "$B$J/sus")
[ "$c" = 422 ] && ok "PATCH of an immutable field: 422" || bad "immutable patch: $c"

# -- pod faults
ctl -d '{"pod_faults": {"ip": "image-pull", "ev": "evicted"}}' >/dev/null
post $J "$(job ip)" >/dev/null
post $J "$(job ev '"backoffLimit":0')" >/dev/null
sleep 0.6
get "/api/v1/namespaces/ns1/pods?labelSelector=job-name%3Dip" >/dev/null
[ "$(j "d['items'][0]['status']['phase'], d['items'][0]['status']['containerStatuses'][0]['state']['waiting']['reason']")" = '["Pending", "ImagePullBackOff"]' ] &&
	ok "pod fault image-pull: Pending, ImagePullBackOff" || bad "image-pull: $(cat "$work/out")"
wait_job ns1 ev Failed
get "/api/v1/namespaces/ns1/pods?labelSelector=job-name%3Dev" >/dev/null
[ "$(j "d['items'][0]['status']['reason'], [c['type'] for c in d['items'][0]['status']['conditions'] if c['status']=='True'][0]")" = '["Evicted", "DisruptionTarget"]' ] &&
	ok "pod fault evicted: Failed, reason Evicted, DisruptionTarget" || bad "evicted: $(cat "$work/out")"

# -- API faults
ctl -X DELETE >/dev/null
ctl -d '{"plan": ["429", {"fault": "500", "verb": "POST"}]}' >/dev/null
c=$(k -D "$work/h" -o "$work/out" -w '%{http_code}' "$B$J")
[ "$c" = 429 ] && grep -qi '^Retry-After: 1' "$work/h" && [ "$(j "d['reason']")" = TooManyRequests ] && ok "fault 429 with Retry-After" || bad "429: $c"
c=$(get "$J")
[ "$c" = 200 ] && ok "the GET after does not take the POST-only fault" || bad "filter: $c"
c=$(post $J "$(job f500)")
[ "$c" = 500 ] && [ "$(j "d['reason']")" = InternalError ] && ok "fault 500 on POST" || bad "500: $c"
ctl -d '{"plan": ["cut-watch"]}' >/dev/null
k -o "$work/w" "$B$J?watch=1&timeoutSeconds=3" 2>/dev/null
rc=$?
[ $rc -eq 18 ] || [ $rc -eq 56 ] || [ $rc -eq 92 ] && [ "$(wc -l <"$work/w")" = 1 ] && ok "cut-watch: one event, then the stream breaks (curl $rc)" || bad "cut-watch: rc $rc"
ctl -d '{"plan": ["gone"]}' >/dev/null
k -o "$work/w" "$B$J?watch=1&resourceVersion=$rv1"
events "$work/w" | grep -q '^ERROR - Expired' && ok "gone: ERROR 410 at once" || bad "gone: $(cat "$work/w")"

# -- delete
get "$J/j1" >/dev/null
uid=$(j "d['metadata']['uid']")
c=$(k -o "$work/out" -w '%{http_code}' -X DELETE "$B$J/j1?propagationPolicy=Background")
[ "$c" = 200 ] && [ "$(j "d['kind'],d['status'],d['details']['uid']")" = "[\"Status\", \"Success\", \"$uid\"]" ] && ok "DELETE Background: Status Success" || bad "delete bg: $c $(cat "$work/out")"
c=$(k -o "$work/out" -w '%{http_code}' -X DELETE "$B$J/ix")
[ "$c" = 200 ] && [ "$(j "d['kind'], 'orphan' in d['metadata']['finalizers'], bool(d['metadata']['deletionTimestamp'])")" = '["Job", true, true]' ] &&
	ok "DELETE default (orphan): the Job with deletionTimestamp" || bad "delete orphan: $c $(cat "$work/out")"
c=$(k -o "$work/out" -w '%{http_code}' -X DELETE "$B$J?labelSelector=suite%3Dcheck")
[ "$c" = 200 ] && [ "$(j "d['kind']")" = JobList ] && ok "deletecollection by label" || bad "deletecollection: $c"
sleep 0.3
c=$(get "$J/j1")
[ "$c" = 404 ] && [ "$(j "d['reason']")" = NotFound ] && ok "deleted Job: 404 NotFound" || bad "404: $c"

# -- counters
ctl >"$work/out"
[ "$(j "d['requests'].get('POST /apis/batch/v1/namespaces/{ns}/jobs',0)>0, d['requests'].get('GET watch jobs',0)>0, d['watch_connections']>0")" = '[true, true, true]' ] &&
	ok "counters by verb and path template" || bad "counters: $(cat "$work/out")"

# -- a v1.20.2 double drops the fields 1.20 does not know
start double120 --version v1.20.2 --run exec --map evalpod=/bin/sh
c=$(post $J "$(job old '"completionMode":"Indexed","completions":2,"suspend":true,"backoffLimitPerIndex":1')")
[ "$c" = 201 ] && [ "$(j "sorted(k for k in d['spec'] if k in ('completionMode','suspend','backoffLimitPerIndex')), d['spec']['selector']['matchLabels'].get('controller-uid') is not None")" = '[[], true]' ] &&
	ok "v1.20.2: completionMode/suspend/backoffLimitPerIndex dropped, controller-uid selector" || bad "1.20: $c $(cat "$work/out")"
wait_job ns1 old Complete && ok "v1.20.2: the Job runs (2 completions, NonIndexed)" || bad "1.20 run"

echo "kube_double selfcheck: $passes passed, $fails failed" >&2
[ $fails -eq 0 ]
