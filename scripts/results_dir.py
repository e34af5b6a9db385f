"""What every script that writes a results directory shares: the record of
the machine and commit (meta.json), written with the rendered README.md, or
nothing when the run does not finish. Used by `machine-probes` and
`vcpu-stalls`; `committed.rs` renders each such directory again.
"""
import json
import os
import platform
import shutil
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def git(*args):
    out = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def new_dir(kind):
    """results/<UTC time>-<kind>/ with an empty raw/ in it."""
    stamp = time.strftime("%Y-%m-%dT%H-%M-%SZ", time.gmtime())
    d = os.path.join(ROOT, "results", f"{stamp}-{kind}")
    os.makedirs(os.path.join(d, "raw"))
    return d


def machine_meta(script, **extra):
    """meta.json's fields: the script, date, commit and whether the tree had
    uncommitted changes, the machine, then `extra`."""
    model = next(
        (l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
        None,
    )
    return {
        "script": script,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_sha": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "cpu_model": model,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        **extra,
    }


def finish(d, meta, render):
    """Writes meta.json, then README.md as `render(d)` makes it."""
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    with open(os.path.join(d, "README.md.tmp"), "w") as f:
        f.write(render(d))
    os.replace(os.path.join(d, "README.md.tmp"), os.path.join(d, "README.md"))


def abandon(d, name, e):
    """A run that did not finish leaves no directory: removes `d`, exits."""
    shutil.rmtree(d, ignore_errors=True)
    sys.exit(f"{name}: stopped ({e or type(e).__name__}); nothing written")
