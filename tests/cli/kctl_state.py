#!/usr/bin/env python3
"""The state database and the session's liveness, through the real kctl.

usage: kctl_state.py KCTL DATA_DIR

  - a damaged database (a page in the middle overwritten with garbage) makes
    `kctl status` fail (exit 3) naming the file, never "no sessions yet", and
    `kctl resume` fail without writing anything to it;
  - a database SQLite cannot open for want of room (a full disk; here a file
    size limit) is refused as unreadable, not called damaged, and opens
    unchanged once there is room;
  - an empty (0-byte) file at the state path is refused, not made a new one;
  - a kctl killed while it drives a session: `kctl status` says it is
    interrupted and how to go on, and says nothing of the kind while a kctl
    drives it;
  - a kctl killed between recording the session's end and rewriting
    report.md (crash point `ended`): status, show and resume rewrite it;
  - the round budget of `start --rounds N` is kept by a resume without
    --rounds, and `resume --rounds M` replaces it for the resumes after;
  - a database this user may not write (another user's): status, show,
    report, export and brief read it as it is, writing nothing beside it,
    also while its owner's kctl has it open; resume says who may write it;
    a file of an older schema is refused, not upgraded.
"""
import glob
import hashlib
import json
import os
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

import checks

check = checks.check


def run(kctl, args, env, timeout=900):
    return subprocess.run([kctl] + args, env=env, capture_output=True, text=True,
                          timeout=timeout)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def wait_for(what, limit_s, poll_s=0.2):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(poll_s)
    return what()


