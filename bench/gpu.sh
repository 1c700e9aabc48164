#!/usr/bin/env bash
# bench/gpu.sh - evalpod and kctl on an NVIDIA GPU node (prints figures).
#
#   BUILD_DIR=DIR [LIBDIR=DIR] [OUT=DIR] [ROUNDS=N] bash bench/gpu.sh
#
# BUILD_DIR holds a build tree's controller/kctl, evalpod/evalpod and,
# optionally, bench/clblast_sgemm (default build).  LIBDIR, when set, is put
# first on LD_LIBRARY_PATH: the libraries those binaries link, copied from
# the machine that built them, for a node that has the driver but not
# Debian's libraries.  What it does, in order:
#   1. finds the driver's libnvidia-opencl.so.1 and, where no ICD file names
#      it, writes /etc/OpenCL/vendors/nvidia.icd (the path the workers'
#      sandbox reads) as docker/Dockerfile does;
#   2. `evalpod devices --measure`: the device and its measured peaks;
#   3. one random matmul batch through `evalpod run` (its log and results);
#   4. bench/examples.sh with the binaries as they are (NO_BUILD=1): a
#      `kctl start` session on each example with the local backend on the
#      GPU, each best against its roofline bound, matmul against CLBlast;
#   5. CLBlast's SGEMM at 4096^3 as well, where a GPU is not yet full at
#      the example's 1024^3.
# OUT, when set, receives the devices JSON, the batch's folder as
# batch.tar.gz and each session's folder as EXAMPLE.tar.gz (results, traces
# and PTX; no evalpod cache, no LLVM or x86 listings).
set -uo pipefail
cd "$(dirname "$0")/.."
bdir=${BUILD_DIR:-build}
out=${OUT:-}
[ -n "${LIBDIR:-}" ] && export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "== host: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}"), kernel $(uname -r), $(nproc) CPUs"
command -v nvidia-smi >/dev/null &&
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm --format=csv,noheader

lib=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1 /{print $NF; exit}')
if [ -z "$lib" ]; then
	for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
		[ -e "$d/libnvidia-opencl.so.1" ] && { lib=$d/libnvidia-opencl.so.1; break; }
	done
fi
[ -n "$lib" ] || { echo "gpu.sh: no libnvidia-opencl.so.1 on this node" >&2; exit 1; }
echo "== driver's OpenCL library: $lib"
if ! grep -qs nvidia-opencl /etc/OpenCL/vendors/*.icd; then
	mkdir -p /etc/OpenCL/vendors && echo "$lib" >/etc/OpenCL/vendors/nvidia.icd ||
		{ echo "gpu.sh: cannot write /etc/OpenCL/vendors/nvidia.icd" >&2; exit 1; }
fi

echo "== evalpod devices --measure"
"$bdir"/evalpod/evalpod devices --measure -o json >"${out:-/tmp}/devices.json"
rc=$?
python3 - "${out:-/tmp}/devices.json" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1])):
    for d in p.get("devices", []):
        pk = d.get("peaks") or {}
        print(f"   {p['name']}: {d.get('name')} ({d.get('type')}, driver {d.get('driver')}, "
              f"{d.get('compute_units')} CUs): peaks {pk.get('gflops', '?')} GFLOP/s fp32, "
              f"{pk.get('gbs', '?')} GB/s" + (f"; error {d['peaks_error']}" if d.get("peaks_error") else ""))
PY
[ $rc -eq 0 ] || echo "   evalpod devices exit $rc"

echo "== one matmul batch straight through evalpod (make_batch.py, ${MATMUL_SIZE:-1024}^3, 16 random points)"
b=$(mktemp -d "${TMPDIR:-/tmp}/gpu-batch.XXXXXX")
python3 examples/matmul/make_batch.py --size "${MATMUL_SIZE:-1024}" --variants 16 >"$b/batch.json" &&
	"$bdir"/evalpod/evalpod run "$b/batch.json" --out "$b/results" 2>"$b/evalpod.log"
echo "   evalpod run exit $?"
tail -n 40 "$b/evalpod.log"
[ -n "$out" ] && tar -czf "$out/batch.tar.gz" --exclude="*.ll" --exclude="*.s" -C "$b" .

echo "== the examples (kctl start, local backend)"
SAVE_TO=$out NO_BUILD=1 BUILD_DIR="$bdir" bash bench/examples.sh
rc=$?

if [ -x "$bdir"/bench/clblast_sgemm ]; then
	echo "== CLBlast SGEMM at 4096^3"
	"$bdir"/bench/clblast_sgemm 4096 || echo "   clblast_sgemm exit $?"
fi
exit $rc
