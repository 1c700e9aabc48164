#!/usr/bin/env python3
"""The kctl command line, end to end, on the small affine problem.

usage: kctl.py KCTL EVALPOD DATA_DIR

Every scenario runs in its own temporary folder, with KCTL_STATE_DIR and
XDG_CACHE_HOME inside it and a copy of the spec files there (the spec's
session.output_dir "runs" resolves against that folder).  kctl is pointed
at EVALPOD with KCTL_EVALPOD.  One behaviour per check; the script ends
with "N passed, M failed" and exits 1 when anything failed.
"""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

failures = []
passes = []

SPEC_FILES = ("affine.cl", "affine_ref.cl", "affine.yaml")
DECISIONS = ("exploit", "explore", "finish", "stop", "confirm")


def check(cond, what):
    (passes if cond else failures).append(what)
    print(("ok   " if cond else "FAIL ") + what)


class Scenario:
    """A temporary folder with the spec files, its own state and cache."""

    def __init__(self, kctl, evalpod, data, label):
        self.kctl = kctl
        self.label = label
        self.tmp = tempfile.mkdtemp(prefix="kctl-cli-")
        for name in SPEC_FILES:
            shutil.copy(os.path.join(data, name), self.tmp)
        self.spec = os.path.join(self.tmp, "affine.yaml")
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(self.tmp, "cache"),
                        KCTL_EVALPOD=evalpod)
        self.env.pop("KCTL_TEST_CRASH_AT", None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, args, stdin=None, env=None, timeout=300):
        return subprocess.run([self.kctl] + args, env=env or self.env, input=stdin,
                              capture_output=True, text=True, timeout=timeout)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def wrap_evalpod(self, evalpod, when, errors, status):
        """kctl's evalpod becomes a script: `evalpod run` while the shell test
        `when` holds prints the lines errors on stderr and exits status;
        everything else goes to the real evalpod."""
        say = "".join(f"  echo {shlex.quote(e)} >&2\n" for e in errors)
        wrapper = self.write("evalpod.sh", f"""#!/bin/sh
if [ "$1" = run ] && {when}; then
{say}  exit {status}
fi
exec {evalpod} "$@"
""")
        os.chmod(wrapper, 0o755)
        self.env["KCTL_EVALPOD"] = wrapper

    def read(self, *parts):
        try:
            with open(os.path.join(*parts), encoding="utf-8") as f:
                return f.read()
        except OSError:
            return None

    def derive(self, name, replacements):
        """A copy of affine.yaml with each (old, new) replaced exactly once."""
        text = self.read(self.spec)
        for old, new in replacements:
            if text.count(old) != 1:
                raise RuntimeError(f"affine.yaml does not hold {old!r} once")
            text = text.replace(old, new)
        return self.write(name, text)

    def status(self, sid=None):
        res = self.run(["status"] + ([sid] if sid else []) + ["-o", "json"])
        try:
            return json.loads(res.stdout) if res.returncode == 0 else None
        except ValueError:
            return None

    def session_dir(self, sid):
        return os.path.join(self.tmp, "runs", sid)


def tail(res, n=200):
    """Exit status and the last line of stderr, for a check's label."""
    lines = res.stderr.strip().splitlines()
    return f"{res.returncode}: {lines[-1][-n:] if lines else ''}"


def error_text(stderr):
    """The text of kctl's error line, after its "kctl: error: " prefix."""
    for line in stderr.splitlines():
        if line.startswith("kctl: error: "):
            return line[len("kctl: error: "):]
    return ""


def first_line(text):
    lines = text.splitlines()
    return lines[0].strip() if lines else ""


def show_rows(sc, sid):
    """kctl show SESSION as {variant: {parent, status}}."""
    rows = {}
    for line in sc.run(["show", sid]).stdout.splitlines()[1:]:
        f = line.split()
        if len(f) >= 4:
            rows[f[0]] = {"parent": f[1], "status": f[3]}
    return rows


def report_rows(text):
    """Rows of report.md's "## Rounds" table as lists of cells."""
    # A C string printed from NULL (glibc's "(null)") is never report text.
    check("(null)" not in (text or ""), "report.md has no '(null)' in it (%r)"
          % [ln for ln in (text or "").splitlines() if "(null)" in ln][:2])
    rows, inside = [], False
    for line in (text or "").splitlines():
        if line.startswith("## "):
            inside = line.strip() == "## Rounds"
            continue
        if inside and line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and cells[0] != "round":
                rows.append(cells)
    return rows


# --- 1 ------------------------------------------------------------------------


def usage(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "usage") as sc:
        res = sc.run([])
        check(res.returncode == 2 and "usage: kctl" in res.stderr,
              f"no arguments: exit 2 with usage on stderr (got {res.returncode})")
        res = sc.run(["help"])
        check(res.returncode == 0 and "usage: kctl" in res.stdout,
              f"help: exit 0 with usage on stdout (got {res.returncode})")
        res = sc.run(["bogus"])
        check(res.returncode == 2 and "bogus" in res.stderr,
              f"unknown command: exit 2 naming it (got {tail(res)})")


# --- 2, 9 ---------------------------------------------------------------------


