"""`nsysh2d profile` and .nsys-rep input, driven by a stand-in nsys (no GPU or nsys in CI)."""
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, SWEEP_TRACES, run_cli
from nsysh2d.capture import nsys as nsysmod
from nsysh2d.errors import NsysH2DError

FAKE_NSYS = r'''#!{python}
"""Stand-in nsys: 'profile' runs the target and writes a report (or only a .qdstrm when
FAKE_LEAVE_QDSTRM is set); 'export' copies a known real SQLite export to -o."""
import os, shutil, subprocess, sys
args = sys.argv[1:]
log = os.environ.get("FAKE_NSYS_LOG")
if log:
    with open(log, "a") as f:
        f.write(" ".join(args) + "\n")
if args[0] == "--version":
    print("NVIDIA Nsight Systems version 0.0-fake"); sys.exit(0)
if args[0] == "profile":
    out = args[args.index("-o") + 1]
    target = args[args.index("-o") + 2:]
    rc = subprocess.call(target)
    if os.environ.get("FAKE_LEAVE_QDSTRM"):
        open(out + ".qdstrm", "wb").write(b"raw")
        print("Importer error status: An unknown error occurred.")
    else:
        open(out + ".nsys-rep", "wb").write(b"report")
    sys.exit(rc)
if args[0] == "export":
    if os.environ.get("FAKE_EXPORT_FAIL"):
        print("ProtobufParseException: cannot read report", file=sys.stderr); sys.exit(1)
    out = args[args.index("-o") + 1]
    shutil.copyfile(os.environ["FAKE_SQLITE"], out); sys.exit(0)
sys.exit(2)
'''

FAKE_IMPORTER = r'''#!{python}
import os, sys
if os.environ.get("FAKE_IMPORT_FAIL"):
    print("QdstrmImporter: libdw.so.1: cannot open shared object file", file=sys.stderr); sys.exit(127)
src = sys.argv[sys.argv.index("-i") + 1]
open(src[: -len(".qdstrm")] + ".nsys-rep", "wb").write(b"imported")
'''


