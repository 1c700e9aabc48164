#!/usr/bin/env bash
# bench/examples.sh - what the loop finds on each example (prints figures).
#
# Runs `kctl start` on every example spec (tuner only, local backend,
# PoCL) within the budget the spec sets (ROUNDS caps the rounds), then
# prints, measured in the same run on the same machine:
#   matmul      the best kernel's GFLOP/s at the timed shape and its fraction
#               of OpenBLAS sgemm at the same size (bench/blas_sgemm, Debian's
#               libopenblas), goal >= 1.0 (issue 13), and of CLBlast's SGEMM on the same
#               OpenCL device (bench/clblast_sgemm, Debian's libclblast-dev),
#               the yardstick that holds on any OpenCL device, GPUs included
#   others      the best kernel's fraction of its roofline bound
#               min(measured FMA peak, arithmetic intensity x measured
#               bandwidth), goal chunk_gla >= 0.5 and gmm_fp8_blockwise >= 0.8
#               (issue 13), and its speedup over the reference
#   all         the evaluations used and the wall time
# BUILD_DIR names the build folder (default build), so that a measurement
# need not share it with other work.  NO_BUILD=1 uses the binaries already
# there (a GPU node with no compiler: bench/gpu.sh); a missing blas_sgemm or
# clblast_sgemm is then reported and skipped.  EXAMPLE_TIMEOUT=SECONDS stops
# each session's `kctl start` after that long (what it found is reported).
# SEED=N seeds every session's proposer (`kctl start --seed N`); without it
# each session draws a seed of its own and prints it, so that repeats of
# this script are independent searches (with the spec's fixed seed they
# would make the same first choices) and any one of them can be replayed.
set -euo pipefail
cd "$(dirname "$0")/.."

examples=${EXAMPLES:-"matmul chunk_gla gmm_fp8_blockwise"}
rounds=${ROUNDS:-}
bdir=${BUILD_DIR:-build}
if [ -z "${NO_BUILD:-}" ]; then
	cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$bdir" -j"$(nproc)" --target kctl evalpod blas_sgemm >/dev/null
	# CLBlast when its library is installed (ci/deps.sh installs it).
	cmake --build "$bdir" -j"$(nproc)" --target clblast_sgemm >/dev/null 2>&1 || true
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-examples.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export KCTL_STATE_DIR="$tmp/state"

for ex in $examples; do
	spec=examples/$ex.yaml
	[ -f "$spec" ] || { echo "$ex: no $spec, skipped"; continue; }
	seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
	start=$(date +%s)
	sid=$(${EXAMPLE_TIMEOUT:+timeout "$EXAMPLE_TIMEOUT"} "$bdir"/controller/kctl start "$spec" --seed "$seed" --no-cache ${rounds:+--rounds "$rounds"} 2>"$tmp/$ex.log" | head -n 1 || true)
	end=$(date +%s)
	"$bdir"/controller/kctl status "$sid" -o json >"$tmp/$ex.status.json"
	# SAVE_TO=DIR keeps the session's folder (without its evalpod cache and
	# its LLVM and x86 listings) and kctl's log there as EXAMPLE.tar.gz.
	if [ -n "${SAVE_TO:-}" ]; then
		mkdir -p "$SAVE_TO"
		od=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["output_dir"])' "$tmp/$ex.status.json")
		tar -czf "$SAVE_TO/$ex.tar.gz" --exclude=evalpod-cache --exclude="*.ll" --exclude="*.s" \
			-C "$od" . -C "$tmp" "$ex.log" ||
			echo "$ex: could not save the session to $SAVE_TO" >&2
	fi
	blas="{}"
	# matmul and any variant of its spec (examples/matmul_*.yaml)
	if [ "${ex%%_*}" = matmul ]; then
		# OpenBLAS as this machine's environment sets it up, and with its own
		# choice of kernel (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset together):
		# the better of the two is the yardstick.
		b1='{"gflops": 0}' b2='{"gflops": 0}'
		if [ -x "$bdir"/bench/blas_sgemm ]; then
			b1=$("$bdir"/bench/blas_sgemm "${MATMUL_SIZE:-1024}")
			b2=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$bdir"/bench/blas_sgemm "${MATMUL_SIZE:-1024}")
		fi
		cl='{}'
		if [ -x "$bdir"/bench/clblast_sgemm ]; then
			cl=$("$bdir"/bench/clblast_sgemm "${MATMUL_SIZE:-1024}" || echo '{"error": "clblast_sgemm failed"}')
		fi
		blas=$(python3 -c "import json,sys; a,b=json.loads(sys.argv[1]),json.loads(sys.argv[2]); print(json.dumps(max(a,b,key=lambda x:x['gflops'])|{'both':[a,b],'clblast':json.loads(sys.argv[3])}))" "$b1" "$b2" "$cl")
	fi
	python3 - "$tmp/$ex.status.json" "$ex" "$((end - start))" "$blas" "$seed" <<'PY'
import glob, json, os, sys
st = json.load(open(sys.argv[1])); ex = sys.argv[2]; wall = int(sys.argv[3])
blas = json.loads(sys.argv[4])
best = st.get("best") or {}
print(f"== {ex}: session {st['session']} (seed {sys.argv[5]}), {st['evaluations']} evaluations, "
      f"{wall} s")
if not best:
    print("   no variant passed its checks"); sys.exit(0)
