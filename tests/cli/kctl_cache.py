#!/usr/bin/env python3
"""The result cache, end to end, through the real kctl and evalpod (PoCL).

usage: kctl_cache.py KCTL EVALPOD DATA_DIR

kctl runs evalpod through a wrapper that logs which programs each batch
holds (so a test can tell that evalpod was not asked to evaluate a
candidate) and, while a file says so, reports another driver version in
`evalpod devices` (what a driver upgrade looks like to kctl).

  - a second identical session evaluates no candidate anew, records every
    result as cached and finds the same best;
  - --no-cache, cache.enabled: false, a changed build option and a changed
    driver each miss (and the results of a device evalpod did not list are
    not cached);
  - an entry damaged in cache.db is warned about (its key and the file),
    evaluated again and replaced;
  - entries older than cache.max_age_days are not used;
  - two sessions writing one cache at once both finish and leave entries
    that a third session takes;
  - kctl cache stats|prune|clear, and its usage errors; stats only reads: it
    makes no cache and answers while a writer holds the lock.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import checks

check = checks.check

WRAPPER = """#!/usr/bin/env python3
import hashlib, json, os, subprocess, sys
REAL, LOG, DRIVER = {real!r}, {log!r}, {driver!r}
args = sys.argv[1:]
if args[:1] == ["run"] and len(args) > 1:
    with open(args[1], encoding="utf-8") as f:
        b = json.load(f)
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps({{"batch": b.get("batch_id"),
                             "variants": [v["id"] for v in b.get("variants", [])],
                             "programs": [hashlib.sha256((v.get("source", "") + "\\0" +
                                                          v.get("build_options", ""))
                                                         .encode()).hexdigest()
                                          for v in b.get("variants", [])],
                             "baseline": (b.get("baseline") or {{}}).get("id")}}) + "\\n")
if args[:1] == ["devices"] and os.path.exists(DRIVER):
    out = subprocess.run([REAL] + args, capture_output=True, text=True)
    doc = json.loads(out.stdout)
    for p in doc:
        for d in p.get("devices", []):
            d["driver"] = open(DRIVER, encoding="utf-8").read().strip()
    print(json.dumps(doc))
    sys.exit(out.returncode)
