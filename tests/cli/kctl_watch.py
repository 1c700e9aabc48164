#!/usr/bin/env python3
"""kctl status --watch and the live line of kctl start, against real sessions.

usage: kctl_watch.py KCTL EVALPOD DATA_DIR

Each session runs the small affine spec (DATA_DIR, tests/data/kctl) with the
real evalpod behind a wrapper that holds every `evalpod run` until a gate
file exists.  The test opens the gate only once the watcher has shown the
first round waiting, so the watcher always sees the session run, however
fast or busy the machine: nothing here depends on timing.

  - plain (stdout a pipe): one line per change, each round's done counts
    never go down and its last line says all were evaluated; exit 0 when
    the session ends, after the final status; kctl start's stderr (a pipe)
    carries no escape sequence;
  - terminal (a pseudo-terminal): the bar, the cursor moved up to redraw,
    lines cleared, no colour under NO_COLOR; kctl start on a terminal draws
    its live line (carriage return, bar, cleared before the next log line),
    and none with --no-progress;
  - a finished session: printed once, as `kctl status SESSION` prints it;
  - Ctrl-C ends a watcher with the status as it stands, exit 0, and leaves
    the session alone;
  - a session whose kctl is killed: the watcher ends, saying so;
  - an unknown session exits 1 naming it; usage errors exit 2.
"""
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import checks

check = checks.check

WAIT_S = 900  # a bound for a hung process, never a measurement

LINE = re.compile(r"^round (\d+)( \(confirmation\))?: (\d+)/(\d+) evaluated, (\d+) failed")


