#!/usr/bin/env bash
# bench/winner.sh - does the main job find the same winner each time, and is
# best.cl's figure the best one measured? (prints figures; not a test)
#
# Runs `kctl start SPEC` (the main job, ci/main.sh: examples/matmul.yaml)
# RUNS times one after the other, each on its own copy of the spec (with the
# kernel folder beside it, so the sessions land in the copy's runs/) and its
# own state database, then prints for each run the winner kctl chose and:
#   best measured   the highest GFLOP/s any ok program reached in the run, in
#                   any round, confirmation passes included; best.cl's figure
#                   over it, and over the highest of all runs
#   agreement       the winner named by best.cl's header, `kctl status`,
#                   report.md's "## Winner" and learnings.md's "## Winner"
#                   (AGREE or DISAGREE; a DISAGREE makes the script exit 1)
# and across runs whether they found the same winner within noise.  Runs are
# not timed side by side, so two winners count as the same when they have
# the same parameters, or when their GFLOP/s differ by less than the larger
# of their two robust CVs (difference over the mean of the two).
#
# RUNS (default 3), SPEC (default examples/matmul.yaml), KCTL_ARGS (extra
# arguments for `kctl start`, e.g. "--rounds 1" for a quick check).  The
# binaries are BUILD_DIR's (default build, built if missing); KCTL and
# EVALPOD name others.  KEEP=1 keeps the temporary folder (sessions, logs).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-3}
spec=${SPEC:-examples/matmul.yaml}
kctl_args=${KCTL_ARGS:-}
bdir=${BUILD_DIR:-build}
kctl=${KCTL:-$bdir/controller/kctl}
evalpod=${EVALPOD:-}

case $runs in
'' | *[!0-9]* | 0) echo "winner.sh: RUNS must be a positive number, not '$runs'" >&2; exit 2 ;;
esac
[ -f "$spec" ] || { echo "winner.sh: no spec '$spec'" >&2; exit 2; }
# Without KCTL or EVALPOD, both come from the build folder; with only KCTL,
# kctl finds the evalpod of its own build tree (docs/kctl.md).
if [ -z "${KCTL:-}" ] && [ -z "$evalpod" ]; then
	evalpod=$bdir/evalpod/evalpod
	if [ ! -x "$kctl" ] || [ ! -x "$evalpod" ]; then
		cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
		cmake --build "$bdir" -j"$(nproc)" --target kctl evalpod >/dev/null
	fi
fi
[ -x "$kctl" ] || { echo "winner.sh: kctl '$kctl' is not an executable" >&2; exit 2; }
if [ -n "$evalpod" ]; then
	[ -x "$evalpod" ] || { echo "winner.sh: evalpod '$evalpod' is not an executable" >&2; exit 2; }
	export KCTL_EVALPOD=$evalpod
fi
# A binary older than its sources measures code that is no longer there.
stale() {
	local newer
	newer=$(find "${@:2}" -name '*.[ch]' -newer "$1" | head -n 1)
	[ -z "$newer" ] ||
		echo "warning: $1 is older than $newer: rebuild it, or name others with KCTL and EVALPOD" >&2
}
stale "$kctl" controller common
[ -z "$evalpod" ] || stale "$evalpod" evalpod common

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-winner.XXXXXX")
if [ -n "${KEEP:-}" ]; then
	trap 'echo "kept $tmp"' EXIT
else
	trap 'rm -rf "$tmp"' EXIT
fi

