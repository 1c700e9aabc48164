#!/usr/bin/env python3
"""How often the audit on new inputs fails an honest program, and passes one
that replays answers, on a machine whose samples are slowed at random by
other work.

The audit (evalpod/timing-audit.c) takes attempts of 3 pairs of samples,
one on the timing sets and one on new inputs, and stops at the first
verdict that passes.  Its verdict, over every sample so far: the mean of
the new-input samples less 0.05 ms within 1.5 x the mean of the timing-set
samples, each mean without its kind's slowest quarter (one of three), and
the fastest new-input sample less 0.05 ms within 2.5 x the fastest
timing-set sample.  The schedules simulated:

  fastest   the rule before 2026-12-01: the fastest new-input sample within
            1.5 x the fastest timing-set sample + 0.05 ms, 3 of 3
  3 of 3    a verdict after each of up to 3 attempts (evalpod until
            2026-12-02)
  6 of 36   the first verdict after 2 attempts (6 pairs), then one after
            each attempt, up to 12 (evalpod until 2026-12-04)
  9 of 36   the same from the third attempt (9 pairs)
  rnd 2.5   6 of 36, the fastest condition also over the program's
            fastest sample in the rounds (ROUNDS samples taken before the
            audit), at 2.5 x (tried on 2026-12-04, not kept: see shift)
  now       6 of 36, the first attempt's three samples on the timing sets
            taken before its first new input, and the fastest new-input
            sample within 4 x the rounds' fastest + 0.05 ms (evalpod now)

Three kinds of machine:

  FAST=p    a sample is fast with probability p (0.95-1.15 of the
            program's time) or slow (1.7-2.0 of it: a core of the 2 taken
            from the device's threads, as measured on the 2-vCPU host,
            2026-12-01); 2% of samples stall at 10 x
  loaded    a sample's time is the program's times a factor drawn from
            LOADED: the quantiles (every 5%) of 331 samples over their
            session's fastest, 15 audits of tests/data/llm/mm.yaml's
            template (3.0 ms) by the ASan build while three busy loops ran
            on the 2 cores (2026-12-02; the audit that failed CI that day
            was of this program under the ASan suite)
  shift     quiet (FAST=0.95) through the rounds, then busy through the
            whole audit: every audit sample 2.6-3.6 x the program's time
            (other work started as the audit did)

A replayer N x faster on inputs it has met has its timing-set samples
divided by N; a padded one also stalls at 10 x on 40% of its runs there,
which keeps its median (what it is ranked by) fast and its mean slow; an
upset one loses its memo to the first new input (the last three inputs of
each element kept in turn, as redteam's memo_local.cl did until
2026-12-04) and replays only in the rounds and in the audit's samples
before its first new input.

    python3 bench/audit_rule.py [TRIALS]
"""
import random
import sys

RATIO, FASTEST, FLOOR_MS, PAIRS = 1.5, 2.5, 0.05, 3
LOADED = [1.0, 1.0, 1.11, 1.61, 1.73, 1.94, 2.1, 2.16, 2.24, 2.33, 2.45, 2.71,
          2.95, 3.13, 3.31, 3.41, 3.61, 4.06, 4.43, 5.01, 8.86]

# name: (attempts before the first verdict, attempts at most, samples on the
# timing sets before the first new input, limit over the rounds' fastest)
SCHEDULES = {"fastest": (1, 3, 1, None), "3 of 3": (1, 3, 1, None),
             "6 of 36": (2, 12, 1, None), "9 of 36": (3, 12, 1, None),
             "rnd 2.5": (2, 12, 1, 2.5), "now": (2, 12, 3, 4.0)}
ROUNDS = 8  # a program's samples in the rounds (the batch's min_samples in the tests)


def sample(machine, ms, rng):
    if machine == "shift":
        return ms * rng.uniform(2.6, 3.6)
    if machine == "loaded":
        q = rng.random() * (len(LOADED) - 1)
        i = int(q)
        return ms * (LOADED[i] + (q - i) * (LOADED[i + 1] - LOADED[i]))
    x = ms * (rng.uniform(0.95, 1.15) if rng.random() < machine else rng.uniform(1.7, 2.0))
    return x * 10 if rng.random() < 0.02 else x


def trimmed_mean(x):
    x = sorted(x)
    drop = len(x) // 4 if len(x) >= 4 else int(len(x) == 3)
    kept = x[:len(x) - drop]
    return sum(kept) / len(kept)


def verdict(schedule, met, new, rounds):
    if schedule == "fastest":
        return min(new) <= RATIO * min(met) + FLOOR_MS
    limit = SCHEDULES[schedule][3]
    return (trimmed_mean(new) - FLOOR_MS <= RATIO * trimmed_mean(met) and
            min(new) - FLOOR_MS <= FASTEST * min(met) and
            (limit is None or min(new) - FLOOR_MS <= limit * min(rounds)))


def audit(schedule, machine, speedup, rng, pad=0.0, upset=False, ms=3.0):
    """Whether the audit passes, and the pairs it took."""
    first, attempts, clean, _ = SCHEDULES[schedule]
    before = 0.95 if machine == "shift" else machine

    def on_met(where, replays):
        if rng.random() < pad:
            return ms * 10
        return sample(where, ms, rng) / (speedup if replays else 1.0)

    rounds = [on_met(before, True) for _ in range(ROUNDS)]
    met, new = [], []
    for attempt in range(1, attempts + 1):
        for i in range(PAIRS):
            met.append(on_met(machine, not upset or (not new and i < clean)))
            if attempt > 1 or i >= clean - 1:
                new.extend(sample(machine, ms, rng) for _ in range(len(met) - len(new)))
        if attempt >= first and verdict(schedule, met, new, rounds):
            return True, len(met)
    return False, len(met)


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    rng = random.Random(20261202)
    print(f"{trials} audits per cell; 'honest failed' is a false verdict, "
          "'Nx passed' a replayer let through; 'pairs' an honest audit's mean")
    print(f"{'machine':>8} {'schedule':>8} {'honest failed':>14} {'pairs':>6} "
          f"{'2x passed':>10} {'3x passed':>10} {'4x passed':>10} {'3x padded':>10} "
          f"{'4x upset':>10} {'10x upset':>10}")
    for machine in ("shift", "loaded", 0.05, 0.1, 0.3, 0.5, 0.7, 0.95):
        for schedule in SCHEDULES:
            honest = [audit(schedule, machine, 1.0, rng) for _ in range(trials)]
            failed = sum(not ok for ok, _ in honest) / trials
            pairs = sum(n for _, n in honest) / trials
            passed = [sum(audit(schedule, machine, s, rng, pad, upset)[0]
                          for _ in range(trials // 4)) / (trials // 4)
                      for s, pad, upset in ((2.0, 0, False), (3.0, 0, False), (4.0, 0, False),
                                            (3.0, 0.4, False), (4.0, 0, True),
                                            (10.0, 0, True))]
            label = machine if isinstance(machine, str) else f"FAST={machine}"
            print(f"{label:>8} {schedule:>8} {failed:>14.3%} {pairs:>6.1f} " +
                  " ".join(f"{p:>10.2%}" for p in passed))


if __name__ == "__main__":
    main()
