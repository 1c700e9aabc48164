#!/usr/bin/env python3
"""Records a dense sample of a spec's tunable space: tests/data/space/*.json.

    nice -n 10 python3 bench/record_space.py --count 400 \
        --out tests/data/space/matmul-512.json

Draws a uniform random sample of the valid points of a spec's tunables
(examples/matmul.yaml by default; the constraints are evaluated here, at
every shape of the batch), adds the template's own defaults, renders each
point as the tuner does (render: options, so `-DNAME=VALUE` build options on
the unchanged template) and runs evalpod on them in batches of --batch
variants.  For matmul the batch is examples/matmul/make_batch.py's (the same
problem, correctness shapes, seeds and tolerances) with the timed shape
M=N=K=--size; for any other spec it is --base-batch, a batch.json that
`kctl eval SPEC` wrote for it (rounds/r000/batch.json: the spec's problem,
shapes, tolerances and seeds), its variants left out.
Each batch's results are appended to a scratch file (--scratch, JSON lines)
as soon as the batch ends, and points already there are skipped, so the
script can be stopped and run again; the output document is rewritten after
every batch.  Format: tests/data/space/README.md.  Python 3 standard library
only.
"""
import argparse
import datetime
import itertools
import json
import os
import random
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(msg):
    sys.exit(f"record_space: {msg}")


# ---- the spec: only the parts read here (tunables, shapes, defaults) ----


def parse_list(text, where):
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        die(f"{where}: expected a flow list [a, b, ...], got '{text}'")
    out = []
    for item in text[1:-1].split(","):
        item = item.strip()
        if not re.fullmatch(r"-?[0-9]+", item):
            die(f"{where}: '{item}' is not an integer")
        out.append(int(item))
    return out


def strip_comment(line):
    # comments here never follow a quote character (no '#' inside strings)
    q = None
    for i, c in enumerate(line):
        if q:
            if c == q:
                q = None
        elif c in "\"'":
            q = c
        elif c == "#":
            return line[:i]
    return line


def read_spec(path):
    """Returns (params: {name: [values]}, constraints: [str], shapes: [{..}], template,
    flops: problem.flops as written, None without it)."""
    params, constraints, shapes, template, flops = {}, [], [], None, None
    section = sub = None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for n, raw in enumerate(lines, 1):
        where = f"{path}:{n}"
        line = strip_comment(raw).rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        if indent == 0:
            section, sub = body.rstrip(":"), None
            continue
        if section == "tunables" and indent == 2:
            sub = body.rstrip(":")
            continue
        if section == "kernel" and indent == 2 and body.startswith("template:"):
            template = body.partition(":")[2].strip().strip("\"'")
        if section == "problem" and indent == 2 and body.startswith("flops:"):
            flops = body.partition(":")[2].strip().strip("\"'")
        if section == "tunables" and sub == "params":
            m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*):\s*(.*)", body)
            if not m:
                die(f"{where}: expected 'NAME: [values]'")
            params[m.group(1)] = parse_list(m.group(2), where)
        elif section == "tunables" and sub == "constraints":
            m = re.fullmatch(r"-\s*\"(.*)\"", body)
            if not m:
                die(f"{where}: expected '- \"expression\"'")
            constraints.append(m.group(1))
        elif section == "shapes":
            m = re.search(r"values:\s*\{([^}]*)\}", body)
            if not m:
                die(f"{where}: expected a shape with values: {{...}}")
            vals = {}
            for kv in m.group(1).split(","):
                k, _, v = kv.partition(":")
                vals[k.strip()] = int(v)
            shapes.append({"timed": "timed: true" in body, "values": vals})
    if not params:
        die(f"{path}: no tunables.params")
    if not shapes:
        die(f"{path}: no shapes")
    if not template:
        die(f"{path}: no kernel.template")
    return params, constraints, shapes, template, flops


TOKEN = re.compile(r"\s*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|(&&|\|\||==|!=|<=|>=|[-+*%()<>!]))")
ARITH = re.compile(r"\s*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|([-+*/%(),]))")