# `report run DIR I` prints one run and leaves its figures in DIR/run.json;
# `report summary TMP RUNS SPEC ARGS` compares the runs and prints the
# summary, and exits 1 when a run's outputs named different winners.
report=$(
	cat <<'PY'
import glob, json, math, os, re, sys

def num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None

def params_text(p):
    return " ".join(f"{k}={v}" for k, v in p.items()) if p else "(no parameters)"

def section(path, title):
    """The text of a markdown file's '## title' section, or None."""
    text = open(path).read() if os.path.exists(path) else ""
    m = re.search(r"^## " + re.escape(title) + r"\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else None

def best_cl(path):
    """(variant, GFLOP/s text, speedup text) from best.cl's header comment."""
    if not os.path.exists(path):
        return None, None, None
    head = open(path).read().split(" */", 1)[0]
    v = re.search(r"Best kernel of kctl session \S+: (\S+)", head)
    g = re.search(r"^ \* ([0-9.]+) GFLOP/s", head, re.M)
    x = re.search(r"speedup ([0-9.]+)x vs the reference", head)
    return tuple(m.group(1) if m else None for m in (v, g, x))

def measured(sdir):
    """Every ok program's GFLOP/s in every round: [(gflops, id, round)]."""
    out = []
    for p in glob.glob(os.path.join(sdir, "rounds", "r*", "results", "*.json")):
        base = os.path.basename(p)
        if base == "summary.json" or ".infra-" in base:
            continue
        r = json.load(open(p))
        g = num((r.get("roofline") or {}).get("gflops"))
        if r.get("status") == "ok" and g:
            out.append((g, base[:-5], os.path.basename(os.path.dirname(os.path.dirname(p)))))
    return sorted(out, reverse=True)

def run(d, i):
    st = json.load(open(os.path.join(d, "status.json")))
    start, end, rc = open(os.path.join(d, "run")).read().split()
    wall = float(end) - float(start)
    best = st.get("best")
    print(f"   session {st['session']}: {st['state']}, exit {rc}, {wall:.0f} s, "
          f"{st['rounds']} rounds, {st['evaluations']} evaluations")
    if not best:
        print(f"winner.sh: run {i} found no winner: no variant passed its checks "
              f"(see {st['output_dir']}/learnings.md)", file=sys.stderr)
        sys.exit(1)
    sdir = st["output_dir"]
    g, x, cv = num(best.get("gflops")), num(best.get("speedup_vs_reference")), num(best.get("robust_cv"))
    settled = {True: "settled", False: "not settled within noise", None: "no confirmation"}
    print(f"   winner {best['variant']}: {params_text(best.get('params'))}")
    print(f"     status  {g:.2f} GFLOP/s, {x:.2f}x vs reference, robust CV "
          + (f"{cv * 100:.1f}% ({best.get('quality')})" if cv is not None else "not measured")
          + f", {'confirmed' if best.get('confirmed') else 'not confirmed'}, "
          f"{settled.get(best.get('settled'), best.get('settled'))}")
    print(f"     verdict {best.get('verdict')}")
    cl_v, cl_g, cl_x = best_cl(os.path.join(sdir, "best.cl"))
    print(f"     best.cl {cl_g} GFLOP/s, {cl_x}x vs reference"
          + ("" if (cl_g, cl_x) == (f"{g:.2f}", f"{x:.2f}") else "  (differs from status)"))
    rep = section(os.path.join(sdir, "report.md"), "Winner") or ""
    m = re.search(r"\*\*([^*\s]+)\*\*", rep)
    lrn = (section(os.path.join(sdir, "learnings.md"), "Winner") or "").strip()
    names = {"best.cl": cl_v, "status": best["variant"], "report.md": m.group(1) if m else None,
             "learnings.md": lrn.split(",")[0] if lrn and not lrn.startswith("None") else None}
    agree = len(set(names.values())) == 1 and (cl_g, cl_x) == (f"{g:.2f}", f"{x:.2f}")
    print(f"   winner named in best.cl, status, report.md, learnings.md: "
          + ("AGREE" if agree else "DISAGREE (" + ", ".join(f"{k} {v}" for k, v in names.items()) + ")"))
    ms = measured(sdir)
    top = ms[0] if ms else (g, best["variant"], "?")
    mine = [m for m in ms if m[1] == best["variant"]]
    who = "the winner" if top[1] == best["variant"] else top[1]
    print(f"   best measured in this run: {top[0]:.2f} GFLOP/s ({who} in {top[2]}; "
          f"{len(ms)} ok measurements); best.cl / it = {g / top[0]:.3f}")
    if mine:
        print(f"   the winner measured {len(mine)} times: "
              + ", ".join(f"{m[0]:.1f} ({m[2]})" for m in sorted(mine, key=lambda m: m[2])))
    json.dump({"run": i, "session": st["session"], "wall": wall, "variant": best["variant"],
               "params": best.get("params") or {}, "gflops": g, "speedup": x, "cv": cv,
               "confirmed": bool(best.get("confirmed")), "settled": best.get("settled"),
               "top": list(top), "agree": agree}, open(os.path.join(d, "run.json"), "w"))

def same(a, b):
    """(same?, why) for the winners of two runs."""
    if a["params"] and a["params"] == b["params"]:
        return True, "same point"
    diff = abs(a["gflops"] - b["gflops"]) / ((a["gflops"] + b["gflops"]) / 2)
    tol = max(a["cv"] or 0, b["cv"] or 0)
    if diff < tol:
        return True, f"within noise ({diff * 100:.1f}% < {tol * 100:.1f}%)"
    return False, f"differ ({diff * 100:.1f}% >= {tol * 100:.1f}%)"

def summary(tmp, n, spec, args):
    rs = [json.load(open(os.path.join(tmp, f"run{i}", "run.json"))) for i in range(1, n + 1)]
    top = max((r["top"] + [r["run"]] for r in rs), key=lambda t: t[0])
    print()
    print("== across runs (runs are not timed side by side: two winners are the same when they")
    print("   have the same parameters, or when their GFLOP/s differ, over the mean of the two,")
    print("   by less than the larger of their robust CVs)")
    for r in rs:
        print(f"   run {r['run']}: {r['variant']:<10} {params_text(r['params']):<44} "
              f"{r['gflops']:7.2f} GFLOP/s; best.cl / best measured in its run {r['gflops'] / r['top'][0]:.3f}, "
              f"in all runs {r['gflops'] / top[0]:.3f}")
    pairs, agree_with = [], {r["run"]: 1 for r in rs}
    for i, a in enumerate(rs):
        for b in rs[i + 1:]:
            ok, why = same(a, b)
            pairs.append(f"{a['run']}-{b['run']} {why}")
            if ok:
                agree_with[a["run"]] += 1
                agree_with[b["run"]] += 1
    k = max(agree_with.values())
    line = f"same winner in {k} of {n} runs (pairwise: {'; '.join(pairs) or 'one run'})"
    print(f"   {line}")
    print(f"   best measured in all runs: {top[0]:.2f} GFLOP/s ({top[1]} in {top[2]} of run {top[3]})")
    bad = [r["run"] for r in rs if not r["agree"]]
    walls = [r["wall"] for r in rs]
    own = [r["gflops"] / r["top"][0] for r in rs]
    alls = [r["gflops"] / top[0] for r in rs]
    print()
    print(f"== summary: {n} runs of kctl start {spec} {args}".rstrip())
    print(f"  wall time per run                      {min(walls):.0f} .. {max(walls):.0f} s")
    print(f"  winners (GFLOP/s)                      " + ", ".join(f"{r['gflops']:.1f}" for r in rs))
    print(f"  same winner within noise               {k} of {n} runs")
    print(f"  best.cl / best measured in its run     " + ", ".join(f"{x:.2f}" for x in own))
    print(f"  best.cl / best measured in all runs    " + ", ".join(f"{x:.2f}" for x in alls)
          + f"  (best {top[0]:.1f} GFLOP/s)")
    print(f"  outputs name one winner                {n - len(bad)} of {n} runs")
    print()
    print(f"| `bash bench/winner.sh` | `kctl start {spec}{(' ' + args) if args else ''}` run {n} times, "
          f"each with its own state and output folder: how often the same winner (same parameters, or "
          f"GFLOP/s within the larger robust CV) is found; best.cl's GFLOP/s over the best any program "
          f"measured in its run and in all runs | {line}; winners "
          + ", ".join(f"{r['gflops']:.1f} ({params_text(r['params'])})" for r in rs)
          + f" GFLOP/s; best.cl / best measured in its run {min(own):.2f}–{max(own):.2f}, in all runs "
          f"{min(alls):.2f}–{max(alls):.2f} (best {top[0]:.1f}); {min(walls):.0f}–{max(walls):.0f} s per run |")
    if bad:
        print(f"winner.sh: best.cl, kctl status, report.md and learnings.md do not name one winner "
              f"in run(s) {', '.join(map(str, bad))}", file=sys.stderr)
        sys.exit(1)

if sys.argv[1] == "run":
    run(sys.argv[2], int(sys.argv[3]))
else:
    summary(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
PY
)

# The kernel files a spec names live beside it, in the folder named after it
# (examples/matmul.yaml: examples/matmul/).
name=$(basename "$spec" .yaml)
kdir=$(dirname "$spec")/$name

echo "== $runs runs of: kctl start $spec $kctl_args"
echo "   kctl $kctl, evalpod ${evalpod:-(found by kctl)}"
for i in $(seq 1 "$runs"); do
	r=$tmp/run$i
	mkdir -p "$r/state"
	cp "$spec" "$r/"
	[ ! -d "$kdir" ] || cp -r "$kdir" "$r/"
	echo "-- run $i of $runs: started $(date -u +%H:%M:%S) UTC"
	start=$(date +%s.%N)
	rc=0
	# word splitting of KCTL_ARGS is wanted: it holds several arguments
	# shellcheck disable=SC2086
	KCTL_STATE_DIR=$r/state KCTL_CACHE_DIR=$r/cache "$kctl" start "$r/$name.yaml" $kctl_args >"$r/sid" 2>"$r/kctl.log" || rc=$?
	end=$(date +%s.%N)
	sid=$(head -n 1 "$r/sid")
	if [ "$rc" -ne 0 ] || [ -z "$sid" ]; then
		echo "winner.sh: run $i failed: kctl start exited $rc${sid:+ (session $sid)}; the end of its log:" >&2
		tail -n 20 "$r/kctl.log" >&2
		exit 1
	fi
	KCTL_STATE_DIR=$r/state "$kctl" status "$sid" -o json >"$r/status.json"
	echo "$start $end $rc" >"$r/run"
	python3 -c "$report" run "$r" "$i"
done
python3 -c "$report" summary "$tmp" "$runs" "$spec" "$kctl_args"