class Scenario:
    """A folder with the affine spec, a state database and a gated evalpod."""

    def __init__(self, kctl, evalpod, data, name):
        self.kctl = kctl
        self.tmp = tempfile.mkdtemp(prefix=f"kctl-watch-{name}-")
        for f in ("affine.cl", "affine_ref.cl"):
            shutil.copy(os.path.join(data, f), self.tmp)
        with open(os.path.join(data, "affine.yaml"), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(self.tmp, "affine.yaml"), "w", encoding="utf-8") as f:
            f.write(text.replace("confirm_passes: 2\n", "confirm_passes: 1\n"))
        self.gate = os.path.join(self.tmp, "gate")
        wrapper = os.path.join(self.tmp, "evalpod.sh")
        with open(wrapper, "w", encoding="utf-8") as f:
            f.write(f"""#!/bin/sh
if [ "$1" = run ]; then
  while [ ! -e '{self.gate}' ]; do sleep 0.1; done
fi
exec '{evalpod}' "$@"
""")
        os.chmod(wrapper, 0o755)
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(self.tmp, "cache"), KCTL_EVALPOD=wrapper)
        for name in ("NO_COLOR", "COLUMNS", "LINES"):
            self.env.pop(name, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.open_gate()  # nothing stays blocked behind it
        shutil.rmtree(self.tmp, ignore_errors=True)

    def open_gate(self):
        open(self.gate, "w").close()

    def run(self, args, **kw):
        return subprocess.run([self.kctl] + args, cwd=self.tmp, env=self.env,
                              capture_output=True, text=True, timeout=WAIT_S, **kw)

    def start(self, *extra):
        """kctl start with pipes, in its own process group; returns (proc, session id)."""
        proc = subprocess.Popen([self.kctl, "start", "affine.yaml"] + list(extra), cwd=self.tmp,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        return proc, proc.stdout.readline().strip()


class Pty:
    """A command on a pseudo-terminal of 100 columns, its output collected by a thread."""

    def __init__(self, argv, cwd, env):
        self.out = b""
        self.lock = threading.Lock()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            try:
                r, _, _ = select.select([self.fd], [], [], 1)
                if not r:
                    continue
                data = os.read(self.fd, 65536)
            except OSError:
                break
            if not data:
                break
            with self.lock:
                self.out += data

    def text(self):
        with self.lock:
            return self.out.decode("utf-8", "replace")

    def wait(self):
        """The exit status, or None after WAIT_S (the process is killed)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.thread.join(WAIT_S)
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.2)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None


def wait_until(what, limit_s=WAIT_S):
    """what()'s first true value, polled until limit_s has passed (then its last)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.1)
    return what()


def finish(proc):
    """Waits for a kctl start; its (exit status, stderr)."""
    try:
        _, err = proc.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        return None, err
    return proc.returncode, err


def rounds_of(lines):
    """{round: [(done, total, failed), ...]} from the plain lines."""
    seen = {}
    for line in lines:
        m = LINE.match(line)
        if m:
            seen.setdefault(int(m.group(1)), []).append(
                (int(m.group(3)), int(m.group(4)), int(m.group(5))))
    return seen


def plain(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "plain") as sc:
        proc, sid = sc.start()
        watcher = subprocess.Popen([kctl, "status", sid[:20], "--watch", "--interval", "0.2"],
                                   cwd=sc.tmp, env=sc.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        first = watcher.stdout.readline()  # round 0, held at the gate
        sc.open_gate()
        try:
            rest, err = watcher.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            watcher.kill()
            rest, err = watcher.communicate()
        rc, start_err = finish(proc)
        lines = [first.rstrip("\n")] + rest.splitlines()
        check(first.startswith("round 0: 0/1 evaluated, 0 failed, ETA -; no incumbent yet"),
              f"plain: the first line shows round 0 waiting ({first!r})")
        check(watcher.returncode == 0 and rc == 0,
              f"plain: the watcher exits 0 when the session ends, and the session ends well "
              f"(watcher {watcher.returncode}: {err.strip()[-300:]}; kctl start {rc})")
        seen = rounds_of(lines)
        status = sc.run(["status", sid, "-o", "json"])
        last_round = int(re.search(r'"rounds": (\d+)', status.stdout).group(1)) \
            if status.returncode == 0 else -1
        check(sorted(seen) == list(range(last_round + 1)) and last_round >= 2,
              f"plain: every round of the session has lines (rounds {sorted(seen)}, "
              f"the session has 0 to {last_round})")
        for r, counts in sorted(seen.items()):
            done = [c[0] for c in counts]
            totals = {c[1] for c in counts}
            check(done == sorted(done) and len(totals) == 1 and done[-1] == counts[-1][1]
                  and all(0 <= c[2] <= c[0] for c in counts),
                  f"plain: round {r}'s done counts never go down and end at its total "
                  f"({counts})")
        check(len(lines) == len(set(lines)),
              "plain: a line is printed only when something changed (no line twice)")
        check(any(re.search(r"took \d+", x) for x in lines)
              and any("incumbent r0" in x for x in lines),
              "plain: a finished round says how long it took; the incumbent is named")
        ends = [i for i, x in enumerate(lines) if x.startswith(sid) and " done " in x]
        check(len(ends) == 1 and not any(LINE.match(x) for x in lines[ends[0]:]),
              f"plain: the final status closes the output ({lines[-3:]})")
        check("\x1b" not in start_err and "\r" not in start_err,
              "plain: kctl start with stderr on a pipe draws no live line")
        again = sc.run(["status", sid, "--watch"])
        once = sc.run(["status", sid])
        check(again.returncode == 0 and again.stdout == once.stdout and again.stdout,
              f"a finished session: --watch prints its status once, as status does "
              f"({again.returncode}: {again.stdout[:200]!r})")


def terminal(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "tty") as sc:
        env = dict(sc.env, COLUMNS="100", NO_COLOR="1")
        start = Pty([kctl, "start", "affine.yaml"], sc.tmp, env)
        ok = wait_until(lambda: re.search(r"affine-\d{8}-\d{6}-[0-9a-f]{6}", start.text()))
        sid = ok.group(0) if ok else "none"
        watcher = Pty([kctl, "status", sid, "--watch", "--interval", "0.2"], sc.tmp, env)
        shown = wait_until(lambda: "round 0 " in watcher.text())
        sc.open_gate()
        rc_watch, rc_start = watcher.wait(), start.wait()
        out, err = watcher.text(), start.text()
        check(shown and rc_watch == 0 and rc_start == 0,
              f"terminal: the watcher shows round 0, exits 0 at the end; kctl start exits 0 "
              f"(watcher {rc_watch}, start {rc_start})")
        check(re.search(r"round \d+ \w+ \[#+\.*\] \d+/\d+ evaluated", out) is not None,
              f"terminal: the watcher draws a bar per round ({out[-300:]!r})")
        check(re.search(r"\x1b\[\d+A", out) is not None and "\x1b[K" in out,
              "terminal: the watcher moves the cursor up and clears lines to redraw")
        check(f"session {sid} running" in out and f"session {sid} done" in out,
              "terminal: the header shows the session's state as it changes")
        check("\x1b[32m" not in out and "\x1b[31m" not in out and "\x1b[32m" not in err,
              "terminal: NO_COLOR: no colour")
        tail = out.rsplit("\x1b[J", 1)[-1]
        check(tail.startswith(sid) and " done " in tail,
              f"terminal: the final status follows the last drawing ({tail[:120]!r})")
        check(re.search(r"\rround \d+ \w+ \[#*\.*\] \d+/\d+ evaluated", err) is not None,
              f"kctl start on a terminal: the live line with its bar ({err[-300:]!r})")
        check(re.search(r"\r\x1b\[Kround \d+: checked ", err) is not None
              and re.search(r"\r\x1b\[Kkctl: info: round 0", err) is not None,
              "kctl start on a terminal: the live line is cleared before each log line")
        quiet = Pty([kctl, "start", "affine.yaml", "--rounds", "1", "--no-progress"], sc.tmp,
                    env)
        rc = quiet.wait()
        check(rc == 0 and "\x1b[" not in quiet.text() and "] 0/" not in quiet.text(),
              f"kctl start --no-progress on a terminal: no live line ({rc})")


def interrupted(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "kill") as sc:
        proc, sid = sc.start()
        watcher = subprocess.Popen([kctl, "status", sid, "--watch", "--interval", "0.2"],
                                   cwd=sc.tmp, env=sc.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        first = watcher.stdout.readline()
        # Ctrl-C ends a watcher, not the session: the status as it stands, exit 0
        early = subprocess.Popen([kctl, "status", sid, "--watch"], cwd=sc.tmp, env=sc.env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = early.stdout.readline()
        early.send_signal(signal.SIGINT)
        try:
            rest, _ = early.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            early.kill()
            rest, _ = early.communicate()
        check(seen.startswith("round 0: 0/1") and early.returncode == 0
              and re.search(rf"^{sid} +running ", rest, re.M) is not None,
              f"Ctrl-C: the watcher prints the status and exits 0 ({early.returncode}: "
              f"{rest[-200:]!r})")
        check(proc.poll() is None, "Ctrl-C of a watcher leaves the session's kctl running")
        os.killpg(proc.pid, signal.SIGKILL)  # kctl and its gated evalpod wrapper
        proc.communicate()
        try:
            rest, _ = watcher.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            watcher.kill()
            rest, _ = watcher.communicate()
        check(first.startswith("round 0: 0/1") and watcher.returncode == 0
              and f"interrupted (kctl pid {proc.pid} gone); go on with: kctl resume {sid}"
              in rest,
              f"a session whose kctl is killed: the watcher ends and says so "
              f"({watcher.returncode}: {rest[-300:]!r})")


def errors(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "errors") as sc:
        res = sc.run(["status", "no-such-session", "--watch"])
        check(res.returncode == 1 and "no session 'no-such-session'" in res.stderr
              and not res.stdout,
              f"an unknown session: exit 1, named ({res.returncode}: {res.stderr.strip()})")
        for args in (["status", "x", "--watch", "-o", "json"], ["status", "--watch"],
                     ["status", "x", "--interval", "1"],
                     ["status", "x", "--watch", "--interval", "0"],
                     ["status", "x", "--watch", "--interval", "soon"]):
            res = sc.run(args)
            check(res.returncode == 2 and "usage: kctl status" in res.stderr,
                  f"{' '.join(args[1:])}: usage, exit 2 ({res.returncode})")


def main():
    kctl, evalpod, data = (os.path.abspath(a) for a in sys.argv[1:4])
    checks.run([errors, plain, terminal, interrupted], kctl, evalpod, data)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
