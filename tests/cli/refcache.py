#!/usr/bin/env python3
"""evalpod run --ref-cache DIR: the session's reference outputs and timing
seeds, kept across runs.

usage: refcache.py EVALPOD DATA_DIR

One affine batch (tests/data/refcache: a reference, a right kernel, one wrong
at a few elements, one that leaves an element unwritten, and one that tries
to #include the cache's timing-seeds file) is run

- without a cache, then with a cold cache, then with the warm one: every
  verdict, every correctness figure of the parent's judge and the status of
  every program must be the same three times; the warm run must take the
  outputs from the cache and reuse the session's timing seeds;
- after one entry's bytes are flipped, and after another entry's bytes are
  put under a third one's name (a foreign entry), and after one is cut short:
  each is detected, removed and recomputed (the reference worker runs again),
  the verdicts do not change, and the run after that hits the cache again;
- the timing worker builds its read flush (measurement.flush_kind "read")
  from the binary the reference worker made (cached with the reference's),
  and from source when the device refuses that binary;
- the reference is timed once per anchor, not once per batch: a batch whose
  baseline was timed in an earlier run of the session (so the cache holds its
  speedup over the reference, its anchor) leaves the reference out of timing,
  and every speedup over the reference is then exactly the speedup over the
  baseline times that anchor, with the links it is made of; a baseline whose
  anchor has REFCACHE_ANCHOR_LINKS links, an anchor measured with other
  samples (sample_min_ms), a damaged anchor, or a baseline judged wrong once
  timed gets the reference timed again; more samples (a confirmation's) do
  not;
- the kernel that includes the cache's timing-seeds file is a compile_error
  and the seeds appear nowhere in its result.  (A kernel cannot call the C
  library: PoCL refuses to link an unknown symbol.  The cache lies outside
  the work directory, out of every worker's Landlock rules.)
"""
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import checks
import redteam

check = checks.check
read = checks.read

# evalpod/refcache.h: a figure is at most this many links from a timed reference.
REFCACHE_ANCHOR_LINKS = 2
LIMITS = {"compile_timeout_s": 60, "run_timeout_s": 30, "time_timeout_s": 600}
KERNELS = ("good", "wrong", "unwritten")


def make_batch(data, cache_file):
    variants = [{"id": k, "source": read(data, k + ".cl")} for k in KERNELS]
    probe = read(data, "include_cache.cl")
    variants.append({"id": "include_cache",
                     "source": probe.replace("@CACHE_PATH@", cache_file)})
    batch = checks.affine_batch("refcache", read(data, "reference.cl"), variants, LIMITS)
    # The read flush, whose binary the cache keeps: on a CPU device evalpod
    # would take the lines flush, which builds nothing.
    batch["measurement"]["flush_kind"] = "read"
    return batch


def run(evalpod, batch_path, out, cache=None):
    cmd = [evalpod, "run", batch_path, "--out", out]
    if cache:
        cmd += ["--ref-cache", cache]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=900)
    sys.stderr.write(proc.stderr[-2000:])
    check(proc.returncode == 0, f"{os.path.basename(out)}: evalpod exits 0 (got {proc.returncode})")
    return proc


def figures(v):
    """The correctness figures without the wall times, which differ run to run."""
    if isinstance(v, dict):
        return {k: figures(x) for k, x in v.items() if not k.endswith("_ms")}
    if isinstance(v, list):
        return [figures(x) for x in v]
    return v


def verdicts(out):
    """Per program: status, fault kind, and the judge's correctness figures."""
    got = {}
    for path in glob.glob(os.path.join(out, "*.json")):
        if path.endswith("summary.json"):
            continue
        with open(path, encoding="utf-8") as f:
            res = json.load(f)
        corr = res.get("correctness") or {}
        got[res["id"]] = (res.get("status"), (res.get("fault") or {}).get("kind"),
                          corr.get("passed"), json.dumps(figures(corr.get("shapes")), sort_keys=True))
    return got


def summary(out):
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        return json.load(f)


