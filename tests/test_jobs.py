"""Issue 55, part 1: a job is a value (jobs.Job), computed through the library's facade (`nsysh2d.open(path)`,
one method per analysis), carried unchanged by every executor; a cache hit loads neither DuckDB nor polars."""
import json
import pickle
import sqlite3
import subprocess
import sys

import pytest

import nsysh2d
from conftest import AFTER, BEFORE, ROOT, SWEEP
from nsysh2d.analyses.options import REPORT_GROUPS, Options
from nsysh2d.runner import cluster
from nsysh2d.analyses.registry import spec
from nsysh2d.runner.jobs import Job, entry_path, run_job
from nsysh2d.runner.run import run_jobs


def test_a_job_is_plain_data_and_its_identity_keys_the_cache(tmp_path, monkeypatch):
    """A Job pickles to an equal Job (what the pool, Dask and the recipe send); what it is (input, analysis,
    options, groups) keys its cache entry, how it is run (nsys, use_cache) does not."""
    monkeypatch.setenv("NSYSH2D_CACHE_DIR", str(tmp_path))
    job = Job(str(BEFORE), "report", Options(top=3), REPORT_GROUPS, nsys="/opt/nsys", use_cache=True)
    assert pickle.loads(pickle.dumps(job)) == job
    same = Job(str(BEFORE), "report", Options(top=3), REPORT_GROUPS, nsys=None, use_cache=False)
    assert entry_path(job) == entry_path(same)
    others = [Job(str(BEFORE), "report", Options(top=4), REPORT_GROUPS), Job(str(AFTER), "report", Options(top=3),
              REPORT_GROUPS), Job(str(BEFORE), "report", Options(top=3), ("site",)),
              Job(str(BEFORE), "range-times", Options(top=3))]
    assert len({entry_path(j) for j in [job, *others]}) == 5


@pytest.mark.slow   # three analyses, each computed four ways (about 6 s)
def test_each_analysis_is_one_facade_method_and_a_job_computes_it(tmp_path, monkeypatch):
    """The facade's methods give what the jobs give (in this process, and as a Dask task's JSON); api-summary's
    counts are the file's own (plain SQL) and build no copy model."""
    monkeypatch.setenv("NSYSH2D_CACHE_DIR", str(tmp_path))
    path = str(BEFORE)
    a = nsysh2d.open(path)
    try:
        summary = a.api_summary()
        assert a._model is None   # api-summary reads the runtime table alone
        times = a.range_times()
        rep = a.result(Options(top=5), REPORT_GROUPS)
    finally:
        a.close()
    opts = Options(top=5)
    jobs = [Job(path, "api-summary"), Job(path, "range-times", opts), Job(path, "report", opts, REPORT_GROUPS)]
    for job, mine in zip(jobs, (summary, times.to_json(), rep.to_json())):
        want = json.loads(json.dumps(mine, default=str))
        for use_cache in (True, True, False):   # computed and stored, served from the cache, computed
            got = spec(job.analysis).to_json(run_job(Job(**{**vars(job), "use_cache": use_cache})))
            assert json.loads(json.dumps(got, default=str)) == want, job.analysis
        assert json.loads(cluster.task(job)) == {"report": want}
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    truth = dict(con.execute("SELECT nameId, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY nameId"))
    con.close()
    assert {r["name_id"]: r["calls"] for r in summary["rows"]} == truth
    assert set(rep.groups) == set(REPORT_GROUPS)


def test_job_errors_are_results_on_every_path(tmp_path):
    """A missing input is one error line (exit 2) from run_jobs and from the Dask task alike."""
    missing = str(tmp_path / "missing.sqlite")
    results, errors = run_jobs([Job(str(BEFORE), "api-summary", use_cache=False), Job(missing, "api-summary")],
                               jobs=1, progress=False)
    assert len(results) == 1 and [(p, c) for p, _m, c in errors] == [(missing, 2)]
    out = json.loads(cluster.task(Job(missing, "report", Options(), REPORT_GROUPS)))
    assert out["exit_code"] == 2 and missing in out["error"]


@pytest.mark.slow   # two fresh processes running four commands each (about 6 s)
def test_a_cache_hit_imports_neither_duckdb_nor_polars(tmp_path):
    """Every analysis served from the cache (analyze, api-summary, threshold, compare's range times), through the
    CLI, in one fresh process: neither DuckDB nor polars (nor pyarrow) is imported."""
    env = {"NSYSH2D_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    commands = [["analyze", str(BEFORE)], ["api-summary", str(BEFORE)], ["threshold", str(SWEEP)],
                ["compare", str(BEFORE), str(AFTER)]]
    code = ("import sys\nfrom nsysh2d.cli import main\n"
            f"for args in {commands!r}:\n"
            "    try:\n        main(args, standalone_mode=False)\n    except SystemExit:\n        pass\n"
            "print('HEAVY', sorted(m for m in ('duckdb', 'polars', 'pyarrow') if m in sys.modules))")
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert warm.returncode == 0 and "HEAVY ['duckdb'" in warm.stdout, warm.stderr   # the first run computes
    hit = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert hit.returncode == 0, hit.stderr
    assert hit.stdout.splitlines()[-1] == "HEAVY []", hit.stdout
    assert hit.stdout.rsplit("HEAVY", 1)[0] == warm.stdout.rsplit("HEAVY", 1)[0]   # the same outputs


def test_an_unknown_analysis_is_refused():
    with pytest.raises(ValueError, match="no analysis 'nope'"):
        run_job(Job(str(BEFORE), "nope"))


def test_a_registered_analysis_is_a_facade_method_and_a_cached_job(tmp_path, monkeypatch):
    """What docs/architecture.md promises of a new analysis (its module with a SPEC, and its line in
    analyses/registry.py): a facade method of its name and a job with the cache, with nothing else changed. The
    stand-in analysis counts each CUDA API function's calls; the truth is plain SQL."""
    from nsysh2d.analyses import registry
    from nsysh2d.analyses.api_summary import api_summary
    from nsysh2d.analyses.spec import Spec

    monkeypatch.setenv("NSYSH2D_CACHE_DIR", str(tmp_path))
    computed = []

    def calls_per_function(trace, opts, groups):
        computed.append(trace.path)
        return {"path": trace.path, "calls": {str(r["name_id"]): r["calls"] for r in api_summary(trace.path)["rows"]}}

    monkeypatch.setitem(registry.ANALYSES, "calls-per-function", Spec(calls_per_function, lambda d: d, dict))
    path = str(BEFORE)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    truth = {str(k): n for k, n in con.execute("SELECT nameId, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY nameId")}
    con.close()
    a = nsysh2d.open(path)
    try:
        assert a.calls_per_function()["calls"] == truth
    finally:
        a.close()
    job = Job(path, "calls-per-function")
    assert run_job(job)["calls"] == truth and run_job(job)["calls"] == truth
    assert len(computed) == 2   # the facade once, the job once: its second run came from the cache
    with pytest.raises(AttributeError):
        nsysh2d.open(path).no_such_analysis
