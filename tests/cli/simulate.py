#!/usr/bin/env python3
"""Integration test: `kctl simulate`, the search replayed on a recorded space.

usage: simulate.py KCTL REPO

Runs the real kctl on tests/data/space/synthetic-smooth.json (a made-up
space over examples/matmul.yaml's tunables whose speedup is a smooth
function with one peak, written by make-synthetic.py) and checks the
table's shape, that every replay is reproducible seed by seed, that the
tuner beats random sampling where the space has structure, and that bad
input gets a message naming what is wrong and a non-zero exit; then, on
gmm_fp8's and chunk_gla's recorded spaces, that --no-starts leaves the
spec's starts out and that the tuner alone is not behind random sampling.  One
behaviour per test; no timing assertions.
"""
import json
import os
import subprocess
import sys
import tempfile

KCTL, REPO = sys.argv[1], sys.argv[2]
SMOOTH = os.path.join("tests", "data", "space", "synthetic-smooth.json")
# Two real kernels' spaces timed on one host: gmm_fp8's whole space (its
# best point is one of the spec's starts there) and 300 points of chunk_gla's.
GMM = os.path.join("tests", "data", "space", "gmm_fp8-xeon.json")
GLA = os.path.join("tests", "data", "space", "chunk_gla-xeon.json")
BUDGETS = [12, 24, 48, 96]
failures = []
tests = []


def test(fn):
    tests.append(fn)
    return fn