def cached(out):
    return (summary(out).get("reference") or {}).get("outputs_cached")


def seeds(out):
    return (summary(out).get("timing") or {}).get("timing_seeds")


def anchors(cache):
    """The cache's anchor entries: a program's speedup over the reference."""
    out = []
    for path in sorted(glob.glob(os.path.join(cache, "*.bin"))):
        with open(path, "rb") as f:
            if f.read().split(b"\n", 4)[-1].startswith(b"speedup_vs_reference "):
                out.append(path)
    return out


def anchor_values(cache):
    """(speedup over the reference, links) of every anchor entry."""
    out = []
    for path in anchors(cache):
        with open(path, "rb") as f:
            words = f.read().split(b"\n", 4)[-1].split()
        out.append((float(words[1]), int(words[3])))
    return out


def entries(cache):
    """The cache's output entries (not the binary's), by name."""
    out = []
    for path in sorted(glob.glob(os.path.join(cache, "*.bin"))):
        with open(path, "rb") as f:
            head = f.read(200).split(b"\n")
        if len(head) > 2 and head[2] in (b"bytes 4000", b"bytes 262144"):
            out.append(path)
    return out


def flush_entry(cache):
    """The entry holding the cache flush's binary: the one that names its kernel."""
    outputs = set(entries(cache))
    for path in sorted(glob.glob(os.path.join(cache, "*.bin"))):
        if path in outputs:
            continue
        with open(path, "rb") as f:
            if b"evalpod_flush" in f.read():
                return path
    return None


def rewrite_payload(path, payload):
    """Replaces an entry's payload, its header's size and SHA-256 made to match."""
    with open(path, "rb") as f:
        lines = f.read().split(b"\n", 4)
    # magic, key, bytes, sha256, payload
    lines[2] = b"bytes %d" % len(payload)
    lines[3] = b"sha256 " + hashlib.sha256(payload).hexdigest().encode()
    lines[4] = payload
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))


def same_verdicts(base, out, what):
    got = verdicts(out)
    check(got == base, f"{what}: every program's verdict and correctness figures are those "
          f"of the run without a cache ({ {k: v[:2] for k, v in got.items()} })")


def damaged_run(evalpod, batch_path, tmp, cache, base, what, damage, reason):
    """Damages the cache with damage(files), then runs twice: the first detects and
    recomputes, the second hits again."""
    damage(entries(cache))
    out = os.path.join(tmp, what)
    proc = run(evalpod, batch_path, out, cache)
    check(cached(out) is False, f"{what}: the reference runs again (outputs_cached false)")
    check("rejected" in proc.stderr and reason in proc.stderr,
          f"{what}: the log names the rejected entry and why ({reason!r})")
    same_verdicts(base, out, what)
    again = os.path.join(tmp, what + "-again")
    run(evalpod, batch_path, again, cache)
    check(cached(again) is True, f"{what}: the recomputed entries are cached again")
    same_verdicts(base, again, what + ", then")