def translate(expr, token, what, name_code, ops):
    """expr as Python code: token's numbers as they are, each name through
    name_code (None: not a name expr may use) and each operator through ops."""
    out, pos = [], 0
    while pos < len(expr):
        m = token.match(expr, pos)
        if not m or m.end() == pos:
            if expr[pos:].strip() == "":
                break
            die(f"{what} '{expr}': unexpected '{expr[pos:].strip()[:10]}' at column {pos + 1}")
        num, name, op = m.groups()
        if num is not None:
            out.append(num)
        elif name is not None:
            code = name_code(name)
            if code is None:
                die(f"{what} '{expr}': '{name}' names no tunable or shape value")
            out.append(code)
        else:
            out.append(ops.get(op, op))
        pos = m.end()
    return compile("".join(out), f"<{what} {expr}>", "eval")


def compile_constraint(expr, names):
    """Translates a C-like integer condition into a Python expression.

    Only integers, names of the tunables or shape values, ( ) + - * % and
    the comparisons, && || ! are accepted; anything else is refused.  The
    operands are non-negative here, so Python's % is C's.
    """
    return translate(expr, TOKEN, "constraint",
                     lambda name: f"v[{name!r}]" if name in names else None,
                     {"&&": " and ", "||": " or ", "!": " not "})


def eval_int(expr, values):
    """An integer expression of the spec (problem.flops) at one shape.

    Integers, the shape's names, + - * / % ( ) and ceil_div, round_up, min,
    max; '/' divides as C does on non-negative integers.
    """
    funcs = {"ceil_div": lambda a, b: -(-a // b), "round_up": lambda a, b: -(-a // b) * b,
             "min": min, "max": max}
    code = translate(expr, ARITH, "expression",
                     lambda name: f"f[{name!r}]" if name in funcs
                     else f"v[{name!r}]" if name in values else None,
                     {"/": "//"})
    return int(eval(code, {"__builtins__": {}}, {"v": values, "f": funcs}))  # noqa: S307


def make_valid(params, constraints, shapes):
    names = set(params)
    for s in shapes:
        names |= set(s["values"])
    codes = [(c, compile_constraint(c, names)) for c in constraints]

    def valid(point):
        for s in shapes:
            v = dict(s["values"])
            v.update(point)
            for _, code in codes:
                if not eval(code, {"__builtins__": {}}, {"v": v}):  # noqa: S307 (translated above)
                    return False
        return True

    return valid


def template_defaults(path, names):
    """The template's #ifndef-guarded defaults of the tunables."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    out = {}
    for name in names:
        m = re.search(rf"#ifndef\s+{name}\s*\n\s*#define\s+{name}\s+(-?[0-9]+)", src)
        if not m:
            die(f"{path}: no '#ifndef {name}' default")
        out[name] = int(m.group(1))
    return out


def parse_assignments(text, names, what):
    """'NAME=VALUE,...' with each NAME one of names and each VALUE an integer."""
    out = {}
    for item in (x for x in text.split(",") if x):
        name, _, value = item.partition("=")
        if name not in names or not re.fullmatch(r"-?[0-9]+", value):
            die(f"{what}: '{item}' is not NAME=VALUE with NAME one of {', '.join(names)}")
        out[name] = int(value)
    return out


def every_point(params, fixed):
    """Every point of the tunables' lists, those named in fixed held at their value."""
    lists = [[fixed[k]] if k in fixed else vals for k, vals in params.items()]
    return (dict(zip(params, v)) for v in itertools.product(*lists))


# ---- evalpod ----


def key(p):
    return json.dumps(p, sort_keys=True)


def base_batch(size, path):
    """The batch without variants: path's, or make_batch.py's for the timed size."""
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                b = json.load(f)
        except (OSError, ValueError) as e:
            die(f"--base-batch {path}: {e}")
        if not isinstance(b, dict) or not b.get("baseline") or not b.get("shapes"):
            die(f"--base-batch {path}: not an evalpod batch (no baseline or shapes)")
        b["variants"] = []
        return b
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples/matmul/make_batch.py"),
                          "--size", str(size), "--variants", "0"],
                         check=True, capture_output=True, text=True).stdout
    b = json.loads(out)
    b["variants"] = []
    return b


