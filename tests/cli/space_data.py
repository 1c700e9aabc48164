#!/usr/bin/env python3
"""Checks a recorded space (tests/data/space/README.md) against its spec.

usage: space_data.py REPO_ROOT SPACE.json [MIN_POINTS]

Every point must be a valid vector of the spec's tunables (every constraint
at every shape, matmul's timed one at the recorded size, another spec's timed
shape as the spec has it), points are distinct, the first is the template's
defaults, figures are present exactly when the status is ok and agree with
each other.  A space recorded with --twins also has every valid twin of its
drawn points and nothing else; one marked "whole" has every valid point.
measurement.flops (written since 2026-12-06) is the spec's problem.flops at
the shape, and gflops agrees with it.
Prints one line per check and "N passed, M failed"; exits 1 when anything
failed.
"""
import json
import os
import sys

passes, failures = [], []


def check(cond, what):
    (passes if cond else failures).append(what)
    print(("ok   " if cond else "FAIL ") + what)


def main():
    if len(sys.argv) not in (3, 4):
        print("usage: space_data.py REPO_ROOT SPACE.json [MIN_POINTS]", file=sys.stderr)
        return 2
    root, path = sys.argv[1], sys.argv[2]
    least = int(sys.argv[3]) if len(sys.argv) == 4 else 1
    sys.path.insert(0, os.path.join(root, "bench"))
    import record_space as rs  # the same constraint reader the recording used

    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    check(doc.get("format") == "kctl-space/1", f"format is kctl-space/1 (got {doc.get('format')!r})")
    for k in ("spec", "shape", "device", "recorded", "commit", "measurement", "points"):
        check(k in doc, f"has '{k}'")
    spec = os.path.join(root, doc["spec"])
    params, constraints, shapes, template, flops_expr = rs.read_spec(spec)
    shape = doc["shape"]
    measurement = doc["measurement"]
    # matmul is recorded at a timed size of its own (M = N = K); any other
    # spec at its own timed shape (record_space.py --base-batch)
    matmul = doc["spec"] == "examples/matmul.yaml"
    if matmul:
        shape_ok = set(shape) == {"M", "N", "K"} and all(isinstance(v, int) and v > 0
                                                         for v in shape.values())
        check(shape_ok, f"shape is positive M, N, K (got {shape})")
        checked = [s for s in shapes if not s["timed"]] + [{"timed": True, "values": shape}]
    else:
        timed = [s["values"] for s in shapes if s["timed"]]
        shape_ok = timed == [shape]
        check(shape_ok, f"shape is the spec's timed shape (got {shape}, spec {timed})")
        checked = []
    check(flops_expr is not None, f"{doc['spec']} has a problem.flops")
    flops = rs.eval_int(flops_expr, shape) if shape_ok and flops_expr else 1
    # written since the recordings of other specs; the older matmul ones lack it
    if not matmul or "flops" in measurement:
        check(measurement.get("flops") == flops,
              f"measurement.flops is the spec's {flops_expr} at the shape, {flops} "
              f"(got {measurement.get('flops')})")
    valid = rs.make_valid(params, constraints, shapes + checked)
    pts = doc["points"]
    check(len(pts) >= least, f"at least {least} points (got {len(pts)})")

    names = list(params)
    bad = [p["params"] for p in pts
           if list(p["params"]) != names or not all(p["params"][k] in params[k] for k in names)
           or not valid(p["params"])]
    check(not bad, f"every point sets every tunable to one of its values and is valid "
                   f"(bad: {bad[:3]})")
    if matmul:
        # and by the hand-written copy of the constraints in make_batch.py
        sys.path.insert(0, os.path.join(root, "examples", "matmul"))
        import make_batch
        check(all(make_batch.valid(p["params"]) for p in pts),
              "every point is valid by examples/matmul/make_batch.py's constraints too")
    keys = [json.dumps(p["params"], sort_keys=True) for p in pts]
    check(len(set(keys)) == len(keys), f"points are distinct ({len(keys) - len(set(keys))} repeats)")
    fixed = measurement.get("fixed") or {}
    if fixed:
        # a neighbourhood (record_space.py --fix): every point has the fixed
        # values
        check(isinstance(fixed, dict) and set(fixed) <= set(names),
              f"measurement.fixed names tunables of the spec (got {fixed})")
        off = [p["params"] for p in pts if any(p["params"][k] != v for k, v in fixed.items())]
        check(not off, f"every point has the fixed values {fixed} (not: {off[:2]})")
    if measurement.get("whole"):
        # every valid point (with the fixed values, if any) is recorded, of
        # the values the spec had when it was recorded (a value added since
        # is not missing), which are the spec's own or fewer
        held = measurement.get("values") or params
        check(isinstance(held, dict) and list(held) == names
              and all(set(held[k]) <= set(params[k]) for k in names),
              f"measurement.values are the spec's tunables, each with its values or "
              f"fewer (got {held})")
        every = {json.dumps(q, sort_keys=True) for q in rs.every_point(held, fixed)
                 if valid(q)}
        check(every == set(keys), f"the points are every valid point with {fixed} "
                                  f"({len(every)} valid, {len(set(keys))} recorded)")
    if not fixed:
        tmpl = os.path.join(os.path.dirname(spec), template)
        check(bool(pts) and pts[0]["params"] == rs.template_defaults(tmpl, names),
              "the first point is the template's defaults")
    if matmul and not fixed:
        check(any(p["params"].get("PACK") == 1 for p in pts)
              and any(p["params"].get("PACK") == 0 for p in pts), "both PACK values are sampled")

    twins = doc["measurement"].get("twins")
    if twins:
        # the drawn points first, then each one's twins: the drawn point with
        # one of the named tunables set to another of its values
        ndrawn, names_t = twins["drawn"], twins["tunables"]
        check(isinstance(ndrawn, int) and 0 < ndrawn <= len(pts) and set(names_t) <= set(names),
              f"measurement.twins names a drawn count and tunables of the spec (got {twins})")
        drawn = pts[:ndrawn]

        def twin_of(p, q):
            diff = [k for k in names if p["params"][k] != q["params"][k]]
            return len(diff) == 1 and diff[0] in names_t

        lone = [p["params"] for p in pts[ndrawn:] if not any(twin_of(p, q) for q in drawn)]
        check(not lone, f"every point after the {ndrawn} drawn is a twin of one in "
                        f"{', '.join(names_t)} (not: {lone[:2]})")
        missing = [(q["params"], k, x) for q in drawn for k in names_t for x in params[k]
                   if x != q["params"][k] and valid(dict(q["params"], **{k: x}))
                   and json.dumps(dict(q["params"], **{k: x}), sort_keys=True) not in keys]
        check(not missing, f"every valid twin of the drawn points is recorded (missing: {missing[:2]})")
        check(any(p["params"].get("PACK") == 2 for p in pts), "PACK=2 is sampled")

    figs = ("median_ms", "gflops", "cv", "speedup")
    incoherent = []
    for p in pts:
        ok = p["status"] == "ok"
        if ok:
            good = (all(isinstance(p[k], (int, float)) for k in ("median_ms", "gflops"))
                    and p["median_ms"] > 0
                    and abs(p["gflops"] - flops / (p["median_ms"] * 1e6)) <= 1e-3 * p["gflops"] + 1e-3
                    and (p["speedup"] is None or p["speedup"] > 0))
        else:
            good = all(p.get(k) is None for k in figs) and p["status"] != "infra_error"
        if not good:
            incoherent.append(p)
    check(not incoherent, f"figures exactly for ok points, gflops = flops/median "
                          f"(incoherent: {incoherent[:2]})")
    n_ok = sum(p["status"] == "ok" for p in pts)
    check(n_ok >= len(pts) // 2, f"most points are ok ({n_ok} of {len(pts)})")
    print(f"{len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
