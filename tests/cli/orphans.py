#!/usr/bin/env python3
"""An evalpod worker never outlives its evalpod.

usage: orphans.py EVALPOD DATA_DIR

A batch holds a kernel that never ends, with a run deadline far longer than
the test.  Once the worker checking it is running, the evalpod parent is
killed with SIGKILL (no chance to clean up).  The worker must then be gone
within a generous bound: it is bound to its parent's life (PR_SET_PDEATHSIG).
Then, with a short run deadline, the parent is stopped (SIGSTOP: alive, but
killing nobody): the worker must end at its own deadline (its alarm).  So a
`kctl resume` never waits on a leftover spinning in a hung kernel.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import checks

check = checks.check
read = checks.read

# How long the worker may take to go once its parent is gone; it dies at
# once, the bound only keeps a slow machine from failing the test.
GONE_WITHIN_S = 60
# The run deadline of the batch: the worker must not wait for it.
RUN_TIMEOUT_S = 600
# A worker's own deadline is 22 + 10 s in parent_stopped; far more is allowed.
OWN_DEADLINE_WITHIN_S = 180


def alive(pid):
    """True while pid exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def workers_of(parent, mode, arg):
    """Pids of `evalpod __worker MODE WORK ARG` processes whose parent is parent."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if (ppid == parent and len(argv) > 4 and argv[1] == b"__worker"
                and argv[2] == mode.encode() and argv[4] == arg.encode()):
            found.append(int(entry))
    return found


def progress_of(tmp, vid):
    """The stage the worker of variant vid last wrote, or None."""
    for path in glob.glob(os.path.join(tmp, "evalpod-*", "w", "p-" + vid, "progress")):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read().strip()
        except OSError:
            pass
    return None


def wait_for(what, limit_s, poll_s=0.2):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(poll_s)
    return what()


def start_hang(evalpod, data, tmp, run_timeout_s):
    """evalpod on the endless kernel; returns (proc, worker pids) once the
    worker checking it has reached its correctness run."""
    path = os.path.join(tmp, "batch.json")
    batch = checks.affine_batch(
        "orphan", read(data, "reference.cl"),
        [{"id": "hang", "source": read(data, "hang.cl"), "build_options": ""}],
        {"compile_timeout_s": 20, "run_timeout_s": run_timeout_s, "time_timeout_s": 900})
    with open(path, "w", encoding="utf-8") as f:
        json.dump(batch, f)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"), TMPDIR=tmp)
    proc = subprocess.Popen([evalpod, "run", path, "--out", os.path.join(tmp, "out")],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = wait_for(lambda: workers_of(proc.pid, "check", "hang"), 300)
    check(len(pids) == 1, f"the worker checking the endless kernel runs ({pids})")
    stage = wait_for(lambda: progress_of(tmp, "hang") == "correctness", 300)
    check(stage, "the worker reached the correctness run of the endless kernel")
    return proc, pids


def started_in(tmp):
    """Pids of live processes whose TMPDIR is tmp or below it: the evalpod
    run there and everything it started (its workers get TMPDIR in their
    own folder below it, and the compiler, linker and tools they start
    inherit it)."""
    want = os.fsencode(tmp)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        for var in env:
            if var.startswith(b"TMPDIR="):
                val = var[len(b"TMPDIR="):]
                if (val == want or val.startswith(want + b"/")) and alive(int(entry)):
                    found.append(int(entry))
                break
    return found


def describe(pids):
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().replace(b"\0", b" ").decode(errors="replace")
            out.append(f"{pid} {argv}")
        except OSError:
            out.append(str(pid))
    return "; ".join(out) or "none"


def cleanup(proc, pids, tmp):
    """Ends the run; returns the processes it started that were still there
    GONE_WITHIN_S after it (killed then, so the folder can go)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not started_in(tmp), GONE_WITHIN_S)
    left = started_in(tmp)
    text = describe(left)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    wait_for(lambda: not started_in(tmp), GONE_WITHIN_S)
    return left, text


def parent_killed(evalpod, data):
    """SIGKILL of the evalpod parent takes the worker with it."""
    with tempfile.TemporaryDirectory() as tmp:
        proc, pids = None, []
        try:
            proc, pids = start_hang(evalpod, data, tmp, RUN_TIMEOUT_S)
            if not pids:
                return
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            gone = wait_for(lambda: not alive(pids[0]), GONE_WITHIN_S)
            check(gone, f"the worker (pid {pids[0]}) is gone within {GONE_WITHIN_S} s of its "
                        f"evalpod's SIGKILL")
        finally:
            if proc:
                left, text = cleanup(proc, pids, tmp)
        if pids:
            # Not only the worker: the other workers, and what they started
            # (PoCL's linker, stage 5's tools), which get no signal of
            # their own and must end by themselves.
            check(not left, f"nothing the killed evalpod started is still running after "
                            f"its worker went and up to {GONE_WITHIN_S} s more (left: {text})")


def parent_stopped(evalpod, data):
    """With its parent alive but not watching (stopped), the worker still ends
    at its own deadline: compile + run limits (22 s) plus the 10 s grace."""
    with tempfile.TemporaryDirectory() as tmp:
        proc, pids = None, []
        try:
            proc, pids = start_hang(evalpod, data, tmp, 2)
            if not pids:
                return
            proc.send_signal(signal.SIGSTOP)
            gone = wait_for(lambda: not alive(pids[0]), OWN_DEADLINE_WITHIN_S)
            check(gone, f"with evalpod stopped, the worker (pid {pids[0]}) ends at its own "
                        f"deadline (within {OWN_DEADLINE_WITHIN_S} s)")
            proc.send_signal(signal.SIGCONT)
        finally:
            if proc:
                cleanup(proc, pids, tmp)


def main():
    evalpod, data = sys.argv[1], sys.argv[2]
    parent_killed(evalpod, data)
    parent_stopped(evalpod, data)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
