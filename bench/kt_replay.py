#!/usr/bin/env python3
"""bench/kt_replay.py - Kernel Tuner's own strategies replayed on a recorded space.

usage: kt_replay.py DATASET [--strategies S,...] [--budgets N,...] [--seeds N]
                     [--jobs N] [--per-budget]

The same question `kctl simulate` answers for kctl's tuner, asked of Kernel
Tuner (https://github.com/KernelTuner/kernel_tuner, the established OpenCL
and CUDA autotuner) through its simulation mode.  DATASET (a kctl-space/1
file from tests/data/space/) is written out as a Kernel Tuner cache file;
each tunable's values are the ones recorded, and a restriction admits only
the recorded points, so the search space is exactly kctl simulate's.  The
objective is the recorded speedup over the naive reference (higher is
better).  Every strategy runs once per seed and budget with max_fevals set
to the budget; for the strategies that only stop there (PREFIX_SAFE), one
run of the largest budget is read after each smaller one.  Prints, per
strategy and budget, the median and the worst over the seeds of the best
speedup found divided by the best recorded, in kctl simulate's layout, so
the two tables sit side by side, then how many seeds found the best
recorded point within each budget.  "n=" after a figure: the strategy stopped
before the budget, after that many evaluations (median over the seeds).

Kernel Tuner has no template: its budget is all search, where kctl's counts
the template's own round 0 as one evaluation.

Needs kernel_tuner importable (pip install kernel_tuner) with numpy and
scipy; docs/benchmarks.md says how it was run here.  A strategy that fails
on the space (an error, or a replay over RUN_LIMIT_S or RUN_LIMIT_MB) is
reported with its first error instead of figures.
"""
import argparse
import contextlib
import io
import json
import multiprocessing
import os
import random
import resource
import signal
import statistics
import sys
import tempfile
import time
import warnings

try:
    import numpy as np
    import kernel_tuner
except ImportError as e:
    print(f"kt_replay.py: needs Kernel Tuner and numpy ({e}); "
          "pip install kernel_tuner", file=sys.stderr)
    sys.exit(2)

# Strategies whose only use of max_fevals is to stop (read in Kernel Tuner
# 1.4.0's code): one run of the largest budget, read after each smaller one,
# stands for a run of each.  For random_sample, genetic_algorithm and pso
# --per-budget gave identical tables (3 seeds); bayes_opt does not repeat
# itself even with the same seed (two runs of the same 3 seeds read 0.36 and
# 0.29 of the best after 12 evaluations), so its tables cannot be identical.
# The others run once per budget.
PREFIX_SAFE = {"random_sample", "genetic_algorithm", "pso", "bayes_opt"}

# One replay's limits (a replay of 96 evaluations takes about 2 s).
RUN_LIMIT_S = 120
RUN_LIMIT_MB = 2048


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:  # unreadable, or not JSON (where it says)
        sys.exit(f"kt_replay.py: {path}: {e}")
    pts = doc.get("points") or []
    if doc.get("format") != "kctl-space/1" or not pts:
        sys.exit(f"kt_replay.py: {path}: not a kctl-space/1 file with points")
    return pts, list(pts[0]["params"].keys())


def write_cache(path, pts, names, tune_params):
    """The recorded points as a Kernel Tuner cache file (its JSON layout:
    keys are the values joined by commas in tune_params' order)."""
    cache = {}
    for p in pts:
        vals = [p["params"][n] for n in names]
        entry = dict(zip(names, vals))
        if p.get("status") == "ok" and p.get("speedup"):
            entry["speedup"] = p["speedup"]
            entry["time"] = p.get("median_ms", 1.0)
        else:
            entry["speedup"] = "RuntimeFailedConfig"
            entry["time"] = "RuntimeFailedConfig"
        entry.update(compile_time=0, verification_time=0, benchmark_time=0)
        cache[",".join(str(v) for v in vals)] = entry
    doc = {"device_name": "recorded", "kernel_name": "replay", "problem_size": [1],
           "tune_params_keys": names, "tune_params": tune_params, "objective": "speedup",
           "cache": cache}
    with open(path, "w") as f:
        json.dump(doc, f)


