#!/usr/bin/env python3
"""kctl's and evalpod's command-line conventions (issue 14, part D).

usage: kctl_cli.py KCTL EVALPOD DATA_DIR

--help and --version, -o text|json, options anywhere, session ids by
unique prefix, kctl delete, and the hint printed on Ctrl-C.  Sessions are
made by starting the small affine problem and stopping it in round 0 (by
SIGINT, or by SIGKILL of its whole process group for a session whose kctl
is gone), so no test waits for a whole search.  Every scenario has its own
temporary folder, its state database named with --state.  The script ends
with "N passed, M failed" and exits 1 when anything failed.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

failures = []
passes = []

SPEC_FILES = ("affine.cl", "affine_ref.cl", "affine.yaml")
KCTL_COMMANDS = ("start", "resume", "confirm", "eval", "status", "show", "report", "export",
                 "brief", "cancel", "delete", "render", "simulate", "cache", "version")
EVALPOD_COMMANDS = ("run", "devices", "version")
WAIT_S = 300  # generous: the machine may be busy


def check(cond, what):
    (passes if cond else failures).append(what)
    print(("ok   " if cond else "FAIL ") + what)


def tail(res, n=300):
    text = (res.stderr or "").strip()
    return f"{res.returncode}: {text[-n:]!r}"


class Scenario:
    """A temporary folder with the spec files and a state database named by --state."""

    def __init__(self, kctl, evalpod, data):
        self.kctl = kctl
        self.tmp = tempfile.mkdtemp(prefix="kctl-cli-d-")
        for name in SPEC_FILES:
            shutil.copy(os.path.join(data, name), self.tmp)
        self.spec = os.path.join(self.tmp, "affine.yaml")
        self.db = os.path.join(self.tmp, "db", "kctl.db")
        # KCTL_STATE_DIR points elsewhere: only --state reaches the sessions
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "elsewhere"),
                        XDG_CACHE_HOME=os.path.join(self.tmp, "cache"),
                        KCTL_EVALPOD=evalpod)
        self.env.pop("KCTL_TEST_CRASH_AT", None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, args, timeout=WAIT_S):
        return subprocess.run([self.kctl] + args, env=self.env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def without_confirmation(self):
        """Sets the spec's confirm_passes to 0: no confirmation rounds, quicker sessions."""
        with open(self.spec, encoding="utf-8") as f:
            text = f.read()
        with open(self.spec, "w", encoding="utf-8") as f:
            f.write(text.replace("confirm_passes: 2", "confirm_passes: 0"))

    def session_dir(self, sid):
        return os.path.join(self.tmp, "runs", sid)

    def start_until_round0(self):
        """Starts a session and returns (process, id) once round 0's evalpod runs."""
        proc = subprocess.Popen([self.kctl, "start", self.spec, "--state", self.db],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        sid = proc.stdout.readline().strip()
        log = os.path.join(self.session_dir(sid), "rounds", "r000", "evalpod.log")
        deadline = time.time() + WAIT_S
        while sid and time.time() < deadline and proc.poll() is None and not os.path.exists(log):
            time.sleep(0.05)
        return proc, sid

    def interrupted_session(self):
        """A session stopped by Ctrl-C in round 0: (id, exit status, stderr)."""
        proc, sid = self.start_until_round0()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
        return sid, proc.returncode, err

    def killed_session(self):
        """A session whose kctl and evalpod were SIGKILLed in round 0: still "running"."""
        proc, sid = self.start_until_round0()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return sid

    def status_json(self, sid=None):
        res = self.run(["status"] + ([sid] if sid else []) + ["-o", "json", "--state", self.db])
        try:
            return json.loads(res.stdout) if res.returncode == 0 else None
        except ValueError:
            return None


def help_and_version(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data) as sc:
        for cmd in KCTL_COMMANDS:
            for flag in ("--help", "-h"):
                res = sc.run([cmd, flag])
                check(res.returncode == 0 and res.stdout.startswith(f"usage: kctl {cmd}")
                      and not res.stderr,
                      f"kctl {cmd} {flag}: usage on stdout, exit 0 (got {tail(res)})")
        # An unknown option: getopt's line and the command's own usage on stderr,
        # exit 2 (64 for eval, whose statuses are CI's: docs/kctl.md), and every option that usage names is in `kctl CMD --help` too
        # (the two texts are kept apart, in main.c and in the command's file).
        for cmd in KCTL_COMMANDS:
            if cmd == "version":
                continue
            res = sc.run([cmd, "--no-such-option"])
            usage = res.stderr[res.stderr.find("usage: kctl"):]
            check(res.returncode == (64 if cmd == "eval" else 2)
                  and "unrecognized option '--no-such-option'" in res.stderr
                  and usage.startswith(f"usage: kctl {cmd}") and "error" not in res.stderr
                  and not res.stdout,
                  f"kctl {cmd} --no-such-option: getopt's line and the usage, a usage exit "
                  f"(got {tail(res)})")
            helped = sc.run([cmd, "--help"]).stdout
            missing = sorted(set(re.findall(r"--[a-z][a-z-]*", usage)) -
                             set(re.findall(r"--[a-z][a-z-]*", helped)))
            check(usage and not missing,
                  f"kctl {cmd} --help names every option of its usage (missing {missing})")
        res = sc.run(["version", "extra"])
        check(res.returncode == 2 and "usage: kctl version" in res.stderr and not res.stdout,
              f"kctl version extra: refused with the usage, exit 2 (got {tail(res)})")
        for args, said in ((["version", "extra"], "usage: evalpod version"),
                           (["devices", "-o", "xml"], "-o takes json (text is the default), "
                            "not 'xml'")):
            res = subprocess.run([evalpod] + args, capture_output=True, text=True,
                                 timeout=WAIT_S)
            check(res.returncode == 2 and said in res.stderr and not res.stdout,
                  f"evalpod {' '.join(args)}: refused, saying why, exit 2 (got {tail(res)})")
        res = sc.run(["show", "some-session", "--help", "--state", sc.db])
        check(res.returncode == 0 and "usage: kctl show" in res.stdout
              and "no session" not in res.stderr,
              f"kctl show ID --help: the usage, no session looked up (got {tail(res)})")
        check(not os.path.exists(sc.db), "kctl show --help: the state database is not opened")
        for cmd in EVALPOD_COMMANDS:
            res = subprocess.run([evalpod, cmd, "--help"], capture_output=True, text=True,
                                 timeout=WAIT_S)
            check(res.returncode == 0 and res.stdout.startswith(f"usage: evalpod {cmd}"),
                  f"evalpod {cmd} --help: usage on stdout, exit 0 (got {tail(res)})")
        for prog, args in ((kctl, ["--version"]), (kctl, ["version"]), (evalpod, ["--version"]),
                           (evalpod, ["version"])):
            name = os.path.basename(prog)
            res = subprocess.run([prog] + args, capture_output=True, text=True, timeout=WAIT_S)
            check(res.returncode == 0
                  and re.match(rf"{name} [0-9]+\.[0-9]+\.[0-9]+( \(.+\))?\n\Z", res.stdout),
                  f"{name} {args[0]}: prints the version, exit 0 (got {res.returncode}: "
                  f"{res.stdout!r})")
        res = sc.run(["start"])
        check(res.returncode == 2 and "usage: kctl start" in res.stderr and not res.stdout,
              f"kctl start without a spec: usage on stderr, exit 2 (got {tail(res)})")


def output_formats(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data) as sc:
        res = sc.run(["status", "-o", "text", "--state", sc.db])
        check(res.returncode == 0 and "no sessions yet" in res.stdout,
              f"status -o text: the text table (got {tail(res)}, {res.stdout!r})")
        # output that cannot be written is a failure, said on stderr; a closed
        # stdout is /dev/null (no file kctl opens takes its place)
        for cmd in (["status"], ["version"], ["--help"]):
            with open("/dev/full", "w") as full:
                res = subprocess.run([kctl] + cmd + (["--state", sc.db] if len(cmd) == 1
                                                     and cmd[0] == "status" else []),
                                     env=sc.env, stdout=full, stderr=subprocess.PIPE,
                                     text=True, timeout=WAIT_S)
            check(res.returncode == 1 and "writing to standard output failed: No space left"
                  in res.stderr,
                  f"{cmd[0]} > /dev/full: exit 1 saying so ({res.returncode}: "
                  f"{res.stderr.strip()[:200]!r})")
        res = subprocess.run([kctl, "status", "--state", sc.db], env=sc.env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             timeout=WAIT_S, preexec_fn=lambda: os.close(1))
        check(res.returncode == 0 and not res.stderr,
              f"status with stdout closed: exit 0 ({res.returncode}: {res.stderr[:200]!r})")
        for cmd in (["status", "--state", sc.db], ["show", "x", "--state", sc.db],
                    ["brief", "x", "--state", sc.db], ["simulate", "x"], ["cache", "stats"]):
            res = sc.run(cmd + ["-o", "yaml"])
            check(res.returncode == 2 and "usage: kctl " + cmd[0] in res.stderr
                  and "-o takes text or json, not 'yaml'" in res.stderr,
                  f"{cmd[0]} -o yaml: says what -o takes, usage error, exit 2 (got {tail(res)})")


def interrupt_and_prefix(kctl, evalpod, data):
    """Ctrl-C's hint, -o and option order on show, prefixes, delete of a stopped session."""
    with Scenario(kctl, evalpod, data) as sc:
        sid, rc, err = sc.interrupted_session()
        check(rc == 130 and f"go on with: kctl resume {sid} --state {sc.db}" in err,
              f"Ctrl-C: the hint repeats --state (exit {rc}, {err.strip()[-300:]!r})")
        st = sc.status_json(sid) or {}
        check(st.get("state") == "paused", f"Ctrl-C: the session is paused (got {st})")
        sid2, _, _ = sc.interrupted_session()
        ids = {s.get("session") for s in sc.status_json() or []}
        check(ids == {sid, sid2} and sid != sid2, f"two sessions recorded (got {ids})")
        common = os.path.commonprefix([sid, sid2])

        for args in (["show", sid, "-o", "json", "--state", sc.db],
                     ["show", "--state", sc.db, "-o", "json", sid],
                     ["show", "-o", "json", sid, "--state=" + sc.db]):
            res = sc.run(args)
            try:
                rows = json.loads(res.stdout)
            except ValueError:
                rows = None
            check(res.returncode == 0 and isinstance(rows, list)
                  and [r.get("id") for r in rows] == ["r00-start"],
                  f"{' '.join(a if a != sc.db else 'DB' for a in args)}: the variants as "
                  f"JSON (got {tail(res)}, {res.stdout[:200]!r})")
        res = sc.run(["show", sid, "r00-start", "-o", "json", "--state", sc.db])
        try:
            one = json.loads(res.stdout)
        except ValueError:
            one = None
        check(res.returncode == 0 and isinstance(one, dict) and one.get("id") == "r00-start"
              and "source" in one and "result" in one,
              f"show ID VARIANT -o json: one variant as JSON (got {tail(res)})")
        res = sc.run(["show", sid, "--state", sc.db])
        check(res.returncode == 0 and res.stdout.startswith("variant")
              and "r00-start" in res.stdout, f"show -o text is the default table ({tail(res)})")

        unique = sid[:len(common) + 1]
        res = sc.run(["status", unique, "-o", "json", "--state", sc.db])
        try:
            got = json.loads(res.stdout).get("session")
        except (ValueError, AttributeError):
            got = None
        check(res.returncode == 0 and got == sid,
              f"status with the unique prefix {unique!r}: the session (got {tail(res)}, {got})")
        res = sc.run(["show", "--state", sc.db, unique])
        check(res.returncode == 0 and "r00-start" in res.stdout,
              f"show with a unique prefix (got {tail(res)})")
        res = sc.run(["status", common, "--state", sc.db])
        check(res.returncode == 1 and "ambiguous" in res.stderr and sid in res.stderr
              and sid2 in res.stderr and not res.stdout,
              f"an ambiguous prefix: exit 1 listing both sessions (got {tail(res)})")
        res = sc.run(["resume", common, "--state", sc.db])
        check(res.returncode == 1 and "ambiguous" in res.stderr,
              f"resume with an ambiguous prefix: exit 1, nothing run (got {tail(res)})")
        res = sc.run(["show", "nosuch", "--state", sc.db])
        check(res.returncode == 1 and "no session 'nosuch'" in res.stderr,
              f"an unknown id: exit 1 naming it (got {tail(res)})")

        res = sc.run(["delete", unique, "--state", sc.db])
        check(res.returncode == 0 and f"deleted session {sid}" in res.stdout
              and "rows" in res.stdout and sc.session_dir(sid) in res.stdout,
              f"delete a paused session by prefix: exit 0, says what went (got {tail(res)}, "
              f"{res.stdout!r})")
        ids = {s.get("session") for s in sc.status_json() or []}
        check(ids == {sid2} and not os.path.exists(sc.session_dir(sid))
              and os.path.isdir(sc.session_dir(sid2)),
              f"delete: its rows and folder are gone, the other session is kept (got {ids})")
        res = sc.run(["show", sid, "--state", sc.db])
        check(res.returncode == 1 and "no session" in res.stderr,
              f"delete: the session is no longer found (got {tail(res)})")
        res = sc.run(["delete", sid, "--state", sc.db])
        check(res.returncode == 1 and "no session" in res.stderr,
              f"delete twice: exit 1, no session (got {tail(res)})")
        # a session whose folder its user removed by hand: its rows go, and
        # the output says the folder was gone, not that it removed it
        shutil.rmtree(sc.session_dir(sid2))
        res = sc.run(["delete", sid2, "--state", sc.db])
        check(res.returncode == 0 and f"deleted session {sid2}" in res.stdout
              and "was gone already" in res.stdout and "removed" not in res.stdout
              and sc.status_json() == [],
              f"delete of a session whose folder is gone: exit 0, rows deleted, the folder "
              f"said gone (got {tail(res)}, {res.stdout!r})")


def delete_running(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data) as sc:
        proc, sid = sc.start_until_round0()
        try:
            res = sc.run(["delete", sid, "--force", "--state", sc.db])
            check(res.returncode == 1 and "being driven" in res.stderr
                  and os.path.isdir(sc.session_dir(sid)) and sc.status_json(sid) is not None,
                  f"delete --force of a session a kctl drives: refused, all kept "
                  f"(got {tail(res)})")
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        st = sc.status_json(sid) or {}
        check(st.get("state") == "running", f"a killed kctl leaves 'running' (got {st})")
        res = sc.run(["delete", sid, "--state", sc.db])
        check(res.returncode == 1 and "--force" in res.stderr
              and os.path.isdir(sc.session_dir(sid)) and sc.status_json(sid) is not None,
              f"delete of a running session without --force: refused, all kept "
              f"(got {tail(res)})")
        res = sc.run(["delete", "--force", sid, "--state", sc.db])
        check(res.returncode == 0 and f"deleted session {sid}" in res.stdout
              and not os.path.exists(sc.session_dir(sid)) and sc.status_json() == [],
              f"delete --force once its kctl is gone: exit 0, all removed (got {tail(res)})")


def progress(sc, sid, err):
    """Progress of the session that printed err: per variant, and an estimated ETA."""
    batch = os.path.join(sc.session_dir(sid), "rounds", "r001", "batch.json")
    try:
        with open(batch, encoding="utf-8") as f:
            ids = [v["id"] for v in json.load(f)["variants"]]
    except (OSError, ValueError, KeyError, TypeError):
        ids = []
    lines = err.splitlines()
    checked = [i for i in ids if any(re.fullmatch(
        rf"round 1: checked {re.escape(i)} \([0-9]+ of [0-9]+, [0-9.]+ s\)", l)
        for l in lines)]
    check(ids and checked == ids,
          f"kctl: a line per variant of round 1 as its checks end (want {ids}, got {checked})")
    order = [n for n, l in enumerate(lines)
             if re.match(r"round 1: (timing [0-9]+ programs|timing done)", l)
             or l.startswith("[round 1/")]
    check(len(order) == 3 and order == sorted(order),
          f"kctl: round 1 shows timing start, timing end, then its summary (got "
          f"{[lines[n] for n in order]})")
    eta = [l for l in lines if "ETA" in l]
    check(eta and all(re.search(r"\(ETA about [0-9]+ s at [0-9.]+ s per evaluation so far\)", l)
                      for l in eta) and "at most" not in err,
          f"kctl: the ETA is an estimate from measured evaluations (got {eta})")
    out = os.path.join(sc.tmp, "again")
    env = dict(sc.env)
    for quiet in (False, True):
        res = subprocess.run([sc.env["KCTL_EVALPOD"], "run", batch, "--out", out + str(quiet)]
                             + (["--quiet"] if quiet else []), env=env, capture_output=True,
                             text=True, timeout=WAIT_S, stdin=subprocess.DEVNULL)
        got = [l for l in res.stderr.splitlines()
               if re.match(r"evalpod: (checked |timing |checking |\S+ passed its checks)", l)]
        if quiet:
            check(res.returncode == 0 and not got,
                  f"evalpod run --quiet: no progress lines (got {tail(res)})")
        else:
            want = ([f"checked {i}" for i in ids] + [f"{i} passed its checks" for i in ids]
                    + ["timing done"])
            check(res.returncode == 0 and all(any(w in l for l in got) for w in want)
                  and got[-1].startswith("evalpod: timing done"),
                  f"evalpod run: a line per program as its checks end, and timing's start and "
                  f"end, on stderr (got {got})")


def rounds_extend(kctl, evalpod, data):
    """--rounds N ends a session; resume --rounds M > its rounds extends it."""
    with Scenario(kctl, evalpod, data) as sc:
        sc.without_confirmation()
        res = sc.run(["start", sc.spec, "--rounds", "1", "--state", sc.db])
        sid = res.stdout.strip()
        st = sc.status_json(sid) or {}
        check(res.returncode == 0 and st.get("state") == "done" and st.get("rounds") == 1,
              f"start --rounds 1: done after round 1 (got {tail(res)}; {st.get('state')}, "
              f"rounds {st.get('rounds')})")
        progress(sc, sid, res.stderr)
        res = sc.run(["resume", sid, "--state", sc.db])
        check(res.returncode == 1 and "--rounds N (N > 1)" in res.stderr,
              f"resume of a done session without --rounds: exit 1 saying how to extend it "
              f"(got {tail(res)})")
        res = sc.run(["resume", sid, "--rounds", "1", "--state", sc.db])
        check(res.returncode == 1 and (sc.status_json(sid) or {}).get("rounds") == 1,
              f"resume --rounds 1 of a session with 1 round: refused (got {tail(res)})")
        res = sc.run(["resume", sid, "--rounds", "2", "--state", sc.db])
        st = sc.status_json(sid) or {}
        check(res.returncode == 0 and st.get("state") == "done" and st.get("rounds") == 2
              and "round budget spent (2 rounds)" in (st.get("reason") or "")
              + res.stderr,
              f"resume --rounds 2: one more round, done again (got {tail(res)}; "
              f"{st.get('state')}, rounds {st.get('rounds')})")


def round1_params(sc, sid):
    """The parameters of round 1's variants, in their order."""
    res = sc.run(["show", sid, "-o", "json", "--state", sc.db])
    try:
        rows = json.loads(res.stdout) if res.returncode == 0 else []
    except ValueError:
        return None
    rows = rows.get("variants", []) if isinstance(rows, dict) else rows
    return [r.get("params") for r in rows if str(r.get("id", "")).startswith("r01-")]


def seeds(kctl, evalpod, data):
    """start --seed N seeds the proposer: another seed, another first search round."""
    with Scenario(kctl, evalpod, data) as sc:
        sc.without_confirmation()
        picks = []
        for extra in ([], ["--seed", "7"]):
            res = sc.run(["start", sc.spec, "--rounds", "1", "--state", sc.db] + extra)
            picks.append(round1_params(sc, res.stdout.strip()) if res.returncode == 0 else None)
            check(res.returncode == 0 and picks[-1] and len(picks[-1]) == 3,
                  f"start --rounds 1 {' '.join(extra)}: round 1 proposed 3 points "
                  f"(got {tail(res)}; {picks[-1]})")
        # the spec's seed is 1 (its default); seed 7's Latin hypercube is another
        check(picks[0] and picks[1] and picks[0] != picks[1],
              f"--seed 7 chose other points than the spec's seed ({picks[0]} and {picks[1]})")
        for args, why in ((["--seed", "-1"], "a negative seed"), (["--seed", "1e3"], "not whole"),
                          (["--seed", "9223372036854775808"], "past 2^63 - 1")):
            res = sc.run(["start", sc.spec, "--state", sc.db] + args)
            check(res.returncode == 2 and "--seed wants a whole number" in res.stderr
                  and not res.stdout, f"start {' '.join(args)} ({why}): exit 2 "
                  f"(got {tail(res)})")
        res = sc.run(["resume", "affine", "--seed", "7", "--state", sc.db])
        check(res.returncode == 2 and "usage: kctl resume" in res.stderr,
              f"resume --seed: a usage error, the seed is the session's (got {tail(res)})")


COMPLETION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "controller",
                          "kctl-completion.bash")


