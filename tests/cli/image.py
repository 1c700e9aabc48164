#!/usr/bin/env python3
"""image.py - the evalpod image, built here and run as a pod runs it.

ci/image.sh builds docker/Dockerfile with podman on a Debian 12 base made by
mmdebstrap (podman's layer cache makes a second build quick). Then each image
(the default one with PoCL, and the POCL=0 one for GPU node pools) is started
as manifests/eval-job.yaml starts a pod: its own user, no capabilities, no
privilege escalation, no network, nothing mounted but a result folder.

  - `evalpod devices -o json` lists PoCL's CPU device (the default image);
  - a matmul batch (examples/matmul/make_batch.py), written into the result
    folder, passes: every variant's correctness and timing, the stage-5 IR;
  - the process runs as uid 65532 (the files it writes are that user's);
  - no host toolchain (gcc, make, cmake, LLVM's compilers), no build tree or
    sources, no private key, no secret in the environment; the GPU image has
    no compiler at all;
  - each image's size is printed.

Exits 77 (skip) with the reason when this machine cannot build or start
containers (no podman, no runtime that starts one): never a silent pass.

usage: image.py REPO_ROOT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from checks import check, run, summary

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
TAG = "localhost/evalpod:test"
GPU_TAG = "localhost/evalpod:test-gpu"
UID = 65532

# What a pod has, in podman's words (manifests/eval-job.yaml's securityContext).
POD = ["--rm", "--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]


def build(tag, *extra):
    p = subprocess.run(["bash", os.path.join(ROOT, "ci/image.sh"), "--tag", tag, *extra],
                       capture_output=True, text=True, timeout=3600)
    if p.returncode == 77:
        print("SKIP: " + p.stderr.strip().splitlines()[-1])
        sys.exit(77)
    if p.returncode:
        print(p.stdout[-4000:] + p.stderr[-4000:])
        check(False, f"ci/image.sh --tag {tag} {' '.join(extra)} builds (exit {p.returncode})")
        sys.exit(summary())
    return int(p.stdout.split()[-1])


def podman_opts():
    p = subprocess.run(["bash", os.path.join(ROOT, "ci/image.sh"), "--print-env"],
                       capture_output=True, text=True, check=True, timeout=600)
    return p.stdout.split()


OPTS = []


def podman(*args, timeout=600):
    # The runtime is a global option (before "run"); the ulimits belong to "run".
    glob, rest = OPTS[:2], OPTS[2:]
    argv = ["podman", *glob, args[0]]
    if args[0] == "run":
        argv += POD + rest
    return subprocess.run(argv + list(args[1:]), capture_output=True, text=True,
                          timeout=timeout)


def in_image(tag, script):
    """Runs a shell script in tag as its own user; its stdout."""
    p = podman("run", "--entrypoint", "/bin/sh", tag, "-c", script)
    if p.returncode:
        raise RuntimeError(f"sh in {tag}: exit {p.returncode}: {p.stderr[-500:]}")
    return p.stdout


def test_config(tag):
    cfg = json.loads(podman("image", "inspect", tag).stdout)[0]["Config"]
    check(cfg.get("User") == f"{UID}:{UID}",
          f"{tag}: the image runs as {UID}:{UID}, not root (User {cfg.get('User')!r})")
    check(cfg.get("Entrypoint") == ["/usr/local/bin/evalpod"], f"{tag}: its entrypoint is evalpod")
    bad = [e for e in cfg.get("Env", [])
           if any(w in e.split("=")[0].upper() for w in ("KEY", "TOKEN", "SECRET", "PASSWORD",
                                                        "CREDENTIAL", "AWS_"))]
    check(not bad, f"{tag}: no secret in the image's environment ({bad})")


def test_devices(out):
    p = podman("run", "-v", f"{out}:/out", TAG, "devices", "-o", "json")
    check(p.returncode == 0, f"evalpod devices exits 0 in the container ({p.stderr[-300:]})")
    try:
        plats = json.loads(p.stdout)
    except ValueError:
        plats = []
    devs = [d for pl in plats for d in pl.get("devices", [])]
    check(any("Portable Computing Language" in pl.get("name", pl.get("platform", ""))
              for pl in plats) and any(d.get("type") == "cpu" for d in devs),
          f"evalpod devices lists PoCL's CPU device ({[d.get('name') for d in devs]})")


def test_batch(out):
    batch = os.path.join(out, "batch.json")
    with open(batch, "w") as f:
        subprocess.run([sys.executable, os.path.join(ROOT, "examples/matmul/make_batch.py"),
                        "--size", "128", "--variants", "2", "--batch-id", "image-test"],
                       stdout=f, check=True)
    os.chmod(batch, 0o644)
    p = podman("run", "-v", f"{out}:/out", TAG, "run", "/out/batch.json", "--out",
               "/out/results", timeout=1800)
    check(p.returncode == 0, f"evalpod run of a matmul batch exits 0 in the container "
          f"(exit {p.returncode}: {p.stderr[-600:]})")
    res = os.path.join(out, "results")
    try:
        summ = json.load(open(os.path.join(res, "summary.json")))
    except (OSError, ValueError) as e:
        check(False, f"summary.json written ({e})")
        return
    statuses = [r["status"] for r in summ["results"]]
    check(len(statuses) == 3 and all(s == "ok" for s in statuses),
          f"the two matmul variants and the baseline pass in the container ({statuses})")
    for r in summ["results"]:
        doc = json.load(open(os.path.join(res, r["id"] + ".json")))
        check(doc.get("correctness", {}).get("passed") is True and
              (doc.get("performance") or {}).get("median_ms", 0) > 0,
              f"{r['id']}: checked and timed")
        arts = doc.get("ir", {}).get("artifacts", [])
        check(any(a.endswith(".ll") for a in arts) and any(a.endswith(".s") for a in arts),
              f"{r['id']}: stage 5 ran llvm-dis and objdump in the image ({arts})")
    owners = {os.stat(os.path.join(dp, f)).st_uid
              for dp, _, fs in os.walk(res) for f in fs}
    check(owners == {UID}, f"every file evalpod wrote belongs to uid {UID} ({owners})")


def test_user():
    got = in_image(TAG, "id -u; id -g").split()
    check(got == [str(UID), str(UID)], f"the process runs as {UID}:{UID} ({got})")


TOOLS = ["gcc", "cc", "c++", "g++", "make", "cmake", "pkg-config", "llc-15", "opt-15", "lli-15",
         "git", "curl", "wget"]


# What the build stage installs (docker/Dockerfile) and the runtime must not.
BUILD_PACKAGES = {"build-essential", "gcc-12", "g++-12", "cpp-12", "make", "cmake", "pkg-config",
                  "llvm-15", "ocl-icd-opencl-dev", "opencl-headers", "libyaml-dev",
                  "libjansson-dev", "libcurl4-openssl-dev", "libssl-dev", "libsqlite3-dev",
                  "libbsd-dev"}


def test_contents():
    found = in_image(TAG, "for t in " + " ".join(TOOLS) +
                     "; do command -v $t; done; ls -d /src /build /out/.git 2>/dev/null; true")
    check(found.strip() == "", f"no host toolchain, build tree or sources in the image "
          f"({found.split()})")
    pkgs = set(in_image(TAG, "dpkg-query -W -f '${Package}\\n'").split())
    dev = sorted(pkgs & BUILD_PACKAGES)
    check(not dev, f"none of the build stage's packages ({dev})")
    keys = in_image(TAG, "grep -rlsI -e '-----BEGIN [A-Z ]*PRIVATE KEY' / "
                    "--exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; true")
    check(keys.strip() == "", f"no private key anywhere in the image ({keys.split()[:5]})")
    check(in_image(TAG, "for t in llvm-dis-15 objdump; do command -v $t; done").split() ==
          ["/usr/local/bin/llvm-dis-15", "/usr/bin/objdump"],
          "stage 5's tools are there: llvm-dis-15 (alone, not llvm-15) and objdump")


def test_gpu_image():
    found = in_image(GPU_TAG, "for t in clang clang-15 ld as objdump llvm-dis-15 gcc cc; do "
                     "command -v $t; done; ls /usr/include 2>/dev/null | head -1; "
                     "ls /etc/OpenCL/vendors")
    check(found.split() == ["amdocl64.icd", "nvidia.icd"],
          f"the POCL=0 image has no compiler, linker or headers, and the NVIDIA and AMD ICD "
          f"files ({found.split()})")
    p = podman("run", GPU_TAG, "version")
    check(p.returncode == 0 and p.stdout.strip() != "", "evalpod runs in the POCL=0 image")


def main():
    global OPTS
    if not shutil.which("podman"):
        print("SKIP: podman is not installed (ci/deps.sh installs it): the image cannot be "
              "built or run here")
        return 77
    size = build(TAG)
    gpu_size = build(GPU_TAG, "--build-arg", "POCL=0")
    OPTS = podman_opts()
    print(f"image sizes: {TAG} {size / 2**20:.0f} MiB (PoCL), {GPU_TAG} {gpu_size / 2**20:.0f} "
          f"MiB (POCL=0, for GPU node pools)")
    out = tempfile.mkdtemp(prefix="kctl-image-")
    os.chmod(out, 0o777)  # the container's user writes there
    try:
        run([test_config], TAG)
        run([test_config], GPU_TAG)
        run([test_devices, test_batch], out)
        run([test_user, test_contents, test_gpu_image])
    finally:
        # Files the container wrote belong to its user; root removes them.
        shutil.rmtree(out, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