os.execv(REAL, [REAL] + args)
"""


class World:
    """A folder with the spec files, a state database, a cache, the wrapper."""

    def __init__(self, kctl, evalpod, data):
        self.kctl = kctl
        self.tmp = tempfile.mkdtemp(prefix="kctl-cache-")
        for name in ("affine.cl", "affine_ref.cl", "affine.yaml"):
            shutil.copy(os.path.join(data, name), self.tmp)
        self.spec = os.path.join(self.tmp, "affine.yaml")
        # no confirmation: it re-times the top candidates whatever the cache holds
        self.derive("affine.yaml", [("confirm_passes: 2", "confirm_passes: 0")])
        self.log = os.path.join(self.tmp, "evalpod-runs.log")
        self.driver = os.path.join(self.tmp, "driver")
        self.wrapper = wrapper = os.path.join(self.tmp, "evalpod-wrapper")
        with open(wrapper, "w", encoding="utf-8") as f:
            f.write(WRAPPER.format(real=os.path.abspath(evalpod), log=self.log,
                                   driver=self.driver))
        os.chmod(wrapper, 0o755)
        self.cache_dir = os.path.join(self.tmp, "cache")
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(self.tmp, "xdg"),
                        KCTL_CACHE_DIR=self.cache_dir, KCTL_EVALPOD=wrapper)
        for name in list(self.env):
            if name.startswith(("KCTL_TEST_", "EVALPOD_TEST_")):
                del self.env[name]

    def derive(self, name, replacements):
        with open(self.spec, encoding="utf-8") as f:
            text = f.read()
        for old, new in replacements:
            if text.count(old) != 1:
                raise RuntimeError(f"affine.yaml does not hold {old!r} once")
            text = text.replace(old, new)
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def run(self, args, env=None, timeout=900):
        return subprocess.run([self.kctl] + args, env=env or self.env, capture_output=True,
                              text=True, timeout=timeout)

    def runs(self):
        """The batches evalpod was given so far: [{batch, variants, baseline}]."""
        try:
            with open(self.log, encoding="utf-8") as f:
                return [json.loads(line) for line in f if line.strip()]
        except OSError:
            return []

    def session(self, spec=None, extra=(), env=None):
        """Runs a session; (its id, its status, the candidates evalpod got, stderr)."""
        before = len(self.runs())
        res = self.run(["start", spec or self.spec, "--no-progress"] + list(extra), env=env)
        sid = checks.session_id(res)
        asked = [v for r in self.runs()[before:] for v in r["variants"]]
        return sid, self.status(sid), asked, res

    def status(self, sid):
        res = self.run(["status", sid, "-o", "json"])
        try:
            return json.loads(res.stdout)
        except ValueError:
            return {}

    def db(self):
        return os.path.join(self.cache_dir, "cache.db")

    def entries(self, role=None):
        """How many entries; role "candidates" or "baselines" counts those only."""
        where = {None: "", "candidates": " WHERE origin NOT LIKE '%\"role\":\"baseline\"%'",
                 "baselines": " WHERE origin LIKE '%\"role\":\"baseline\"%'"}[role]
        with sqlite3.connect(self.db()) as db:
            return db.execute("SELECT count(*) FROM entries" + where).fetchone()[0]


def best_of(st):
    b = st.get("best") if isinstance(st.get("best"), dict) else {}
    return b.get("variant")


def second_session_evaluates_nothing(w):
    sid1, st1, asked1, res1 = w.session()
    w.first = sid1
    check(res1.returncode == 0 and st1.get("evaluations", 0) > 0 and asked1,
          f"the first session evaluates its candidates ({res1.returncode}, "
          f"{st1.get('evaluations')} evaluations, evalpod got {len(asked1)} candidates: "
          f"{res1.stderr[-300:]!r})")
    check(st1.get("cached") == 0, f"the first session has nothing cached ({st1.get('cached')})")
    n = w.entries("candidates")
    check(n == st1.get("evaluations"),
          f"each of its results is in cache.db ({n} entries, {st1.get('evaluations')} results)")
    n = w.entries("baselines")
    check(n == st1.get("rounds"),
          f"and the baseline's measurement of each round after the first ({n} entries, "
          f"{st1.get('rounds')} rounds)")
    sid2, st2, asked2, res2 = w.session()
    check(res2.returncode == 0 and asked2 == [],
          f"a second identical session asks evalpod to evaluate no candidate (asked {asked2}: "
          f"{res2.stderr[-300:]!r})")
    check(st2.get("evaluations") == st1.get("evaluations")
          and st2.get("cached") == st2.get("evaluations"),
          f"every one of its results is recorded as cached ({st2.get('cached')} of "
          f"{st2.get('evaluations')})")
    check(best_of(st2) == best_of(st1) and best_of(st1),
          f"it finds the same best ({best_of(st2)} vs {best_of(st1)})")
    check("variants from the result cache" in res2.stderr,
          "its rounds say how many variants came from the result cache")
    show = w.run(["show", sid2]).stdout
    check(show.count("(cached)") == st2.get("evaluations"),
          f"kctl show marks each cached variant ({show.count('(cached)')})")
    one = w.run(["show", sid2, "r00-start"]).stdout
    check(f"session {sid1}" in one and "from the result cache: key " in one,
          f"kctl show VARIANT names the entry and the session it came from ({one[:400]!r})")
    line = w.run(["status", sid2]).stdout
    check(f"({st2.get('evaluations')} from the result cache)" in line,
          f"kctl status says how many came from the cache ({line[:200]!r})")
    with open(os.path.join(w.tmp, "runs", sid2, "report.md"), encoding="utf-8") as f:
        md = f.read()
    check(f"{st2.get('evaluations')} of the {st2.get('evaluations')} evaluations came from the "
          f"result cache" in md, "report.md says how many came from the cache")
    with open(os.path.join(w.tmp, "runs", sid2, "rounds", "r000", "results", "r00-start.json"),
              encoding="utf-8") as f:
        doc = json.load(f)
    c = doc.get("cache") or {}
    check(doc.get("id") == "r00-start" and c.get("session") == sid1
          and len(c.get("key", "")) == 64 and c.get("stored"),
          f"the round's result file is the cached result, marked with its key, session and "
          f"time ({c})")
    return st1


def misses(w):
    n = w.entries()
    sid, st, asked, res = w.session(extra=["--no-cache"])
    check(res.returncode == 0 and asked and st.get("cached") == 0 and w.entries() == n,
          f"--no-cache: evalpod evaluates the candidates, nothing cached, nothing written "
          f"(asked {len(asked)}, cached {st.get('cached')}, entries {n} -> {w.entries()})")
    off = w.derive("off.yaml", [("batch:", "cache: {enabled: false}\nbatch:")])
    sid, st, asked, res = w.session(spec=off)
    check(res.returncode == 0 and asked and st.get("cached") == 0 and w.entries() == n,
          f"cache.enabled false: as --no-cache (asked {len(asked)}, cached {st.get('cached')}, "
          f"entries {w.entries()})")
    opt = w.derive("opt.yaml", [("  reference: affine_ref.cl",
                                 "  reference: affine_ref.cl\n  build_options: -cl-mad-enable")])
    sid, st, asked, res = w.session(spec=opt)
    check(res.returncode == 0 and asked and st.get("cached") == 0,
          f"a changed build option misses (asked {len(asked)}, cached {st.get('cached')}: "
          f"{res.stderr[-300:]!r})")
    # Rebuilt from other sources, evalpod can print the same version line (the
    # build's configure time named the sources, a dirty tree's edits not at
    # all): its bytes are in the key too.
    rebuilt = os.path.join(w.tmp, "evalpod-rebuilt")
    with open(w.wrapper, encoding="utf-8") as f:
        text = f.read()
    with open(rebuilt, "w", encoding="utf-8") as f:
        f.write(text + "# rebuilt\n")
    os.chmod(rebuilt, 0o755)
    sid, st, asked, res = w.session(env=dict(w.env, KCTL_EVALPOD=rebuilt))
    check(res.returncode == 0 and asked and st.get("cached") == 0,
          f"an evalpod with the same version line but other bytes misses (asked {len(asked)}, "
          f"cached {st.get('cached')}: {res.stderr[-300:]!r})")
    n = w.entries()
    with open(w.driver, "w", encoding="utf-8") as f:
        f.write("99.9+test")
    try:
        sid, st, asked, res = w.session()
    finally:
        os.unlink(w.driver)
    check(res.returncode == 0 and asked and st.get("cached") == 0,
          f"another driver version misses (asked {len(asked)}, cached {st.get('cached')}: "
          f"{res.stderr[-300:]!r})")
    check(w.entries() == n and "its device is not one evalpod listed" in res.stderr,
          f"results from a device evalpod did not list are not cached ({n} -> {w.entries()})")


def damaged_entry(w, sid1, st1):
    """Damages the entry of the last round's slowest variant: re-evaluating it
    cannot change what the rounds before decided (and so what was proposed)."""
    rows = json.loads(w.run(["show", sid1, "-o", "json"]).stdout or "[]")
    last = max(r["round"] for r in rows)
    ok = [r for r in rows if r["round"] == last and r.get("status") == "ok"
          and r["id"] != best_of(st1)]
    victim = min(ok, key=lambda r: r.get("speedup_ref") or 0)["id"]
    with sqlite3.connect(w.db()) as db:
        key = db.execute("SELECT key FROM entries WHERE result LIKE ?",
                         (f'%"id":"{victim}"%',)).fetchone()[0]
        db.execute("UPDATE entries SET result = replace(result, '\"status\":\"ok\"', "
                   "'\"status\":\"ko\"') WHERE key = ?", (key,))
    sid, st, asked, res = w.session()
    check(res.returncode == 0 and f"cache: entry {key} in '{w.db()}' fails its check"
          in res.stderr, f"a damaged entry is warned about, with its key and file "
          f"({res.stderr[-400:]!r})")
    check(asked == [victim] and st.get("cached") == st.get("evaluations", 0) - 1,
          f"its variant ({victim}) is evaluated again, the others are taken "
          f"(asked {asked}, cached {st.get('cached')} of {st.get('evaluations')})")
    sid, st, asked, res = w.session()
    check(res.returncode == 0 and "fails its check" not in res.stderr
          and st.get("cached") == st.get("evaluations"),
          f"the entry was replaced: the next session takes it ({st.get('cached')} of "
          f"{st.get('evaluations')})")


def expiry(w):
    with sqlite3.connect(w.db()) as db:
        db.execute("UPDATE entries SET created = created - 40 * 86400")
    long_age = w.derive("age.yaml", [("batch:", "cache: {max_age_days: 100}\nbatch:")])
    sid, st, asked, res = w.session(spec=long_age)
    check(res.returncode == 0 and asked == [] and st.get("cached") == st.get("evaluations"),
          f"40-day-old entries are used under max_age_days 100 (asked {asked})")
    sid, st, asked, res = w.session()
    check(res.returncode == 0 and asked and st.get("cached") == 0,
          f"and not under the default 30 days (asked {len(asked)}, cached {st.get('cached')})")
    res = w.run(["cache", "stats", "-o", "json"])
    stats = json.loads(res.stdout or "{}")
    check(res.returncode == 0 and stats.get("newest", 0) > time.time() - 86400,
          f"the new evaluations were stored ({stats})")


def concurrent(w):
    env = dict(w.env, KCTL_CACHE_DIR=os.path.join(w.tmp, "cache2"))
    before = len(w.runs())
    procs = [subprocess.Popen([w.kctl, "start", w.spec, "--no-progress"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=1800) for p in procs]
    check(all(p.returncode == 0 for p in procs),
          f"two sessions writing one cache at once both finish "
          f"({[p.returncode for p in procs]}: {[o[1][-200:] for o in outs]!r})")
    check(all("database is locked" not in o[1] and "result cache '" not in o[1]
              for o in outs), "neither warns about the cache")
    written = {k for r in w.runs()[before:] for k in r.get("programs", [])}
    mark = len(w.runs())
    sid, st, asked, res = w.session(env=env)
    # The tuner's later rounds follow the measurements, and the third session
    # reads a mix of the two sessions' results, so it may propose a program
    # that neither evaluated; every program either one did evaluate is taken.
    again = [k for r in w.runs()[mark:] for k in r.get("programs", []) if k in written]
    check(res.returncode == 0 and written and not again and st.get("cached", 0) > 0
          and st.get("cached") == st.get("evaluations", 0) - len(asked),
          f"a third session takes every result from what they wrote ({len(again)} of "
          f"theirs evaluated again, asked {asked}, cached {st.get('cached')} of "
          f"{st.get('evaluations')}: {res.stderr[-300:]!r})")


def commands(w):
    with sqlite3.connect(w.db()) as db:
        old = db.execute("SELECT count(*) FROM entries WHERE created < ?",
                         (time.time() - 30 * 86400,)).fetchone()[0]
    n = w.entries()
    res = w.run(["cache", "prune"])
    check(res.returncode == 0 and old > 0 and f"removed {old} entries" in res.stdout
          and w.entries() == n - old,
          f"prune removes the entries older than 30 days ({old}: {res.stdout!r})")
    res = w.run(["cache", "stats", "-o", "json"])
    stats = json.loads(res.stdout or "{}")
    check(res.returncode == 0 and stats.get("entries") == w.entries()
          and stats.get("file") == w.db() and stats.get("bytes", 0) > 0,
          f"kctl cache stats -o json ({stats})")
    text = w.run(["cache", "stats"]).stdout
    check(f"entries  {w.entries()}" in text and w.db() in text, f"kctl cache stats ({text!r})")
    n = w.entries()
    res = w.run(["cache", "prune", "--older-than", "1"])
    check(res.returncode == 0 and "removed 0 entries" in res.stdout and w.entries() == n,
          f"prune --older-than 1 keeps today's entries ({res.stdout!r})")
    with sqlite3.connect(w.db()) as db:
        db.execute("UPDATE entries SET created = created - 3 * 86400 WHERE rowid IN "
                   "(SELECT rowid FROM entries LIMIT 2)")
    res = w.run(["cache", "prune", "--older-than", "2", "-o", "json"])
    check(res.returncode == 0 and json.loads(res.stdout or "{}").get("removed") == 2
          and w.entries() == n - 2, f"prune --older-than 2 removes the two older ({res.stdout!r})")
    res = w.run(["cache", "clear"])
    check(res.returncode == 0 and w.entries() == 0, f"clear removes every entry ({res.stdout!r})")
    for args, what in ((["cache"], "no subcommand"), (["cache", "bogus"], "'bogus'"),
                       (["cache", "stats", "--older-than", "3"], "--older-than"),
                       (["cache", "prune", "--older-than", "-1"], "-1"),
                       (["cache", "prune", "--older-than", "x"], "'x'")):
        res = w.run(args)
        check(res.returncode == 2 and (what == "no subcommand" or what in res.stderr),
              f"kctl {' '.join(args)}: exit 2 naming {what} ({res.returncode}: "
              f"{res.stderr[-200:]!r})")
    bad = dict(w.env, KCTL_CACHE_DIR=os.path.join(w.spec, "under-a-file"))
    res = w.run(["cache", "stats"], env=bad)
    check(res.returncode == 3 and "affine.yaml" in res.stderr,
          f"a cache that cannot be opened: exit 3 naming it ({res.stderr[-200:]!r})")
    sid, st, asked, res = w.session(env=bad)
    check(res.returncode == 0 and "the result cache is off for this run" in res.stderr,
          f"a session with a cache that cannot be opened warns and goes on "
          f"({res.returncode}: {res.stderr[-200:]!r})")


def stats_only_reads(w):
    """kctl cache stats reads: it makes no cache, and answers while a session writes."""
    fresh = os.path.join(w.tmp, "no-cache-yet")
    env = dict(w.env, KCTL_CACHE_DIR=fresh)
    res = w.run(["cache", "stats"], env=env)
    check(res.returncode == 0 and "entries  0" in res.stdout and "(none yet)" in res.stdout
          and not os.path.exists(fresh),
          f"stats where there is no cache: 0 entries, and it makes none ({res.returncode}: "
          f"{res.stdout!r} {res.stderr[-200:]!r}; made: {os.path.exists(fresh)})")
    res = w.run(["cache", "stats", "-o", "json"], env=env)
    stats = json.loads(res.stdout or "{}")
    check(res.returncode == 0 and stats.get("entries") == 0 and stats.get("file") ==
          os.path.join(fresh, "cache.db") and not os.path.exists(fresh),
          f"stats -o json where there is no cache ({stats})")
    for words in (["clear"], ["prune", "-o", "json"]):
        res = w.run(["cache"] + words, env=env)
        check(res.returncode == 0 and ("removed 0" in res.stdout or '"removed": 0' in res.stdout)
              and not os.path.exists(fresh),
              f"cache {' '.join(words)} where there is no cache removes nothing and makes "
              f"none ({res.stdout!r} {res.stderr[-200:]!r})")
    # A writer in the middle of a transaction, as a session storing its results is:
    # stats reads what is committed at once (it took the write lock, and waited
    # CACHE_BUSY_MS = 30 s for it, before).
    n = w.entries()
    writer = sqlite3.connect(w.db(), isolation_level=None, timeout=1)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM entries")
        start = time.monotonic()
        try:
            res = w.run(["cache", "stats", "-o", "json"], timeout=20)
        except subprocess.TimeoutExpired:
            res = None
        took = time.monotonic() - start
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    stats = json.loads(res.stdout or "{}") if res else {}
    check(res is not None and res.returncode == 0 and stats.get("entries") == n and n > 0,
          f"stats while a writer holds its lock: the committed {n} entries at once "
          f"({took:.1f} s, {stats}, {res and res.stderr[-200:]!r})")


def completion(w):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "controller",
                          "kctl-completion.bash")
    for words, cword, want in ((["kctl", "cache", ""], 2, {"stats", "prune", "clear"}),
                               (["kctl", "start", "a.yaml", "--no-c"], 3, {"--no-cache"}),
                               (["kctl", "cach"], 1, {"cache"}),
                               (["kctl", "cache", "prune", "--o"], 3, {"--older-than",
                                                                      "--output"})):
        res = subprocess.run(["bash", "-c", 'source "$0"; COMP_WORDS=("${@:2}"); '
                              'COMP_CWORD=$1; _kctl; printf "%s\\n" "${COMPREPLY[@]}"',
                              script, str(cword)] + words, capture_output=True, text=True)
        got = set(res.stdout.split())
        check(res.returncode == 0 and got == want,
              f"bash completion of {words}: {sorted(want)} (got {sorted(got)})")


def main():
    kctl, evalpod, data = sys.argv[1], sys.argv[2], sys.argv[3]
    w = World(kctl, evalpod, data)
    try:
        st1 = second_session_evaluates_nothing(w)
        checks.run([lambda w: misses(w), lambda w: damaged_entry(w, w.first, st1), expiry, concurrent,
                    stats_only_reads, commands, completion], w)
    finally:
        shutil.rmtree(w.tmp, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
