"""Do two versions of nsysh2d print the same thing? Runs every command on the bundled traces with the
code of a git revision and with the working tree, and diffs stdout, stderr, exit codes and the files
written (-o, --junit, --summary, baselines).

    python benchmarks/same_outputs.py 94131e0          # that commit vs the working tree
    python benchmarks/same_outputs.py 94131e0 3e19195  # two commits
    python benchmarks/same_outputs.py 94131e0 --keep /tmp/out   # keep both sides' outputs

Exit 0 when every output is byte-identical, 1 otherwise (the differing commands are listed). A refactor
should pass it unchanged; a change of behaviour shows up here as the list of what it changed.
"""
from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
B, A = "tests/data/h200/qwen3vl-before.sqlite", "tests/data/h200/qwen3vl-after.sqlite"
SWEEP = "tests/data/h200/h2d-sweep.sqlite"
SHARED = ["tests/data/shared/h200-sweep-nsys2023.4.sqlite", "tests/data/shared/h200-sweep-nsys2025.3.sqlite",
          "tests/data/shared/h200-sweep-nsys2025.3-cudabacktrace.sqlite",
          "tests/data/shared/h200-sweep-nsys2025.3-pythonbacktrace.sqlite"]

# Each command: arguments after `nsysh2d`; {out} is a folder for the files it writes.
COMMANDS: list[list[str]] = (
    [["analyze", t] for t in [B, A, SWEEP, *SHARED]]
    + [["analyze", t, "--format", f] for t in [B, SHARED[2]] for f in ("json", "csv", "markdown")]
    + [["analyze", B, "--by", g] for g in ("site", "class", "nvtx", "stream")]
    + [["analyze", SHARED[3], "--by", "site", "--format", "json"],
       ["analyze", B, "--direction", "all", "--top", "3"], ["analyze", B, "--direction", "d2h"],
       ["analyze", B, "--min-duration", "1ms", "--format", "markdown"], ["analyze", B, A, "-j", "1"],
       ["analyze", B, "--top", "0", "--format", "csv"], ["analyze", B, "-o", "{out}/a.json", "--format", "json"],
       ["analyze", B, "nope.sqlite", "--format", "json"], ["analyze", "nope.sqlite"], ["analyze", "README.md"],
       ["analyze", B, "--step-pattern", "^prepare"]]
    + [["compare", B, A, *f] for f in ([], ["--format", "json"], ["--format", "markdown"], ["--format", "csv"])]
    + [["compare", SHARED[0], SHARED[1]]]
    + [["gate", B], ["gate", A], ["gate", B, "--format", "json"], ["gate", B, "--format", "markdown"],
       ["gate", B, "--junit", "{out}/g.xml", "--summary", "{out}/s.md"],
       ["gate", B, "--count", "long", "--kind", "Pinned"], ["gate", B, "--max-blocked-per-step", "1ms"],
       ["gate", SWEEP, "--format", "json"], ["gate", SHARED[1], "--max-blocked-per-step", "1ms"],
       ["baseline", B, "-o", "{out}/base.json"],
       ["gate", A, "--baseline", "{out}/base.json", "--format", "json"],
       ["gate", B, "--baseline", "{out}/base.json", "--tolerance", "0%"]]
    + [["threshold", SWEEP, *f] for f in ([], ["--format", "json"], ["--format", "csv"], ["--format", "markdown"])]
    + [["threshold", SHARED[1]], ["--help"], ["analyze", "--help"], ["gate", "--help"]]
)


def checkout(rev: str, dest: Path) -> Path:
    """The package of `rev`, laid out as installed (queries/ inside the package)."""
    subprocess.run(f"git -C {ROOT} archive {rev} nsysh2d queries | tar -x -C {dest}", shell=True, check=True)
    if not (dest / "nsysh2d" / "queries").exists():
        shutil.copytree(dest / "queries", dest / "nsysh2d" / "queries")
    return dest


# Runs the CLI of the code in folder argv[1]: an editable install's import hook would otherwise win over
# sys.path and run the working tree's code for both sides.
LAUNCH = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'Editable' not in repr(f)]; "
          "sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = 'nsysh2d'; "
          "import nsysh2d.cli; assert nsysh2d.cli.__file__.startswith(sys.path[0]), nsysh2d.cli.__file__; "
          "nsysh2d.cli.main()")


def run_all(code: Path, out: Path) -> dict[str, bytes]:
    """Every command's stdout, stderr, exit code and written files, by a name."""
    got = {}
    env = {**os.environ, "NSYSH2D_CACHE_DIR": str(out / "cache"), "COLUMNS": "160"}
    env.pop("GITHUB_ACTIONS", None)
    for i, args in enumerate(COMMANDS):
        files = out / f"files{i}"
        files.mkdir(parents=True)
        argv = [a.replace("{out}", str(files)) for a in args]
        p = subprocess.run([sys.executable, "-c", LAUNCH, str(code), *argv], cwd=ROOT, env=env, capture_output=True)
        key = " ".join(args)
        got[f"{key} :stdout"] = p.stdout.replace(str(files).encode(), b"{out}")
        got[f"{key} :stderr"] = p.stderr.replace(str(files).encode(), b"{out}")
        got[f"{key} :exit"] = str(p.returncode).encode()
        for f in sorted(files.iterdir()):
            got[f"{key} :file {f.name}"] = f.read_bytes().replace(str(files).encode(), b"{out}")
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="git revision to compare with")
    ap.add_argument("new", nargs="?", help="a second revision (default: the working tree)")
    ap.add_argument("--keep", help="folder to keep both sides' outputs in")
    args = ap.parse_args()
    base = Path(args.keep or tempfile.mkdtemp(prefix="same-outputs-"))
    base.mkdir(parents=True, exist_ok=True)
    old_code = checkout(args.rev, Path(tempfile.mkdtemp(prefix="rev-", dir=base)))
    old = run_all(old_code, Path(tempfile.mkdtemp(prefix="old-", dir=base)))
    new_code = checkout(args.new, Path(tempfile.mkdtemp(prefix="rev-", dir=base))) if args.new else ROOT
    new = run_all(new_code, Path(tempfile.mkdtemp(prefix="new-", dir=base)))
    differ = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    for k in differ:
        print(f"DIFFERS: {k}")
        a = (old.get(k) or b"").decode(errors="replace").splitlines()
        b = (new.get(k) or b"").decode(errors="replace").splitlines()
        for line in list(difflib.unified_diff(a, b, "before", "after", lineterm="", n=1))[:12]:
            print("    " + line)
    print(f"{len(COMMANDS)} commands, {len(old)} outputs: {len(old) - len(differ)} identical, {len(differ)} differ")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