def full_session(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "full") as sc:
        res = sc.run(["start", sc.spec])
        sid = first_line(res.stdout)
        check(res.returncode == 0, f"full session: exit 0 (got {tail(res)})")
        check(re.fullmatch(r"affine-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}", sid) is not None
              and os.path.isdir(sc.session_dir(sid)),
              f"full session: stdout's first line is the session id (got {sid!r})")
        st = sc.status(sid) or {}
        best = st.get("best") if isinstance(st.get("best"), dict) else {}
        check(st.get("session") == sid and st.get("state") == "done",
              f"full session: status says session {sid}, state done "
              f"(got {st.get('session')}, {st.get('state')})")
        check(isinstance(st.get("rounds"), int) and st.get("rounds") >= 1,
              f"full session: status counts its rounds (got {st.get('rounds')})")
        rows = show_rows(sc, sid)
        check(rows and st.get("evaluations") == len(rows),
              f"full session: evaluations equal the variants kctl show lists "
              f"({st.get('evaluations')} vs {len(rows)})")
        speedup = best.get("speedup_vs_reference")
        check(best.get("variant") in rows and best.get("status") == "ok"
              and isinstance(speedup, (int, float)) and speedup > 0,
              f"full session: best is a listed ok variant with a positive speedup (got {best})")
        # r00-start is the baseline of later rounds and was measured without one.
        vs_base = best.get("speedup_vs_baseline")
        check("speedup_vs_baseline" in best
              and (isinstance(vs_base, (int, float)) or best.get("variant") == "r00-start")
              and all(isinstance(best.get(k), (int, float)) for k in ("gflops", "gbps"))
              and isinstance(best.get("bottleneck"), str) and best.get("bottleneck"),
              f"full session: best has speedup_vs_baseline (a number unless the best is "
              f"r00-start), gflops, gbps, bottleneck (got {best})")

        folder = sc.session_dir(sid)
        best_cl = sc.read(folder, "best.cl") or ""
        header = best_cl.split("*/", 1)[0]
        check(best_cl.startswith("/*") and f": {best.get('variant')}\n" in header
              and isinstance(speedup, (int, float)) and f"speedup {speedup:.2f}x" in header,
              f"full session: best.cl's header names {best.get('variant')} and its speedup "
              f"(header {header[:200]!r})")
        # From round 1 on the incumbent carries the reference's speed (evalpod's
        # anchors): the header says how the figure was measured.
        links = best.get("speedup_vs_reference_links")
        says = (f"a product of {links + 1} ratios" if links else "(measured side by side)") \
            if isinstance(links, int) else None
        check(isinstance(links, int) and 0 <= links <= 2 and says in header,
              f"full session: best has speedup_vs_reference_links ({links}) and best.cl's "
              f"header says how its speedup was measured ({says!r})")
        learn = sc.read(folder, "learnings.md") or ""
        check("## Failure patterns" in learn and "## Successes" in learn,
              "full session: learnings.md has failure patterns and successes sections")
        table = report_rows(sc.read(folder, "report.md"))
        rounds = st.get("rounds") if isinstance(st.get("rounds"), int) else -1
        check([r[0] for r in table] == [str(r) for r in range(rounds + 1)],
              f"full session: report.md has one row per round 0..{rounds} "
              f"(got {[r[0] for r in table]})")
        check(table and all(len(r) >= 6 and r[4] in DECISIONS for r in table),
              f"full session: every round row has a decision (got {[r[4:5] for r in table]})")

        res = sc.run(["status"])
        check(res.returncode == 0 and sid in res.stdout,
              f"kctl status lists the session (got {tail(res)})")
        listed = sc.status()
        check(isinstance(listed, list) and [s.get("session") for s in listed] == [sid],
              "kctl status -o json lists exactly that session")

        child = next((v for v, r in rows.items() if r["parent"] != "-"
                      and r["status"] == "ok"), None)
        res = sc.run(["show", sid, child or "?"])
        check(child is not None and res.returncode == 0 and f"variant   {child}" in res.stdout
              and "median" in res.stdout and "roofline" in res.stdout
              and ("\noptions: " in res.stdout or "\n+++ " in res.stdout),
              f"kctl show {child}: figures and an options line or a diff from its parent "
              f"({tail(res)})")
        # round 0 has no incumbent: no figure, shown as one, and never "nan"
        listing = sc.run(["show", sid]).stdout
        start = next((m.groups() for m in (re.match(
            r"r00-start\s+\S+\s+\S+\s+\S+(?: \(cached\))?\s+(\S+)\s+(\S+)", ln)
            for ln in listing.splitlines()) if m), ())
        one = sc.run(["show", sid, "r00-start"]).stdout
        check(len(start) == 2 and start[1] == "-" and "nan" not in listing.lower()
              and "\nmedian " in one and "incumbent" not in one and "nan" not in one.lower(),
              f"show gives the start no vs_best and prints no 'nan' ({start}; "
              f"{[ln for ln in one.splitlines() if ln.startswith('median')]})")
        res = sc.run(["show", sid, "r99-v999"])
        check(res.returncode == 1 and "r99-v999" in res.stderr,
              f"kctl show of an unknown variant: exit 1 naming it (got {tail(res)})")

        res = sc.run(["resume", sid])
        check(res.returncode == 1 and "done" in res.stderr,
              f"resume of a done session refuses: exit 1, says done (got {tail(res)})")
        res = sc.run(["resume", "affine-19700101-000000"])
        check(res.returncode in (1, 3) and "no session" in res.stderr,
              f"resume of an unknown id: exit 1 or 3, 'no session' (got {tail(res)})")


# --- 3, 4, 5 ------------------------------------------------------------------


def malformed_spec(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "malformed") as sc:
        text = sc.read(sc.spec).splitlines(keepends=True)
        at = next(i for i, line in enumerate(text) if line.startswith("  semantics:"))
        text.insert(at + 1, "  bogus: 1\n")
        spec = sc.write("bogus.yaml", "".join(text))
        line = at + 2  # 1-based line of the inserted key
        res = sc.run(["start", spec])
        want = f"{spec}:{line}:3: problem.bogus"
        check(res.returncode == 1 and error_text(res.stderr).startswith(want),
              f"unknown key: exit 1, error starts with FILE:{line}:3: problem.bogus "
              f"(got {tail(res)})")
        check(sc.status() == [] and not os.path.exists(os.path.join(sc.tmp, "runs")),
              f"unknown key: no session is created (status {sc.status()})")


def unbalanced_template(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "markers") as sc:
        src = sc.read(sc.tmp, "affine.cl").splitlines(keepends=True)
        src = [line for line in src if "EVOLVE-BLOCK-END" not in line]
        start = next(i for i, line in enumerate(src) if "EVOLVE-BLOCK-START" in line) + 1
        sc.write("open.cl", "".join(src))
        spec = sc.derive("open.yaml", [("template: affine.cl", "template: open.cl")])
        res = sc.run(["start", spec])
        check(res.returncode == 1 and f"open.cl: line {start}" in res.stderr,
              f"unbalanced markers: exit 1 naming open.cl and line {start} (got {tail(res)})")
        check(sc.status() == [], "unbalanced markers: no session is created")


