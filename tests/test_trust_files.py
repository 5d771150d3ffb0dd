"""Issue 54, classes 1, 4 (file types), 7 and 8 (docs/security.md, "Side files, links and the cache"): the side
files of an untrusted SQLite file never let SQLite touch anything outside nsysh2d's own private folder, and
what is copied is bounded by the files' real sizes; an input or side file that is not a regular file is one
line and exit 2, never a hang; a cache folder that is a link or another user's is refused before anything
in it is read or deleted; Markdown never turns a trace's URL, @mention or #123 into a link.

Every run is the real CLI in a subprocess under a timeout and resource limits (file size, address space);
file effects are checked on a snapshot of the whole test folder (paths, sizes, mtimes, content hashes). The
fast layer keeps one case of each promise; the matrices are in the slow layer (subprocess-heavy)."""
import hashlib
import json
import os
import re
import resource
import shutil
import sqlite3
import struct
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from conftest import H200, cli_command
from test_security import long_pageable_copies_by_sql

PROBE = H200 / "api-probe.sqlite"          # 8 long-blocking pageable copies (tests/test_security.py)
PYBT = H200 / "api-probe-pybt.sqlite"      # the same with Python call sites
JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")

# A writer that deletes every row of every table in one transaction and is then killed: the page cache is
# too small to hold the change, so pages are written into the file and only the hot -journal can undo them.
WRITER = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("PRAGMA cache_size=10")
con.execute("BEGIN")
for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
    con.execute(f'DELETE FROM "{n}"')
