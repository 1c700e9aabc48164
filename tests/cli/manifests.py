#!/usr/bin/env python3
"""Golden tests of the manifests kctl submits, checked against the schemas.

usage: manifests.py KCTL REPO_ROOT

For each case, `kctl render` of a spec in tests/data/manifests at a server
version must equal the golden file byte for byte (KCTL_UPDATE_GOLDEN=1
rewrites them after a deliberate change).  The golden files and
manifests/rbac.yaml and kueue.yaml are then validated against the
Kubernetes OpenAPI schemas (kubernetes-models, tests/schema/validate.mjs);
a deliberately broken Job must fail that validation, so the validator is
known to look.  A custom template with an unresolved placeholder must be
refused with its file, line and name.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from checks import check, summary

CASES = [
    # (spec, extra args, golden file)
    ("full.yaml", ["--shards", "3"], "job-full-v1.30.yaml"),
    ("full.yaml", ["--server-version", "1.26"], "job-full-v1.26.yaml"),
    ("full.yaml", ["--server-version", "1.20"], "job-full-v1.20.yaml"),
    ("minimal.yaml", ["--shards", "1"], "job-minimal-v1.30.yaml"),
    ("minimal.yaml", ["--server-version", "1.20", "-o", "json"], "job-minimal-v1.20.json"),
]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    kctl, repo = (os.path.abspath(a) for a in sys.argv[1:])
    data = os.path.join(repo, "tests", "data", "manifests")
    update = os.environ.get("KCTL_UPDATE_GOLDEN") == "1"
    for spec, extra, golden in CASES:
        r = subprocess.run([kctl, "render", os.path.join(data, spec)] + extra,
                           capture_output=True, text=True, timeout=60)
        path = os.path.join(data, golden)
        if update and r.returncode == 0:
            with open(path, "w", encoding="utf-8") as f:
                f.write(r.stdout)
        want = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        check(r.returncode == 0 and r.stdout == want,
              f"kctl render {spec} {' '.join(extra)} matches {golden}")

    tmp = tempfile.mkdtemp(prefix="kctl-manifests-")
    try:
        tmpl = os.path.join(tmp, "job.yaml")
        with open(tmpl, "w", encoding="utf-8") as f:
            f.write("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: \"${job_name}\"\n"
                    "  labels:\n    team: \"${team}\"\n")
        spec = os.path.join(tmp, "spec.yaml")
        text = open(os.path.join(data, "minimal.yaml"), encoding="utf-8").read()
        text = text.replace("../kctl/", os.path.join(repo, "tests", "data", "kctl") + "/")
        text = text.replace("    gpus: 0\n", f"    gpus: 0\n    job_template: {tmpl}\n")
        with open(spec, "w", encoding="utf-8") as f:
            f.write(text)
        r = subprocess.run([kctl, "render", spec], capture_output=True, text=True, timeout=60)
        check(r.returncode != 0 and f"{tmpl}:6:11: metadata.labels.team: placeholder ${{team}} "
              "has no value" in r.stderr,
              f"an unresolved placeholder is refused with its place ({r.stderr.strip()!r})")

        node = shutil.which("node")
        if not node:
            check(False, "node is installed to validate against the schemas")
            return 1
        files = [os.path.join(data, g) for _, _, g in CASES] + \
            [os.path.join(repo, "manifests", f) for f in ("rbac.yaml", "kueue.yaml",
                                                          "team-queues.yaml",
                                                          "kctl-cluster-viewer.yaml")]
        v = subprocess.run([node, os.path.join(repo, "tests", "schema", "validate.mjs")] + files,
                           capture_output=True, text=True, timeout=120)
        if v.returncode == 77:
            print(v.stderr.strip())
            check(False, "tests/schema/node_modules is installed (npm ci --prefix tests/schema)")
        else:
            print(v.stdout.strip())
            # rbac.yaml 3 documents, kueue.yaml 3, team-queues.yaml 9, the viewer 2
            check(v.returncode == 0 and v.stdout.count("\nok ") + 1 == len(files) + 4 + 8 + 1,
                  f"every golden manifest is valid against the schemas ({v.stderr.strip()!r})")
            bad = os.path.join(tmp, "bad.yaml")
            text = open(os.path.join(data, "job-full-v1.30.yaml"), encoding="utf-8").read()
            with open(bad, "w", encoding="utf-8") as f:
                f.write(text.replace("completions: 3", "completions: \"three\"")
                        .replace("restartPolicy: \"Never\"", "restartPolicy: \"Sometimes\""))
            v = subprocess.run([node, os.path.join(repo, "tests", "schema", "validate.mjs"), bad],
                               capture_output=True, text=True, timeout=120)
            check(v.returncode == 1 and "/spec/completions" in v.stdout + v.stderr
                  and "restartPolicy" in v.stdout + v.stderr,
                  "a broken Job fails validation, naming its fields")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