def damaged_database(kctl, tmp):
    db = os.path.join(tmp, "damaged.db")
    env = dict(os.environ)
    fresh = run(kctl, ["status", "--state", db], env)
    check(fresh.returncode == 0 and "no sessions yet" in fresh.stdout,
          f"a missing database is created ({fresh.returncode}: {fresh.stderr.strip()})")
    con = sqlite3.connect(db)
    pad = "p" * 400
    with con:
        for i in range(200):
            con.execute("INSERT INTO sessions (id, spec_path, spec_hash, output_dir, state,"
                        " created, updated) VALUES (?, ?, 'h', ?, 'running', 'now', 'now')",
                        (f"s{i:03d}", pad, os.path.join(tmp, f"s{i:03d}")))
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    whole = run(kctl, ["status", "--state", db], env)
    check(whole.returncode == 0 and whole.stdout.count("\n") >= 200,
          f"the whole database lists its 200 sessions ({whole.returncode})")
    size = os.path.getsize(db)
    with open(db, "r+b") as f:
        f.seek(size // 4096 // 2 * 4096)
        f.write(b"\xa5" * 4096)
    before = digest(db)
    st = run(kctl, ["status", "--state", db], env)
    check(st.returncode == 3, f"status of a damaged database exits 3 (got {st.returncode})")
    check(db in st.stderr and "damaged" in st.stderr and "integrity_check" in st.stderr,
          f"the message names the file and how to inspect it: {st.stderr.strip()[:300]}")
    check("no sessions" not in st.stdout and not st.stdout.strip(),
          f"nothing is listed from a damaged database ({st.stdout[:100]!r})")
    js = run(kctl, ["status", "s001", "-o", "json", "--state", db], env)
    check(js.returncode == 3 and not js.stdout.strip(),
          f"status SESSION -o json fails too ({js.returncode})")
    res = run(kctl, ["resume", "s001", "--state", db], env)
    check(res.returncode == 3 and db in res.stderr,
          f"resume on a damaged database exits 3 naming it ({res.returncode}: "
          f"{res.stderr.strip()[:200]})")
    wal = os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0
    check(digest(db) == before and wal == 0,
          f"resume wrote nothing to the damaged database (its log has {wal} bytes)")


def unreadable_is_not_damage(kctl, tmp):
    # SQLite cannot size its shared-memory file (a full disk does this; here
    # a file size limit of 4 KiB, SIGXFSZ ignored): "disk I/O error", which
    # is no damage and must not send the user to recover the database
    db = os.path.join(tmp, "unreadable.db")
    env = dict(os.environ)
    made = run(kctl, ["status", "--state", db], env)
    for extra in ("-shm", "-wal"):
        if os.path.exists(db + extra):
            os.unlink(db + extra)
    before = digest(db)

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    st = subprocess.run([kctl, "status", "--state", db], env=env, capture_output=True,
                        text=True, timeout=60, preexec_fn=small_files)
    check(made.returncode == 0 and st.returncode == 3 and "cannot read the database" in st.stderr
          and "not found damaged" in st.stderr and "integrity_check" not in st.stderr
          and "recover" not in st.stderr and db in st.stderr,
          f"a database SQLite cannot open for room: exit 3, not called damaged "
          f"({st.returncode}: {st.stderr.strip()[:300]})")
    again = run(kctl, ["status", "--state", db], env)
    check(again.returncode == 0 and "no sessions yet" in again.stdout and digest(db) == before,
          f"with room again the same database opens, unchanged ({again.returncode}: "
          f"{again.stderr.strip()[:200]})")


def empty_database(kctl, tmp):
    db = os.path.join(tmp, "empty.db")
    open(db, "w").close()
    st = run(kctl, ["status", "--state", db], dict(os.environ))
    check(st.returncode == 3, f"status of a 0-byte database exits 3 (got {st.returncode})")
    check(db in st.stderr and "empty (0 bytes)" in st.stderr,
          f"the message names the file and says it is empty: {st.stderr.strip()[:300]}")
    check("no sessions" not in st.stdout, "a 0-byte file is not an empty database")
    check(os.path.getsize(db) == 0, "the 0-byte file is left as it was")


def owner_record(pid, **over):
    """What a kctl with pid wrote into session.lock before it recorded its pid
    namespace (see docs/kctl.md); over replaces fields or adds them (pidns)."""
    with open("/proc/sys/kernel/random/boot_id", encoding="utf-8") as f:
        boot = f.read().strip()
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        start = f.read().rsplit(")", 1)[1].split()[19]
    fields = dict(pid=pid, boot=boot, start=start, host=socket.gethostname())
    fields.update(over)
    return "".join(f"{k} {v}\n" for k, v in fields.items())


def recorded_owners(kctl, tmp):
    """A running session whose recorded kctl is gone is shown interrupted, with
    the --state given; one whose recorded process lives is not."""
    db = os.path.join(tmp, "owners.db")
    env = dict(os.environ)
    run(kctl, ["status", "--state", db], env)
    gone = subprocess.Popen(["sleep", "60"])
    here = os.readlink("/proc/self/ns/pid")
    cases = {"gone": owner_record(gone.pid), "live": owner_record(os.getpid()),
             # the same records with this pid namespace (what kctl writes now)
             "gonens": owner_record(gone.pid, pidns=here),
             "livens": owner_record(os.getpid(), pidns=here),
             # a kctl in a container on this machine: its own host name and
             # pid namespace; a pid that is gone here means nothing
             "container": owner_record(gone.pid, host="box-7f3a", pidns="pid:[4026530001]"),
             "otherns": owner_record(gone.pid, pidns="pid:[4026530001]"),
             # another machine sharing the state folder
             "machine": owner_record(gone.pid, host="far-away", pidns=here,
                                     boot="00000000-0000-4000-8000-000000000000"),
             # this host since rebooted: whatever ran then is gone
             "rebooted": owner_record(gone.pid, pidns=here,
                                      boot="00000000-0000-4000-8000-000000000000")}
    gone.kill()
    gone.wait()
    con = sqlite3.connect(db)
    with con:
        for name, record in cases.items():
            sdir = os.path.join(tmp, "owners", name)
            os.makedirs(sdir)
            with open(os.path.join(sdir, "session.lock"), "w", encoding="utf-8") as f:
                f.write(record)
            con.execute("INSERT INTO sessions (id, spec_path, spec_hash, output_dir, state,"
                        " created, updated) VALUES (?, 's', 'h', ?, 'running', 'now', 'now')",
                        (name, sdir))
    con.close()
    st = run(kctl, ["status", "--state", db], env)
    want = (f"interrupted (kctl pid {gone.pid} gone); go on with: kctl resume gone "
            f"--state {db}")
    check(st.returncode == 0 and want in st.stdout,
          f"a session whose kctl is gone is interrupted, the hint keeps --state: "
          f"{st.stdout.strip()[:300]}")
    live = [line for line in st.stdout.splitlines() if line.startswith("live ")]
    check(len(live) == 1 and " running " in live[0] and "kctl resume live" not in st.stdout,
          f"a session whose recorded kctl runs is running ({live})")
    for name in ("gonens", "rebooted"):
        check(f"interrupted (kctl pid {gone.pid} gone); go on with: kctl resume {name} "
              in st.stdout, f"{name}: the kctl is gone from here")
    live = [line for line in st.stdout.splitlines() if line.startswith("livens ")]
    check(len(live) == 1 and " running " in live[0] and "kctl resume livens" not in st.stdout,
          f"livens: a recorded kctl in this pid namespace that runs is running ({live})")
    blocks = {}
    for line in st.stdout.splitlines():
        if not line.startswith(" "):
            blocks[line.split(" ")[0]] = []
        elif blocks:
            blocks[list(blocks)[-1]].append(line.strip())
    host = socket.gethostname()
    for name, want in (("container", f"running on box-7f3a (kctl pid {gone.pid} in another "
                                     "pid namespace)"),
                       ("otherns", f"running on {host} (kctl pid {gone.pid} in another pid "
                                   "namespace)"),
                       ("machine", f"running on far-away (kctl pid {gone.pid} on another "
                                   "machine)")):
        lines = blocks.get(name, [])
        check(want in lines and not any("interrupted" in x or "gone" in x for x in lines),
              f"{name}: status says where it runs, never gone ({lines})")
    js = run(kctl, ["status", "container", "-o", "json", "--state", db], env)
    doc = json.loads(js.stdout or "{}")
    check(doc.get("elsewhere") == {"host": "box-7f3a", "kctl_pid": gone.pid,
                                   "where": "another pid namespace"}
          and "interrupted" not in doc,
          f"-o json says it too ({doc.get('elsewhere')})")


def prepare(data, tmp):
    for name in ("affine.cl", "affine_ref.cl"):
        shutil.copy(os.path.join(data, name), tmp)
    with open(os.path.join(data, "affine.yaml"), encoding="utf-8") as f:
        text = f.read()
    with open(os.path.join(tmp, "affine.yaml"), "w", encoding="utf-8") as f:
        f.write(text.replace("confirm_passes: 2\n", "confirm_passes: 1\n"))
    return os.path.join(tmp, "affine.yaml")


def lock_pid(sdir):
    """The pid session.lock records, or None."""
    try:
        with open(os.path.join(sdir, "session.lock"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("pid "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def report_state(sdir):
    try:
        with open(os.path.join(sdir, "report.md"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    block = text.rsplit("```json\n", 1)[-1].split("```", 1)[0]
    try:
        return json.loads(block).get("state")
    except ValueError:
        return None


def status_json(kctl, env, sid):
    st = run(kctl, ["status", sid, "-o", "json"], env)
    return json.loads(st.stdout) if st.returncode == 0 else {}


def liveness_and_report(kctl, data, tmp):
    spec = prepare(data, tmp)
    env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"),
               XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    proc = subprocess.Popen([kctl, "start", spec], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    sdirs = wait_for(lambda: [d for d in glob.glob(os.path.join(tmp, "runs", "affine-*"))
                              if lock_pid(d) == proc.pid], 300)
    check(len(sdirs) == 1, "session.lock records the kctl that drives the session")
    if not sdirs:
        proc.kill()
        proc.communicate()
        return
    sdir = sdirs[0]
    sid = os.path.basename(sdir)
    busy = status_json(kctl, env, sid)
    check(busy.get("state") == "running" and "interrupted" not in busy,
          f"a session a kctl drives is running, not interrupted ({busy.get('state')})")
    killed = proc.pid
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    st = run(kctl, ["status"], env)
    want = f"interrupted (kctl pid {killed} gone); go on with: kctl resume {sid}"
    check(st.returncode == 0 and want in st.stdout,
          f"status says the session is interrupted and how to go on: {st.stdout.strip()[:400]}")
    js = status_json(kctl, env, sid)
    check(js.get("interrupted", {}).get("kctl_pid") == killed,
          f"status -o json names the kctl that is gone ({js.get('interrupted')})")

    res = run(kctl, ["resume", sid], dict(env, KCTL_TEST_CRASH_AT="ended"))
    check(res.returncode == -signal.SIGKILL,
          f"resume died at the crash point 'ended' ({res.returncode}: {res.stderr[-300:]})")
    check(report_state(sdir) == "running",
          f"the kill left report.md stale ({report_state(sdir)})")
    st = run(kctl, ["status", sid], env)
    check(st.returncode == 0 and "report.md was stale; rewritten" in st.stderr,
          f"status rewrites the stale report ({st.returncode}: {st.stderr.strip()[:300]})")
    check(report_state(sdir) == "done", f"report.md says done now ({report_state(sdir)})")
    check("interrupted" not in st.stdout, "a done session is not shown interrupted")
    again = run(kctl, ["status", sid], env)
    check("rewritten" not in again.stderr, "an up-to-date report is left alone")

    # the same stale report, seen by resume and by show
    for cmd in (["resume", sid], ["show", sid]):
        path = os.path.join(sdir, "report.md")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace('\n  "state": "done"', '\n  "state": "running"'))
        out = run(kctl, cmd, env)
        check(report_state(sdir) == "done",
              f"{cmd[0]} rewrites a stale report ({out.returncode}: {out.stderr.strip()[:200]})")

    # a session folder its user cleaned away: status and show still show the
    # session from the database, with no warning and no folder made anew
    os.rename(sdir, sdir + ".gone")
    for cmd in (["status"], ["status", sid], ["show", sid]):
        out = run(kctl, cmd, env)
        shown = sid in out.stdout if cmd[0] == "status" else "\nr00" in out.stdout
        check(out.returncode == 0 and shown and "warning" not in out.stderr
              and not os.path.exists(sdir),
              f"{' '.join(cmd)} with the session's folder gone: exit 0, the session shown, "
              f"no warning ({out.returncode}: {out.stderr.strip()[:300]})")
    os.rename(sdir + ".gone", sdir)


def rounds_kept(kctl, data, tmp):
    """start --rounds 1 of a 5-round spec, paused by --step after round 0: a
    resume without --rounds runs round 1 and stops; resume --rounds 3 --step
    records 3, and the resume after it runs round 3 last."""
    home = os.path.join(tmp, "rounds")
    os.makedirs(home)
    spec = prepare(data, home)
    with open(spec, encoding="utf-8") as f:
        text = f.read()
    with open(spec, "w", encoding="utf-8") as f:
        # 5 rounds: more than either budget below, so each one shows
        f.write(text.replace("confirm_passes: 1\n", "confirm_passes: 0\n")
                .replace("max_rounds: 3\n", "max_rounds: 5\n"))
    env = dict(os.environ, KCTL_STATE_DIR=os.path.join(home, "state"),
               XDG_CACHE_HOME=os.path.join(home, "cache"))
    res = subprocess.run([kctl, "start", spec, "--rounds", "1", "--step"], env=env,
                         input="n\n", capture_output=True, text=True, timeout=900)
    sid = (res.stdout.splitlines() or [""])[0].strip()
    st = status_json(kctl, env, sid)
    check(res.returncode == 0 and st.get("state") == "paused" and st.get("rounds") == 0,
          f"start --rounds 1 --step, answer n: paused after round 0 ({res.returncode}, "
          f"{st.get('state')}, rounds {st.get('rounds')})")
    res = run(kctl, ["resume", sid], env)
    st = status_json(kctl, env, sid)
    check(res.returncode == 0 and st.get("state") == "done" and st.get("rounds") == 1,
          f"resume without --rounds keeps the budget of 1: done after round 1 "
          f"({res.returncode}, {st.get('state')}, rounds {st.get('rounds')}: "
          f"{res.stderr[-300:]!r})")
    check("[round 1/1]" in res.stderr and "round budget spent (1 rounds)" in res.stderr,
          f"its round line and decision name the budget of 1 ({res.stderr[-300:]!r})")
    res = subprocess.run([kctl, "resume", sid, "--rounds", "3", "--step"], env=env,
                         input="n\n", capture_output=True, text=True, timeout=900)
    st = status_json(kctl, env, sid)
    check(res.returncode == 0 and st.get("state") == "paused" and st.get("rounds") == 2,
          f"resume --rounds 3 --step extends it, pausing after round 2 ({res.returncode}, "
          f"{st.get('state')}, rounds {st.get('rounds')}: {res.stderr[-300:]!r})")
    res = run(kctl, ["resume", sid], env)
    st = status_json(kctl, env, sid)
    check(res.returncode == 0 and st.get("state") == "done" and st.get("rounds") == 3
          and "[round 3/3]" in res.stderr,
          f"the resume after it keeps the new budget of 3 ({res.returncode}, "
          f"{st.get('state')}, rounds {st.get('rounds')}: {res.stderr[-300:]!r})")
    return sid


def read_only_database(kctl, tmp, sid):
    """rounds_kept's database, seen by a user who may not write it: as root,
    through the user nobody (the files are root's); otherwise the file and
    its folder made read-only."""
    home = os.path.join(tmp, "rounds")
    state = os.path.join(home, "state")
    db = os.path.join(state, "kctl.db")
    out = tempfile.mkdtemp(prefix="ro-out-", dir=tmp)
    env = dict(os.environ, KCTL_STATE_DIR=state, XDG_CACHE_HOME=os.path.join(home, "cache"),
               HOME=out)
    root = os.geteuid() == 0
    old = os.path.join(tmp, "old", "kctl.db")
    os.makedirs(os.path.dirname(old))
    shutil.copy(db, old)
    with sqlite3.connect(old) as con:
        con.execute("PRAGMA user_version = 6")
    con.close()
    for d in (tmp, home, out):
        os.chmod(d, 0o777 if d == out else 0o755)
    modes = {}
    for path in (db, old):
        modes[path] = os.stat(path).st_mode
        os.chmod(path, 0o644 if root else 0o444)
        if not root:
            os.chmod(os.path.dirname(path), 0o555)

    def as_reader():
        if root:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)

    def read(args):
        return subprocess.run([kctl] + args, env=env, capture_output=True, text=True,
                              timeout=300, preexec_fn=as_reader)

    try:
        before, listing = digest(db), sorted(os.listdir(state))
        page = os.path.join(out, "page.html")
        for args, shown in ((["status"], sid), (["status", sid, "-o", "json"], f'"{sid}"'),
                            (["show", sid], "\nr00"), (["export", sid], '"kernels"'),
                            (["brief", sid], "Variant "),
                            (["report", sid, "--out", page], None)):
            res = read(args)
            got = shown in res.stdout if shown else os.path.getsize(page) > 1000
            check(res.returncode == 0 and got and "error" not in res.stderr,
                  f"{args[0]} reads a database this user may not write ({res.returncode}: "
                  f"{res.stderr.strip()[:300]})")
        check(digest(db) == before and sorted(os.listdir(state)) == listing,
              f"the readers wrote nothing to it or beside it ({sorted(os.listdir(state))})")
        res = read(["resume", sid, "--rounds", "5"])
        check(res.returncode == 3 and "may not write" in res.stderr and db in res.stderr
              and "free some space" not in res.stderr and digest(db) == before,
              f"resume says this user may not write it, and writes nothing ({res.returncode}: "
              f"{res.stderr.strip()[:300]})")
        res = read(["status", "--state", old])
        check(res.returncode != 0 and "schema (version 6) is older" in res.stderr
              and old in res.stderr,
              f"an older schema is refused, not upgraded ({res.returncode}: "
              f"{res.stderr.strip()[:300]})")
        # its owner's connection open: the -wal file exists, and is read through
        if root:
            owner = sqlite3.connect(db)
            try:
                owner.execute("SELECT count(*) FROM sessions").fetchone()
                for extra in ("-wal", "-shm"):
                    if os.path.exists(db + extra):
                        os.chmod(db + extra, 0o644)
                res = read(["status", sid, "-o", "json"])
                check(os.path.exists(db + "-wal") and res.returncode == 0
                      and f'"{sid}"' in res.stdout,
                      f"status reads it while its owner has it open ({res.returncode}: "
                      f"{res.stderr.strip()[:300]})")
            finally:
                owner.close()
    finally:
        for path, mode in modes.items():
            os.chmod(os.path.dirname(path), 0o755)
            os.chmod(path, mode)


def main():
    kctl, data = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="kctl-state-")
    try:
        damaged_database(kctl, tmp)
        unreadable_is_not_damage(kctl, tmp)
        empty_database(kctl, tmp)
        recorded_owners(kctl, tmp)
        liveness_and_report(kctl, data, tmp)
        sid = rounds_kept(kctl, data, tmp)
        read_only_database(kctl, tmp, sid)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
