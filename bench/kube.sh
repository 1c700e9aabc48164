#!/usr/bin/env bash
# bench/kube.sh - what kctl's Kubernetes backend costs (prints figures).
#
# kctl runs a session against the strict API double (tests/peers/kube_double.py,
# as a v1.20 server: one Job per shard) and a real S3 store (Swift s3api), with
# JOBS variants in one round and one variant per pod, so the round is JOBS
# Jobs (default 1000).  The pods run bench/fake_evalpod, which reads its batch
# by URL and uploads an "ok" result per program (times made up from its id)
# and a summary, so nothing but kctl's own work is measured, the ranking of
# the results included.  Printed, from the double's request counters, kctl's
# rusage and its status in the same run:
#   API requests per Job beyond the shared watch (goal <= 3)
#   kctl CPU time (user + system) per 1,000 Jobs, and the wall time
#   the session's best variant, to show the results were taken and ranked
set -euo pipefail
cd "$(dirname "$0")/.."

b=${BUILD_DIR:-build}
if [ -z "${S3_ENDPOINT:-}" ]; then
	cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$b" -j"$(nproc)" --target kctl s3tool fake_evalpod >/dev/null
	exec bash tests/peers/with-s3.sh bash "$0" "$@"
fi
JOBS=${JOBS:-1000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-bench-kube.XXXXXX")
trap 'kill "$(cat "$tmp/dpid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$tmp"' EXIT

python3 - "$tmp" "$b" "$JOBS" <<'PY'
import json, os, resource, ssl, subprocess, sys, time, urllib.request
tmp, build, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
repo = os.getcwd()
sys.path.insert(0, os.path.join(repo, "tests", "cli"))
import kctl_kube_double as kd  # certificates, the double, the spec scenario

os.makedirs(os.path.join(tmp, "pods"))
kd.make_certs(tmp)
log = open(os.path.join(tmp, "double.log"), "w")
p = subprocess.Popen([sys.executable, os.path.join(repo, "tests", "peers", "kube_double.py"),
                      "--tls", os.path.join(tmp, "server.pem"), os.path.join(tmp, "server.key"),
                      "--token", f"{kd.TOKEN}=kctl", "--version", "v1.20.2", "--run", "exec",
                      "--map", f"evalpod={os.path.abspath(build)}/bench/fake_evalpod",
                      "--workdir", os.path.join(tmp, "pods"), "--namespace", "kctl",
                      "--history", "100000"],
                     stdout=subprocess.PIPE, stderr=log, text=True)
open(os.path.join(tmp, "dpid"), "w").write(str(p.pid))
port = int(p.stdout.readline())

class D:  # what kd.Scenario needs of a double
    url = f"https://127.0.0.1:{port}"
    ca = os.path.join(tmp, "ca.pem")
args = [os.path.abspath(os.path.join(build, "controller", "kctl")), "", 
        os.path.join(repo, "tests", "data", "kctl"), repo]
with kd.Scenario(args, D, "bench", "kctl-bench-kube", {"pending_timeout_s": 600}) as s:
    spec = open(s.spec).read()
    # a space with room for JOBS variants in one round, each its own pod
    spec = spec.replace("    LS: [16, 32, 64, 128]\n    U: [1, 2, 4]\n",
                        "    LS: [16, 32, 64, 128]\n    U: [" +
                        ", ".join(str(i) for i in range(1, jobs // 4 + 2)) + "]\n")
    spec = spec.replace("variants_per_round: 3", f"variants_per_round: {jobs}")
    spec = spec.replace("max_evaluations: 10", f"max_evaluations: {jobs + 1}")
    open(s.spec, "w").write(spec)
    ctx = ssl.create_default_context(cafile=D.ca)
    urllib.request.urlopen(urllib.request.Request(D.url + "/__control__", method="DELETE"),
                           context=ctx)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    r = s.run(["start", s.spec, "--rounds", "1"], timeout=3600)
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    c = json.load(urllib.request.urlopen(D.url + "/__control__", context=ctx))
    if r.returncode != 0:
        print(r.stderr[-2000:])
        sys.exit(1)
    sid = r.stdout.split()[0]
    st = json.loads(s.run(["status", sid, "-o", "json"]).stdout)
    req = c["requests"]
    njobs = req.get("POST /apis/batch/v1/namespaces/{ns}/jobs", 0)
    watch = req.get("GET watch jobs", 0)
    other = c["total_requests"] - watch
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"== {njobs} Jobs (rounds 0 and 1, {st.get('evaluations')} evaluations), "
          f"{wall:.1f} s wall")
    for k, v in sorted(req.items()):
        print(f"   {v:6d}  {k}")
    print(f"   API requests per Job beyond the shared watch: {other / njobs:.2f} "
          f"({other} requests; {watch} watch connections in all)")
    print(f"   kctl CPU time: {cpu:.2f} s in all, {cpu / njobs * 1000:.2f} s per 1,000 Jobs "
          f"(batches uploaded and presigned, Jobs rendered and created, "
          f"results read back included)")
    best = st.get("best") or {}
    print(f"   session {st.get('state')}: best {best.get('variant')}, "
          f"{best.get('speedup_vs_reference') or float('nan'):.2f}x vs the reference "
          f"(fake_evalpod's made-up times)")
PY