def complete(sc, words, cword):
    """The completions bash offers for words with the cursor on words[cword]."""
    script = ('source "$1"; shift; COMP_CWORD="$1"; shift; COMP_WORDS=("$@"); '
              'COMP_LINE="$*"; _kctl; printf "%s\\n" "${COMPREPLY[@]}"')
    res = subprocess.run(["bash", "-c", script, "bash", COMPLETION, str(cword), sc.kctl]
                         + words, env=sc.env, capture_output=True, text=True, timeout=WAIT_S,
                         cwd=sc.tmp)
    return res.returncode, sorted(l for l in res.stdout.splitlines() if l)


def completion(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data) as sc:
        sid, _, _ = sc.interrupted_session()
        cases = [
            (["st"], 1, ["start", "status"], "subcommands"),
            (["de"], 1, ["delete"], "subcommands (delete)"),
            (["delete", "--f"], 2, ["--force"], "a subcommand's options"),
            (["status", "-o", ""], 3, ["json", "text"], "-o's formats"),
            (["render", "-o", ""], 3, ["json", "yaml"], "render's -o"),
            (["report", "-o", ""], 3, ["html", "json", "md"], "report's -o"),
            (["rep"], 1, ["report"], "subcommands (report)"),
            (["report", "--state", sc.db, ""], 4, [sid], "report: session ids"),
            (["show", "", "--state", sc.db], 2, [sid], "session ids, --state after"),
            (["show", "--state", sc.db, sid[:8]], 4, [sid], "session ids by prefix"),
            (["delete", "--state=" + sc.db, ""], 3, [sid], "session ids, --state=FILE"),
            (["show", "--state", sc.db, sid, "r00"], 5, ["r00-start"], "variant ids of show"),
            (["start", ""], 2, [n for n in os.listdir(sc.tmp) if n.endswith(".yaml")
                                or os.path.isdir(os.path.join(sc.tmp, n))],
             "start: spec files and folders, not the .cl files"),
        ]
        for words, cword, want, what in cases:
            rc, got = complete(sc, words, cword)
            check(rc == 0 and got == sorted(want),
                  f"completion of {what}: {words} -> {sorted(want)} (got {rc}, {got})")
        for cmd in KCTL_COMMANDS:  # every option `kctl CMD --help` names
            want = set(re.findall(r"--[a-z][a-z-]*", sc.run([cmd, "--help"]).stdout))
            rc, got = complete(sc, [cmd, "--"], 2)
            check(rc == 0 and not want - set(got),
                  f"completion of {cmd}'s options: every one its --help names "
                  f"(missing {sorted(want - set(got))})")
        rc, got = complete(sc, ["show", ""], 2)  # the default database: none there
        check(rc == 0 and got == [], f"completion without the session's --state: none ({got})")


