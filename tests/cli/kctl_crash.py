#!/usr/bin/env python3
"""Crash safety of kctl: kill -9 at several points of a session, then resume.

usage: kctl_crash.py KCTL DATA_DIR [--groups-only | --short]

For each crash point (the KCTL_TEST_CRASH_AT hook kills kctl with SIGKILL
right after that step was committed, as a power cut would) and for kills
at random moments, a session is started, killed, and resumed until it is
done.  Then:
  - the session is done and every variant has exactly one recorded result;
  - no evaluation ran twice: evalpod's logs name each variant once, but for
    the runs kctl saw fail and the infra_error results set aside, whose
    variants are evaluated again by design;
  - no evaluation was lost: every result file of every round is recorded.

The last trial kills more than kctl, at random moments (seeded): evalpod
alone (kctl sees it die and evaluates what is missing again), and kctl's
whole process group (kctl and its evalpod at once; the workers follow their
evalpod).  An evaluation cut by such a kill left no result and runs again,
so there the logs may name a variant twice; every variant must still have
exactly one recorded result and a result file.
"""
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

failures = []
passes = []


def check(cond, what):
    (passes if cond else failures).append(what)
    print(("ok   " if cond else "FAIL ") + what)


def prepare(data, tmp):
    for name in ("affine.cl", "affine_ref.cl"):
        shutil.copy(os.path.join(data, name), tmp)
    with open(os.path.join(data, "affine.yaml"), encoding="utf-8") as f:
        text = f.read()
    # one confirmation pass (round 4) keeps the many sessions short
    with open(os.path.join(tmp, "affine.yaml"), "w", encoding="utf-8") as f:
        f.write(text.replace("confirm_passes: 2\n", "confirm_passes: 1\n"))
    return os.path.join(tmp, "affine.yaml")


def run(kctl, args, env, timeout=600):
    return subprocess.run([kctl] + args, env=env, capture_output=True, text=True,
                          timeout=timeout)


def session_id(tmp):
    dirs = glob.glob(os.path.join(tmp, "runs", "affine-*"))
    return os.path.basename(dirs[0]) if len(dirs) == 1 else None


def wait_orphans(tmp, limit=120):
    """An evalpod orphaned by the kill finishes on its own; resume waits for it too."""
    deadline = time.time() + limit
    while time.time() < deadline:
        busy = False
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if tmp.encode() in f.read():
                        busy = True
            except OSError:
                pass
        if not busy:
            return
        time.sleep(0.5)


def evaluated_ids(log_text):
    """Variant ids of every evalpod run, from the note that heads each run
    (written by kctl's child just before it runs evalpod), and the ids of the
    runs that kctl saw fail (its "end of evalpod run" note with a non-zero
    status), whose
    variants without a result are evaluated again by design."""
    ids, failed, runs = [], [], {}
    for line in log_text.splitlines():
        if line.startswith("kctl: evalpod run ") and " evaluates:" in line:
            batch, names = line[len("kctl: evalpod run "):].split(" evaluates:", 1)
            runs[batch] = names.split()
            ids.extend(runs[batch])
        elif line.startswith("kctl: end of evalpod run "):
            batch, how = line[len("kctl: end of evalpod run "):].rsplit(": ", 1)
            if how != "exit status 0":
                failed.extend(runs.pop(batch, []))
    return ids, failed


def verify(kctl, env, tmp, label, cut=False):
    sid = session_id(tmp)
    check(sid is not None, f"{label}: one session folder")
    if not sid:
        return
    st = run(kctl, ["status", sid, "-o", "json"], env)
    status = json.loads(st.stdout) if st.returncode == 0 else {}
    check(status.get("state") == "done", f"{label}: session done (got {status.get('state')})")
    show = run(kctl, ["show", sid], env).stdout.splitlines()[1:]
    variants = [line.split()[0] for line in show if line.strip()]
    statuses = [line.split()[3] for line in show if line.strip()]
    check(len(variants) == status.get("evaluations"),
          f"{label}: every variant has one recorded result "
          f"({len(variants)} variants, {status.get('evaluations')} results)")
    check("-" not in statuses, f"{label}: no variant left without a status")
    logs = "".join(open(p, encoding="utf-8", errors="replace").read()
                   for p in glob.glob(os.path.join(tmp, "runs", sid, "rounds", "r*",
                                                   "evalpod.log")))
    seen, failed = evaluated_ids(logs)
    # An infra_error result is set aside (ID.infra-N.json) and evaluated again
    # by design (docs/kctl.md, Running evalpod): once more per set-aside result,
    # and once more per evalpod run that kctl saw fail.
    aside = [os.path.basename(p).split(".infra-")[0] for p in
             glob.glob(os.path.join(tmp, "runs", sid, "rounds", "r*", "results", "*.infra-*"))]
    twice = sorted({v for v in seen
                    if seen.count(v) > 1 + aside.count(v) + failed.count(v)})
    if twice:
        print("\n".join("  log: " + line for line in logs.splitlines()
                        if line.startswith("kctl: ") or "evalpod:" in line[:9]
                        and "checked" not in line))
    if cut:
        files = {os.path.basename(p)[:-len(".json")] for p in
                 glob.glob(os.path.join(tmp, "runs", sid, "rounds", "r*", "results", "*.json"))}
        missing = sorted(set(variants) - files)
        check(not missing, f"{label}: every recorded variant has its result file "
                           f"(missing {missing}; {len(twice)} cut evaluations ran again)")
    else:
        check(not twice, f"{label}: no variant evaluated twice, infrastructure retries aside "
                         f"{twice} ({len(aside)} set aside, {len(failed)} in failed runs)")
    check(sorted(set(seen)) == sorted(variants),
          f"{label}: every variant evaluated ({len(set(seen))} of {len(variants)})")
    # the confirmation (round 4 here) ran, and every output names its winner
    best = status.get("best") if isinstance(status.get("best"), dict) else {}
    header = ""
    try:
        with open(os.path.join(tmp, "runs", sid, "best.cl"), encoding="utf-8") as f:
            header = f.read().split("*/", 1)[0]
    except OSError:
        pass
    check(isinstance(best.get("passes"), int) and best.get("passes") >= 1
          and f": {best.get('variant')}\n" in header,
          f"{label}: the confirmation ran and best.cl names the winner status names "
          f"({best.get('variant')}, passes {best.get('passes')})")