def run_batch(evalpod, batch, points, n, flops, timeout):
    b = dict(batch)
    b["batch_id"] = f"space-{n}"
    b["variants"] = []
    for i, p in enumerate(points):
        b["variants"].append({
            "id": f"p{i:03d}",
            "parent": "baseline",
            "source": batch["baseline"]["source"],
            "build_options": " ".join(f"-D{k}={v}" for k, v in p.items()),
            "rationale": "recorded space point",
        })
    with tempfile.TemporaryDirectory(prefix="kctl-space-") as tmp:
        path = os.path.join(tmp, "batch.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(b, f)
        outdir = os.path.join(tmp, "out")
        proc = subprocess.run([evalpod, "run", path, "--out", outdir],
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            return None, f"evalpod exited {proc.returncode}: {proc.stderr.strip()[-400:]}"
        with open(os.path.join(outdir, "summary.json"), encoding="utf-8") as f:
            summary = json.load(f)
    device = (summary.get("device") or {}).get("name")
    byid = {r["id"]: r for r in summary["results"]}
    rows = []
    for i, p in enumerate(points):
        r = byid.get(f"p{i:03d}")
        if r is None:
            return None, f"summary has no result for p{i:03d}"
        row = {"params": p, "status": r["status"], "median_ms": None, "gflops": None,
               "cv": None, "speedup": None}
        perf = r.get("performance")
        if r["status"] == "ok" and perf:
            ms = perf["median_ms"]
            row["median_ms"] = round(ms, 6)
            row["gflops"] = round(flops / (ms * 1e6), 3) if ms > 0 else None
            rcv = perf.get("robust_cv")
            row["cv"] = round(rcv, 4) if rcv is not None else None
            sp = perf.get("speedup_vs_reference")
            if sp and sp.get("ratio_of_medians") is not None:
                row["speedup"] = round(sp["ratio_of_medians"], 3)
        elif r.get("fault"):
            row["fault"] = r["fault"].get("kind")
        rows.append(row)
    return {"device": device, "rows": rows, "wall_ms": summary.get("wall_ms")}, None


def write_doc(args, rows, device, meta):
    order = {k: i for i, k in enumerate(meta["names"])}
    doc = {
        "format": "kctl-space/1",
        "spec": args.spec_rel,
        "shape": meta["shape"],
        "device": device,
        "recorded": meta["recorded"],
        "commit": meta["commit"],
        "measurement": meta["measurement"],
        "points": [],
    }
    for r in rows:
        p = {k: r["params"][k] for k in sorted(r["params"], key=order.get)}
        doc["points"].append(dict(r, params=p))
    tmp = args.out + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("{\n")
        head = [k for k in doc if k != "points"]
        for k in head:
            f.write(f" {json.dumps(k)}: {json.dumps(doc[k], sort_keys=False)},\n")
        f.write(' "points": [\n')
        for i, pt in enumerate(doc["points"]):
            f.write("  " + json.dumps(pt) + (",\n" if i + 1 < len(doc["points"]) else "\n"))
        f.write(" ]\n}\n")
    os.replace(tmp, args.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="examples/matmul.yaml")
    ap.add_argument("--evalpod", default=os.path.join(ROOT, "build/evalpod/evalpod"))
    ap.add_argument("--size", type=int, default=512,
                    help="M = N = K of matmul's timed shape (without --base-batch)")
    ap.add_argument("--base-batch", default=None,
                    help="a batch.json of `kctl eval SPEC` (its variants left out): the "
                         "batch for a spec other than matmul")
    ap.add_argument("--measurement", default="",
                    help="NAME=VALUE,...: set these keys of the batch's measurement (numbers, "
                         "true or false), e.g. a session's where --base-batch has kctl eval's")
    ap.add_argument("--count", type=int, default=400, help="points in all, the defaults included")
    ap.add_argument("--batch", type=int, default=20, help="variants per evalpod batch")
    ap.add_argument("--seed", type=int, default=1, help="seeds the sample")
    ap.add_argument("--out", default="tests/data/space/matmul-512.json")
    ap.add_argument("--scratch", default=None, help="JSON lines, one per point (default OUT.jsonl)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds for one evalpod run")
    ap.add_argument("--twins", default="",
                    help="NAME,...: also record every valid point that differs from a drawn "
                         "one in one of these tunables only")
    ap.add_argument("--fix", default="",
                    help="NAME=VALUE,...: sample only the valid points with these values "
                         "(a neighbourhood recorded whole when --count covers it)")
    ap.add_argument("--dry-run", action="store_true", help="print the sample's size and stop")
    args = ap.parse_args()
    if args.size < 1 or args.count < 1 or not 1 <= args.batch <= 4096:
        die("--size, --count must be at least 1 and --batch 1..4096")
    spec = args.spec if os.path.isabs(args.spec) else os.path.join(ROOT, args.spec)
    args.spec_rel = os.path.relpath(spec, ROOT)
    args.scratch = args.scratch or args.out + ".jsonl"

    params, constraints, shapes, template, _ = read_spec(spec)
    names = list(params)
    batch = base_batch(args.size, args.base_batch)
    known = {"true": True, "false": False}
    for item in (x for x in args.measurement.split(",") if x):
        name, _, value = item.partition("=")
        if not re.fullmatch(r"[a-z_]+", name):  # evalpod refuses a key it does not know
            die(f"--measurement: '{name}' is not a measurement key")
        if value in known:
            batch["measurement"][name] = known[value]
        elif re.fullmatch(r"[0-9]+", value):
            batch["measurement"][name] = int(value)
        elif re.fullmatch(r"[0-9]*\.[0-9]+", value):
            batch["measurement"][name] = float(value)
        else:
            die(f"--measurement: '{item}' is not NAME=number, true or false")
    if args.base_batch:
        # the batch's shapes, as kctl renders the spec's
        check_shapes = [{"timed": bool(s.get("timed")), "values": s["values"]}
                        for s in batch["shapes"]]
        timed = next((s for s in check_shapes if s["timed"]), None)
        if timed is None:
            die(f"--base-batch {args.base_batch}: no timed shape")
        shape = timed["values"]
    else:
        # constraints hold at every shape: the timed one at --size too
        check_shapes = [s for s in shapes if not s["timed"]]
        shape = {"M": args.size, "N": args.size, "K": args.size}
        check_shapes.append({"timed": True, "values": shape})
        check_shapes = shapes + check_shapes
    flops_expr = (batch.get("problem") or {}).get("flops")
    if not isinstance(flops_expr, str):
        die("the batch has no problem.flops")
    flops = eval_int(flops_expr, shape)
    valid = make_valid(params, constraints, check_shapes)
    fixed = parse_assignments(args.fix, names, "--fix")
    for k, v in fixed.items():
        if v not in params[k]:
            die(f"--fix: {k}={v} is not one of {k}'s values {params[k]}")
    space = [p for p in every_point(params, fixed) if valid(p)]
    if fixed and not space:
        die(f"--fix: no valid point has {args.fix}")
    tmpl = os.path.join(os.path.dirname(spec), template)
    defaults = template_defaults(tmpl, names)
    if not valid(defaults):
        die(f"the template's defaults {defaults} break the spec's constraints")
    rng = random.Random(args.seed)
    if fixed:
        sample = rng.sample(space, min(args.count, len(space)))
    else:
        sample = [defaults] + [p for p in rng.sample(space, min(args.count, len(space)))
                               if p != defaults]
    sample = sample[:args.count]
    ndrawn = len(sample)
    twins = [t for t in args.twins.split(",") if t]
    for t in twins:
        if t not in params:
            die(f"--twins: '{t}' is not a tunable of {args.spec_rel}")
    if twins:
        seen = {key(p) for p in sample}
        for p in list(sample):
            for t in twins:
                for x in params[t]:
                    q = dict(p, **{t: x})
                    if key(q) not in seen and valid(q):
                        seen.add(key(q))
                        sample.append(q)
    print(f"record_space: {len(space)} valid points, sampling {len(sample)}", flush=True)
    if args.dry_run:
        return

    done, device = {}, None
    if os.path.exists(args.scratch):
        with open(args.scratch, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    device = r.pop("_device", None) or device
                    # the machine failed, not the kernel: evaluated again
                    if r["status"] != "infra_error":
                        done[key(r["params"])] = r
    todo = [p for p in sample if key(p) not in done]
    os.makedirs(os.path.dirname(os.path.abspath(args.scratch)), exist_ok=True)
    print(f"record_space: {len(done)} done, {len(todo)} to run", flush=True)

    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or None
    meta = {
        "names": names,
        "shape": shape,
        "recorded": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "commit": commit,
        "measurement": dict(batch["measurement"], **{
            "timed_shape": batch["shapes"][0]["name"],
            "checked_shapes": [s["name"] for s in batch["shapes"]],
            "correctness": batch["correctness"],
            "variants_per_batch": args.batch,
            "evalpod": "evalpod run, one batch per --batch points with the naive reference "
                       "and the template as baseline, timed side by side",
            "median_ms": "performance.median_ms of the timed shape (event time of one run)",
            "cv": "performance.robust_cv",
            "speedup": "performance.speedup_vs_reference.ratio_of_medians",
            "gflops": f"{flops_expr} / (median_ms * 1e6)",
            "flops": flops,
            "sample": f"uniform over the {len(space)} valid points"
                      + (f" with {args.fix}" if fixed else "")
                      + f", seed {args.seed}"
                      + ("" if fixed else ", plus the template's defaults")
                      + (f", then every valid twin of those {ndrawn} in {', '.join(twins)} "
                         "(one of them changed)" if twins else ""),
            # the space as the spec had it: a value added later is not missing here
            "values": params,
        }, **({"twins": {"drawn": ndrawn, "tunables": twins}} if twins else {}),
           **({"fixed": fixed} if fixed else {}),
           **({"whole": len(sample) == len(space)} if fixed or args.base_batch else {})),
    }
    for i in range(0, len(todo), args.batch):
        chunk = todo[i:i + args.batch]
        res, err = None, None
        for attempt in range(3):
            try:
                res, err = run_batch(args.evalpod, batch, chunk, i // args.batch, flops,
                                     args.timeout)
            except subprocess.TimeoutExpired:
                res, err = None, f"evalpod ran past {args.timeout} s"
            if res:
                break
            print(f"record_space: batch {i // args.batch} attempt {attempt + 1}: {err}",
                  file=sys.stderr, flush=True)
        if not res:
            die(f"batch {i // args.batch} failed three times: {err}")
        device = res["device"] or device
        with open(args.scratch, "a", encoding="utf-8") as f:
            for r in res["rows"]:
                if r["status"] != "infra_error":
                    done[key(r["params"])] = r
                f.write(json.dumps(dict(r, _device=device)) + "\n")
        ok = sum(r["status"] == "ok" for r in res["rows"])
        print(f"record_space: batch {i // args.batch}: {len(chunk)} points, {ok} ok, "
              f"{len(done)}/{len(sample)} done, wall {res['wall_ms'] / 1000:.0f} s",
              flush=True)
        rows = [done[key(p)] for p in sample if key(p) in done]
        write_doc(args, rows, device, meta)
    rows = [done[key(p)] for p in sample if key(p) in done]
    write_doc(args, rows, device, meta)
    left = len(sample) - len(rows)
    print(f"record_space: wrote {args.out}: {len(rows)} points"
          + (f"; {left} ended in infra_error: run again to evaluate them" if left else ""),
          flush=True)


if __name__ == "__main__":
    main()
