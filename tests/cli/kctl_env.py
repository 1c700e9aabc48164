#!/usr/bin/env python3
"""What kctl's evalpod child sees of kctl's environment (local backend).

usage: kctl_env.py KCTL EVALPOD DATA_DIR

kctl runs a one-round session on the small affine problem with AWS
credentials, a session token, a kctl setting holding a secret and API keys
in its environment, each set to a sentinel.  KCTL_EVALPOD points at a
stand-in that writes its environment (NUL-separated, as /proc/PID/environ
has it) to a file and then runs the real evalpod.  No sentinel may reach
the stand-in, nor any file of the session (logs, batches, results,
report); what evalpod needs (PATH, EVALPOD_*, POCL_*, the locale) still
reaches it.  Ends with "N passed, M failed"; exit 1 when anything failed.
"""
import glob
import os
import shutil
import stat
import subprocess
import sys
import tempfile

failures = []
passes = []

SPEC_FILES = ("affine.cl", "affine_ref.cl", "affine.yaml")

# name -> sentinel value; every one must stay in kctl.
SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIASENTINEL0ACCESS0",
    "AWS_SECRET_ACCESS_KEY": "sentinel-aws-secret-7f3a",
    "AWS_SESSION_TOKEN": "sentinel-aws-session-token-91c2",
    "AWS_PROFILE": "sentinel-profile-55e1",
    "KCTL_TEST_SECRET": "sentinel-kctl-setting-0b8d",
    "OPENAI_API_KEY": "sentinel-openai-key-d41e",
    "GITHUB_TOKEN": "sentinel-github-token-a9f0",
    "EVALPOD_API_KEY": "sentinel-evalpod-key-3c77",
    "POCL_SECRET_THING": "sentinel-pocl-secret-e2b4",
    "DB_PASSWORD": "sentinel-db-password-6d10",
}

# name -> value that evalpod needs and must still get.
NEEDED = {
    "EVALPOD_TEST_NOISE": "",
    "POCL_AFFINITY": "0",
    "LC_ALL": "C",
}


def check(cond, what):
    (passes if cond else failures).append(what)
    print(("ok   " if cond else "FAIL ") + what)


def stand_in(tmp, evalpod):
    """A script that records its environment, then is the real evalpod."""
    path = os.path.join(tmp, "evalpod-env")
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\n"
                f"cat /proc/$$/environ > '{tmp}/env.'$$\n"
                f"exec '{evalpod}' \"$@\"\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def read_env(path):
    with open(path, "rb") as f:
        entries = [e.decode("utf-8", "replace") for e in f.read().split(b"\0") if e]
    return dict(e.split("=", 1) for e in entries if "=" in e)


def files_holding(root, needles):
    """(path, needle) for every file under root holding a needle."""
    found = []
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            found += [(path, n) for n in needles if n.encode() in data]
    return found


def main():
    if len(sys.argv) != 4:
        print("usage: kctl_env.py KCTL EVALPOD DATA_DIR", file=sys.stderr)
        return 2
    kctl, evalpod, data = (os.path.abspath(a) for a in sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="kctl-env-")
    try:
        for name in SPEC_FILES:
            shutil.copy(os.path.join(data, name), tmp)
        env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"),
                   XDG_CACHE_HOME=os.path.join(tmp, "cache"),
                   KCTL_EVALPOD=stand_in(tmp, evalpod), **SECRETS, **NEEDED)
        env.pop("KCTL_TEST_CRASH_AT", None)
        res = subprocess.run([kctl, "start", os.path.join(tmp, "affine.yaml"), "--rounds", "1"],
                             env=env, capture_output=True, text=True, timeout=900)
        check(res.returncode == 0,
              f"the session ends with exit 0 (got {res.returncode}: {res.stderr[-300:]!r})")

        dumps = sorted(glob.glob(os.path.join(tmp, "env.*")))
        check(len(dumps) >= 2,
              f"kctl ran the stand-in at least twice ('devices' and a round; got {len(dumps)})")
        for path in dumps:
            seen = read_env(path)
            leaked = sorted(n for n, v in SECRETS.items()
                            if n in seen or any(v in x for x in seen.values()))
            check(not leaked, f"{os.path.basename(path)}: no secret reaches evalpod "
                  f"(got {leaked})")
            check(not [n for n in seen if n.startswith(("AWS_", "KCTL_"))],
                  f"{os.path.basename(path)}: no AWS_* or KCTL_* variable reaches evalpod "
                  f"(got {sorted(n for n in seen if n.startswith(('AWS_', 'KCTL_')))})")
            missing = sorted(n for n, v in NEEDED.items() if seen.get(n) != v)
            check(not missing and seen.get("PATH") == env.get("PATH"),
                  f"{os.path.basename(path)}: PATH and {sorted(NEEDED)} still reach evalpod "
                  f"(missing {missing})")

        found = files_holding(tmp, SECRETS.values()) + \
            [("kctl's stdout/stderr", n) for n in SECRETS.values()
             if n in res.stdout or n in res.stderr]
        found = [(p, n) for p, n in found if not os.path.basename(p).startswith("env.")]
        check(not found, f"no sentinel in the session's logs, batches, results, report or "
              f"database (got {found[:5]})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