# The best variant's figures are those of the round that evaluated it as a
# candidate (rNN-... in round NN), the measurement kctl ranks it by; later
# rounds re-time the incumbent as their baseline, and those figures are
# summarised after it (they spread with the machine's load).
# The last of them is the figure best.cl states: a confirmation round's,
# the longest measurement, when the session confirmed its winner.
res, again, last, sbs = None, [], None, []
own = "r%03d" % int(best["variant"][1:3]) if best["variant"][1:3].isdigit() else None
for p in sorted(glob.glob(os.path.join(st["output_dir"], "rounds", "r*", "results",
                                       best["variant"] + ".json"))):
    r = json.load(open(p))
    rnd = os.path.basename(os.path.dirname(os.path.dirname(p)))
    if (r.get("roofline") or {}).get("peak_gflops_side_by_side"):
        sbs.append(r["roofline"])
    if rnd == own:
        res = r
    elif (r.get("roofline") or {}).get("gflops"):
        again.append(r["roofline"]["gflops"])
        last = (rnd, r["roofline"]["gflops"])
roof = (res or {}).get("roofline", {})
gf = roof.get("gflops")
print(f"   best {best['variant']}: {best['speedup_vs_reference']:.2f}x vs reference, "
      f"{gf:.2f} GFLOP/s, {roof.get('gbs', 0):.2f} GB/s, bottleneck {roof.get('bottleneck')}")
allgf = sorted(again + ([gf] if gf else []))
med = allgf[len(allgf) // 2] if allgf else None
if again:
    print(f"   re-timed {len(again)} times as the incumbent: {', '.join(f'{x:.1f}' for x in again)} "
          f"GFLOP/s; median of all {len(allgf)} measurements {med:.2f}")
if ex.split("_")[0] == "matmul" and not blas.get("gflops"):
    print("   OpenBLAS sgemm: not built (bench/blas_sgemm)")
if ex.split("_")[0] == "matmul" and blas.get("gflops"):
    for b in blas.get("both", []):
        print(f"   OpenBLAS sgemm {b['gflops']:.2f} GFLOP/s ({b.get('threads')} threads, "
              f"{b.get('corename')} kernels); {b.get('cold_gflops', 0):.2f} from memory "
              f"(each call after a 64 MiB flush, as evalpod times)")
    print(f"   best / best OpenBLAS = {gf / blas['gflops']:.2f} (goal >= 1.0)")
    if last:
        print(f"   as best.cl states it (round {int(last[0][1:])}): {last[1]:.2f} GFLOP/s = "
              f"{last[1] / blas['gflops']:.2f} x the best OpenBLAS")
    cold = max((b.get("cold_gflops") or 0) for b in blas.get("both", [{}]))
    if cold:
        print(f"   best / best OpenBLAS from memory = {gf / cold:.2f} (both after a cache flush)")
if ex.split("_")[0] == "matmul":
    cl = blas.get("clblast") or {}
    if cl.get("gflops"):
        print(f"   CLBlast sgemm {cl['gflops']:.2f} GFLOP/s on {cl['device']} ({cl['driver']}); "
              f"best / CLBlast = {gf / cl['gflops']:.2f}")
    elif cl:
        print(f"   CLBlast sgemm: {cl.get('error')}")
    else:
        print("   CLBlast sgemm: not built (install libclblast-dev)")
pf, pb, ai = roof.get("peak_gflops"), roof.get("peak_gbs"), roof.get("arithmetic_intensity")
goal = {"chunk_gla": 0.5, "gmm_fp8_blockwise": 0.8, "matmul": 0.6}.get(ex.split("_")[0] if ex.startswith("matmul") else ex)
if pf and pb and ai:
    bound = min(pf, ai * pb)
    print(f"   roofline bound min({pf:.1f}, {ai:.2f} x {pb:.1f}) = {bound:.1f} GFLOP/s: "
          f"fraction {gf / bound:.2f}" + (f" (goal >= {goal})" if goal else "")
          + (f"; median of all measurements {med / bound:.2f}" if again else ""))
    # measurement.peak_probe (the examples' specs turn it on): the FMA peak
    # sampled in the same rounds as the program, so the fraction is a ratio
    # of runs made side by side (docs/evalpod.md, the peak probe).
    if roof.get("peak_gflops_side_by_side"):
        pf2 = roof["peak_gflops_side_by_side"]
        bound2 = min(pf2, ai * pb)
        fr = [x["fraction_of_peak_flops_side_by_side"] * x["peak_gflops_side_by_side"]
              / min(x["peak_gflops_side_by_side"], ai * pb) for x in sbs]
        print(f"   side by side with the FMA probe: {pf2:.1f} GFLOP/s in its rounds, bound "
              f"{bound2:.1f}: fraction {roof['fraction_of_peak_flops_side_by_side'] * pf2 / bound2:.2f}"
              + (f"; median of all {len(fr)} measurements {sorted(fr)[len(fr) // 2]:.2f}" if len(fr) > 1 else ""))
    # OpenBLAS runs on the same cores: a measured FMA peak below what it
    # reaches is a probe that fails this machine (every fraction above is then
    # too high, and honest programs near the peak are gated above_peak).
    if ex.split("_")[0] == "matmul" and blas.get("gflops"):
        print(f"   OpenBLAS / measured FMA peak = {blas['gflops'] / pf:.2f}"
              + ("  WARNING: above 1, the FMA peak is measured too low" if blas["gflops"] > pf else ""))
PY
done