def kctl(*args):
    return subprocess.run([KCTL, "simulate", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


_cache = {}


def replay(*args):
    """The JSON result of simulate with args (cached: the runs are deterministic)."""
    if args not in _cache:
        r = kctl(SMOOTH, "-o", "json", *args)
        check(r.returncode == 0, "simulate failed: %s" % r.stderr)
        _cache[args] = json.loads(r.stdout)
    return _cache[args]


def row(doc, strategy, budget):
    for s in doc["results"]:
        if s["strategy"] == strategy:
            for b in s["budgets"]:
                if b["budget"] == budget:
                    return b
    raise AssertionError("no row for %s at %d" % (strategy, budget))


@test
def table_shape():
    doc = replay()
    check(doc["seeds"] == 20 and doc["batch"] == 8, "defaults: 20 seeds, batch 8")
    check(doc["points"] == 300, "the fixture's 300 points")
    check([s["strategy"] for s in doc["results"]] == ["tune", "random", "evolve"],
          "the three strategies in order")
    for s in doc["results"]:
        check([b["budget"] for b in s["budgets"]] == BUDGETS, "budgets 12/24/48/96")
        for b in s["budgets"]:
            f = b["fractions"]
            check(len(f) == 20, "one fraction per seed")
            check(all(0 < x <= 1 for x in f), "fractions in (0, 1]")
            check(b["worst"] == min(f), "worst is the smallest fraction")
            srt = sorted(f)
            check(abs(b["median"] - (srt[9] + srt[10]) / 2) < 1e-9, "median of 20")
        if s["strategy"] != "random":
            continue  # their last rounds differ: each budget is a session of its own
        for i in range(20):
            seq = [b["fractions"][i] for b in s["budgets"]]
            check(seq == sorted(seq), "a larger budget never finds less (seed %d)" % (i + 1))


@test
def reproducible_per_seed():
    a, b = replay(), replay("--strategy", "random,tune", "--seeds", "5")
    for name in ("random", "tune"):
        for budget in BUDGETS:
            check(row(a, name, budget)["fractions"][:5] == row(b, name, budget)["fractions"],
                  "%s: seeds 1-5 replay the same whatever else runs" % name)
    r1, r2 = kctl(SMOOTH, "--seeds", "3"), kctl(SMOOTH, "--seeds", "3")
    check(r1.returncode == 0 and r1.stdout == r2.stdout, "the same table twice")


@test
def random_varies_between_seeds():
    f = row(replay(), "random", 12)["fractions"]
    check(len(set(f)) > 5, "random sampling differs from seed to seed")


@test
def tune_beats_random_on_structure():
    doc = replay()
    for budget in BUDGETS:
        t, r = row(doc, "tune", budget)["median"], row(doc, "random", budget)["median"]
        check(t >= r, "tune's median %.2f below random's %.2f at %d" % (t, r, budget))
    t, r = row(doc, "tune", 24)["median"], row(doc, "random", 24)["median"]
    check(t >= r + 0.1, "at 24 evaluations tune %.2f is not clearly above random %.2f" % (t, r))


@test
def noise_leaves_the_random_state_alone():
    """--noise changes what is measured, not which points random sampling draws."""
    plain, noisy = replay(), replay("--noise")
    check(noisy["noise"] is True and plain["noise"] is False, "the document says so")
    for budget in BUDGETS:
        check(row(plain, "random", budget) == row(noisy, "random", budget),
              "random at %d is the same with noise" % budget)
    check(row(noisy, "tune", 24)["median"] >= row(noisy, "random", 24)["median"] + 0.1,
          "with noise too tune is clearly ahead at 24")


@test
def trace_lists_each_evaluation():
    r = kctl(SMOOTH, "--seeds", "1", "--budgets", "12", "--strategy", "tune", "--trace")
    check(r.returncode == 0, r.stderr)
    lines = r.stderr.splitlines()
    # round 0 (the template) is not the tuner's; 11 evaluations are
    check(len(lines) == 11, "one line per proposal evaluated: %r" % lines)
    check(all(line.startswith("tune seed 1 r0") for line in lines), "strategy, seed, id")
    check(sum("space-filling point" in line for line in lines) == 8, "round 1 fills the space")
    check(sum(": model: EI " in line for line in lines) == 3, "then the model")


@test
def each_budget_is_a_session_whose_last_round_follows_the_model():
    r = kctl(SMOOTH, "--seeds", "1", "--budgets", "12,48", "--strategy", "tune", "--trace")
    check(r.returncode == 0, r.stderr)
    lines = r.stderr.splitlines()
    check(len(lines) == 11 + 47, "a session of 12 evaluations, then one of 48: %d lines"
          % len(lines))
    first, second = lines[:11], lines[11:]
    check(second[:11] == first, "the same seed, the same start")
    last = [line for line in lines if ": model, last round: predicted " in line]
    # 1 + 5 rounds of 8 = 41, so the 48-evaluation session's last round has 7;
    # the 12-evaluation session's has too few measurements for the model's mean
    check(last == second[-7:], "the 48-evaluation session's last round only: %r" % last)


@test
def no_starts_leaves_the_specs_starts_out():
    def trace(*extra):
        r = kctl(GMM, "--seeds", "1", "--budgets", "12", "--strategy", "tune", "--trace", *extra)
        check(r.returncode == 0, r.stderr)
        return r.stderr.splitlines()

    with_starts, without = trace(), trace("--no-starts")
    check(sum("(tunables.starts)" in line for line in with_starts) == 2,
          "the spec's two starts come first: %r" % with_starts[:3])
    check(not any("tunables.starts" in line for line in without), "no start without them")
    check(sum("space-filling point" in line for line in without) == 8,
          "round 1 fills the space instead")
    r = kctl(GMM, "--seeds", "1", "--budgets", "12", "--no-starts", "-o", "json")
    check(r.returncode == 0 and json.loads(r.stdout)["starts"] is False, "the document says so")
    check(json.loads(kctl(GMM, "--seeds", "1", "--budgets", "12", "-o", "json").stdout)["starts"]
          is True, "and says when they are in")


@test
def tune_at_least_random_on_recorded_kernels():
    """Not a made-up space: gmm_fp8 and chunk_gla as timed, the search alone."""
    for path in (GMM, GLA):
        r = kctl(path, "--no-starts", "--strategy", "tune,random", "-o", "json")
        check(r.returncode == 0, r.stderr)
        doc = json.loads(r.stdout)
        for budget in BUDGETS:
            t, rnd = row(doc, "tune", budget)["median"], row(doc, "random", budget)["median"]
            check(t >= rnd, "%s: tune's median %.2f below random's %.2f at %d"
                  % (path, t, rnd, budget))


@test
def text_table():
    r = kctl(SMOOTH, "--seeds", "2", "--budgets", "12,24", "--strategy", "random")
    check(r.returncode == 0, r.stderr)
    lines = r.stdout.splitlines()
    check(len(lines) == 4, "header, legend, budgets, one row: %r" % lines)
    check(lines[2].split() == ["strategy", "12", "24"], "budget columns")
    check(lines[3].split()[0] == "random" and len(lines[3].split()) == 5, "a row")


def bad_dataset(doc, want, **extra):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    try:
        r = kctl(f.name, "--spec", os.path.join(REPO, "examples", "matmul.yaml"))
        check(r.returncode == 1, "exit 1 for %s, got %d" % (want, r.returncode))
        check(want in r.stderr, "%r not in %r" % (want, r.stderr))
    finally:
        os.unlink(f.name)


def smooth_doc():
    with open(os.path.join(REPO, SMOOTH)) as f:
        return json.load(f)


@test
def bad_input():
    r = kctl("no/such.json")
    check(r.returncode == 1 and "dataset 'no/such.json': unable to open" in r.stderr
          and ":-1" not in r.stderr, r.stderr)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write('{"format":\n')
    r = kctl(f.name)
    os.unlink(f.name)
    check(r.returncode == 1 and f"dataset '{f.name}':2:0: " in r.stderr, r.stderr)
    doc = smooth_doc()
    doc["format"] = "kctl-space/9"
    bad_dataset(doc, "\"format\" is not \"kctl-space/1\"")
    doc = smooth_doc()
    doc["points"][3]["params"]["TM"] = 3
    bad_dataset(doc, "points[3].TM: 3 is not one of the tunable's values")
    doc = smooth_doc()
    doc["points"][4]["params"].update({"TM": 16, "VN": 16, "TN": 4})
    bad_dataset(doc, "points[4]: breaks a constraint")
    doc = smooth_doc()
    doc["points"][0]["speedup"] = None
    bad_dataset(doc, "points[0].speedup: not a positive number")
    for args in (["--seeds", "0", SMOOTH], ["--budgets", "12,x", SMOOTH],
                 ["--batch", "0", SMOOTH], ["-o", "yaml", SMOOTH], []):
        r = kctl(*args)
        check(r.returncode == 2 and "usage: kctl simulate" in r.stderr,
              "usage error for %r: %d" % (args, r.returncode))
    r = kctl(SMOOTH, "--strategy", "annealing")
    check(r.returncode == 1 and "strategy 'annealing'" in r.stderr, r.stderr)


def main():
    for fn in tests:
        try:
            fn()
            print("ok   %s" % fn.__name__)
        except AssertionError as e:
            failures.append(fn.__name__)
            print("FAIL %s: %s" % (fn.__name__, e))
    print("%d passed, %d failed" % (len(tests) - len(failures), len(failures)))
    return 1 if failures else 0


sys.exit(main())