README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def readme_files():
    """{name: text} of the files that README.md's "Your own kernel" shows."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Your own kernel", 1)[-1].split("\n## ", 1)[0]
    files, name, lines = {}, None, []
    for line in section.splitlines() + ["end"]:
        m = re.fullmatch(r"`([a-z_]+\.(?:cl|yaml))`:", line)
        if name and (line.startswith("    ") or not line.strip()):
            lines.append(line[4:])
            continue
        if name:
            files[name] = "\n".join(lines).strip("\n") + "\n"
            name = None
        if m:
            name, lines = m.group(1), []
    return files


def readme_quick_start(kctl, evalpod, data):
    """The README's own kernel runs: its round 0 passes its checks."""
    with Scenario(kctl, evalpod, data) as sc:
        files = readme_files()
        check(sorted(files) == ["scale.cl", "scale.yaml", "scale_ref.cl"],
              f"README: 'Your own kernel' shows a template, a reference and a spec "
              f"(got {sorted(files)})")
        for name, text in files.items():
            with open(os.path.join(sc.tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
        check("EVOLVE-BLOCK-START" in files.get("scale.cl", "")
              and "EVOLVE-BLOCK-END" in files.get("scale.cl", ""),
              "README: the template shows the block markers")
        proc = subprocess.run([kctl, "start", "scale.yaml", "--step", "--state", sc.db],
                              env=sc.env, cwd=sc.tmp, input="n\n", capture_output=True,
                              text=True, timeout=WAIT_S)
        sid = proc.stdout.strip()
        st = sc.status_json(sid) or {}
        rows = sc.run(["show", sid, "-o", "json", "--state", sc.db])
        try:
            start = [v for v in json.loads(rows.stdout) if v.get("id") == "r00-start"]
        except ValueError:
            start = []
        check(proc.returncode == 0 and st.get("state") == "paused" and start
              and start[0].get("status") == "ok",
              f"README's kernel: round 0 passes its checks against the reference "
              f"(got {tail(proc)}; {st.get('state')}, {start})")
        check(f"paused; go on with: kctl resume {sid} --state {sc.db}" in proc.stderr,
              f"--step, answer n: the hint repeats --state (got {tail(proc)})")


def main():
    if len(sys.argv) != 4:
        print("usage: kctl_cli.py KCTL EVALPOD DATA_DIR", file=sys.stderr)
        return 2
    kctl, evalpod, data = (os.path.abspath(a) for a in sys.argv[1:])
    only = os.environ.get("KCTL_CLI_ONLY")
    for scenario in (help_and_version, output_formats, interrupt_and_prefix, delete_running,
                     completion, readme_quick_start, rounds_extend, seeds):
        if only and scenario.__name__ != only:
            continue
        t0 = time.time()
        try:
            scenario(kctl, evalpod, data)
        except Exception as e:  # a crash of the script is a failure, not a stop
            check(False, f"{scenario.__name__}: raised {type(e).__name__}: {e}")
        print(f"     ({scenario.__name__}: {time.time() - t0:.1f}s)")
    print(f"{len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