def crash_then_resume(kctl, data, point):
    tmp = tempfile.mkdtemp(prefix="kctl-crash-")
    try:
        spec = prepare(data, tmp)
        env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"),
                   XDG_CACHE_HOME=os.path.join(tmp, "cache"), KCTL_TEST_CRASH_AT=point)
        first = run(kctl, ["start", spec], env)
        check(first.returncode == -signal.SIGKILL,
              f"{point}: kctl died at the crash point (status {first.returncode})")
        env.pop("KCTL_TEST_CRASH_AT")
        sid = session_id(tmp)
        res = run(kctl, ["resume", sid or "?"], env)
        check(res.returncode == 0, f"{point}: resume finishes the session ({res.returncode}: "
                                   f"{res.stderr.strip()[-300:]})")
        wait_orphans(tmp)
        verify(kctl, env, tmp, point)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def random_kills(kctl, data, seed, kills):
    rnd = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="kctl-kill-")
    label = f"random kills (seed {seed})"
    try:
        spec = prepare(data, tmp)
        env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"),
                   XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        args = ["start", spec]
        for k in range(kills):
            proc = subprocess.Popen([kctl] + args, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            time.sleep(rnd.uniform(0.5, 4.0))
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            sid = session_id(tmp)
            if not sid:
                continue
            args = ["resume", sid]
        res = run(kctl, args, env)
        check(res.returncode == 0, f"{label}: the last resume finishes ({res.returncode}: "
                                   f"{res.stderr.strip()[-300:]})")
        wait_orphans(tmp)
        verify(kctl, env, tmp, label)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def children(pid):
    """[(pid, argv)] of the processes whose parent is pid."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found.append((int(entry), argv))
    return found


def kill_quietly(fn, *args):
    try:
        fn(*args)
    except ProcessLookupError:
        pass


def random_group_kills(kctl, data, seed, kills):
    """Kills evalpod, or kctl with its whole process group, at random moments."""
    rnd = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="kctl-group-")
    label = f"random evalpod and group kills (seed {seed})"
    done = []
    try:
        spec = prepare(data, tmp)
        env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"),
                   XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        args = ["start", spec]
        for k in range(kills):
            proc = subprocess.Popen([kctl] + args, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
            target = rnd.choice(("evalpod", "group"))
            time.sleep(rnd.uniform(1.0, 5.0))
            pods = [p for p, argv in children(proc.pid)
                    if len(argv) > 1 and argv[0].endswith(b"evalpod") and argv[1] == b"run"]
            if target == "evalpod" and pods:
                for p in pods:
                    kill_quietly(os.kill, p, signal.SIGKILL)
                done.append(f"evalpod {pods}")
                # kctl notices, and is itself killed a moment later
                time.sleep(rnd.uniform(0.5, 3.0))
            kill_quietly(os.killpg, proc.pid, signal.SIGKILL)
            proc.communicate()
            done.append("group")
            sid = session_id(tmp)
            if sid:
                args = ["resume", sid]
        print(f"{label}: {', '.join(done)}")
        res = run(kctl, args, env)
        check(res.returncode == 0, f"{label}: the last resume finishes ({res.returncode}: "
                                   f"{res.stderr.strip()[-300:]})")
        wait_orphans(tmp)
        verify(kctl, env, tmp, label, cut=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    kctl, data = sys.argv[1], sys.argv[2]
    if sys.argv[3:] == ["--groups-only"]:
        random_group_kills(kctl, data, 11, 4)
        print(f"{len(passes)} passed, {len(failures)} failed")
        return 1 if failures else 0
    points = ("proposed:1", "packed:1", "spawned:1", "collected:2", "ranked:0",
              "ranked:3", "spawned:4", "ranked:4")
    # --short (the sanitizer build's pass, where the same paths are checked
    # for memory errors): a crash while evalpod runs, after collecting and
    # after ranking, and the kills of evalpod and of kctl's group; the plain
    # build's pass runs every point and the seeded random kills too.
    short = sys.argv[3:] == ["--short"]
    for point in ("spawned:1", "collected:2", "ranked:3") if short else points:
        crash_then_resume(kctl, data, point)
    if not short:
        random_kills(kctl, data, 7, 4)
    random_group_kills(kctl, data, 11, 4)
    print(f"{len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
