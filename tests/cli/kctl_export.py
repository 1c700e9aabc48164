#!/usr/bin/env python3
"""kctl export: tuned tables, end to end (docs/kctl.md, "export").

- golden: the recorded real session (tests/data/report/recorded) exported
  as JSON and as a C header, against tests/data/export/recorded.json and
  recorded.h (UPDATE_GOLDEN=1 rewrites both);
- the header in a host program (tests/data/export/pick.c), built with gcc
  -std=c99 and -std=c11 -Wall -Wextra -Werror -pedantic: each pick, for
  exact, near, tied and unknown shapes, devices, dtypes and kernels, is
  the one the documented fallback order gives (computed here again), and
  hostile texts come back byte for byte;
- --merge: the faster entry wins, a tie goes to the lower CV and then to
  the earlier table, the result does not depend on the order of the
  tables, different kernels are kept apart and a kernel of another
  template is refused with nothing written;
- bad input: an unknown session, a session with no variant that passed,
  a spec changed since its session, malformed or foreign JSON, usage;
- a real PoCL run: two sessions of the affine problem timed at two shapes
  give one table with a best per bucket, which the header picks from;
- a real PoCL session with two timed buckets (one session, several shape
  buckets) gives one entry per bucket, each the bucket's best as kctl show
  names it, with the figures recorded at that bucket.

usage: kctl_export.py KCTL EVALPOD KCTL_DATA_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report_data  # noqa: E402
from checks import check, run, summary  # noqa: E402

DATA = os.path.join(HERE, "..", "data", "export")
GOLDEN_JSON = os.path.join(DATA, "recorded.json")
GOLDEN_H = os.path.join(DATA, "recorded.h")
PICK_C = os.path.join(DATA, "pick.c")

# Text that must not break out of a C string literal or comment: quotes,
# backslashes, a trigraph, a comment end, a newline, %, and non-ASCII.
HOSTILE = 'gpu "x" \\ ??/ */ /* \n\t%s%n \u00e9\u202e\U0001F600 \x7f end'


class Env:
    def __init__(self, kctl, evalpod, tmp):
        self.kctl, self.tmp = os.path.abspath(kctl), tmp
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(tmp, "cache"), KCTL_EVALPOD=evalpod)

    def run(self, *args, timeout=600, cwd=None):
        return subprocess.run([self.kctl, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, cwd=cwd)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def write_json(self, name, doc):
        p = self.path(name)
        with open(p, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return p


def err(r):
    lines = r.stderr.strip().splitlines()
    return f"exit {r.returncode}: {lines[-1][-300:] if lines else ''}"


# --- synthetic tables ----------------------------------------------------------

def entry(device, dtype, values, params, ms, cv=0.01, session="s-a", variant="r01-v001",
          bucket=None, options=""):
    name = bucket or "x".join(str(v) for v in values.values())
    return {"device": {"key": device, "name": device, "vendor": "V", "driver": "1.0",
                       "platform": "P"},
            "dtype": dtype, "bucket": {"name": name, "values": values}, "params": params,
            "build_options": options,
            "figures": {"median_ms": ms, "gflops": 10.0, "speedup_vs_reference": 2.0,
                        "speedup_vs_baseline": 1.5, "robust_cv": cv, "quality": "stable",
                        "confirmed": True},
            "provenance": {"session": session, "variant": variant, "round": 1,
                           "spec_sha256": "ab" * 32}}


def kernel(name, entries, keys=("M", "N"), defaults=None, sha="cd" * 32, options="-DX=1"):
    return {"kernel": name, "template_sha256": sha, "shape_keys": list(keys),
            "defaults": {"params": defaults or {"TM": 1, "TN": 1}, "build_options": options},
            "entries": entries}


def table(*kernels):
    return {"schema": "kctl.tuned", "version": 1, "kernels": list(kernels)}


# --- the fallback order, computed again --------------------------------------------

def ratio(a, b):
    x, y = float(max(a, 1)), float(max(b, 1))
    return x / y if x > y else y / x


def expect(doc, kname, device, dtype, values):
    """(how, entry or None, params, options) as docs/kctl.md says the lookup picks."""
    ks = [k for k in doc["kernels"] if k["kernel"] == kname]
    if not ks or len(values) != len(ks[0]["shape_keys"]):
        return (-1, None, None, None)
    k = ks[0]
    best, best_d = None, 0.0
    for e in k["entries"]:
        if e["device"]["key"] != device or e["dtype"] != dtype:
            continue
        ev = [e["bucket"]["values"][key] for key in k["shape_keys"]]
        if ev == values:
            return (0, e, e["params"], e["build_options"])
        d = 1.0
        for q, v in zip(values, ev):
            d *= ratio(q, v)
        if best is None or d < best_d:
            best, best_d = e, d
    if best:
        return (1, best, best["params"], best["build_options"])
    return (2, None, k["defaults"]["params"], k["defaults"]["build_options"])


def hexs(s):
    return s.encode("utf-8").hex() or "-"


def unhex(h):
    return "" if h == "-" else bytes.fromhex(h).decode("utf-8")


def build_pick(header, folder, std):
    """pick.c built against header with gcc -std=std; returns the binary or None."""
    shutil.copy(header, os.path.join(folder, "tuned.h"))
    exe = os.path.join(folder, f"pick-{std}")
    r = subprocess.run(["gcc", f"-std={std}", "-Wall", "-Wextra", "-Werror", "-pedantic",
                        "-I", folder, PICK_C, "-o", exe], capture_output=True, text=True,
                       timeout=300)
    check(r.returncode == 0, f"the header builds with -std={std} -Wall -Wextra -Werror "
          f"-pedantic ({r.stderr.strip()[:400]})")
    return exe if r.returncode == 0 else None


def pick(exe, kname, device, dtype, values):
    r = subprocess.run([exe, hexs(kname), hexs(device), hexs(dtype)] + [str(v) for v in values],
                       capture_output=True, text=True, timeout=60)
    how, ent, params, options = None, None, {}, None
    for line in r.stdout.splitlines():
        f = line.split(" ")
        if f[0] == "how":
            how = int(f[1])
        elif f[0] == "entry" and f[1] != "-":
            ent = (unhex(f[1]), unhex(f[2]), unhex(f[3]))
        elif f[0] == "param":
            params[unhex(f[1])] = int(f[2])
        elif f[0] == "options":
            options = unhex(f[1])
    return how, ent, params, options


def check_picks(exe, doc, queries, label):
    """Each query (kernel, device, dtype, values, want_how) picked as expect() says."""
    for kname, device, dtype, values, want in queries:
        how, ent, params, options = pick(exe, kname, device, dtype, values)
        e_how, e_ent, e_params, e_opts = expect(doc, kname, device, dtype, values)
        got_ent = ent and {"bucket": ent[0], "session": ent[1], "variant": ent[2]}
        want_ent = e_ent and {"bucket": e_ent["bucket"]["name"],
                              "session": e_ent["provenance"]["session"],
                              "variant": e_ent["provenance"]["variant"]}
        same = (how == e_how == want and got_ent == want_ent
                and (e_how == -1 or (params == e_params and options == e_opts)))
        check(same, f"{label}: {kname!r} on {device[:24]!r} {dtype} {values}: picked "
              f"{how} {got_ent} (the fallback order gives {e_how} {want_ent}, "
              f"the test wants {want})")


# --- the tests ----------------------------------------------------------------------

def golden(e):
    d = e.path("recorded")
    os.makedirs(d)
    db, sid, _ = report_data.load_recorded(d)
    rj = e.run("export", sid[:10], "--state", db)
    rc = e.run("export", sid, "--state", db, "--format", "c", "--out", e.path("rec.h"))
    check(rj.returncode == 0 and rc.returncode == 0,
          f"the recorded session exports as JSON and C ({err(rj)}; {err(rc)})")
    if rj.returncode or rc.returncode:
        return
    with open(e.path("rec.h"), encoding="utf-8") as f:
        header = f.read()
    if os.environ.get("UPDATE_GOLDEN") == "1":
        for path, text in ((GOLDEN_JSON, rj.stdout), (GOLDEN_H, header)):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    with open(GOLDEN_JSON, encoding="utf-8") as f:
        want_json = f.read()
    with open(GOLDEN_H, encoding="utf-8") as f:
        want_h = f.read()
    check(rj.stdout == want_json, "recorded session: the JSON table is the golden one")
    check(header == want_h, "recorded session: the C header is the golden one")
    doc = json.loads(rj.stdout)
    k = doc["kernels"][0]
    ent = k["entries"][0]
    check(doc["schema"] == "kctl.tuned" and doc["version"] == 1 and k["kernel"] == "matmul"
          and ent["provenance"]["variant"] == "r03-v001" and ent["dtype"] == "float"
          and ent["bucket"]["values"] == {"M": 256, "N": 256, "K": 256}
          and ent["device"]["key"] == "AuthenticAMD|pthread-skylake-avx512-AMD EPYC|3.1+debian",
          "recorded session: the winner r03-v001, float, at 256^3, on its device key")
    check(ent["params"]["TM"] == 8 and k["defaults"]["params"]["TM"] == 1
          and k["shape_keys"] == ["M", "N", "K"],
          "recorded session: the winner's parameters, the template's #define defaults")
    exe = build_pick(e.path("rec.h"), d, "c99")
    if exe:
        dev = ent["device"]["key"]
        check_picks(exe, doc, [("matmul", dev, "float", [256, 256, 256], 0),
                               ("matmul", dev, "float", [512, 512, 128], 1),
                               ("matmul", dev, "double", [256, 256, 256], 2),
                               ("matmul", "other", "float", [256, 256, 256], 2)],
                    "recorded header")


COMPLETION = os.path.join(HERE, "..", "..", "controller", "kctl-completion.bash")


def complete(e, words, cword, cwd):
    """The completions bash offers for words with the cursor on words[cword]."""
    script = ('source "$1"; shift; COMP_CWORD="$1"; shift; COMP_WORDS=("$@"); '
              'COMP_LINE="$*"; _kctl; printf "%s\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "-c", script, "bash", COMPLETION, str(cword), e.kctl] + words,
                       env=e.env, capture_output=True, text=True, timeout=120, cwd=cwd)
    return sorted(x for x in r.stdout.splitlines() if x)


def completion(e):
    d = e.path("complete")
    os.makedirs(d)
    db, sid, _ = report_data.load_recorded(d)
    cases = [(["exp"], 1, ["export"], "the command"),
             (["export", "--fo"], 2, ["--format"], "its options"),
             (["export", "--format", ""], 3, ["c", "json"], "--format's formats"),
             (["export", "--state", db, ""], 4, [sid], "session ids"),
             (["export", "--state", db, sid, ""], 5, [sid], "more session ids"),
             (["export", "--merge", ""], 3,
              sorted(n for n in os.listdir(d) if os.path.isdir(os.path.join(d, n))),
              "--merge: JSON files and folders")]
    with open(os.path.join(d, "t.json"), "w", encoding="utf-8") as f:
        f.write("{}")
    cases[-1] = (cases[-1][0], 3, sorted(cases[-1][2] + ["t.json"]), cases[-1][3])
    for words, cword, want, what in cases:
        got = complete(e, words, cword, d)
        check(got == sorted(want), f"completion of export, {what}: {words} -> {want} "
              f"(got {got})")


def synthetic_tables():
    a = table(kernel("mm", [
        entry("D1", "float", {"M": 256, "N": 256}, {"TM": 2, "TN": 4}, 1.0, session="a"),
        entry("D1", "float", {"M": 1024, "N": 1024}, {"TM": 8, "TN": 8}, 9.0, session="a",
              options="-DTM=8 -DTN=8"),
        entry("D1", "double", {"M": 256, "N": 256}, {"TM": 1, "TN": 2}, 2.0, session="a"),
        entry(HOSTILE, "float", {"M": 64, "N": 64}, {HOSTILE: 7}, 0.5, session=HOSTILE,
              variant=HOSTILE, bucket=HOSTILE, options=HOSTILE),
    ]))
    b = table(kernel("mm", [
        entry("D2", "float", {"M": 512, "N": 512}, {"TM": 4, "TN": 4}, 3.0, session="b"),
    ]), kernel("scale", [
        entry("D1", "float", {"n": 1 << 20}, {"LS": 64}, 0.2, session="b")], keys=("n",),
        defaults={"LS": 32}, sha="ef" * 32, options=""))
    return a, b


def header_picks(e):
    a, b = synthetic_tables()
    pa, pb = e.write_json("a.json", a), e.write_json("b.json", b)
    out = e.path("merged.h")
    r = e.run("export", "--merge", pa, pb, "--format", "c", "--out", out)
    rj = e.run("export", "--merge", pa, pb)
    check(r.returncode == 0 and rj.returncode == 0,
          f"two synthetic tables merge into a header ({err(r)})")
    if r.returncode or rj.returncode:
        return
    doc = json.loads(rj.stdout)
    with open(out, encoding="utf-8") as f:
        text = f.read()
    check(HOSTILE not in text and 'gpu "x"' not in text and "gpu \\\"x\\\"" in text,
          "the hostile text appears in the header only escaped")
    check("??/" not in text and text.count("*/") == text.count("/*"),
          "no trigraph and no comment end outside the header's own comments")
    for std in ("c99", "c11"):
        d = e.path(f"pick-{std}")
        os.makedirs(d)
        exe = build_pick(out, d, std)
        if not exe:
            continue
        check_picks(exe, doc, [
            ("mm", "D1", "float", [1024, 1024], 0),
            ("mm", "D1", "float", [300, 200], 1),
            ("mm", "D1", "float", [100000, 3], 1),
            ("mm", "D1", "float", [512, 512], 1),        # a tie: the first in table order
            ("mm", "D1", "double", [4096, 4096], 1),
            ("mm", "D1", "half", [256, 256], 2),
            ("mm", "D3", "float", [256, 256], 2),
            ("mm", "D2", "float", [512, 512], 0),
            ("mm", HOSTILE, "float", [64, 64], 0),
            ("mm", HOSTILE, "float", [0, -5], 1),
            ("scale", "D1", "float", [1000], 1),
            ("scale", "D1", "float", [1000, 1], -1),
            ("nope", "D1", "float", [1, 1], -1),
        ], f"header -std={std}")
        how, ent, params, options = pick(exe, "mm", HOSTILE, "float", [64, 64])
        check(ent and ent[0] == HOSTILE and params == {HOSTILE: 7} and options == HOSTILE,
              f"-std={std}: hostile texts come back from the header byte for byte")


def merge(e):
    s1 = entry("D1", "float", {"M": 256, "N": 256}, {"TM": 2, "TN": 2}, 2.0, session="slow")
    s2 = entry("D1", "float", {"M": 256, "N": 256}, {"TM": 4, "TN": 4}, 1.0, session="fast")
    t1 = entry("D1", "float", {"M": 512, "N": 512}, {"TM": 1, "TN": 1}, 5.0, 0.05, session="noisy")
    t2 = entry("D1", "float", {"M": 512, "N": 512}, {"TM": 2, "TN": 1}, 5.0, 0.01, session="steady")
    u1 = entry("D1", "float", {"M": 64, "N": 64}, {"TM": 1, "TN": 1}, 1.0, 0.01, session="first")
    u2 = entry("D1", "float", {"M": 64, "N": 64}, {"TM": 2, "TN": 2}, 1.0, 0.01, session="second")
    pa = e.write_json("m1.json", table(kernel("mm", [s1, t1, u1])))
    pb = e.write_json("m2.json", table(kernel("mm", [s2, t2, u2]),
                                       kernel("other", [s1], sha="01" * 32)))
    r = e.run("export", "--merge", pa, pb)
    check(r.returncode == 0, f"two tables with conflicting entries merge ({err(r)})")
    if r.returncode:
        return
    doc = json.loads(r.stdout)
    got = {(k["kernel"], x["bucket"]["name"]): x["provenance"]["session"]
           for k in doc["kernels"] for x in k["entries"]}
    check(got[("mm", "256x256")] == "fast", "merge: the lower median time wins")
    check(got[("mm", "512x512")] == "steady", "merge: on equal times the lower CV wins")
    check(got[("mm", "64x64")] == "first", "merge: a full tie keeps the earlier table's entry")
    check([k["kernel"] for k in doc["kernels"]] == ["mm", "other"] and len(got) == 4,
          "merge: another kernel is kept apart, in a group of its own")
    check("replaces" in r.stderr and "fast" in r.stderr,
          "merge: each replaced entry is said on stderr")
    pa2 = e.write_json("m1b.json", table(kernel("mm", [s1, t1])))
    pb2 = e.write_json("m2b.json", table(kernel("mm", [s2, t2])))
    r1, r2 = e.run("export", "--merge", pa2, pb2), e.run("export", "--merge", pb2, pa2)
    check(r1.returncode == 0 and r1.stdout == r2.stdout,
          "merge: the same table whichever order the inputs come in")
    r3 = e.run("export", "--merge", pa, pa)
    check(r3.returncode == 0 and json.loads(r3.stdout) == json.loads(
        e.run("export", "--merge", pa).stdout), "merge: a table merged with itself is itself")
    pc = e.write_json("m3.json", table(kernel("mm", [s2], sha="99" * 32)))
    out = e.path("refused.json")
    r = e.run("export", "--merge", pa, pc, "--out", out)
    check(r.returncode == 1 and "template_sha256" in r.stderr and "m3.json" in r.stderr
          and not os.path.exists(out),
          f"merge: the same kernel from another template is refused, nothing written ({err(r)})")
    pd = e.write_json("m4.json", table(kernel("mm", [s2], keys=("M", "K"))))
    r = e.run("export", "--merge", pa, pd)
    check(r.returncode == 1 and "m4.json" in r.stderr,
          f"merge: a table whose buckets do not fit its shape keys is refused ({err(r)})")


def bad_input(e):
    r = e.run("export", "no-such-session")
    check(r.returncode == 1 and "no-such-session" in r.stderr,
          f"an unknown session: exit 1, named ({err(r)})")
    d = e.path("failed")
    os.makedirs(d)
    db, sid, _ = report_data.make_synthetic(d, 6, 1, 3, statuses={"compile_error": 1,
                                                                  "crash": 1},
                                            kctl=e.kctl, llm=False)
    out = e.path("none.json")
    r = e.run("export", sid, "--state", db, "--out", out)
    check(r.returncode == 1 and "no variant that passed" in r.stderr and not os.path.exists(out),
          f"a session with no variant that passed: exit 1, nothing written ({err(r)})")
    d = e.path("changed")
    os.makedirs(d)
    db, sid, _ = report_data.make_synthetic(d, 6, 1, 4, kctl=e.kctl, llm=False)
    r = e.run("export", sid, "--state", db)
    check(r.returncode == 0 and json.loads(r.stdout)["kernels"][0]["entries"],
          f"a synthetic session exports ({err(r)})")
    with open(os.path.join(d, "mm.cl"), "a", encoding="utf-8") as f:
        f.write("\n// changed\n")
    r = e.run("export", sid, "--state", db)
    check(r.returncode == 1 and "changed since" in r.stderr,
          f"a session whose template changed since: refused ({err(r)})")
    cases = [
        ("broken.json", '{"schema": "kctl.tuned", ', "broken.json:1:"),
        ("list.json", "[1, 2]", "$: expected an object"),
        ("foreign.json", json.dumps({"schema": "kctl.report", "version": 1, "kernels": []}),
         "kctl.report"),
        ("future.json", json.dumps({"schema": "kctl.tuned", "version": 2, "kernels": []}),
         "version 2"),
    ]
    bad = table(kernel("mm", [entry("D1", "float", {"M": 1, "N": 1}, {"TM": 1}, 1.0)]))
    del bad["kernels"][0]["entries"][0]["figures"]["median_ms"]
    cases.append(("nomedian.json", json.dumps(bad),
                  "$.kernels[0].entries[0].figures.median_ms"))
    bad = table(kernel("mm", [entry("D1", "float", {"M": 1, "N": 1}, {"TM": "1"}, 1.0)]))
    cases.append(("strparam.json", json.dumps(bad), "$.kernels[0].entries[0].params.TM"))
    bad = table(kernel("mm", [entry("D1", "float", {"M": 1, "N": 1}, {"TM": 1}, 1.0)]))
    bad["kernels"][0]["entries"][0]["figures"]["confirmed"] = "yes"
    cases.append(("confirmed.json", json.dumps(bad),
                  "$.kernels[0].entries[0].figures.confirmed: expected a boolean"))
    bad = table(kernel("mm", [entry("D1", "float", {"M": 1, "N": 1}, {"TM": 1}, 0.0)]))
    cases.append(("zero.json", json.dumps(bad), "median_ms: must be above 0"))
    dup = entry("D1", "float", {"M": 1, "N": 1}, {"TM": 1}, 1.0)
    cases.append(("dup.json", json.dumps(table(kernel("mm", [dup, dup]))), "the same device"))
    # a member missing whole (found by the fuzzer: kctl crashed on it)
    for part in ("provenance", "figures", "bucket", "device"):
        bad = table(kernel("mm", [entry("D1", "float", {"M": 1, "N": 1}, {"TM": 1}, 1.0)]))
        del bad["kernels"][0]["entries"][0][part]
        cases.append((f"no{part}.json", json.dumps(bad), f"$.kernels[0].entries[0].{part}"))
    cases.append(("extra.json", json.dumps(dict(table(), colour=1)), "$.colour: unknown key"))
    cases.append(("dupkey.json", '{"schema": "a", "schema": "b"}', "dupkey.json:1:"))
    for name, text, want in cases:
        p = e.path(name)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        out = e.path("never-" + name)
        r = e.run("export", "--merge", p, "--out", out)
        check(r.returncode == 1 and want in r.stderr and name in r.stderr
              and not os.path.exists(out),
              f"--merge {name}: exit 1 naming the file and '{want}' ({err(r)})")
    r = e.run("export", "--merge", e.path("missing.json"))
    check(r.returncode == 1 and "missing.json" in r.stderr,
          f"--merge of a file that does not exist: exit 1, named ({err(r)})")
    for args, want in ((["export"], "session"), (["export", "--merge"], "table"),
                       (["export", "x", "--format", "yaml"], "yaml"),
                       (["export", "--merge", "a.json", "--state", "x.db"], "--state")):
        r = e.run(*args)
        check(r.returncode == 2 and want in r.stderr and "usage: kctl export" in r.stderr,
              f"kctl {' '.join(args)}: exit 2 with usage ({err(r)})")


def pocl(e, data):
    """Two real sessions of the affine problem, timed at its two shapes."""
    d = e.path("pocl")
    os.makedirs(d)
    for name in ("affine.cl", "affine_ref.cl", "affine.yaml"):
        shutil.copy(os.path.join(data, name), d)
    with open(os.path.join(d, "affine.yaml"), encoding="utf-8") as f:
        text = f.read()
    old_big = "{name: big, timed: true, values: {n: 262144}}"
    old_odd = "{name: odd, values: {n: 1000}}"
    assert old_big in text and old_odd in text
    odd = text.replace(old_big, "{name: big, values: {n: 262144}}").replace(
        old_odd, "{name: odd, timed: true, values: {n: 1000}}")
    with open(os.path.join(d, "affine-odd.yaml"), "w", encoding="utf-8") as f:
        f.write(odd)
    sids = []
    for spec in ("affine.yaml", "affine-odd.yaml"):
        r = e.run("start", spec, "--no-progress", cwd=d, timeout=1200)
        sid = (r.stdout.splitlines() or [""])[0].strip()
        check(r.returncode == 0 and sid, f"PoCL: kctl start {spec} ({err(r)})")
        if r.returncode:
            return
        sids.append(sid)
    r = e.run("export", *sids)
    rc = e.run("export", *sids, "--format", "c", "--out", e.path("affine.h"))
    check(r.returncode == 0 and rc.returncode == 0, f"PoCL: both sessions export ({err(r)})")
    if r.returncode or rc.returncode:
        return
    doc = json.loads(r.stdout)
    ks = doc["kernels"]
    by_bucket = {x["bucket"]["name"]: x for x in ks[0]["entries"]} if len(ks) == 1 else {}
    check(len(ks) == 1 and set(by_bucket) == {"big", "odd"},
          f"PoCL: one kernel, a best per bucket ({sorted(by_bucket)})")
    if set(by_bucket) != {"big", "odd"}:
        return
    big, odd = by_bucket["big"], by_bucket["odd"]
    status = {s: e.run("status", s, "-o", "json") for s in sids}
    winners = {s: json.loads(status[s].stdout).get("best") or {} for s in sids}
    check(big["provenance"]["session"] == sids[0] and odd["provenance"]["session"] == sids[1]
          and big["provenance"]["variant"] == winners[sids[0]].get("variant")
          and odd["provenance"]["variant"] == winners[sids[1]].get("variant"),
          "PoCL: each bucket's entry is its session's winner")
    check(big["device"]["key"] == odd["device"]["key"] and big["device"]["name"]
          and big["dtype"] == "float" and big["bucket"]["values"] == {"n": 262144}
          and odd["bucket"]["values"] == {"n": 1000},
          f"PoCL: one device key ({big['device']['key']!r}), float, the shapes' values")
    check(all(x["figures"]["median_ms"] > 0 and x["params"]["LS"] in (16, 32, 64, 128)
              and x["params"]["U"] in (1, 2, 4) for x in (big, odd)),
          "PoCL: measured times and parameters of the spec's tunables")
    check(ks[0]["defaults"]["params"] == {"LS": 64, "U": 1},
          "PoCL: the defaults are the template's #ifndef values")
    exe = build_pick(e.path("affine.h"), d, "c11")
    if exe:
        dev = big["device"]["key"]
        check_picks(exe, doc, [("affine", dev, "float", [262144], 0),
                               ("affine", dev, "float", [1000], 0),
                               ("affine", dev, "float", [2000], 1),
                               ("affine", dev, "float", [100000], 1),
                               ("affine", "another GPU", "float", [1000], 2)], "PoCL header")


def pocl_buckets(e, data):
    """One real session of the affine problem with both shapes timed."""
    d = e.path("pocl-buckets")
    os.makedirs(d)
    for name in ("affine.cl", "affine_ref.cl", "affine.yaml"):
        shutil.copy(os.path.join(data, name), d)
    with open(os.path.join(d, "affine.yaml"), encoding="utf-8") as f:
        text = f.read()
    old_odd = "{name: odd, values: {n: 1000}}"
    assert old_odd in text
    with open(os.path.join(d, "affine.yaml"), "w", encoding="utf-8") as f:
        f.write(text.replace(old_odd, "{name: odd, timed: true, values: {n: 1000}}"))
    r = e.run("start", "affine.yaml", "--no-progress", cwd=d, timeout=1200)
    sid = (r.stdout.splitlines() or [""])[0].strip()
    check(r.returncode == 0 and sid, f"PoCL buckets: kctl start ({err(r)})")
    if r.returncode:
        return
    r = e.run("export", sid)
    check(r.returncode == 0, f"PoCL buckets: the session exports ({err(r)})")
    if r.returncode:
        return
    ks = json.loads(r.stdout)["kernels"]
    by_bucket = {x["bucket"]["name"]: x for x in ks[0]["entries"]} if len(ks) == 1 else {}
    check(len(ks) == 1 and sorted(by_bucket) == ["big", "odd"] and
          len(ks[0]["entries"]) == 2,
          f"PoCL buckets: one kernel, one entry per bucket ({sorted(by_bucket)})")
    if sorted(by_bucket) != ["big", "odd"]:
        return
    rows = json.loads(e.run("show", sid, "-o", "json").stdout)
    bests = {b: row["id"] for row in rows for b in row.get("best_in_buckets", [])}
    winner = json.loads(e.run("status", sid, "-o", "json").stdout).get("best") or {}
    check(all(by_bucket[b]["provenance"]["variant"] == bests.get(b) for b in ("big", "odd")),
          f"PoCL buckets: each entry is its bucket's best ({bests})")
    check(by_bucket["big"]["bucket"]["values"] == {"n": 262144} and
          by_bucket["odd"]["bucket"]["values"] == {"n": 1000},
          "PoCL buckets: the buckets' values")
    for b, x in by_bucket.items():
        vid = x["provenance"]["variant"]
        if b == "big" and vid == winner.get("variant"):
            want, confirmed = winner.get("median_ms"), winner.get("confirmed") is True
        else:
            res = json.loads(e.run("show", sid, vid, "-o", "json").stdout)["result"]
            want = res["performance_by_shape"][b]["median_ms"]
            confirmed = False
        check(abs(x["figures"]["median_ms"] - want) <= 1e-9 * want and
              x["figures"]["confirmed"] is confirmed,
              f"PoCL buckets: {b}'s figures are {vid}'s at {b} "
              f"({x['figures']['median_ms']} vs {want}, confirmed {x['figures']['confirmed']})")


def main():
    kctl, evalpod, data = sys.argv[1:4]
    tmp = tempfile.mkdtemp(prefix="kctl-export-")
    try:
        e = Env(kctl, evalpod, tmp)
        run([golden, header_picks, merge, bad_input, completion], e)
        run([pocl, pocl_buckets], e, data)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