def run_one(strategy, budget, seed, names, tune_params, keys, cache_path):
    """The best speedup Kernel Tuner's strategy has found after each of its
    first budget evaluations (distinct configurations, in its order)."""
    random.seed(seed)
    np.random.seed(seed)

    def admit(p):
        return tuple(p[n] for n in names) in keys

    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            "replay", "/* replayed from the cache */", (1,), [], tune_params,
            restrictions=admit, strategy=strategy,
            strategy_options={"max_fevals": budget},
            cache=cache_path, simulation_mode=True, objective="speedup",
            objective_higher_is_better=True, quiet=True, verbose=False)
    bests, best, seen = [], 0.0, set()
    for r in results:  # in the order evaluated
        key = tuple(r[n] for n in names)
        if key in seen:
            continue
        seen.add(key)
        s = r.get("speedup")
        if isinstance(s, (int, float)):
            best = max(best, s)
        bests.append(best)
    return bests[:budget]


class Overtime(Exception):
    pass


def overtime(signum, frame):
    raise Overtime(f"over {RUN_LIMIT_S} s")


def limit_worker():
    """Each worker within RUN_LIMIT_MB of memory: a strategy lost in a
    sparse space (greedy_ils on a recorded one) grew to 12 GB here."""
    resource.setrlimit(resource.RLIMIT_AS, (RUN_LIMIT_MB << 20, RUN_LIMIT_MB << 20))
    signal.signal(signal.SIGALRM, overtime)


def try_one(args):
    """run_one within RUN_LIMIT_S seconds, or the error that stopped the
    strategy, as a line."""
    signal.alarm(RUN_LIMIT_S)
    try:
        return run_one(*args)
    except (Exception, Overtime) as e:  # a strategy Kernel Tuner cannot run on this space
        return f"{type(e).__name__}: {str(e)[:70]}"
    finally:
        signal.alarm(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset")
    # The README's four; greedy_ils cannot run on a recorded space (docs/benchmarks.md).
    ap.add_argument("--strategies", default="random_sample,bayes_opt,genetic_algorithm,pso")
    ap.add_argument("--budgets", default="12,24,48,96")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--per-budget", action="store_true",
                    help="a run of its own for every budget, for every strategy")
    a = ap.parse_args()
    pts, names = load(a.dataset)
    tune_params = {n: sorted({p["params"][n] for p in pts}) for n in names}
    keys = {tuple(p["params"][n] for n in names) for p in pts}
    best = max(p["speedup"] for p in pts if p.get("status") == "ok")
    budgets = [int(b) for b in a.budgets.split(",")]
    tmp = tempfile.mkdtemp(prefix="kt-replay-")
    cache_path = os.path.join(tmp, "cache.json")
    write_cache(cache_path, pts, names, tune_params)
    print(f"dataset {a.dataset}: {len(pts)} points, best {best:.4g}x; "
          f"Kernel Tuner {kernel_tuner.__version__}, simulation mode")
    print(f"fraction of the best recorded speedup reached, median (worst) over {a.seeds} seeds")
    print(f"{'strategy':<20}" + "".join(f"{b:>17}" for b in budgets))
    per_budget = [(b, seed) for b in budgets for seed in range(a.seeds)]
    prefix = [(max(budgets), seed) for seed in range(a.seeds)]
    for strategy in a.strategies.split(","):
        t0, cells, found, note = time.time(), [], [], ""
        separate = a.per_budget or strategy not in PREFIX_SAFE
        work = per_budget if separate else prefix
        args = [(strategy, b, seed, names, tune_params, keys, cache_path)
                for b, seed in work]
        with multiprocessing.Pool(a.jobs, initializer=limit_worker) as pool:
            got = pool.map(try_one, args)
        errs = [g for g in got if isinstance(g, str)]
        for b in budgets if not errs else []:
            runs = [g for (bb, _), g in zip(work, got) if bb == b or not separate]
            fr = [g[min(b, len(g)) - 1] / best if g else 0.0 for g in runs]
            used = statistics.median(min(b, len(g)) for g in runs)
            cell = f"{statistics.median(fr):.2f} ({min(fr):.2f})"
            if used < b:  # the strategy stopped before the budget
                cell += f" n={used:g}"
            cells.append(cell)
            found.append(str(sum(f >= 1.0 for f in fr)))
        if errs:
            note = f"  ({errs[0]})"
        found = f"  the best in {'/'.join(found)} of {a.seeds}" if found else ""
        print(f"{strategy:<20}" + "".join(f"{c:>17}" for c in cells) +
              f"{note}{found}  [{time.time() - t0:.0f} s]", flush=True)
    os.remove(cache_path)
    os.rmdir(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