def flip_byte(files):
    with open(files[0], "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0x40]))


def foreign(files):
    """Another entry's bytes, of the same length, under a third one's name: only the
    key in its header can tell (names are hashes, so their order differs by build)."""
    by_size = {}
    for path in files:
        by_size.setdefault(os.path.getsize(path), []).append(path)
    src, dst = next(paths for paths in by_size.values() if len(paths) >= 2)[:2]
    with open(src, "rb") as f:
        other = f.read()
    with open(dst, "wb") as f:
        f.write(other)


def truncate(files):
    size = os.path.getsize(files[0])
    os.truncate(files[0], size - 4)


def main():
    evalpod, data = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "session", "evalpod-cache")
        batch_path = os.path.join(tmp, "batch.json")
        with open(batch_path, "w", encoding="utf-8") as f:
            json.dump(make_batch(data, os.path.join(cache, "timing-seeds")), f)

        plain = os.path.join(tmp, "plain")
        run(evalpod, batch_path, plain)
        base = verdicts(plain)
        expect = {"good": ("ok", None), "wrong": ("incorrect", "wrong_values"),
                  "unwritten": ("incorrect", "unwritten_output"),
                  "include_cache": ("compile_error", None)}
        for k, (status, kind) in expect.items():
            got = base.get(k, (None, None))
            check(got[0] == status and (kind is None or got[1] == kind),
                  f"without a cache: {k} is {status}/{kind} (got {got[:2]})")
        check(cached(plain) is False, "without a cache: outputs_cached is false")

        cold = os.path.join(tmp, "cold")
        run(evalpod, batch_path, cold, cache)
        check(cached(cold) is False, "cold cache: the reference worker computes the outputs")
        # 2 shapes x 3 seeds + 5 timing seeds (3 rotating, 2 audit) at the timed shape,
        # one output each
        check(len(entries(cache)) == 2 * 3 + 5,
              f"cold cache: one entry per (shape, seed) output (got {len(entries(cache))})")
        check(len(anchors(cache)) == 1,
              f"cold cache: one anchor, the one program timed (got {len(anchors(cache))})")
        check(len(glob.glob(os.path.join(cache, "*.bin"))) == 2 * 3 + 5 + 2 + 1,
              "cold cache: and one each for the reference's and the cache flush's binaries")
        mode = os.stat(cache).st_mode & 0o777
        check(mode == 0o700, f"the cache folder is private (mode {oct(mode)})")
        same_verdicts(base, cold, "cold cache")

        warm = os.path.join(tmp, "warm")
        proc = run(evalpod, batch_path, warm, cache)
        check(cached(warm) is True, "warm cache: the outputs come from the cache")
        check("computing reference outputs" not in proc.stderr,
              "warm cache: the reference worker does not run")
        check(seeds(warm) == seeds(cold) and seeds(warm) != seeds(plain),
              f"warm cache: the session's timing seeds are reused ({seeds(warm)})")
        same_verdicts(base, warm, "warm cache")
        ref = (summary(warm).get("reference") or {}).get("performance") or {}
        check((ref.get("stats") or {}).get("n", 0) >= 8,
              "warm cache: the reference is still timed (speedups keep their meaning)")

        with open(os.path.join(cache, "timing-seeds"), encoding="utf-8") as f:
            secret = f.read().split(",")
        for out in (plain, cold, warm):
            with open(os.path.join(out, "include_cache.json"), encoding="utf-8") as f:
                text = f.read()
            leaked = [s for s in secret if s in text]
            check(not leaked, f"{os.path.basename(out)}: include_cache's result holds none "
                  f"of the session's timing seeds (found {leaked})")

        for out in (plain, cold, warm):
            got = (summary(out).get("timing") or {}).get("flush_built_from")
            check(got == "binary", f"{os.path.basename(out)}: the timing worker's cache flush "
                  f"comes from the reference worker's binary (got {got!r})")

        # A cache flush binary the device refuses (here, not a program at all,
        # under an intact header): the timing worker builds the flush's source.
        flush = flush_entry(cache)
        check(flush is not None, "the cache holds the flush's binary")
        if flush:
            rewrite_payload(flush, b"not a program binary\n")
            out = os.path.join(tmp, "refused")
            run(evalpod, batch_path, out, cache)
            got = (summary(out).get("timing") or {}).get("flush_built_from")
            check(got == "source", f"refused flush binary: the flush is built from source "
                  f"(got {got!r})")
            check(cached(out) is True, "refused flush binary: the outputs still come from "
                  "the cache")
            same_verdicts(base, out, "refused flush binary")

        damaged_run(evalpod, batch_path, tmp, cache, base, "flipped", flip_byte,
                    "SHA-256 mismatch")
        damaged_run(evalpod, batch_path, tmp, cache, base, "foreign", foreign, "holds entry")
        damaged_run(evalpod, batch_path, tmp, cache, base, "truncated", truncate,
                    "were expected")
        anchored_runs(evalpod, data, tmp, cache)
    return checks.summary()