def write_exe(path, text):
    path.write_text(text.replace("{python}", sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def fake_nsys(tmp_path):
    root = tmp_path / "nsight" / "host"
    (root / "target-linux-x64").mkdir(parents=True)
    (root / "linux-desktop-glibc_2_11_3-x64").mkdir(parents=True)
    exe = write_exe(root / "target-linux-x64" / "nsys", FAKE_NSYS)
    write_exe(root / "linux-desktop-glibc_2_11_3-x64" / "QdstrmImporter", FAKE_IMPORTER)
    return exe


def env_for(fake, tmp_path, **extra):
    return {"NSYS": str(fake), "FAKE_SQLITE": str(SWEEP_TRACES["2025.3"]), "FAKE_NSYS_LOG": str(tmp_path / "nsys.log"),
            "NSYSH2D_CACHE_DIR": str(tmp_path / "cache"), **extra}


def workload(tmp_path, body="print('ran', sys.argv[1:])", variants=True):
    w = tmp_path / "w.py"
    opt = 'ap.add_argument("--variant", choices=["before", "after"])' if variants else ""
    w.write_text(textwrap.dedent(f"""
        import argparse, sys
        ap = argparse.ArgumentParser(); {opt}
        ap.add_argument("--steps", type=int, default=1)
        args, _ = ap.parse_known_args()
        {body}
    """))
    return w


def test_find_nsys_order(tmp_path, fake_nsys):
    other = write_exe(tmp_path / "nsys", "#!/bin/sh\n")
    assert nsysmod.find_nsys(str(other)) == str(other)
    assert nsysmod.find_nsys(env={"NSYS": str(fake_nsys), "PATH": str(tmp_path)}) == str(fake_nsys)
    assert nsysmod.find_nsys(env={"PATH": str(tmp_path)}) == str(tmp_path / "nsys")
    with pytest.raises(NsysH2DError) as e:
        nsysmod.find_nsys(env={"PATH": str(tmp_path / "empty"), "NSYS": str(tmp_path / "missing")})
    assert e.value.exit_code == 3


def test_no_nsys_gives_install_advice(tmp_path, monkeypatch):
    monkeypatch.setattr(nsysmod, "NSYS_GLOBS", ())
    with pytest.raises(NsysH2DError) as e:
        nsysmod.find_nsys(env={"PATH": str(tmp_path)})
    assert e.value.exit_code == 3 and "install Nsight Systems" in str(e.value)


def test_find_importer_near_nsys(fake_nsys):
    imp = nsysmod.find_importer(str(fake_nsys))
    assert imp and imp.endswith("linux-desktop-glibc_2_11_3-x64/QdstrmImporter")


def test_capture_options_and_commands():
    opts = nsysmod.CaptureOptions(sample="none", python_backtrace=True)
    args = opts.args()
    assert "--trace=cuda,nvtx" in args and "--cudabacktrace=memory" in args
    assert "--sample=process-tree" in args  # backtraces need sampling on
    assert "--python-backtrace=cuda" in args
    cmd = nsysmod.export_command("nsys", "a.nsys-rep", "a.sqlite", opts.export_args())
    assert "--include-blobs=true" in cmd and cmd[-1] == "a.nsys-rep"
    plain = nsysmod.CaptureOptions(cudabacktrace=None, sample="none").args()
    assert "--sample=none" in plain and not any(a.startswith("--cudabacktrace") for a in plain)
    # Issue 42: the default capture is the cheap one (no CPU sampling: 12 s against 115-120 s on qwen3vl,
    # tests/data/h100/capture-cost.txt); native backtraces alone turn sampling on too.
    assert nsysmod.CaptureOptions().args()[:3] == ["--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none"]
    assert len(nsysmod.CaptureOptions().args()) == 3
    native = nsysmod.CaptureOptions(cudabacktrace="memory").args()
    assert "--sample=process-tree" in native and "--cudabacktrace=memory" in native


def test_workload_variants_read_from_source():
    assert nsysmod.workload_variants(str(ROOT / "workloads" / "qwen3vl.py")) == ["before", "after", "uva", "staged"]
    assert nsysmod.workload_variants(str(ROOT / "workloads" / "h2d_sweep.py")) == []


def test_profile_both_variants(tmp_path, fake_nsys):
    w = workload(tmp_path)
    out = tmp_path / "out"
    r = run_cli("profile", "-o", out, w, "--", "--steps", "3", env=env_for(fake_nsys, tmp_path))
    assert r.returncode == 0, r.stderr
    assert (out / "w-before.sqlite").exists() and (out / "w-after.sqlite").exists()
    assert "next: nsysh2d compare" in r.stdout
    log = (tmp_path / "nsys.log").read_text().splitlines()
    assert [ln.split()[0] for ln in log] == ["profile", "export", "profile", "export"]
    assert "--steps 3 --variant before" in log[0] and "--variant after" in log[2]
    # The exports are what nsys wrote: analyze reads them.
    r = run_cli("analyze", out / "w-before.sqlite", "--format", "json", env=env_for(fake_nsys, tmp_path))
    assert json.loads(r.stdout)["reports"][0]["totals"]["calls"] == 256


def test_profile_plain_command(tmp_path, fake_nsys):
    out = tmp_path / "out"
    r = run_cli("profile", "-o", out, "--name", "job", "--", sys.executable, "-c", "print(1)",
                env=env_for(fake_nsys, tmp_path))
    assert r.returncode == 0, r.stderr
    assert (out / "job.sqlite").exists() and "next: nsysh2d analyze" in r.stdout


def test_profile_finishes_a_left_over_qdstrm(tmp_path, fake_nsys):
    w = workload(tmp_path, variants=False)
    out = tmp_path / "out"
    r = run_cli("profile", "-o", out, w, env=env_for(fake_nsys, tmp_path, FAKE_LEAVE_QDSTRM="1"))
    assert r.returncode == 0, r.stderr
    assert "importing it with" in r.stderr
    assert (out / "w.nsys-rep").read_bytes() == b"imported" and (out / "w.sqlite").exists()


def test_profile_import_failure_keeps_the_raw_capture(tmp_path, fake_nsys):
    w = workload(tmp_path, variants=False)
    out = tmp_path / "out"
    r = run_cli("profile", "-o", out, w, env=env_for(fake_nsys, tmp_path, FAKE_LEAVE_QDSTRM="1", FAKE_IMPORT_FAIL="1"))
    assert r.returncode == 5 and "QdstrmImporter failed" in r.stderr and "raw capture is kept" in r.stderr
    assert (out / "w.qdstrm").exists()


def test_profile_killed_workload(tmp_path, fake_nsys):
    w = workload(tmp_path, body="import os, signal; os.kill(os.getpid(), signal.SIGKILL)", variants=False)
    r = run_cli("profile", "-o", tmp_path / "out", w, env=env_for(fake_nsys, tmp_path))
    assert r.returncode == 4 and "nsys profile exited" in r.stderr and "Traceback" not in r.stderr


def test_profile_failing_workload(tmp_path, fake_nsys):
    w = workload(tmp_path, body="sys.exit(3)", variants=False)
    r = run_cli("profile", "-o", tmp_path / "out", w, env=env_for(fake_nsys, tmp_path))
    assert r.returncode == 4
    assert "nsys profile exited 3" in r.stderr and "partial capture kept" in r.stderr
    assert "Traceback" not in r.stderr


def test_profile_export_failure_keeps_the_report(tmp_path, fake_nsys):
    w = workload(tmp_path, variants=False)
    r = run_cli("profile", "-o", tmp_path / "out", w, env=env_for(fake_nsys, tmp_path, FAKE_EXPORT_FAIL="1"))
    assert r.returncode == 5 and "report kept at" in r.stderr


def test_profile_without_nsys(tmp_path, monkeypatch):
    w = workload(tmp_path, variants=False)
    r = run_cli("profile", w, env={"NSYS": str(tmp_path / "nope")})
    assert r.returncode == 3 and "not an executable" in r.stderr


def test_profile_unwritable_output(tmp_path, fake_nsys):
    w = workload(tmp_path, variants=False)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = run_cli("profile", "-o", blocker / "sub", w, env=env_for(fake_nsys, tmp_path))
    assert r.returncode == 6 and "cannot create output folder" in r.stderr


def test_profile_missing_workload(tmp_path):
    r = run_cli("profile", tmp_path / "nope.py")
    assert r.returncode == 2 and "no such workload" in r.stderr


def test_dry_run_prints_commands(tmp_path):
    r = run_cli("profile", "--dry-run", "--python-backtrace", ROOT / "workloads" / "qwen3vl.py")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert len(lines) == 8 and "--variant before" in lines[0] and "--include-blobs=true" in lines[1]
    assert "--variant uva" in lines[4] and "--variant staged" in lines[6]


@pytest.mark.parametrize("args", [["--", "true"], ["--kineto", str(ROOT / "workloads" / "qwen3vl.py")]])
def test_profiling_path_imports_no_analysis_stack(tmp_path, fake_nsys, args):
    # A GPU box with only torch + click must profile: the profile command never loads these.
    code = textwrap.dedent(f"""
        import sys
        from nsysh2d.cli import main
        import nsysh2d.capture.torch_profile
        try:
            main(["profile", "--dry-run", *{args!r}])
        except SystemExit:
            pass
        bad = [m for m in ("duckdb", "polars", "rich", "pyarrow") if m in sys.modules]
        print("loaded:", bad)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "loaded: []" in r.stdout, r.stdout + r.stderr


def test_no_cache_covers_nsys_rep_exports(tmp_path, fake_nsys):
    """Issue 42: --no-cache used a cached export even with --nsys /bin/false. Now it exports anew, into a
    private folder removed afterwards, and leaves the cache untouched."""
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"report")
    env = env_for(fake_nsys, tmp_path, TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert run_cli("analyze", rep, env=env).returncode == 0          # the export is now in the cache
    cached = sorted(p.name for p in (tmp_path / "cache" / "exports").iterdir())
    bad = run_cli("analyze", rep, "--no-cache", "--nsys", "/bin/false", env=env)
    assert bad.returncode != 0 and str(rep) in bad.stderr and len(bad.stderr.splitlines()) == 1
    ok = run_cli("analyze", rep, "--no-cache", "--format", "json", env=env)
    assert ok.returncode == 0 and json.loads(ok.stdout)["reports"][0]["totals"]["calls"] == 256
    assert os.listdir(tmp_path / "tmp") == []                                # its export folder is gone
    assert sorted(p.name for p in (tmp_path / "cache" / "exports").iterdir()) == cached


def test_nsys_rep_input_exported_into_cache(tmp_path, fake_nsys):
    rep = tmp_path / "ro" / "run.nsys-rep"
    rep.parent.mkdir()
    rep.write_bytes(b"report")
    env = env_for(fake_nsys, tmp_path)
    r = run_cli("analyze", rep, "--format", "json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["reports"][0]["totals"]["calls"] == 256
    assert os.listdir(rep.parent) == ["run.nsys-rep"]  # the export went to the cache, not beside
    assert list((tmp_path / "cache" / "exports").glob("*.sqlite"))
    r = run_cli("analyze", rep, env={**env, "FAKE_EXPORT_FAIL": "1", "NSYSH2D_CACHE_DIR": str(tmp_path / "c2")})
    assert r.returncode == 5 and "nsys export failed: ProtobufParseException" in r.stderr


def test_profile_kineto_captures_without_nsys(tmp_path):
    """`profile --kineto` runs a workload under torch.profiler (here on CPU, no nsys anywhere): NVTX ranges the
    workload pushes are in the trace as record_function ranges, its Python frames are there, a failing workload
    still leaves its trace, and analyze says in one line why a trace without CUDA activity cannot be judged."""
    import gzip
    import json

    script = tmp_path / "tiny.py"
    script.write_text("import sys, torch\nfor step in range(2):\n    torch.cuda.nvtx.range_push(f'step {step}')\n"
                      "    x = torch.ones(64).add(step)\n    torch.cuda.nvtx.range_pop()\n"
                      "sys.exit(3 if '--fail' in sys.argv else 0)\n")
    out = tmp_path / "out"
    r = run_cli("profile", "--kineto", "--no-variants", "-o", out, script, env={"NSYS": "/nonexistent"})
    assert r.returncode == 0, r.stderr
    trace = out / "tiny.pt.trace.json.gz"
    events = json.load(gzip.open(trace, "rt"))["traceEvents"]
    assert [e["name"] for e in events if e.get("cat") == "user_annotation"] == ["step 0", "step 1"]
    assert any(e.get("cat") == "python_function" and e["name"].startswith("tiny.py(") for e in events)
    a = run_cli("analyze", trace)
    assert a.returncode == 2 and "no CUDA runtime events" in a.stderr and len(a.stderr.strip().splitlines()) == 1
    r = run_cli("profile", "--kineto", "--no-variants", "-o", out, "--name", "failing", script, "--", "--fail")
    assert r.returncode == 4 and "exited 3" in r.stderr and (out / "failing.pt.trace.json.gz").is_file()
    r = run_cli("profile", "--kineto", "--", "python", "x.py")
    assert r.returncode == 2 and "give WORKLOAD.py" in r.stderr


def test_torch_profile_refuses_an_unwritable_trace_folder_before_the_workload_runs(tmp_path):
    """The folder is made (or found unwritable) first: a trace with nowhere to go must not cost the run."""
    script = tmp_path / "work.py"
    marker = tmp_path / "ran"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = subprocess.run([sys.executable, "-m", "nsysh2d.capture.torch_profile", "-o", str(blocker / "t.pt.trace.json"),
                        str(script)], capture_output=True, text=True)
    assert r.returncode == 6 and not marker.exists()
    assert len(r.stderr.strip().splitlines()) == 1 and "cannot write the trace there" in r.stderr
    pytest.importorskip("torch")
    out = tmp_path / "new" / "deeper" / "t.pt.trace.json"
    r = subprocess.run([sys.executable, "-m", "nsysh2d.capture.torch_profile", "-o", str(out), str(script)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and marker.exists() and json.loads(out.read_text())["traceEvents"] is not None
