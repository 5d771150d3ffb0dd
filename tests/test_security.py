"""Issue 37 beyond the output strings (those are tests/test_hostile_strings.py): what the gate writes on a
shared machine, and the trace files that tried to flip its verdict (docs/security.md)."""
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import H200, run_cli, sha256

PROBE = H200 / "api-probe.sqlite"   # fails the gate: 8 long-blocking pageable copies


def test_summary_is_never_appended_through_a_symbolic_link(tmp_path):
    victim = tmp_path / "authorized_keys"
    victim.write_text("ssh-ed25519 AAAA me\n")
    before = sha256(victim)
    link = tmp_path / "summary.md"
    link.symlink_to(victim)
    r = run_cli("gate", PROBE, "--summary", link)
    assert r.returncode == 6 and "symbolic link" in r.stderr and len(r.stderr.splitlines()) == 1
    assert sha256(victim) == before and link.is_symlink()
    # a regular file the user owns, or a new one, is appended to as before
    real = tmp_path / "real.md"
    real.write_text("earlier step\n")
    assert run_cli("gate", PROBE, "--summary", real).returncode == 1
    assert real.read_text().startswith("earlier step\n## nsysh2d gate")
    assert run_cli("gate", PROBE, "--summary", tmp_path / "new.md").returncode == 1


def _as_nobody():
    return [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv for a 2nd user")
def test_summary_owned_by_another_user_is_refused():
    """Two users (setpriv): a world-writable summary file planted by root is not appended to by nobody."""
    import tempfile
    from pathlib import Path

    tmp_path = Path(tempfile.mkdtemp(prefix="nsysh2d-2users-"))   # pytest's own folder is root's alone
    os.chmod(tmp_path, 0o777)
    planted = tmp_path / "summary.md"
    planted.write_text("")
    os.chmod(planted, 0o666)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    env = {**os.environ, "NSYSH2D_CACHE_DIR": str(cache), "HOME": str(tmp_path)}
    exe = shutil.which("nsysh2d")
    cmd = _as_nobody() + ([exe] if exe else [sys.executable, "-m", "nsysh2d.cli"])
    r = subprocess.run(cmd + ["gate", str(PROBE), "--summary", str(planted)], capture_output=True, text=True, env=env)
    try:
        assert r.returncode == 6 and "owned by another user" in r.stderr, r.stderr
        assert planted.read_text() == ""
    finally:
        shutil.rmtree(tmp_path)