def same_speed(data, n):
    """good.cl under another source text (a comment): another program, as fast."""
    return {"id": f"good{n}", "source": read(data, "good.cl") + f"// copy {n}\n"}


def anchored_batch(data, cache, baseline, variants, measurement=None):
    batch = make_batch(data, os.path.join(cache, "timing-seeds"))
    batch["variants"] = variants
    batch["baseline"] = baseline
    if measurement:
        batch["measurement"].update(measurement)
    return batch


def anchored_run(evalpod, tmp, cache, name, batch):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(batch, f)
    out = os.path.join(tmp, name)
    proc = run(evalpod, path, out, cache)
    results = {}
    for res in summary(out)["results"]:
        results[res["id"]] = res
    return proc, summary(out).get("reference") or {}, results


def expect_anchored(what, ref, results, baseline, links):
    """The reference not timed, every speedup over it carried by the baseline's anchor."""
    anchor = ref.get("anchor") or {}
    check(ref.get("performance") is None and anchor.get("program") == baseline and
          anchor.get("links") == links,
          f"{what}: the reference is not timed; the baseline {baseline} carries it with "
          f"{links} link(s) (anchor {anchor}, timed {ref.get('performance') is not None})")
    k = anchor.get("speedup_vs_reference", 0)
    for pid, res in results.items():
        perf = res.get("performance") or {}
        vs_ref, vs_base = perf.get("speedup_vs_reference") or {}, perf.get(
            "speedup_vs_baseline") or {}
        want = vs_base.get("ratio_of_medians", 0) * k
        got = vs_ref.get("ratio_of_medians", -1)
        # evalpod writes 10 significant digits: three rounded figures can be
        # about 1.5e-9 of the value apart; a wrong anchor is off by percents
        check(res.get("status") == "ok" and k > 0 and abs(got - want) <= 1e-8 * want,
              f"{what}: {pid}'s speedup over the reference is its speedup over the baseline "
              f"times the anchor ({got} = {want})")
        check((vs_ref.get("via") or {}).get("links") == links + 1,
              f"{what}: {pid}'s figure says it is {links + 1} link(s) from a timed reference "
              f"({vs_ref.get('via')})")
        ms = perf.get("reference_median_ms", 0)
        check(abs(ms - perf.get("baseline_median_ms", 0) * k) <= 1e-8 * ms and ms > 0,
              f"{what}: {pid}'s reference_median_ms is what the baseline implies")


def expect_timed(what, ref, results):
    perf = ref.get("performance") or {}
    check(perf.get("stats", {}).get("n", 0) >= 8 and "anchor" not in ref,
          f"{what}: the reference is timed ({ref.get('anchor')})")
    for pid, res in results.items():
        vs_ref = (res.get("performance") or {}).get("speedup_vs_reference") or {}
        check(vs_ref.get("ratio_of_medians", 0) > 0 and "via" not in vs_ref,
              f"{what}: {pid}'s speedup over the reference is measured side by side")


