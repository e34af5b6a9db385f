"""What every script that writes a results directory shares: the record of
the machine and commit (meta.json), written with the rendered README.md, or
nothing when the run does not finish. Used by `machine-probes` and
`vcpu-stalls`; `committed.rs` renders each such directory again. Also how
a script reads any run's files as `analysis::input::raw` does: loose, gzip'd
beside their plain name (`meta.json.gz`), or packed in the run's raw
archive (`raw.tar.xz`, or `raw.tar.gz` before 2026-11-29).
"""
import gzip
import json
import os
import tarfile
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


ARCHIVES = ("raw.tar.xz", "raw.tar.gz")
_packed = {}


def _archive_of(path):
    """(archive's files by name, `path` inside it) for the nearest folder
    above `path` that holds an archive, else (None, None)."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        for name in ARCHIVES:
            a = os.path.join(d, name)
            if os.path.isfile(a):
                if a not in _packed:
                    with tarfile.open(a) as t:
                        _packed[a] = {m.name: t.extractfile(m).read() for m in t if m.isfile()}
                return _packed[a], os.path.relpath(os.path.abspath(path), d)
        up = os.path.dirname(d)
        if up == d:
            return None, None
        d = up


def read_bytes(path):
    """A run's file: loose, gzip'd beside it, or packed in its archive."""
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return f.read()
    if os.path.isfile(path + ".gz"):
        with gzip.open(path + ".gz") as f:
            return f.read()
    files, rel = _archive_of(path)
    if files is None or rel not in files:
        raise FileNotFoundError(f"{path}: no such file, gzip'd or packed")
    return files[rel]


def read_json(path):
    return json.loads(read_bytes(path))


def exists(path):
    try:
        read_bytes(path)
        return True
    except FileNotFoundError:
        return False


def files_ending(run, suffix):
    """Every file under `run` whose name ends with `suffix`, loose or
    packed, by the path it was written at, sorted."""
    found = set()
    for d, _, names in os.walk(run):
        found.update(os.path.join(d, n) for n in names if n.endswith(suffix))
    files, _ = _archive_of(os.path.join(run, "x"))
    if files is not None:
        found.update(os.path.join(run, n) for n in files if n.endswith(suffix))
    return sorted(found)


def abandon(d, name, e):
    """A run that did not finish leaves no directory: removes `d`, exits."""
    shutil.rmtree(d, ignore_errors=True)
    sys.exit(f"{name}: stopped ({e or type(e).__name__}); nothing written")