def no_evaluator(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "no evalpod") as sc:
        spec = sc.derive("missing.yaml",
                         [("session:\n", "evaluator: {evalpod: nowhere/evalpod}\nsession:\n")])
        res = sc.run(["start", spec])
        check(res.returncode == 3 and os.path.join(sc.tmp, "nowhere/evalpod") in res.stderr,
              f"evalpod missing: exit 3 naming the path (got {tail(res)})")
        check(sc.status() == [], "evalpod missing: no session is created")

    with Scenario(kctl, evalpod, data, "no device") as sc:
        vendors = os.path.join(sc.tmp, "no-vendors")
        os.mkdir(vendors)
        res = sc.run(["start", sc.spec], env=dict(sc.env, OCL_ICD_VENDORS=vendors))
        check(res.returncode == 3 and "no OpenCL device" in res.stderr,
              f"no OpenCL device: exit 3 saying so (got {tail(res)})")
        check(not glob.glob(os.path.join(sc.tmp, "runs", "*", "rounds")),
              "no OpenCL device: refused before any round (no rounds/ folder)")


# --- 6 ------------------------------------------------------------------------


def rounds_cap(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "rounds") as sc:
        res = sc.run(["start", sc.spec, "--rounds", "1"])
        sid = first_line(res.stdout)
        st = sc.status(sid) or {}
        table = report_rows(sc.read(sc.session_dir(sid), "report.md"))
        check(res.returncode == 0 and st.get("state") == "done"
              and st.get("rounds") == len(table) - 1 and len(table) >= 3,
              f"--rounds 1: done after round 1 and its confirmation ({tail(res)}; status "
              f"{st.get('state')}, rounds {st.get('rounds')}, report rows {len(table)})")
        search = table[1] if len(table) > 1 else []
        check(len(search) >= 6 and search[1] != "confirm" and search[4] == "stop"
              and "round budget" in search[5],
              f"--rounds 1: round 1 decides stop, naming the round budget (got {search[1:]})")
        check(len(table) >= 3 and all(r[1] == "confirm" for r in table[2:])
              and table[-1][4] == "stop",
              f"--rounds 1: confirmation rounds follow the search and the last one stops "
              f"(got {[(r[1], r[4]) for r in table]})")


def search_ends_with_its_reason(kctl, evalpod, data):
    """A budget larger than the space: the session ends when all 12 points are measured,
    and says so (it said "search space exhausted" whatever the proposer knew)."""
    with Scenario(kctl, evalpod, data, "ends") as sc:
        # stagnation_rounds: 10, or rounds that improve nothing (a matter of timing:
        # they did under ASan) end the session before the space does
        spec = sc.derive("all.yaml", [("max_rounds: 3", "max_rounds: 10"),
                                      ("max_evaluations: 10", "max_evaluations: 40\n"
                                       "  stagnation_rounds: 10"),
                                      ("confirm_passes: 2", "confirm_passes: 0")])
        res = sc.run(["start", spec, "--no-cache", "--no-progress"])
        sid = first_line(res.stdout)
        st = sc.status(sid) or {}
        why = "no new variant: every valid point of the space (12) was tried"
        check(res.returncode == 0 and f"{why}; the search ends" in res.stderr,
              f"the round with nothing new says why the search ends ({tail(res, 400)})")
        check(st.get("state") == "done" and st.get("evaluations") == 12
              and str(st.get("reason", "")).startswith(f"search ended: {why}; winner "),
              f"the session's reason starts with it ({st.get('evaluations')}: "
              f"{st.get('reason')!r})")


def stagnation_ends_with_a_last_round(kctl, evalpod, data):
    """A tuner session whose lineages have all stagnated does not stop at once: the
    navigator decides "finish", the next round is the search's last (the tuner spends it
    as it spends the budget's last round) and the session stops after it.  Two of three
    48-evaluation matmul sessions stopped at 41 on stagnation and never ran that round.
    Here the start point (SLOW=0) is the fastest point by far: every other point also
    reads 4 to 60 scattered inputs per output, so with one lineage nothing improves on
    it after round 1.  13 evaluations of 16 points keep the tuner off its exhaustive walk
    (which ignores the starts)."""
    with Scenario(kctl, evalpod, data, "stagnant") as sc:
        slow = sc.read(sc.tmp, "affine.cl").replace(
            "#ifndef U\n", "#ifndef SLOW\n#define SLOW 8\n#endif\n#ifndef U\n").replace(
            "\t\tif (base + j < n)\n\t\t\ty[base + j] = fma(x[base + j], 2.0f, 1.0f);\n",
            "\t\tif (base + j < n) {\n"
            "\t\t\tfloat z = 0.0f;\n"
            "\t\t\tfor (int k = 0; k < SLOW * 4; k++)\n"
            "\t\t\t\tz += x[(base + j + k * 4099) % n] * 0.0f;\n"
            "\t\t\ty[base + j] = fma(x[base + j], 2.0f, 1.0f) + z;\n"
            "\t\t}\n")
        check("SLOW * 4" in slow, "stagnant: the slow template was made")
        sc.write("affine_stag.cl", slow)
        spec = sc.derive("stag.yaml", [
            ("template: affine.cl\n", "template: affine_stag.cl\n"),
            ("    LS: [16, 32, 64, 128]\n    U: [1, 2, 4]\n",
             "    LS: [64]\n    U: [1]\n    SLOW: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]\n"
             "  starts:\n    - {LS: 64, U: 1, SLOW: 0}\n"),
            ("max_rounds: 3", "max_rounds: 10"),
            ("max_evaluations: 10", "max_evaluations: 13\n  stagnation_rounds: 1"),
            ("confirm_passes: 2", "confirm_passes: 0"),
            ("max_active_lineages: 2", "max_active_lineages: 1")])
        res = sc.run(["start", spec, "--no-cache", "--no-progress"])
        sid = first_line(res.stdout)
        st = sc.status(sid) or {}
        table = report_rows(sc.read(sc.session_dir(sid), "report.md"))
        got = [(r[0], r[1], r[4]) for r in table if len(r) >= 6]
        check(res.returncode == 0 and st.get("state") == "done",
              f"stagnant: the session ends done ({tail(res, 300)})")
        fin = [i for i, r in enumerate(table) if len(r) >= 6 and r[4] == "finish"]
        check(len(fin) == 1 and "stagnant for 1 round: one last round" in table[fin[0]][5],
              f"stagnant: one round decides finish, saying why (got {got})")
        nxt = table[fin[0] + 1] if fin and fin[0] + 1 < len(table) else []
        check(len(nxt) >= 6 and nxt[1] == "finish" and nxt[4] == "stop"
              and "last round done" in nxt[5] and nxt is table[-1],
              f"stagnant: the next round runs as the last and stops after it, the session's "
              f"last round (got {got}; {nxt[5:] if nxt else None})")
        check(st.get("evaluations") == 10,
              f"stagnant: it stops after 10 of its 13 evaluations, before the budget or "
              f"the space (16 points) ends it (got {st.get('evaluations')})")