def anchored_runs(evalpod, data, tmp, cache):
    """A session whose incumbent changes: the reference is timed when no anchor
    with links to spare is there, and only then."""
    good = {"id": "good", "source": read(data, "good.cl")}
    # good was timed beside the reference in every run above: its anchor has no link.
    proc, ref, res = anchored_run(evalpod, tmp, cache, "anchor1",
                                  anchored_batch(data, cache, good,
                                                 [same_speed(data, 1), same_speed(data, 2)]))
    expect_anchored("baseline timed beside the reference before", ref, res, "good", 0)
    check("the reference anchored" in proc.stderr,
          "the progress line says the reference is anchored")

    # good1 was timed beside good: one link; its figures two.
    proc, ref, res = anchored_run(evalpod, tmp, cache, "anchor2",
                                  anchored_batch(data, cache, same_speed(data, 1),
                                                 [same_speed(data, 3)]))
    expect_anchored("baseline one link away", ref, res, "good1", 1)

    # good was a baseline since, its own figure derived from its anchor: the
    # anchor it has is still the one measured beside the reference.
    proc, ref, res = anchored_run(evalpod, tmp, cache, "anchor2b",
                                  anchored_batch(data, cache, good, [same_speed(data, 2)]))
    expect_anchored("a baseline's anchor outlives its derived figures", ref, res, "good", 0)

    # good3's anchor has two links: the reference is timed again, and good3's
    # anchor measured afresh (no link), so the next batch leaves it out again.
    proc, ref, res = anchored_run(evalpod, tmp, cache, "anchor3",
                                  anchored_batch(data, cache, same_speed(data, 3),
                                                 [same_speed(data, 4)]))
    expect_timed(f"baseline {REFCACHE_ANCHOR_LINKS} links away", ref, res)
    proc, ref, res = anchored_run(evalpod, tmp, cache, "anchor4",
                                  anchored_batch(data, cache, same_speed(data, 3),
                                                 [same_speed(data, 4)]))
    expect_anchored("baseline timed beside the reference again", ref, res, "good3", 0)

    # More samples measure the same figure (a confirmation): still anchored.
    # Another sample (more runs in it) measures another: no anchor.
    proc, ref, res = anchored_run(evalpod, tmp, cache, "anchor5a",
                                  anchored_batch(data, cache, same_speed(data, 3),
                                                 [same_speed(data, 4)],
                                                 {"min_samples": 9, "order_seed": 7}))
    expect_anchored("more samples in another order", ref, res, "good3", 0)
    proc, ref, res = anchored_run(evalpod, tmp, cache, "anchor5",
                                  anchored_batch(data, cache, same_speed(data, 3),
                                                 [same_speed(data, 4)], {"sample_min_ms": 2}))
    expect_timed("another sample_min_ms", ref, res)

    # A baseline judged wrong once timed carries nothing: the pass is timed
    # again with the reference.  redteam's fingerprint.cl is right on the
    # correctness inputs and writes zeros on any other (y is in [-1, 3]):
    # under a tolerance of 4 it is timed ok beside the reference (its
    # anchor), under the usual one it fails only when timed.
    known = ", ".join("0x%08xu" % redteam.first_x_bits(seed) for seed in (1, 2, 3))
    wrong = {"id": "wrong_timed",
             "source": read(os.path.join(data, os.pardir, "redteam"),
                            "fingerprint.cl").replace("@CHECK_X0@", known)}
    loose = anchored_batch(data, cache, wrong, [same_speed(data, 5)])
    loose["correctness"].update({"atol": 4, "rtol": 0})
    proc, ref, res = anchored_run(evalpod, tmp, cache, "loose", loose)
    expect_timed("a baseline without an anchor", ref, res)
    proc, ref, res = anchored_run(evalpod, tmp, cache, "tight",
                                  anchored_batch(data, cache, wrong, [same_speed(data, 5)]))
    got = (res.get("wrong_timed") or {}).get("status")
    check(got == "invalid", f"tight: the baseline is judged wrong when timed (got {got})")
    check("cannot carry" in proc.stderr,
          "tight: the log says the baseline cannot carry the reference's speed")
    expect_timed("tight: timed again with the reference", ref,
                 {k: v for k, v in res.items() if k != "wrong_timed"})

    # A damaged anchor (an intact header over a payload that is no anchor) is
    # rejected and removed, and the reference timed.
    for path in anchors(cache):
        rewrite_payload(path, b"speedup_vs_reference -1\nlinks 0\n")
    proc, ref, res = anchored_run(evalpod, tmp, cache, "anchor6",
                                  anchored_batch(data, cache, same_speed(data, 3),
                                                 [same_speed(data, 4)]))
    expect_timed("a damaged anchor", ref, res)
    check("not an anchor" in proc.stderr and "rejected" in proc.stderr,
          "a damaged anchor: the log names it and why")
    fresh = [a for a in anchor_values(cache) if a[0] > 0]
    check(len(fresh) == 2 and all(links == 0 for _, links in fresh),
          f"a damaged anchor: the baseline's and the variant's measured afresh ({fresh})")


if __name__ == "__main__":
    sys.exit(main())
