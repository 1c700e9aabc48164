#!/usr/bin/env python3
"""kctl with evaluator.storage s3://: the presigned hand-off, end to end.

usage: kctl_s3.py KCTL EVALPOD S3TOOL DATA_DIR

Run under tests/peers/with-s3.sh, which provides a real S3 store that
checks every signature (Swift s3api: S3_ENDPOINT, S3_ACCESS_KEY,
S3_SECRET_KEY, S3_REGION) and a fault-injecting proxy in front of it
(FAULT_PROXY).  The local backend runs evalpod children that get nothing
but a presigned URL: the batch comes from the store, results and artifacts
go back to it, and kctl reads them with signed GETs.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

from checks import check, need_env, run, summary

SPEC_FILES = ("affine.cl", "affine_ref.cl", "affine.yaml")


class Scenario:
    def __init__(self, args, label, bucket, endpoint=None, extra_env=None):
        self.kctl, self.evalpod, self.s3tool, data = args
        self.tmp = tempfile.mkdtemp(prefix="kctl-s3-")
        for name in SPEC_FILES:
            shutil.copy(os.path.join(data, name), self.tmp)
        self.bucket = bucket
        self.url = f"s3://{bucket}/runs"
        self.endpoint = endpoint or os.environ["S3_ENDPOINT"]
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(self.tmp, "cache"),
                        KCTL_EVALPOD=self.evalpod,
                        AWS_ACCESS_KEY_ID=os.environ["S3_ACCESS_KEY"],
                        AWS_SECRET_ACCESS_KEY=os.environ["S3_SECRET_KEY"],
                        AWS_REGION=os.environ["S3_REGION"],
                        AWS_SHARED_CREDENTIALS_FILE=os.path.join(self.tmp, "none"),
                        AWS_CONFIG_FILE=os.path.join(self.tmp, "none"))
        self.env.pop("KCTL_TEST_CRASH_AT", None)
        self.env.update(extra_env or {})
        text = open(os.path.join(self.tmp, "affine.yaml"), encoding="utf-8").read()
        text = text.replace("session:\n", "evaluator:\n"
                            f"  storage: {self.url}\n"
                            f"  s3: {{endpoint: \"{self.endpoint}\", addressing: path}}\n"
                            "session:\n", 1)
        # one confirmation pass per session: through the store, as the rounds
        text = text.replace("confirm_passes: 2\n", "confirm_passes: 1\n", 1)
        self.spec = os.path.join(self.tmp, "s3.yaml")
        with open(self.spec, "w", encoding="utf-8") as f:
            f.write(text)
        self.tool(["mb", f"s3://{bucket}"])
        print(f"-- {label}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, args, env=None, timeout=600):
        return subprocess.run([self.kctl] + args, env=env or self.env, capture_output=True,
                              text=True, timeout=timeout)

    def tool(self, args):
        env = dict(self.env, S3_ENDPOINT=os.environ["S3_ENDPOINT"])
        return subprocess.run([self.s3tool] + args, env=env, capture_output=True,
                              text=True, timeout=120)

    def keys(self, prefix):
        r = self.tool(["ls", f"s3://{self.bucket}", prefix])
        return [line.split(" ")[0] for line in r.stdout.splitlines()] if r.returncode == 0 \
            else None

    def session_dir(self, sid):
        return os.path.join(self.tmp, "runs", sid)

    def status(self, sid):
        r = self.run(["status", sid, "-o", "json"])
        return json.loads(r.stdout) if r.returncode == 0 else {}


def local_files(root):
    for dirpath, _, names in os.walk(root):
        for n in names:
            yield os.path.join(dirpath, n)


def no_bearer_material(paths, texts, secret):
    """No presigned query, credential or secret in any of the files or texts."""
    pat = re.compile(r"X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token")
    bad = []
    for p in paths:
        try:
            data = open(p, "rb").read().decode("utf-8", "replace")
        except OSError:
            continue
        if pat.search(data) or secret in data:
            bad.append(p)
    for i, t in enumerate(texts):
        if pat.search(t) or secret in t:
            bad.append(f"text #{i}")
    return bad


def test_round_trip(args):
    with Scenario(args, "two rounds through the store", "kctl-e2e") as s:
        r = s.run(["start", s.spec, "--rounds", "2"])
        check(r.returncode == 0, f"kctl start with s3:// storage exits 0 ({r.stderr[-300:]!r})")
        sid = r.stdout.splitlines()[0].strip() if r.stdout else ""
        st = s.status(sid)
        check(st.get("evaluations", 0) >= 4, "the session recorded its evaluations")
        keys = s.keys(f"runs/{sid}/") or []
        for rnd in (0, 1, 2):
            base = f"runs/{sid}/r{rnd:03d}/{sid}-r{rnd:03d}/"
            check(base + "batch.json" in keys, f"round {rnd}: the batch is in the store")
            check(base + "summary.json" in keys, f"round {rnd}: evalpod uploaded its summary")
            check(any(k.startswith(base + "results/") for k in keys),
                  f"round {rnd}: evalpod uploaded results")
            check(base + "artifacts/reference/trace.json" in keys,
                  f"round {rnd}: artifacts (traces) went to the store")
        d = s.session_dir(sid)
        r1 = os.path.join(d, "rounds", "r001", "results")
        ids = [v for v in os.listdir(r1) if v.endswith(".json") and v != "summary.json"]
        check(len(ids) >= 3, "round 1's results were read back into the session folder")
        stored = [k for k in keys if k.startswith(f"runs/{sid}/r001/") and "/results/" in k]
        check(sorted(os.path.basename(k) for k in stored) == sorted(ids),
              "exactly the stored results were read back")
        same = s.tool(["get", s.url, stored[0]]).stdout if stored else ""
        local = open(os.path.join(r1, os.path.basename(stored[0])), encoding="utf-8").read() \
            if stored else None
        check(same == local and len(same) > 100, "a local result is byte for byte the stored one")
        check(os.path.exists(os.path.join(r1, "r00-start", "trace.json")),
              "artifacts were read back too")
        batch = json.load(open(os.path.join(d, "rounds", "r001", "batch.json")))
        check("outputs" not in batch, "the local batch copy holds no presigned URLs")
        stored_batch = json.loads(s.tool(["get", s.url,
                                          f"runs/{sid}/r001/{sid}-r001/batch.json"]).stdout)
        outs = stored_batch.get("outputs", {})
        urls = [outs.get("summary", "")] + list(outs.get("results", {}).values())
        check(len(urls) >= 4 and all("X-Amz-Signature=" in u for u in urls),
              "the stored batch carries one presigned PUT per result and the summary")
        exp = [int(m.group(1)) for u in urls for m in [re.search(r"X-Amz-Expires=(\d+)", u)]
               if m]
        check(exp and min(exp) >= 900 and max(exp) <= 604800,
              f"URLs expire after the batch deadline plus margin ({exp[:1]} s)")
        check(all(f"/{sid}-r001/" in u for u in urls), "every URL names a key of its own batch")
        bad = no_bearer_material(list(local_files(d)) + list(local_files(
            os.path.join(s.tmp, "state"))), [r.stdout, r.stderr], os.environ["S3_SECRET_KEY"])
        check(not bad, f"no signature, credential or secret in logs, state or results {bad[:3]}")
        # A presigned PUT of the stored batch cannot be replayed for another key.
        put = outs.get("results", {}).get("r01-v001", "")
        other = put.replace("r01-v001.json", "r01-v009.json")
        try:
            req = urllib.request.Request(other, data=b"{}", method="PUT")
            urllib.request.urlopen(req, timeout=30)
            replay = 200
        except urllib.error.HTTPError as e:
            replay = e.code
        check(replay == 403, f"a result URL cannot be used for another key ({replay})")


def test_faults_are_retried(args):
    proxy = os.environ["FAULT_PROXY"]
    with Scenario(args, "the store fails now and then", "kctl-faults", endpoint=proxy) as s:
        plan = {"plan": ["503", "pass", "reset", "pass", "slowdown:retry-after=1", "pass",
                         "500", "pass", "pass", "pass", "close"]}
        urllib.request.urlopen(urllib.request.Request(
            proxy + "/__fault__", data=json.dumps(plan).encode(), method="POST"), timeout=10)
        r = s.run(["start", s.spec, "--rounds", "1"])
        counters = json.load(urllib.request.urlopen(proxy + "/__fault__", timeout=10))
        check(r.returncode == 0, f"kctl and evalpod ride out 5xx, resets and SlowDown "
                                 f"({r.stderr[-300:]!r})")
        check(counters.get("faults", 0) >= 5, f"the faults were served ({counters.get('faults')})")
        urllib.request.urlopen(urllib.request.Request(proxy + "/__fault__", method="DELETE"),
                               timeout=10)


def test_wrong_secret(args):
    with Scenario(args, "a wrong secret", "kctl-denied",
                  extra_env={"AWS_SECRET_ACCESS_KEY": "not-the-secret"}) as s:
        r = s.run(["start", s.spec, "--rounds", "1"])
        check(r.returncode != 0, "kctl start fails when the store refuses the signature")
        check("SignatureDoesNotMatch" in r.stderr,
              f"the store's error code is in the message ({r.stderr[-200:]!r})")
        check("not-the-secret" not in r.stderr + r.stdout, "the secret is not printed")
        sid = None
        for line in (r.stdout + r.stderr).splitlines():
            m = re.search(r"(affine-\d{8}-\d{6}-[0-9a-f]{6})", line)
            if m:
                sid = m.group(1)
        if sid:
            st = s.status(sid)
            check(st.get("state") != "done", "the session is left resumable, not done")


def test_no_credentials(args):
    env_rm = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    with Scenario(args, "no credentials", "kctl-nocreds", extra_env=env_rm) as s:
        env = {k: v for k, v in s.env.items() if k not in env_rm}
        r = s.run(["start", s.spec, "--rounds", "1"], env=env)
        check(r.returncode != 0, "kctl start without credentials fails")
        check("no AWS credentials" in r.stderr and "s3.yaml" in r.stderr,
              f"the message names the spec and says what is missing ({r.stderr[-200:]!r})")
        check(not glob.glob(os.path.join(s.tmp, "runs", "*", "rounds")),
              "nothing ran before the store was usable")


def test_crash_then_resume(args):
    with Scenario(args, "kctl killed while evalpod uploads, then resumed", "kctl-crash",
                  extra_env={"KCTL_TEST_CRASH_AT": "spawned:1"}) as s:
        r = s.run(["start", s.spec, "--rounds", "2"])
        check(r.returncode != 0, "kctl died at the crash point")
        sid = (r.stdout.splitlines() or [""])[0].strip()
        env = dict(s.env)
        env.pop("KCTL_TEST_CRASH_AT")
        r = s.run(["resume", sid], env=env)
        check(r.returncode == 0, f"kctl resume finishes the session ({r.stderr[-300:]!r})")
        log = open(os.path.join(s.session_dir(sid), "rounds", "r001", "evalpod.log"),
                   encoding="utf-8").read()
        runs = log.count("kctl: evalpod run")
        check(runs == 1, f"round 1 was evaluated once: the orphan's uploads were fetched "
                         f"({runs} runs)")
        st = s.status(sid)
        check(st.get("evaluations", 0) >= 4, "every evaluation was recorded")


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    skip = need_env("S3_ENDPOINT")
    if skip:
        return skip
    args = [os.path.abspath(a) for a in sys.argv[1:]]
    run((test_round_trip, test_faults_are_retried, test_wrong_secret, test_no_credentials,
         test_crash_then_resume), args)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
