#!/usr/bin/env python3
"""How often the audit on new inputs fails an honest program, and passes one
that replays answers, on a machine whose samples run at full speed or, with
a core taken from the device's threads, at about half of it.

The audit (evalpod/timing-audit.c) takes up to 3 attempts of 3 pairs of
samples, one on the timing sets and one on new inputs, and stops at the
first attempt that passes.  Three rules are simulated over every sample
so far:

  fastest   the fastest new-input sample within 1.5 x the fastest timing-set
            sample + 0.05 ms (evalpod's rule until 2026-12-01)
  means     the mean of the new-input samples less 0.05 ms within 1.5 x the
            mean of the timing-set samples, each mean without its kind's
            slowest quarter (one of three)

A sample is fast with probability FAST (at 0.95-1.15 of the program's time)
or slow (at 1.7-2.0 of it: the spread evalpod measured on the 2-vCPU host,
2026-12-01), and 2% of samples stall at 10 x.  A replayer N x faster on
inputs it has met has its timing-set samples divided by N; a padded one
also stalls at 10 x on 40% of its runs there, which keeps its median (what
it is ranked by) fast and its mean slow.

    python3 bench/audit_rule.py [TRIALS]
"""
import random
import sys

RATIO, FASTEST, FLOOR_MS, ATTEMPTS, PAIRS = 1.5, 2.5, 0.05, 3, 3


def sample(fast, ms, rng):
    x = ms * (rng.uniform(0.95, 1.15) if rng.random() < fast else rng.uniform(1.7, 2.0))
    return x * 10 if rng.random() < 0.02 else x


def trimmed_mean(x):
    x = sorted(x)
    drop = len(x) // 4 if len(x) >= 4 else int(len(x) == 3)
    kept = x[:len(x) - drop]
    return sum(kept) / len(kept)


def fastest(met, new):
    return min(new) <= RATIO * min(met) + FLOOR_MS


def means(met, new):
    return trimmed_mean(new) - FLOOR_MS <= RATIO * trimmed_mean(met)


def both(met, new):
    return means(met, new) and min(new) - FLOOR_MS <= FASTEST * min(met)


def audit(rule, fast, speedup, rng, pad=0.0, ms=3.0):
    met, new = [], []
    for _ in range(ATTEMPTS):
        for _ in range(PAIRS):
            met.append(ms * 10 if rng.random() < pad else sample(fast, ms, rng) / speedup)
            new.append(sample(fast, ms, rng))
        if rule(met, new):
            return True
    return False


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    rng = random.Random(20261201)
    print(f"{trials} audits per cell; 'honest failed' is a false verdict, "
          "'Nx passed' a replayer let through")
    print(f"{'FAST':>5} {'rule':>8} {'honest failed':>14} {'2x passed':>10} "
          f"{'3x passed':>10} {'4x passed':>10} {'3x padded':>10}")
    for fast in (0.05, 0.1, 0.3, 0.5, 0.7, 0.95):
        for name, rule in (("fastest", fastest), ("means", means), ("evalpod", both)):
            fp = sum(not audit(rule, fast, 1.0, rng) for _ in range(trials)) / trials
            passed = [sum(audit(rule, fast, s, rng, pad) for _ in range(trials // 4)) / (trials // 4)
                      for s, pad in ((2.0, 0), (3.0, 0), (4.0, 0), (3.0, 0.4))]
            print(f"{fast:>5} {name:>8} {fp:>14.2%} " +
                  " ".join(f"{p:>10.2%}" for p in passed))


if __name__ == "__main__":
    main()