# --- 7 ------------------------------------------------------------------------


def step(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "step") as sc:
        res = sc.run(["start", sc.spec, "--step"], stdin="n\n")
        sid = first_line(res.stdout)
        st = sc.status(sid) or {}
        check(res.returncode == 0 and st.get("state") == "paused" and st.get("rounds") == 0,
              f"--step, answer n: exit 0, paused after round 0 ({tail(res)}; status "
              f"{st.get('state')}, rounds {st.get('rounds')})")
        check(f"kctl resume {sid}" in res.stderr,
              f"--step, answer n: says how to resume (got {res.stderr.strip()[-200:]!r})")
        res = sc.run(["resume", sid])
        st = sc.status(sid) or {}
        check(res.returncode == 0 and st.get("state") == "done",
              f"resume of the paused session finishes it ({tail(res)}; status {st.get('state')})")


# --- 8 ------------------------------------------------------------------------


def cancel(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "cancel") as sc:
        spec = sc.derive("long.yaml", [
            ("max_rounds: 3\n", "max_rounds: 50\n  stagnation_rounds: 50\n"),
            ("max_evaluations: 10\n", "max_evaluations: 200\n"),
            ("U: [1, 2, 4]", "U: [1, 2, 3, 4, 5, 6, 7, 8]"),
        ])
        proc = subprocess.Popen([kctl, "start", spec], env=sc.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        try:
            sid = proc.stdout.readline().strip()
            deadline, st = time.time() + 120, {}
            while time.time() < deadline and proc.poll() is None:
                st = sc.status(sid) or {}
                if isinstance(st.get("rounds"), int) and st["rounds"] >= 1:
                    break
                time.sleep(0.1)
            running = isinstance(st.get("rounds"), int) and st["rounds"] >= 1
            check(running, f"cancel: the session reaches round 1 (status {st})")
            # Let round 1's evalpod start, so that cancel has one to stop.
            log = os.path.join(sc.session_dir(sid), "rounds", "r001", "evalpod.log")
            while time.time() < deadline and proc.poll() is None and not os.path.exists(log):
                time.sleep(0.05)
            time.sleep(0.5)
            res = sc.run(["cancel", sid])
            cancelled_at = time.time()
            check(res.returncode == 0, f"cancel: exit 0 (got {tail(res)})")
            try:
                proc.wait(timeout=60)
                ended = True
            except subprocess.TimeoutExpired:
                ended = False
            check(ended, f"cancel: the running kctl exits within 60 s "
                         f"(exit {proc.returncode}, after {time.time() - cancelled_at:.1f}s)")
            st = sc.status(sid) or {}
            check(st.get("state") == "cancelled",
                  f"cancel: state is cancelled (got {st.get('state')}: {st.get('reason')})")
            late = [os.path.relpath(p, sc.session_dir(sid))
                    for p in glob.glob(os.path.join(sc.session_dir(sid), "rounds", "r*",
                                                    "batch*.json"))
                    if os.path.getmtime(p) > cancelled_at]
            check(not late, f"cancel: no evalpod run starts after the cancel (batches written "
                            f"after it: {sorted(late)})")
            res = sc.run(["resume", sid])
            check(res.returncode == 1 and "cancelled" in res.stderr,
                  f"resume of a cancelled session refuses: exit 1, says cancelled "
                  f"(got {tail(res)})")
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


# --- 10 -----------------------------------------------------------------------

BROKEN_TEMPLATE = """\
// y = 2x + 1, but the block does not compile when U is 4.
// EVOLVE-BLOCK-START
#ifndef LS
#define LS 64
#endif
#ifndef U
#define U 4
#endif
#if U == 4
syntax error here
#endif
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int base = get_global_id(0) * U;

	for (int j = 0; j < U; j++)
		if (base + j < n)
			y[base + j] = fma(x[base + j], 2.0f, 1.0f);
}
// EVOLVE-BLOCK-END
"""


def compile_failures(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "compile") as sc:
        sc.write("broken.cl", BROKEN_TEMPLATE)
        spec = sc.derive("broken.yaml", [("template: affine.cl", "template: broken.cl"),
                                         ("U: [1, 2, 4]", "U: [4]")])
        res = sc.run(["start", spec])
        sid = first_line(res.stdout)
        st = sc.status(sid) or {}
        line = BROKEN_TEMPLATE.splitlines().index("syntax error here") + 1
        check(res.returncode == 1 and st.get("state") == "failed",
              f"a template that does not compile: exit 1, session failed "
              f"({tail(res)}; status {st.get('state')})")
        check(st.get("evaluations") == 1,
              f"a template that does not compile: the session stops after round 0, its "
              f"budget unspent (got {st.get('evaluations')} evaluations)")
        check("starting template" in res.stderr and f"broken.cl:{line}:" in res.stderr
              and "compile_error" in res.stderr,
              f"the message names the starting template, its file and line {line} "
              f"(got {res.stderr.strip()[-400:]!r})")
        check("starting template" in (st.get("reason") or ""),
              f"the session's reason keeps the cause (got {st.get('reason')!r})")
        res = sc.run(["resume", sid])
        check(res.returncode == 1 and "starting template" in res.stderr,
              f"resume of that session fails again with the same cause, proposing nothing "
              f"({tail(res)})")


# --- 11 -----------------------------------------------------------------------

WRONG_REFERENCE = """\
__kernel void affine_ref(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = 3.0f * x[i] + 1.0f;
}
"""

GUARDED_TEMPLATE = """\
// y = 2x + 1; the code after the block allows at most 64 work-items per group.
// EVOLVE-BLOCK-START
#ifndef LS
#define LS 64
#endif
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = fma(x[i], 2.0f, 1.0f);
}
// EVOLVE-BLOCK-END
#if LS > 64
#error this build allows at most 64 work-items per group
#endif
"""


def spec_errors(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "specerr") as sc:
        # a misspelt name in the launch plan: refused at load, nothing runs
        spec = sc.derive("typo.yaml", [('global: ["round_up(ceil_div(n, U), LS)"]',
                                        'global: ["round_up(ceil_div(n, VTP), LS)"]')])
        text = sc.read(spec)
        row = next(i for i, l in enumerate(text.splitlines()) if "VTP" in l) + 1
        res = sc.run(["start", spec])
        check(res.returncode == 1 and f"typo.yaml:{row}:" in res.stderr
              and "VTP" in res.stderr and not glob.glob(os.path.join(sc.tmp, "runs", "*")),
              f"a misspelt launch name: exit 1 at load, naming typo.yaml:{row} and 'VTP', no "
              f"session folder ({tail(res)})")

        # a reference that disagrees with the template: stops after round 0
        sc.write("wrong_ref.cl", WRONG_REFERENCE)
        spec = sc.derive("wrongref.yaml", [("reference: affine_ref.cl",
                                            "reference: wrong_ref.cl")])
        res = sc.run(["start", spec])
        st = sc.status(first_line(res.stdout)) or {}
        check(res.returncode == 1 and st.get("state") == "failed"
              and st.get("evaluations") == 1 and "kernel.reference" in res.stderr
              and "incorrect" in res.stderr,
              f"a wrong reference: exit 1 after round 0, naming incorrect and "
              f"kernel.reference ({tail(res)}; evaluations {st.get('evaluations')})")

        # a reference that does not compile: evalpod refuses the batch, the file named
        sc.write("bad_ref.cl", sc.read(sc.tmp, "affine_ref.cl").replace("y[i] =", "y[i] = oops"))
        spec = sc.derive("badref.yaml", [("reference: affine_ref.cl", "reference: bad_ref.cl")])
        res = sc.run(["start", spec])
        check(res.returncode == 1 and "the reference does not compile" in res.stderr
              and "bad_ref.cl:" in res.stderr,
              f"a reference that does not compile: exit 1 naming bad_ref.cl and its line "
              f"({tail(res)})")

        # every variant fails the same way outside the blocks: stops after round 1
        sc.write("guarded.cl", GUARDED_TEMPLATE)
        spec = sc.derive("guarded.yaml", [
            ("template: affine.cl", "template: guarded.cl"),
            ('global: ["round_up(ceil_div(n, U), LS)"]', 'global: ["round_up(n, LS)"]'),
            ("LS: [16, 32, 64, 128]", "LS: [128, 256]"),
            ("U: [1, 2, 4]", "U2: [1, 2, 3]"),
        ])
        res = sc.run(["start", spec])
        st = sc.status(first_line(res.stdout)) or {}
        check(res.returncode == 1 and st.get("state") == "failed"
              and "every variant of round 1" in res.stderr and "at most 64" in res.stderr
              and "guarded.cl:" in res.stderr,
              f"every variant fails outside the blocks: exit 1 after round 1, naming the "
              f"error and guarded.cl ({tail(res)})")
        check(isinstance(st.get("evaluations"), int) and st.get("evaluations") <= 4,
              f"... before the budget (10) is spent (got {st.get('evaluations')})")


# --- 12 -----------------------------------------------------------------------


def winner_of_outputs(sc, sid):
    """The winner as each output names it."""
    folder = sc.session_dir(sid)
    st = sc.status(sid) or {}
    best = st.get("best") if isinstance(st.get("best"), dict) else {}
    best_cl = sc.read(folder, "best.cl") or ""
    m = re.search(r"Best kernel of kctl session \S+: (\S+)", best_cl)
    report = sc.read(folder, "report.md") or ""
    r = re.search(r"^## Winner\n\n\*\*(\S+)\*\*", report, re.M)
    table = re.search(r"^## Best variants\n.*?\n\|---.*?\n\| (\S+) \|", report, re.S | re.M)
    learn = sc.read(folder, "learnings.md") or ""
    lw = re.search(r"^## Winner\n\n(\S+),", learn, re.M)
    return {"status": best.get("variant"), "best.cl": m and m.group(1),
            "report": r and r.group(1), "report table": table and table.group(1),
            "learnings": lw and lw.group(1)}


NOISE = "11:0.5"


def noise_never_a_success(kctl, evalpod, data):
    """Variants that differ only in a macro the kernel never reads are equally fast:
    under injected timing noise no swap between them may count as a success.
    render: define keeps their builds alike: build options (-D...) would make the
    template's binary differ from theirs, and on PoCL two binaries of one source
    can differ in speed by a few percent, reproducibly (where the code lands)."""
    with Scenario(kctl, evalpod, data, "noise") as sc:
        spec = sc.derive("same.yaml", [("U: [1, 2, 4]", "U: [1]\n    UNUSED: [1, 2, 3, 4, 5, 6]"),
                                       ("LS: [16, 32, 64, 128]", "LS: [64]"),
                                       ("render: options", "render: define")])
        res = sc.run(["start", spec], env=dict(sc.env, EVALPOD_TEST_NOISE=NOISE))
        sid = first_line(res.stdout)
        st = sc.status(sid) or {}
        best = st.get("best") if isinstance(st.get("best"), dict) else {}
        check(res.returncode == 0 and st.get("state") == "done",
              f"noise: the session ends done ({tail(res)})")
        names = winner_of_outputs(sc, sid)
        check(len(set(names.values())) == 1 and None not in names.values(),
              f"noise: status, best.cl, report (winner and first row) and learnings name one "
              f"winner (got {names})")
        learn = sc.read(sc.session_dir(sid), "learnings.md") or ""
        check(re.search(r"^- \[S[0-9]+\]", learn, re.M) is None,
              f"noise: no success recorded between equally fast variants "
              f"(got {re.findall(r'^- .S[0-9]+.*$', learn, re.M)})")
        verdict = best.get("verdict") or ""
        check(best.get("settled") is False and "not settled" in verdict
              or "equally fast" in verdict,
              f"noise: the verdict says the candidates are not separated or equally fast "
              f"(got settled {best.get('settled')}, {verdict!r})")
        check(best.get("quality") in ("noisy", "unstable")
              and isinstance(best.get("robust_cv"), (int, float)) and best["robust_cv"] > 0.02,
              f"noise: the winner's noise is in status (got {best.get('quality')}, "
              f"{best.get('robust_cv')})")
        report = sc.read(sc.session_dir(sid), "report.md") or ""
        check("robust CV" in report and best.get("quality", "?") in report,
              "noise: report.md shows the noise in words and figures")
        rounds = [l for l in res.stderr.splitlines() if l.startswith("[round ")]
        check(rounds and all("robust CV" in l for l in rounds),
              f"noise: every progress line shows the noise (got {rounds[-1:]})")
        confirms = [l for l in res.stderr.splitlines() if l.startswith("[confirm ")]
        if best.get("settled") is False:
            check(len(confirms) == 2,
                  f"noise: unsettled, the confirmation took all its passes (2 in "
                  f"affine.yaml) (got {confirms})")
        # A pass's verdict is said once, on its progress line (it was also
        # logged as "kctl: info: round N: confirmation pass ...": the same text).
        said = [l for l in res.stderr.splitlines() if "confirmation pass" in l]
        check(confirms and not said,
              f"noise: each confirmation pass's verdict is printed once, on its "
              f"[confirm] line (got also {said[:2]})")


def confirm_and_export(kctl, evalpod, data):
    with Scenario(kctl, evalpod, data, "confirm") as sc:
        # The export checks below need a winner with parameters.  affine.cl's
        # defaults are about as fast as the tuned points, so on a busy
        # machine the start kernel could stay the winner; one work-item per
        # group (262,144 groups) makes it slower than every point by far.
        slow = sc.read(sc.tmp, "affine.cl").replace("#define LS 64\n", "#define LS 1\n")
        sc.write("affine_slow.cl", slow)
        # A second step whose global size is 0 never runs (evalpod skips it):
        # the export lists it with its 0, best.cl's header says it is not run.
        spec = sc.derive("noconf.yaml", [("confirm_passes: 2\n", "confirm_passes: 0\n"),
                                         ("template: affine.cl\n",
                                          "template: affine_slow.cl\n"),
                                         ("      local: [LS]\n",
                                          "      local: [LS]\n"
                                          "    - {kernel: affine, args: [x, y, n], "
                                          "global: [\"0 * n\"], local: [LS]}\n")])
        res = sc.run(["start", spec])
        sid = first_line(res.stdout)
        st = sc.status(sid) or {}
        table = report_rows(sc.read(sc.session_dir(sid), "report.md"))
        best = st.get("best") if isinstance(st.get("best"), dict) else {}
        check(res.returncode == 0 and all(r[1] != "confirm" for r in table)
              and best.get("confirmed") is False,
              f"confirm_passes 0: no confirmation round, the winner not confirmed "
              f"({tail(res)}; modes {[r[1] for r in table]})")
        res = sc.run(["confirm", sid, "--passes", "1"])
        st2 = sc.status(sid) or {}
        best = st2.get("best") if isinstance(st2.get("best"), dict) else {}
        check(res.returncode == 0 and st2.get("state") == "done"
              and st2.get("rounds") == st.get("rounds", -9) + 1
              and best.get("confirmed") in (True, False) and best.get("passes") == 1
              and isinstance(best.get("candidates"), list),
              f"kctl confirm on a done session: one confirmation round, still done, the "
              f"verdict recorded ({tail(res)}; rounds {st.get('rounds')} -> {st2.get('rounds')})")
        names = winner_of_outputs(sc, sid)
        check(len(set(names.values())) == 1 and None not in names.values(),
              f"after kctl confirm every output names one winner (got {names})")
        rounds_dir = os.path.join(sc.session_dir(sid), "rounds")
        last = sorted(os.listdir(rounds_dir))[-1] if os.path.isdir(rounds_dir) else None
        meas = (json.loads(sc.read(os.path.join(rounds_dir, last), "batch.json") or "{}")
                .get("measurement") or {}) if last else {}
        check(meas.get("precision") == 0 and meas.get("outclass") == 0
              and meas.get("min_samples", 0) >= 20,
              f"the confirmation batch takes every sample: precision and outclass 0 "
              f"({last}: {meas})")

        # export: parameters, options and the launch geometry at every shape
        params = best.get("params") or {}
        launch = best.get("launch") or {}
        ok = isinstance(params.get("LS"), int) and isinstance(params.get("U"), int)
        want = {}
        if ok:
            for shape, n in (("big", 262144), ("odd", 1000)):
                per = -(-n // params["U"])
                want[shape] = [{"kernel": "affine", "global": [-(-per // params["LS"]) * params["LS"]],
                                "local": [params["LS"]]},
                               {"kernel": "affine", "global": [0], "local": [params["LS"]]}]
        check(ok and launch == want,
              f"status exports the launch geometry of the winner at both shapes "
              f"(got {launch}, want {want})")
        best_cl = sc.read(sc.session_dir(sid), "best.cl") or ""
        head, body = best_cl.split("*/", 1) if "*/" in best_cl else ("", best_cl)
        check(head.count("; affine not run (a global size of 0)") == 2,
              f"best.cl's header says the step with a global size of 0 is not run, at both "
              f"shapes (header {head[:600]!r})")
        check(ok and f"#define LS {params['LS']}\n" in body and f"#define U {params['U']}\n" in body
              and "-DLS" not in (best.get("best_cl_build_options") or "")
              and f"-DLS={params['LS']}" in (best.get("build_options") or ""),
              f"render: options: best.cl applies the parameters as #defines and its build "
              f"options leave them out (params {params}, best.cl options "
              f"{best.get('best_cl_build_options')!r})")
        res = sc.run(["confirm", sid, "--passes", "0"])
        check(res.returncode == 2, f"kctl confirm --passes 0 is a usage error ({tail(res)})")


def settings_rows(sc, sid):
    """The store's record of `kctl resume --set` for sid: [(key, value, was)]."""
    import sqlite3
    db = sqlite3.connect(os.path.join(sc.tmp, "state", "kctl.db"))
    try:
        return [(k, json.loads(v), None if w is None else json.loads(w)) for k, v, w in
                db.execute("SELECT key, value, was FROM settings WHERE session = ? "
                           "ORDER BY seq", (sid,))]
    finally:
        db.close()


def batch_limits(sc, sid, rnd):
    """limits of every batch file of round rnd, in the order they were written."""
    d = os.path.join(sc.session_dir(sid), "rounds", f"r{rnd:03d}")
    names = sorted((f for f in os.listdir(d) if re.fullmatch(r"batch(-[0-9]+)?\.json", f)),
                   key=lambda f: int(f[6:-5] or 0) if f != "batch.json" else 0)
    return [json.loads(sc.read(d, f)).get("limits", {}) for f in names]


def tiny_limit_resumed_with_set(kctl, evalpod, data):
    # The naive reference cannot start within 2 ms, however fast the machine:
    # every attempt is the infrastructure's fault, retried with the deadline
    # doubled, then the session fails and resumes with a raised limit.
    with Scenario(kctl, evalpod, data, "tinylimit") as sc:
        spec = sc.derive("tiny.yaml", [
            ("session:\n", "limits: {compile_timeout_s: 0.001, run_timeout_s: 0.001}\n"
                           "session:\n")])
        res = sc.run(["start", spec, "--rounds", "1"])
        sid = first_line(res.stdout)
        st = sc.status(sid) or {}
        check(res.returncode == 1 and st.get("state") == "failed",
              f"tiny limit: the session fails (got {tail(res)}; state {st.get('state')})")
        check(res.stderr.count("the reference ran past its") >= 3
              and "not the batch" not in error_text(res.stderr)
              and "evaluating again with the deadline doubled" in res.stderr,
              "tiny limit: each attempt says the reference ran past its limit, and kctl "
              f"retries with the deadline doubled (stderr {res.stderr[-600:]!r})")
        lims = batch_limits(sc, sid, 0)
        totals = [lim.get("compile_timeout_s", 0) + lim.get("run_timeout_s", 0) for lim in lims]
        check(len(totals) == 3 and all(abs(b - 2 * a) < 1e-9 for a, b in
                                       zip(totals, totals[1:])),
              f"tiny limit: three attempts, each deadline twice the last (got {totals})")
        check(f"kctl resume {sid} --set limits.run_timeout_s=" in res.stderr,
              f"tiny limit: the failure says how to resume with a higher limit "
              f"(got {error_text(res.stderr)[-300:]!r})")

        for bad, want in (("limits.bogus=1", "no such limit"),
                          ("measurement.min_samples=3", "only the spec's limits"),
                          ("limits.run_timeout_s=0", "not a number from"),
                          ("limits.run_timeout_s", "expected KEY=VALUE")):
            res = sc.run(["resume", sid, "--set", bad])
            check(res.returncode == 2 and want in res.stderr,
                  f"resume --set {bad}: refused, exit 2, says {want!r} (got {tail(res)})")
        check(settings_rows(sc, sid) == [] and (sc.status(sid) or {}).get("state") == "failed",
              "refused --set: nothing recorded, the session is still failed")

        res = sc.run(["resume", sid, "--set", "limits.compile_timeout_s=60",
                      "--set", "limits.run_timeout_s=600"])
        st = sc.status(sid) or {}
        check(res.returncode == 0 and st.get("state") == "done",
              f"resume --set with raised limits finishes the failed session ({tail(res)}; "
              f"state {st.get('state')})")
        check(settings_rows(sc, sid) == [("limits.compile_timeout_s", 60, 0.001),
                                         ("limits.run_timeout_s", 600, 0.001)],
              f"resume --set: the store records each change with what it replaced "
              f"(got {settings_rows(sc, sid)})")
        last = (batch_limits(sc, sid, 0) or [{}])[-1]
        check(last.get("run_timeout_s", 0) >= 600 and last.get("compile_timeout_s") == 60,
              f"resume --set: round 0's new batch carries the new limits (got {last})")
        # A bad --set is a usage error whatever the session's state: it was
        # told instead that the session is done and needs --rounds, and only
        # with --rounds given heard what was wrong with the --set.
        for who in (sid, "no-such-session"):
            res = sc.run(["resume", who, "--set", "limits.bogus=1"])
            check(res.returncode == 2 and "no such limit" in res.stderr
                  and "done after round" not in res.stderr,
                  f"resume {who} --set limits.bogus=1: exit 2 for the --set, before the "
                  f"session is looked at (got {tail(res)})")


def busy_machine_keeps_history(kctl, evalpod, data):
    # Round 0 runs; then evalpod reports the reference past its limit on
    # every run (a wrapper stands in for a slow machine), the session fails,
    # and a resume with --set finishes it without touching round 0.
    with Scenario(kctl, evalpod, data, "busy") as sc:
        flag = os.path.join(sc.tmp, "slow")
        sc.wrap_evalpod(evalpod, f"[ -e {flag} ]", [
            "evalpod: error: the reference ran past its 240 s limit (limits.compile_timeout_s"
            " + limits.run_timeout_s): the machine is too slow or the limit too low, not the"
            " candidates' fault"], 4)
        res = sc.run(["start", sc.spec, "--step"], stdin="n\n")
        sid = first_line(res.stdout)
        before = show_rows(sc, sid)
        r0 = os.path.join(sc.session_dir(sid), "rounds", "r000", "results")
        snap = {f: sc.read(r0, f) for f in sorted(os.listdir(r0))} if os.path.isdir(r0) else {}
        check((sc.status(sid) or {}).get("state") == "paused" and before and snap,
              f"busy: round 0 evaluated, session paused ({tail(res)})")
        open(flag, "w").close()
        res = sc.run(["resume", sid, "--rounds", "1"])
        st = sc.status(sid) or {}
        check(res.returncode == 1 and st.get("state") == "failed"
              and "the reference ran past its 240 s limit" in res.stderr,
              f"busy: a reference past its limit in every attempt fails the session, "
              f"saying so ({tail(res)}; state {st.get('state')})")
        os.unlink(flag)
        res = sc.run(["resume", sid, "--set", "limits.run_timeout_s=600", "--rounds", "1"])
        st = sc.status(sid) or {}
        after = show_rows(sc, sid)
        check(res.returncode == 0 and st.get("state") == "done",
              f"busy: resume --set finishes the failed session ({tail(res)}; "
              f"state {st.get('state')})")
        check(all(after.get(v) == r for v, r in before.items()) and len(after) > len(before),
              f"busy: round 0's variants and verdicts are unchanged and later rounds added "
              f"(before {before}, after {len(after)} rows)")
        check({f: sc.read(r0, f) for f in sorted(os.listdir(r0))} == snap,
              "busy: round 0's result files are byte for byte what they were")
        r1 = batch_limits(sc, sid, 1)
        check(len(r1) >= 2 and r1[-1].get("run_timeout_s", 0) >= 600,
              f"busy: round 1 was retried and its last batch has the new limit (got {r1})")


def evalpod_failure_says_why(kctl, evalpod, data):
    # evalpod fails once as it does on a full disk (exit 3, its cause on the
    # first error line, one line per file it could not write after it, more
    # than the log's tail holds, a summary on the last): kctl's warning gives
    # the cause, evaluates again, and round 0 ends as it would have.
    with Scenario(kctl, evalpod, data, "fails") as sc:
        flag = sc.write("fail-once", "")
        sc.wrap_evalpod(evalpod, f"rm {flag} 2>/dev/null", [
            "evalpod: error: cannot write 'results/summary.json.tmp.1': No space left on device"]
            + [f"evalpod: error: cannot write 'results/r00-v{i:03}/affine.s.tmp.1': No space "
               "left on device" for i in range(20)]
            + ["evalpod: error: some results could not be stored (see above)"], 3)
        res = sc.run(["start", sc.spec, "--step"], stdin="n\n")
        sid = first_line(res.stdout)
        want = ("round 0: evalpod failed (exit status 3: cannot write "
                "'results/summary.json.tmp.1': No space left on device); "
                "evaluating what is missing again")
        check(res.returncode == 0 and want in res.stderr and not os.path.exists(flag)
              and (sc.status(sid) or {}).get("state") == "paused" and show_rows(sc, sid),
              f"an evalpod failure's warning gives its cause, and the retry evaluates round 0 "
              f"({tail(res)})")


def deadlines_follow_the_reference(kctl, evalpod, data):
    # Limits far below what the reference needs: once a round has timed the
    # reference, the next batch's deadline is 4x its estimated check time.
    with Scenario(kctl, evalpod, data, "deadlines") as sc:
        res = sc.run(["start", sc.spec, "--step"], stdin="n\n")
        sid = first_line(res.stdout)
        summary = json.loads(sc.read(sc.session_dir(sid), "rounds", "r000", "results",
                                     "summary.json") or "{}")
        ref = summary.get("reference") or {}
        median = (((ref.get("performance") or {}).get("stats")) or {}).get("median")
        build = (ref.get("compile") or {}).get("build_ms", 0)
        check(isinstance(median, (int, float)) and median > 0,
              f"deadlines: round 0's summary times the reference (got {median!r}; {tail(res)})")
        # 2 shapes x 3 seeds x 2 determinism passes, and the 5 timing seeds
        want = 4 * (build + 17 * (median or 0)) / 1000
        res = sc.run(["resume", sid, "--rounds", "1", "--set", "limits.compile_timeout_s=0.001",
                      "--set", "limits.run_timeout_s=0.001", "--set",
                      "limits.time_timeout_s=900"])
        lims = (batch_limits(sc, sid, 1) or [{}])[0]
        got = lims.get("compile_timeout_s", 0) + lims.get("run_timeout_s", 0)
        timing = min(604800, 900 * want / 0.002)
        check(want > 0.002 and abs(got - want) <= 1e-6 * want
              and abs(lims.get("time_timeout_s", 0) - timing) <= 1e-6 * timing,
              f"deadlines: round 1's deadline is 4x the reference's estimated check time "
              f"{want:.4f} s, time_timeout_s in proportion (got {lims})")
        check(lims.get("compile_timeout_s") == 0.001,
              f"deadlines: the raise goes on run_timeout_s (got {lims})")


def main():
    if len(sys.argv) != 4:
        print("usage: kctl.py KCTL EVALPOD DATA_DIR", file=sys.stderr)
        return 2
    kctl, evalpod, data = (os.path.abspath(a) for a in sys.argv[1:])
    for scenario in (usage, malformed_spec, unbalanced_template, no_evaluator,
                     compile_failures, spec_errors, rounds_cap, search_ends_with_its_reason,
                     stagnation_ends_with_a_last_round,
                     full_session, step, cancel,
                     noise_never_a_success, confirm_and_export, tiny_limit_resumed_with_set,
                     busy_machine_keeps_history, evalpod_failure_says_why,
                     deadlines_follow_the_reference):
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
