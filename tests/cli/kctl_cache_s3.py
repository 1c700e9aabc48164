#!/usr/bin/env python3
"""The result cache shared through object storage (cache.s3), end to end.

usage: kctl_cache_s3.py KCTL EVALPOD S3TOOL DATA_DIR

Run under tests/peers/with-s3.sh (a real S3 store, Swift s3api, that checks
every signature).  The sessions run on the local backend with
evaluator.storage s3://BUCKET/runs and cache: {s3: true}; each "machine"
is its own KCTL_CACHE_DIR.  kctl runs evalpod through a wrapper that counts
its runs.

  - a session stores each entry under runs/cache/KEY.json too;
  - a session on another machine (an empty local cache) takes every result
    from the store: evalpod does not run at all;
  - an entry damaged in the store, or one put there by someone else (a
    valid entry's checksum kept over another result; another key's entry),
    is warned about naming the object and evaluated again, and the object
    is replaced;
  - a presigned PUT URL of a result object (what a pod holds) cannot write
    cache/;
  - cache.s3 without s3:// storage is a spec error naming cache.s3.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

from checks import check, need_env, run, summary

WRAPPER = """#!/bin/sh
[ "$1" = run ] && echo run >>{log}
exec {real} "$@"
"""


class World:
    def __init__(self, args):
        self.kctl, evalpod, self.s3tool, data = args
        self.tmp = tempfile.mkdtemp(prefix="kctl-cache-s3-")
        for name in ("affine.cl", "affine_ref.cl", "affine.yaml"):
            shutil.copy(os.path.join(data, name), self.tmp)
        self.bucket = "kctl-cache"
        self.url = f"s3://{self.bucket}/runs"
        self.log = os.path.join(self.tmp, "runs.log")
        wrapper = os.path.join(self.tmp, "evalpod-wrapper")
        with open(wrapper, "w", encoding="utf-8") as f:
            f.write(WRAPPER.format(log=self.log, real=evalpod))
        os.chmod(wrapper, 0o755)
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(self.tmp, "xdg"), KCTL_EVALPOD=wrapper,
                        AWS_ACCESS_KEY_ID=os.environ["S3_ACCESS_KEY"],
                        AWS_SECRET_ACCESS_KEY=os.environ["S3_SECRET_KEY"],
                        AWS_REGION=os.environ["S3_REGION"],
                        AWS_SHARED_CREDENTIALS_FILE=os.path.join(self.tmp, "none"),
                        AWS_CONFIG_FILE=os.path.join(self.tmp, "none"))
        for name in list(self.env):
            if name.startswith(("KCTL_TEST_", "EVALPOD_TEST_")):
                del self.env[name]
        with open(os.path.join(self.tmp, "affine.yaml"), encoding="utf-8") as f:
            text = f.read()
        text = text.replace("confirm_passes: 2", "confirm_passes: 0", 1)
        self.plain = os.path.join(self.tmp, "plain.yaml")
        with open(self.plain, "w", encoding="utf-8") as f:
            f.write(text.replace("batch:", "cache: {s3: true}\nbatch:", 1))
        text = text.replace("session:\n", "evaluator:\n"
                            f"  storage: {self.url}\n"
                            f"  s3: {{endpoint: \"{os.environ['S3_ENDPOINT']}\", "
                            "addressing: path}\n"
                            "session:\n", 1)
        self.spec = os.path.join(self.tmp, "shared.yaml")
        with open(self.spec, "w", encoding="utf-8") as f:
            f.write(text.replace("batch:", "cache: {s3: true}\nbatch:", 1))
        self.tool(["mb", f"s3://{self.bucket}"])

    def tool(self, args):
        return subprocess.run([self.s3tool] + args, env=self.env, capture_output=True,
                              text=True, timeout=120)

    def machine(self, name):
        return dict(self.env, KCTL_CACHE_DIR=os.path.join(self.tmp, name))

    def runs(self):
        try:
            with open(self.log, encoding="utf-8") as f:
                return len(f.read().split())
        except OSError:
            return 0

    def session(self, env, spec=None):
        before = self.runs()
        res = subprocess.run([self.kctl, "start", spec or self.spec, "--no-progress"], env=env,
                             capture_output=True, text=True, timeout=900)
        sid = (res.stdout.splitlines() or [""])[0].strip()
        st = subprocess.run([self.kctl, "status", sid, "-o", "json"], env=env,
                            capture_output=True, text=True).stdout
        return res, json.loads(st or "{}"), self.runs() - before

    def entries(self):
        r = self.tool(["ls", self.url, "runs/cache/"])
        return [line.split(" ")[0] for line in r.stdout.splitlines()] if r.returncode == 0 \
            else []

    def get(self, key):
        return json.loads(self.tool(["get", self.url, key]).stdout or "{}")

    def put(self, key, doc):
        path = os.path.join(self.tmp, "put.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return self.tool(["put", self.url, key, path]).returncode


def key_of(w, variant):
    """The object key of the entry of variant (its result's id) in the store."""
    for k in w.entries():
        doc = w.get(k)
        if doc.get("result", {}).get("id") == variant and "role" not in doc.get("origin", {}):
            return k, doc
    return None, {}


def shared(w):
    res, st, runs = w.session(w.machine("m1"))
    keys = w.entries()
    check(res.returncode == 0 and runs > 0 and st.get("evaluations", 0) > 0,
          f"the first session evaluates ({res.returncode}, {runs} runs: {res.stderr[-300:]!r})")
    check(len(keys) == st.get("evaluations", 0) + st.get("rounds", 0)
          and all(k.startswith("runs/cache/") and k.endswith(".json") for k in keys),
          f"each result and each round's baseline is in the store under runs/cache/ "
          f"({len(keys)} objects)")
    doc = w.get(keys[0]) if keys else {}
    check(set(doc) == {"key", "inputs", "result", "origin", "created", "checksum"}
          and keys[0] == f"runs/cache/{doc.get('key')}.json",
          f"an object is the entry, named by its key ({sorted(doc)})")
    res, st2, runs = w.session(w.machine("m2"))
    check(res.returncode == 0 and runs == 0 and st2.get("cached") == st2.get("evaluations")
          and st2.get("best", {}).get("variant") == st.get("best", {}).get("variant"),
          f"a session on another machine takes every result from the store: evalpod does not "
          f"run ({runs} runs, cached {st2.get('cached')} of {st2.get('evaluations')}, best "
          f"{st2.get('best', {}).get('variant')} vs {st.get('best', {}).get('variant')})")
    check(os.path.exists(os.path.join(w.tmp, "m2", "cache.db")),
          "and keeps them in its own local cache")


def damaged(w):
    key, doc = key_of(w, "r00-start")
    doc["result"]["status"] = "compile_error"  # the checksum kept: a forgery
    check(key is not None and w.put(key, doc) == 0, f"an entry is rewritten in the store ({key})")
    res, st, runs = w.session(w.machine("m3"))
    check(res.returncode == 0 and f"in 's3://{w.bucket}/{key}' fails its check (its checksum "
          f"does not match what it holds)" in res.stderr and runs > 0,
          f"an entry damaged or forged in the store is warned about, naming it, and evaluated "
          f"again ({runs} runs: {res.stderr[-400:]!r})")
    again = w.get(key)
    check(again.get("result", {}).get("status") == "ok" and again.get("checksum"),
          "the object is replaced by the new evaluation")
    other, odoc = key_of(w, "r01-v001")
    if other:
        w.put(key, odoc)  # a sound entry, of another key
    res, st, runs = w.session(w.machine("m4"))
    check(other is not None and "holds another key" in res.stderr and runs > 0,
          f"another key's entry put under this key is refused ({runs} runs: "
          f"{res.stderr[-300:]!r})")


def pods_cannot_write(w):
    r = w.tool(["presign", w.url, "PUT", "runs/affine-x/r001/affine-x-r001/results/v.json",
                "600"])
    url = r.stdout.strip()
    parts = urllib.parse.urlsplit(url)
    forged = urllib.parse.urlunsplit(parts._replace(
        path=parts.path.replace("affine-x/r001/affine-x-r001/results/v.json",
                                "cache/0000.json")))
    code = 0
    try:
        urllib.request.urlopen(urllib.request.Request(forged, data=b"{}", method="PUT"),
                               timeout=30)
        code = 200
    except urllib.error.HTTPError as e:
        code = e.code
    check(r.returncode == 0 and code == 403 and "0000.json" not in " ".join(w.entries()),
          f"a result object's presigned PUT URL (what a pod gets) cannot write cache/ "
          f"(HTTP {code})")


def spec_error(w):
    res, st, runs = w.session(w.machine("m5"), spec=w.plain)
    check(res.returncode == 1 and "cache.s3" in res.stderr and runs == 0,
          f"cache.s3 without s3:// storage: exit 1 naming cache.s3 ({res.returncode}: "
          f"{res.stderr[-200:]!r})")


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    skip = need_env("S3_ENDPOINT")
    if skip:
        return skip
    w = World([os.path.abspath(a) for a in sys.argv[1:]])
    try:
        run((shared, damaged, pods_cannot_write, spec_error), w)
    finally:
        shutil.rmtree(w.tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