print("ready", flush=True)
time.sleep(60)
"""


def killed_writer(db: Path) -> Path:
    """A copy of the real export with the hot journal of a writer killed mid-transaction beside it."""
    shutil.copy(PROBE, db)
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.kill()
    proc.wait()
    journal = Path(f"{db}-journal")
    assert journal.read_bytes()[:8] == JOURNAL_MAGIC   # synced: SQLite will roll it back
    return journal


def name_super_journal(journal: Path, victim: Path) -> None:
    """Append a super-journal record naming `victim`, as SQLite writes one at the end of a journal of a
    multi-database commit: the locking page's number, the name, its length, its checksum, the magic."""
    name = str(victim).encode()
    with open(journal, "ab") as f:
        f.write(struct.pack(">I", (1 << 30) // 4096 + 1) + name + struct.pack(">II", len(name), sum(name)) + JOURNAL_MAGIC)


def rows(db, table="CUPTI_ACTIVITY_KIND_MEMCPY") -> int:
    """Plain SQL on the file as it is on disk (immutable: SQLite looks at no journal)."""
    con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def snapshot(root: Path) -> dict:
    """Every path under root: a file's size, mtime and content hash, a link's target, a folder as such."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for d in dirs:
            p = os.path.join(folder, d)
            out[p] = ("link", os.readlink(p)) if os.path.islink(p) else ("dir",)
        for f in files:
            p = os.path.join(folder, f)
            st = os.lstat(p)
            if os.path.islink(p):
                out[p] = ("link", os.readlink(p))
            elif not os.path.isfile(p):
                out[p] = ("special", st.st_mode)
            else:
                out[p] = (st.st_size, st.st_mtime_ns, hashlib.sha256(Path(p).read_bytes()).hexdigest())
    return out


def _limits():
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))   # no file over 256 MB
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))


def run(*args, env=None, timeout=60, cwd=None):
    """The CLI as a user runs it, bounded: a hang fails the test at `timeout`, an unbounded copy at 256 MB."""
    try:
        return subprocess.run(cli_command() + [str(a) for a in args], capture_output=True, text=True, cwd=cwd,
                              env={**os.environ, **(env or {})}, timeout=timeout, preexec_fn=_limits)
    except subprocess.TimeoutExpired:
        pytest.fail(f"nsysh2d {' '.join(map(str, args))} still running after {timeout} s")


def one_line(r, code=2):
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nsysh2d: error: ") and "Traceback" not in r.stderr, r.stderr
    return lines[0]


@pytest.fixture
def world(tmp_path):
    """A CI job's folders: the checkout with a trace and the baseline an attacker wants gone, a cache used
    once on a clean file (so its folder, key and marker exist), and an empty $TMPDIR for nsysh2d."""
    for d in ("job", "tmp"):
        (tmp_path / d).mkdir()
    baseline = tmp_path / "job" / "baseline.json"
    env = {"NSYSH2D_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp_path / "tmp")}
    assert run("baseline", PROBE, "-o", baseline, env=env).returncode == 0
    return tmp_path, baseline, env


# ------------------------------------------------------------------------------ class 1: side files
def test_sqlite_itself_deletes_the_file_a_super_journal_names(tmp_path):
    """What the hostile journal does to any writable connection (nsysh2d before this change opened its
    private copy so, and lost the victim, --no-cache too): SQLite rolls the journal back, then deletes
    the file it names. Shown here with plain sqlite3 on a scratch copy."""
    db = tmp_path / "scratch.sqlite"
    journal = killed_writer(db)
    decoy = tmp_path / "decoy.json"
    decoy.write_text("{}")
    name_super_journal(journal, decoy)
    assert rows(db) == 0   # the killed writer's delete is in the file
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()[0] == rows(PROBE) > 0
    con.close()
    assert not decoy.exists()


@pytest.mark.parametrize("cached", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["no-cache", "cache"])
def test_a_journal_naming_a_super_journal_is_refused_and_nothing_changes(world, cached):
    tmp_path, baseline, env = world
    trace = tmp_path / "job" / "trace.sqlite"
    name_super_journal(killed_writer(trace), baseline)
    before = snapshot(tmp_path)
    for cmd in (["analyze", trace], ["gate", trace, "--baseline", baseline]):
        r = run(*cmd, *([] if cached else ["--no-cache"]), env=env)
        assert "super-journal" in one_line(r) and f"{trace}-journal" in r.stderr
    after = snapshot(tmp_path)
    # The cache may have made its (empty) copies folder; no file anywhere was added, changed or removed.
    assert {p: v for p, v in after.items() if v != ("dir",)} == {p: v for p, v in before.items() if v != ("dir",)}
    assert set(after) - set(before) <= {str(tmp_path / "cache" / "copies")}
    assert baseline.exists() and os.listdir(tmp_path / "tmp") == []


@pytest.mark.slow
@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "cache"])
def test_a_hot_journal_is_rolled_back_in_a_private_folder(world, cached):
    """The killed writer's transaction is undone in nsysh2d's own copy: the gate sees the 8 long pageable
    copies plain SQL finds in the original (the file on disk holds none); nothing beside the trace or
    elsewhere changes; --no-cache leaves $TMPDIR as it was, the cache gains only its copy and entry."""
    tmp_path, baseline, env = world
    trace = tmp_path / "job" / "trace.sqlite"
    killed_writer(trace)
    truth = long_pageable_copies_by_sql(PROBE)
    assert rows(trace) == 0 and truth == 8
    before = snapshot(tmp_path)
    extra = [] if cached else ["--no-cache"]
    r = run("gate", trace, *extra, env=env)
    assert r.returncode == 1 and f"{truth} long-blocking" in r.stdout, r.stderr
    r = run("analyze", trace, "--format", "json", *extra, env=env)
    assert r.returncode == 0 and "read from a private copy" in r.stdout, r.stderr
    after = snapshot(tmp_path)
    cache = str(tmp_path / "cache")
    assert {p: v for p, v in after.items() if not p.startswith(cache)} == \
        {p: v for p, v in before.items() if not p.startswith(cache)}
    assert all(after.get(p) == v for p, v in before.items() if v != ("dir",))   # nothing in the cache changed
    new = sorted(p[len(cache) + 1:] for p in set(after) - set(before))
    if cached:
        assert [p for p in new if not p.startswith(("copies", "reports/"))] == [] and len(new) >= 3, new
    else:
        assert new == [], new



@pytest.mark.slow
def test_a_link_to_a_trace_is_judged_by_the_side_files_beside_its_target(world):
    """SQLite resolves a link to the database and reads the -journal beside its target: that is the one
    checked (a FIFO there hung the reader; a super-journal there is refused as beside the trace itself)."""
    tmp_path, baseline, env = world
    (tmp_path / "elsewhere").mkdir()
    real = tmp_path / "elsewhere" / "real.sqlite"
    link = tmp_path / "job" / "link.sqlite"
    link.symlink_to(real)
    name_super_journal(killed_writer(real), baseline)
    files = lambda: {p: v for p, v in snapshot(tmp_path).items() if v != ("dir",)}   # noqa: E731
    before = files()
    assert "super-journal" in one_line(run("analyze", link, "--no-cache", env=env))
    assert files() == before and baseline.exists()
    os.unlink(f"{real}-journal")
    os.mkfifo(f"{real}-journal")
    before = files()
    assert "not a regular file" in one_line(run("analyze", link, env=env, timeout=30))
    assert files() == before and os.listdir(tmp_path / "tmp") == []

def wal_mode_copy(path: Path) -> Path:
    shutil.copy(PROBE, path)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    con.close()
    assert not os.path.exists(f"{path}-wal") and open(path, "rb").read(20)[18:20] == b"\x02\x02"
    return path


@pytest.mark.slow
@pytest.mark.parametrize("side,kind", [("-wal", "/dev/zero"), ("-wal", "fifo"), ("-journal", "fifo"),
                                       ("-journal", "/dev/zero"), ("-journal", "dir"), ("-wal", "dir")])
def test_side_files_that_are_not_regular_files_are_refused(world, side, kind):
    """A -wal linked to /dev/zero made an unbounded copy into the cache, a FIFO -journal hung every reader
    (SQLite opens it by name): now one line, exit 2, nothing copied."""
    tmp_path, baseline, env = world
    trace = wal_mode_copy(tmp_path / "job" / "trace.sqlite")
    beside = Path(f"{trace}{side}")
    if kind == "fifo":
        os.mkfifo(beside)
    elif kind == "dir":
        beside.mkdir()
    else:
        beside.symlink_to(kind)
    before = snapshot(tmp_path)
    for extra in ([], ["--no-cache"]):
        r = run("analyze", trace, *extra, env=env, timeout=30)
        assert "not a regular file" in one_line(r) and str(beside) in r.stderr
    after = snapshot(tmp_path)
    assert {p: v for p, v in after.items() if v != ("dir",)} == {p: v for p, v in before.items() if v != ("dir",)}
    assert os.listdir(tmp_path / "tmp") == []


def committed_wal(trace: Path, scratch: Path) -> tuple[bytes, int]:
    """The -wal a writer killed after its commit leaves: the pageable copies' activity deleted, made on a
    byte-identical scratch copy of the WAL-mode trace (so it applies to the trace), and the long pageable
    copies plain SQL then finds (0)."""
    shutil.copy(trace, scratch)
    con = sqlite3.connect(scratch)
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE srcKind = 0")
    con.commit()
    wal = Path(f"{scratch}-wal").read_bytes()
    truth = long_pageable_copies_by_sql(scratch)
    con.close()
    return wal, truth


@pytest.mark.slow
def test_a_wal_beside_the_file_is_replayed_in_a_private_copy(world):
    """The committed change in a -wal counts (as plain SQL on the file with it says), read from a private
    copy: nothing is written beside the trace, $TMPDIR is left as it was."""
    tmp_path, _, env = world
    trace = wal_mode_copy(tmp_path / "job" / "trace.sqlite")
    wal, truth = committed_wal(trace, tmp_path / "scratch.sqlite")
    Path(f"{trace}-wal").write_bytes(wal)
    before = snapshot(tmp_path / "job")
    r = run("gate", trace, "--no-cache", env=env)
    assert r.returncode == 1 and f"{truth} long-blocking" in r.stdout and truth == 0, r.stdout
    assert snapshot(tmp_path / "job") == before and os.listdir(tmp_path / "tmp") == []


# ------------------------------------------------------------------------------ class 4: file types
@pytest.mark.slow
@pytest.mark.parametrize("name,kind", [("r.nsys-rep", "fifo"), ("r.nsys-rep", "/dev/zero"), ("r.nsys-rep", "dir"),
                                       ("t.sqlite", "fifo"), ("t.json", "fifo"), ("t.json.gz", "/dev/zero"),
                                       ("t.qdrep", "fifo")])
@pytest.mark.parametrize("cmd", ["analyze", "gate"])
def test_inputs_that_are_not_regular_files_are_refused_before_anything_reads_them(tmp_path, name, kind, cmd):
    """A .nsys-rep that is a FIFO hung the gate (its first line was read for the capture build, then nsys
    read it): refused before either. The stand-in nsys records any call."""
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()   # a folder with no trace in it
    else:
        path.symlink_to(kind)
    called = tmp_path / "nsys-called"
    nsys = tmp_path / "nsys"
    nsys.write_text(f"#!/bin/sh\ntouch {called}\nexit 1\n")
    nsys.chmod(0o755)
    line = one_line(run(cmd, path, "--nsys", nsys, timeout=30))
    assert str(path) in line and ("not a regular file" in line or "is a directory" in line or
                                  "no such file" in line), line
    assert not called.exists()


# ------------------------------------------------------------------------------ class 7: the cache
def planted(tmp_path):
    """Another user's folder that looks like an nsysh2d cache (marker, a report entry, their notes)."""
    theirs = tmp_path / "theirs"
    (theirs / "reports").mkdir(parents=True)
    (theirs / ".nsysh2d-cache").write_text("nsysh2d cache folder\n")
    (theirs / "reports" / "entry.json").write_text("{}")
    (theirs / "notes.txt").write_text("keep")
    theirs.chmod(0o700)
    return theirs


def test_a_cache_folder_that_is_a_link_is_refused_and_never_cleared(tmp_path):
    theirs = planted(tmp_path)
    link = tmp_path / "cache"
    link.symlink_to(theirs)
    before = snapshot(tmp_path)
    env = {"NSYSH2D_CACHE_DIR": str(link)}
    for cmd in (["cache-clear"], ["analyze", PROBE], ["gate", PROBE]):
        assert "symbolic link" in one_line(run(*cmd, env=env))
    assert snapshot(tmp_path) == before
    # --no-cache still works, and leaves the linked folder alone.
    assert run("analyze", PROBE, "--no-cache", env={**env, "TMPDIR": str(tmp_path)}).returncode == 0
    assert snapshot(tmp_path) == before


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the folder to another user")
def test_a_cache_folder_of_another_user_is_never_cleared(tmp_path):
    theirs = planted(tmp_path)
    for p in [theirs, *theirs.rglob("*")]:
        os.lchown(p, 4242, 4242)
    before = snapshot(tmp_path)
    r = run("cache-clear", env={"NSYSH2D_CACHE_DIR": str(theirs)})
    assert "owned by another user" in one_line(r)
    assert snapshot(tmp_path) == before


@pytest.mark.slow
@pytest.mark.parametrize("mode", [0o770, 0o1777])
def test_a_cache_folder_others_can_write_is_refused_sticky_or_not(tmp_path, mode):
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(mode)
    r = run("cache-clear", env={"NSYSH2D_CACHE_DIR": str(cache)})
    assert "writable by other users" in one_line(r)
    assert "writable by other users" in one_line(run("analyze", PROBE, env={"NSYSH2D_CACHE_DIR": str(cache)}))


def test_cache_clear_removes_a_link_inside_the_cache_not_its_target(tmp_path):
    cache = tmp_path / "cache"
    env = {"NSYSH2D_CACHE_DIR": str(cache)}
    assert run("analyze", PROBE, env=env).returncode == 0
    theirs = planted(tmp_path)
    shutil.rmtree(cache / "copies", ignore_errors=True)
    (cache / "copies").symlink_to(theirs)
    (cache / "reports" / "elsewhere").symlink_to(theirs)
    before = snapshot(theirs)
    r = run("cache-clear", env=env)
    assert r.returncode == 0, r.stderr
    assert snapshot(theirs) == before and not cache.exists()


# ------------------------------------------------------------------------------ class 8: Markdown
PAYLOADS = ["https://evil.example/login", "see www.evil-site.com/x", "mail bob@evil.example", "@octocat",
            "@acme/security-team", "fixes #123", "acme/repo#45", "GH-77", "ftp://files.example/a", "HTTP://CAPS.EXAMPLE"]
# What GitHub turns into a link or notification on the text it renders (GFM autolinks: scheme://, www., an
# e-mail address; GitHub's @mentions and issue references).
LINKED = re.compile(r"(?i)\b(?:https?|ftp)://|\bwww\.[\w-]|[\w.+-]@[\w-]+\.\w|(?<![\w/])@[A-Za-z0-9]|"
                    r"#[0-9]|\bGH-[0-9]")


@pytest.fixture(scope="module")
def linky(tmp_path_factory):
    """The real export with Python call sites, each NVTX range name carrying one payload (steps keep ^step)."""
    path = tmp_path_factory.mktemp("linky") / "linky.sqlite"
    shutil.copy(PYBT, path)
    con = sqlite3.connect(path)
    names = [r[0] for r in con.execute("SELECT DISTINCT text FROM NVTX_EVENTS WHERE text IS NOT NULL "
                                       "AND text <> 'Python Backtrace on CUDA' ORDER BY 1")]
    for i, n in enumerate(names):
        con.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = ?", (f"{n} {PAYLOADS[i % len(PAYLOADS)]}", n))
    con.commit()
    con.close()
    return path


def rendered_text(markdown: str) -> str:
    """The text a Markdown renderer shows outside code (entities decoded, as GitHub's link and mention
    filters see it): markdown-it's CommonMark HTML with code elements and tags removed."""
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render(markdown)
    html = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
    assert "<a " not in html
    return unescape(re.sub(r"<[^>]+>", " ", html))


@pytest.mark.slow
@pytest.mark.parametrize("cmd", [["analyze", "--by", "nvtx", "--format", "markdown"], ["analyze", "--format", "markdown"],
                                 ["gate", "--format", "markdown"], ["gate", "--summary", "{summary}"]])
def test_markdown_holds_no_link_or_mention_from_a_trace(linky, tmp_path, cmd):
    summary = tmp_path / "summary.md"
    r = run(cmd[0], linky, *[a.format(summary=summary) for a in cmd[1:]], "--no-cache",
            env={"NSYSH2D_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode in (0, 1), r.stderr
    text = summary.read_text() if "--summary" in cmd else r.stdout
    shown = rendered_text(text)
    assert "\u200b" in shown, "no payload reached the output"
    assert not LINKED.search(shown), LINKED.search(shown)
    # The names still read as they were: without the zero-width spaces the payloads are there.
    assert any(p in shown.replace("\u200b", "") for p in PAYLOADS), shown[:500]


def test_markdown_breaks_each_autolink_form():
    from nsysh2d.present.safe import markdown

    for p in PAYLOADS + ["xmpp:a@b.example", "mailto:a@b.example", "WWW.EVIL.COM", "x (https://e.example)"]:
        shown = rendered_text(markdown(p))
        assert not LINKED.search(shown) and shown.strip().replace("\u200b", "") == p, (p, shown)
    assert markdown("train.py:12 snake_case a.b") == "train.py:12 snake_case a.b"   # plain names unchanged



@pytest.mark.slow
def test_a_wal_that_appears_later_is_not_answered_from_the_cache(world):
    """The cache keys a report by the file and the side files beside it: a -wal put beside an unchanged
    WAL-mode file after a cached run (its commit deletes the pageable copies' activity) changes the answer
    as plain SQL says; before, the stale answer was served."""
    tmp_path, _, env = world
    trace = wal_mode_copy(tmp_path / "job" / "trace.sqlite")
    wal, truth_after = committed_wal(trace, tmp_path / "scratch.sqlite")
    assert long_pageable_copies_by_sql(trace) == 8 and truth_after == 0
    first = run("gate", trace, env=env)
    assert first.returncode == 1 and "8 long-blocking" in first.stdout, first.stderr
    Path(f"{trace}-wal").write_bytes(wal)
    second = run("gate", trace, env=env)
    assert f"{truth_after} long-blocking" in second.stdout, second.stdout
