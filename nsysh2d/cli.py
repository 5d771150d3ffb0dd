"""The `nsysh2d` command: a thin click layer over the library.

Heavy modules (duckdb, polars, rich) are imported inside the commands that need them, so that
`nsysh2d profile` runs on a GPU box that has only torch and click.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from . import __version__
from .errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OUTPUT_UNWRITABLE, NsysH2DError
from .units import DEFAULT_STEP_PATTERN, DIRECTIONS, GROUPS

FORMATS = ["table", "json", "csv", "markdown"]


def _fail(message: str, code: int) -> None:
    click.echo(f"nsysh2d: error: {message}", err=True)
    sys.exit(code)


class Group(click.Group):
    """Turns every error into one line on stderr and a documented exit code."""

    def main(self, *args, **kwargs):
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
            sys.exit(rv if isinstance(rv, int) else 0)
        except NsysH2DError as e:
            _fail(str(e), e.exit_code)
        except click.exceptions.Abort:
            _fail("aborted", 130)
        except click.ClickException as e:
            # Usage errors: click's own one-line message, our exit code for bad input.
            msg = e.format_message()
            ctx = getattr(e, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            _fail(msg + hint, EXIT_BAD_INPUT)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except BrokenPipeError:
            sys.exit(0)
        except OSError as e:
            _fail(f"{getattr(e, 'filename', '') or ''}: {e.strerror or e}".lstrip(": "), EXIT_BAD_INPUT)
        except Exception as e:  # a bug: say so in one line, keep the traceback behind a variable
            if os.environ.get("NSYSH2D_DEBUG"):
                raise
            if type(e).__name__ == "OutOfMemoryException":
                from .trace import memory_limit
                _fail(f"out of memory (DuckDB limit {memory_limit()}; raise it with "
                      "NSYSH2D_MEMORY_LIMIT=4GB)", EXIT_INTERNAL)
            _fail(f"internal error: {type(e).__name__}: {e} (set NSYSH2D_DEBUG=1 for a traceback and "
                  "please report it)", EXIT_INTERNAL)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nsysh2d")
def main():
    """Find, explain and gate long-blocking host-to-device copies in Nsight Systems traces.

    A `non_blocking=True` copy from pageable memory (or a strided view of pinned memory) makes
    cudaMemcpyAsync block the CPU thread until the GPU work already queued on the stream drains.
    nsysh2d reports those calls by their host-side duration.

    \b
    Typical session:
      nsysh2d profile workloads/qwen3vl.py         # capture before/after traces (GPU box)
      nsysh2d analyze nsysh2d-out/qwen3vl-before.sqlite   # what blocks, where, why
      nsysh2d compare nsysh2d-out/qwen3vl-before.sqlite nsysh2d-out/qwen3vl-after.sqlite
      nsysh2d gate nsysh2d-out/qwen3vl-after.sqlite       # exit 1 if long-blocking copies remain

    Exit codes: 0 ok, 1 gate failed, 2 bad input or usage, 3 no nsys CLI, 4 workload or nsys
    profile failed, 5 import/export failed, 6 output not writable, 70 internal error.
    """


# ----------------------------------------------------------------------------------------- profile
@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output-dir", default="nsysh2d-out", show_default=True, type=click.Path(file_okay=False),
              help="Folder for reports, SQLite exports and logs.")
@click.option("--name", help="Base name of the outputs (default: the workload's file name).")
@click.option("--variants", default=None,
              help="Comma-separated values passed as --variant, one capture each. Default: the workload's "
                   "own --variant choices (before,after), or none for a plain command.")
@click.option("--no-variants", is_flag=True, help="Capture once, without --variant.")
@click.option("--nsys", "nsys_path", help="nsys binary (default: $NSYS, PATH, the usual install folders).")
@click.option("--trace", default="cuda,nvtx", show_default=True, help="nsys --trace.")
@click.option("--cudabacktrace", default="memory", show_default=True,
              help="nsys --cudabacktrace (native stacks of memory calls; 'none' to turn off).")
@click.option("--sample", default="process-tree", show_default=True,
              help="nsys --sample (backtraces need sampling on).")
@click.option("--python-backtrace", is_flag=True, help="Also record Python stacks of CUDA calls.")
@click.option("--nsys-arg", "nsys_args", multiple=True, help="Extra argument for nsys profile (repeatable).")
@click.option("--export-arg", "export_args", multiple=True, help="Extra argument for nsys export (repeatable).")
@click.option("--importer-lib", help="Folder added to LD_LIBRARY_PATH when finishing a .qdstrm import.")
@click.option("--python", "python_exe", default=sys.executable, show_default="this interpreter",
              help="Interpreter that runs a .py workload.")
@click.option("--dry-run", is_flag=True, help="Print the nsys commands without running them.")
@click.argument("target", nargs=-1, type=click.UNPROCESSED, required=True)
def profile(output_dir, name, variants, no_variants, nsys_path, trace, cudabacktrace, sample,
            python_backtrace, nsys_args, export_args, importer_lib, python_exe, dry_run, target):
    """Run a workload (or any command) under `nsys profile` and export SQLite.

    \b
      nsysh2d profile workloads/qwen3vl.py                 # before and after variants
      nsysh2d profile workloads/qwen3vl.py -- --steps 20   # arguments for the workload
      nsysh2d profile --name train -- python train.py      # any command

    For a workload with a --variant option, each variant is captured (NAME-VARIANT.sqlite).
    If nsys leaves a .qdstrm because it could not find its importer, a QdstrmImporter near the
    nsys binary finishes the job. Prints what it wrote and the command to run next.
    """
    from . import nsys as nsysmod

    parts = list(target)
    if parts and parts[0] == "--":
        parts = parts[1:]
    if not parts:
        raise NsysH2DError("nothing to profile: give WORKLOAD.py or -- COMMAND", EXIT_BAD_INPUT)
    is_script = parts[0].endswith(".py")
    if is_script:
        script, rest = parts[0], parts[1:]
        if rest and rest[0] == "--":
            rest = rest[1:]
        if not os.path.isfile(script):
            raise NsysH2DError(f"{script}: no such workload file", EXIT_BAD_INPUT)
        base_cmd = [python_exe, os.path.abspath(script), *rest]
        label = name or Path(script).stem
        found = [] if no_variants else (variants.split(",") if variants else nsysmod.workload_variants(script))
    else:
        base_cmd, label = parts, name or Path(parts[0]).name
        found = [] if (no_variants or not variants) else variants.split(",")
    opts = nsysmod.CaptureOptions(
        trace=trace, cudabacktrace=None if cudabacktrace in ("none", "") else cudabacktrace,
        sample=sample, python_backtrace=python_backtrace, extra=list(nsys_args),
        export_extra=list(export_args))
    runs = [(f"{label}-{v}", [*base_cmd, "--variant", v]) for v in found] or [(label, base_cmd)]
    if dry_run:
        exe = nsys_path or os.environ.get("NSYS") or "nsys"
        for lab, cmd in runs:
            click.echo(" ".join(nsysmod.profile_command(exe, str(Path(output_dir) / lab), cmd, opts)))
            click.echo(" ".join(nsysmod.export_command(exe, str(Path(output_dir) / f"{lab}.nsys-rep"),
                                                        str(Path(output_dir) / f"{lab}.sqlite"), opts.export_args())))
        return 0
    exe = nsysmod.find_nsys(nsys_path)
    click.echo(f"nsys: {exe}", err=True)
    out = Path(output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise NsysH2DError(f"{out}: cannot create output folder ({e.strerror})", EXIT_OUTPUT_UNWRITABLE) from None
    written = []
    for i, (lab, cmd) in enumerate(runs, 1):
        click.echo(f"[{i}/{len(runs)}] capturing {lab}", err=True)
        res = nsysmod.capture(exe, out, lab, cmd, opts, importer_lib=importer_lib,
                              echo=lambda s: click.echo(s, err=True))
        written.append(res.sqlite)
        click.echo(f"wrote {res.sqlite} (report {res.report}, log {res.log})")
    if len(written) == 2:
        click.echo(f"next: nsysh2d compare {written[0]} {written[1]}")
    else:
        click.echo(f"next: nsysh2d analyze {' '.join(written)}")
    return 0


# ----------------------------------------------------------------------------------------- analyze
def _duration(ctx, param, value):
    from .units import parse_duration

    try:
        return parse_duration(value) if value is not None else None
    except NsysH2DError as e:
        raise click.BadParameter(str(e)) from None


def _emit(text: str, output: str | None) -> None:
    if output:
        from .cachedir import atomic_write

        try:
            atomic_write(output, text)
        except OSError as e:
            raise NsysH2DError(f"{output}: cannot write ({e.strerror})", EXIT_OUTPUT_UNWRITABLE) from None
    else:
        click.echo(text, nl=False)


common_report_options = [
    click.option("--min-duration", default="100us", show_default=True, callback=_duration,
                 help="A call is long when its host-side duration is at least this (ns, us, ms)."),
    click.option("--direction", type=click.Choice(DIRECTIONS), default="h2d", show_default=True,
                 help="Which copies to report."),
    click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True),
    click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout."),
    click.option("--step-pattern", default=DEFAULT_STEP_PATTERN, show_default=True,
                 help="Regular expression naming the NVTX ranges that mark one step (per-step figures)."),
    click.option("--nsys", "nsys_path", help="nsys binary used to export .nsys-rep inputs."),
]


def report_options(f):
    for opt in reversed(common_report_options):
        f = opt(f)
    return f


@main.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=True))
@report_options
@click.option("--top", default=10, show_default=True, type=click.IntRange(0), help="How many of the longest calls to list.")
@click.option("--by", type=click.Choice(GROUPS), default="kind", show_default=True,
              help="Group by memory kind, call site, true source class, NVTX range or stream.")
@click.option("-j", "--jobs", type=click.IntRange(1), help="Reports analyzed in parallel (default: CPU count).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the analysis cache.")
def analyze(reports, min_duration, direction, fmt, output, step_pattern, nsys_path, top, by, jobs, no_cache):
    """Report long-blocking async memcpy calls in nsys exports.

    REPORT is an nsys SQLite export (`nsys export --type sqlite`) or a .nsys-rep (exported with the
    nsys CLI into the cache folder). The file is opened read-only; nothing is written beside it.

    \b
    A call is *long* when its host-side duration (what the CPU thread lost) is at least
    --min-duration, and *blocking* when it is long and waited for the GPU: it returned only after
    its own GPU copy had started, or it lasted at least half of the GPU work queued ahead of it.

    \b
      nsysh2d analyze run.sqlite
      nsysh2d analyze run.sqlite --by site --min-duration 1ms
      nsysh2d analyze rank*.sqlite --format json -o report.json

    \b
    Environment: NSYSH2D_CACHE_DIR (cache folder; default $XDG_CACHE_HOME or ~/.cache, then
    /nsysh2d), NSYSH2D_MEMORY_LIMIT (DuckDB's memory cap before it spills to the cache folder;
    default 200MB), NSYSH2D_TIMING=1 (wall time, CPU time and peak memory of each stage on
    stderr).
    """
    from . import batch
    from .units import Options
    from .render import render_sections, to_json
    from .views import analyze_sections, report_heading

    opts = Options(min_ns=min_duration, direction=direction, top=top, step_pattern=step_pattern)
    reps, errors = batch.run(list(reports), opts, jobs=jobs, nsys=nsys_path, use_cache=not no_cache)
    for path, msg, _code in errors:
        click.echo(f"nsysh2d: error: {msg}", err=True)
    if errors and not reps:  # nothing to show: the error lines say it all
        return max(c for _p, _m, c in errors)
    if fmt == "json":
        doc = {"nsysh2d": __version__, "reports": reps}
        if errors:
            doc["errors"] = [{"path": p, "error": m, "exit_code": c} for p, m, c in errors]
        _emit(to_json(doc), output)
    else:
        parts = []
        for rep in reps:
            parts.append(render_sections(fmt, analyze_sections(rep, by, show_top=top > 0), report_heading(rep)))
        if len(reps) > 1:
            parts.append(render_sections(fmt, [_combined(reps)]))
        if errors:
            parts.append(f"INCOMPLETE: {len(errors)} of {len(reports)} reports could not be analyzed (see stderr)\n")
        _emit("\n".join(parts), output)
    if errors:
        return max(c for _p, _m, c in errors)
    return 0


def _analyze_one(path, opts, nsys_path, no_cache, groups=("site", "class", "nvtx", "stream")) -> dict:
    from . import batch

    reps, errors = batch.run([path], opts, groups=groups, jobs=1, nsys=nsys_path, use_cache=not no_cache,
                             progress=False)
    if errors:
        _p, msg, code = errors[0]
        raise NsysH2DError(msg, code)
    return reps[0]


# ----------------------------------------------------------------------------------------- compare
@main.command()
@click.argument("before", type=click.Path(dir_okay=True))
@click.argument("after", type=click.Path(dir_okay=True))
@report_options
@click.option("--no-cache", is_flag=True, help="Neither read nor write the analysis cache.")
def compare(before, after, min_duration, direction, fmt, output, step_pattern, nsys_path, no_cache):
    """Compare two traces (before/after a fix): per memory kind, source class, call site and NVTX
    range, with deltas, per-step figures when both carry step ranges, and what disappeared or appeared.

    \b
      nsysh2d compare before.sqlite after.sqlite
      nsysh2d compare before.sqlite after.sqlite --format markdown >> $GITHUB_STEP_SUMMARY
    """
    from .units import Options
    from .compare import compare as do_compare
    from .render import render_sections, to_json
    from .views import compare_sections

    opts = Options(min_ns=min_duration, direction=direction, top=10, step_pattern=step_pattern)
    rb = _analyze_one(before, opts, nsys_path, no_cache)
    ra = _analyze_one(after, opts, nsys_path, no_cache)
    result = do_compare(rb, ra)
    if fmt == "json":
        _emit(to_json({"nsysh2d": __version__, "compare": result}), output)
    else:
        _emit(render_sections(fmt, compare_sections(result), f"{before}  ->  {after}"), output)
    return 0


# ----------------------------------------------------------------------------------------- gate
@main.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("--max-long-calls", type=click.IntRange(0), default=0, show_default=True,
              help="Fail when more long-blocking copies than this are found.")
@click.option("--count", type=click.Choice(["blocking", "long"]), default="blocking", show_default=True,
              help="What a rule counts: long-blocking calls (long and waited for the GPU) or every long call.")
@click.option("--min-duration", default="100us", show_default=True, callback=_duration,
              help="A call is long when its host-side duration is at least this.")
@click.option("--max-blocked-per-step", callback=_duration, default=None,
              help="Fail when host time in long-blocking copies per NVTX step exceeds this (e.g. 1ms).")
@click.option("--kind", "kinds", multiple=True, help="Only copies from this source memory kind (file label, "
              "e.g. Pageable); repeatable.")
@click.option("--direction", type=click.Choice(DIRECTIONS), default="h2d", show_default=True)
@click.option("--baseline", type=click.Path(dir_okay=False), help="Findings stored by `nsysh2d baseline`: fail on new "
              "long-blocking call sites or growth beyond --tolerance.")
@click.option("--tolerance", default="10%", show_default=True, help="Growth over the baseline allowed (10% or 0.1).")
@click.option("--step-pattern", default=DEFAULT_STEP_PATTERN, show_default=True, help="NVTX ranges that mark one step.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML (one test case per rule).")
@click.option("--summary", "summary_path", type=click.Path(dir_okay=False),
              help="Append a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY).")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="pyproject.toml with [tool.nsysh2d.gate] (default: the nearest one).")
@click.option("--nsys", "nsys_path", help="nsys binary used to export .nsys-rep inputs.")
@click.option("--no-cache", is_flag=True)
@click.pass_context
def gate(ctx, reports, max_long_calls, count, min_duration, max_blocked_per_step, kinds, direction, baseline,
         tolerance, step_pattern, junit_path, summary_path, fmt, config_path, nsys_path, no_cache):
    """CI gate: exit 0 when the traces pass, 1 when a rule fails, 2 on bad input.

    \b
    Rules:
      max-long-calls        long-blocking copies found <= --max-long-calls (default 0)
      max-blocked-per-step  host time in long-blocking copies per NVTX step <= the limit
      no-new-sites          (with --baseline) no long-blocking call site the baseline lacks
      no-growth             (with --baseline) no site's long-copy time grew beyond --tolerance

    Settings may also come from [tool.nsysh2d.gate] in pyproject.toml (the command line wins):
    max-long-calls, count, min-duration, max-blocked-per-step, kinds, direction, baseline,
    tolerance, step-pattern. When GITHUB_ACTIONS=true, failures are also printed as error annotations.

    \b
      nsysh2d baseline main.sqlite -o nsysh2d-baseline.json
      nsysh2d gate pr.sqlite --baseline nsysh2d-baseline.json --junit gate.xml
    """
    import json

    from .units import Options, parse_duration
    from .compare import Rules, gate as do_gate, verdict_dict
    from .config import gate_settings
    from .render import to_json
    from .render.ci import github_annotations, junit, summary_markdown

    conf, conf_path = gate_settings(Path(config_path) if config_path else None)

    def setting(name, key, value, convert=lambda v: v):
        src = ctx.get_parameter_source(name)
        if src is not click.core.ParameterSource.COMMANDLINE and key in conf:
            try:
                return convert(conf[key])
            except (TypeError, ValueError, NsysH2DError) as e:
                raise NsysH2DError(f"{conf_path}: bad [tool.nsysh2d.gate] {key} = {conf[key]!r} ({e})") from None
        return value

    max_long_calls = setting("max_long_calls", "max-long-calls", max_long_calls, int)
    count = setting("count", "count", count, str)
    min_duration = setting("min_duration", "min-duration", min_duration, parse_duration)
    max_blocked_per_step = setting("max_blocked_per_step", "max-blocked-per-step", max_blocked_per_step, parse_duration)
    kinds = setting("kinds", "kinds", tuple(kinds), lambda v: tuple([v] if isinstance(v, str) else v))
    direction = setting("direction", "direction", direction, str)
    baseline = setting("baseline", "baseline", baseline, str)
    tolerance = setting("tolerance", "tolerance", tolerance, str)
    step_pattern = setting("step_pattern", "step-pattern", step_pattern, str)
    if count not in ("blocking", "long") or direction not in DIRECTIONS:
        raise NsysH2DError("bad count/direction setting", EXIT_BAD_INPUT)
    tol = str(tolerance).strip()
    try:
        tol_f = float(tol[:-1]) / 100 if tol.endswith("%") else float(tol)
    except ValueError:
        raise NsysH2DError(f"bad --tolerance {tolerance!r}: use e.g. 10% or 0.1", EXIT_BAD_INPUT) from None
    base = None
    if baseline:
        try:
            with open(baseline) as f:
                base = json.load(f)
        except OSError as e:
            raise NsysH2DError(f"{baseline}: cannot read baseline ({e.strerror})", EXIT_BAD_INPUT) from None
        except ValueError:
            raise NsysH2DError(f"{baseline}: not a baseline file (invalid JSON)", EXIT_BAD_INPUT) from None
        if not isinstance(base, dict) or base.get("nsysh2d_baseline") != 1:
            raise NsysH2DError(f"{baseline}: not a baseline written by 'nsysh2d baseline'", EXIT_BAD_INPUT)
    rules = Rules(max_long_calls=max_long_calls, count=count, max_blocked_per_step_ns=max_blocked_per_step,
                  kinds=kinds, tolerance=tol_f)
    opts = Options(min_ns=min_duration, direction=direction, top=20, step_pattern=step_pattern)
    verdicts = []
    for path in reports:
        rep = _analyze_one(path, opts, nsys_path, no_cache)
        verdicts.append(verdict_dict(rep, do_gate(rep, rules, base)))
    passed = all(v["passed"] for v in verdicts)
    from .cachedir import atomic_write

    if junit_path:
        atomic_write(junit_path, junit(verdicts))
    if summary_path:
        with open(summary_path, "a") as f:  # GitHub's step summary is appended to
            f.write(summary_markdown(verdicts))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        click.echo(github_annotations(verdicts), nl=False)
    if fmt == "json":
        click.echo(to_json({"nsysh2d": __version__, "passed": passed, "verdicts": verdicts}), nl=False)
    elif fmt == "markdown":
        click.echo(summary_markdown(verdicts), nl=False)
    else:
        from .render.ci import offender_line

        for v in verdicts:
            click.echo(f"{'PASS' if v['passed'] else 'FAIL'}  {v['path']}")
            for r in v["rules"]:
                click.echo(f"  [{'pass' if r['passed'] else 'FAIL'}] {r['name']}: {r['message']}")
                for o in r["offenders"][:10]:
                    click.echo(f"      {offender_line(o)}")
    return 0 if passed else 1


# ----------------------------------------------------------------------------------------- baseline
@main.command()
@click.argument("report", type=click.Path(dir_okay=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Baseline JSON to write.")
@click.option("--min-duration", default="100us", show_default=True, callback=_duration)
@click.option("--direction", type=click.Choice(DIRECTIONS), default="h2d", show_default=True)
@click.option("--step-pattern", default=DEFAULT_STEP_PATTERN, show_default=True)
@click.option("--nsys", "nsys_path")
@click.option("--no-cache", is_flag=True)
def baseline(report, output, min_duration, direction, step_pattern, nsys_path, no_cache):
    """Store a trace's findings (per call site, kind, class; steps) for `gate --baseline`."""
    from .units import Options
    from .cachedir import atomic_write
    from .compare import baseline_from
    from .render import to_json

    rep = _analyze_one(report, Options(min_ns=min_duration, direction=direction, step_pattern=step_pattern),
                       nsys_path, no_cache)
    atomic_write(output, to_json(baseline_from(rep)))
    click.echo(f"wrote {output}: {rep['totals']['blocking_calls']} long-blocking copies at "
               f"{sum(1 for s in rep['by_site'] if s['blocking_calls'])} call site(s)")
    return 0


# ----------------------------------------------------------------------------------------- threshold
@main.command()
@click.argument("sweep", type=click.Path(dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
              help="Also draw host time vs payload per variant (.png or .svg; needs matplotlib).")
@click.option("--nsys", "nsys_path", help="nsys binary used to export a .nsys-rep input.")
def threshold(sweep, fmt, output, plot_path, nsys_path):
    """Payload threshold of blocking copies, from a workloads/h2d_sweep.py trace.

    For each source variant, GPU backlog depth and number of copies in flight: the smallest payload
    from which on the call waits for the queued GPU work (in most repeats), the largest payload
    below it that did not, the spread of that threshold over repeats, and blocked time / backlog.

    \b
      nsysh2d profile --no-variants --sample none --cudabacktrace none workloads/h2d_sweep.py
      nsysh2d threshold nsysh2d-out/h2d_sweep.sqlite --plot threshold.png
    """
    from .analysis import Analysis, format_bytes
    from .render import Column, Section, render_sections, to_json
    from .threshold import plot, sweep_rows, thresholds

    a = Analysis.open(sweep, nsys=nsys_path)
    try:
        result = thresholds(sweep_rows(a))
    finally:
        a.close()
    if plot_path:
        try:
            plot(result, plot_path, title=sweep)
        except ImportError:
            raise NsysH2DError("--plot needs matplotlib: pip install 'nsysh2d[plot]'", EXIT_BAD_INPUT) from None
    if fmt == "json":
        _emit(to_json({"nsysh2d": __version__, "path": sweep, "thresholds": result}), output)
        return 0
    rows = []
    for r in result:
        sp = r["spread_bytes"]
        never = "no backlog to wait for" if r["undetermined"] else "never waits"
        rows.append({**r, "threshold": format_bytes(r["threshold_bytes"]) if r["threshold_bytes"] else never,
                     "below": format_bytes(r["below_bytes"]) if r["below_bytes"] else "-",
                     "spread": f"{format_bytes(sp[0])} .. {format_bytes(sp[1])}" if sp else "-",
                     "ratio": f"{r['blocked_over_backlog']:.2f}" if r["blocked_over_backlog"] else "-",
                     "backlog": f"{r['backlog_us'] / 1000:g} ms"})
    sec = Section("payload threshold per series", [
        Column("variant", "variant"), Column("backlog", "backlog"), Column("inflight", "in flight", "int"),
        Column("below", "largest not waiting"), Column("threshold", "threshold (waits from)"),
        Column("spread", "spread over repeats"), Column("ratio", "host / backlog when waiting")], rows,
        note="waits: the call took at least half of the GPU backlog measured at the call; threshold: smallest "
             "payload from which on most repeats wait; repeats with no backlog left at the call cannot tell.")
    _emit(render_sections(fmt, [sec], sweep), output)
    return 0


# ----------------------------------------------------------------------------------------- cache
@main.command("cache-clear")
def cache_clear():
    """Delete nsysh2d's cache folder (analysis results, exports of .nsys-rep files)."""
    from .cache import clear
    from .cachedir import cache_root

    n = clear()
    click.echo(f"removed {n} cached file(s) from {cache_root()}")
    return 0


def _combined(reps):
    from .render import Column, Section

    rows = [{"path": r["path"], **{k: r["totals"][k] for k in ("calls", "long_calls", "blocking_calls", "long_ns")},
             "steps": r["steps"]["steps"]} for r in reps]
    total = {"path": "(all)", **{k: sum(r[k] for r in rows) for k in ("calls", "long_calls", "blocking_calls",
                                                                          "long_ns", "steps")}}
    return Section("combined", [Column("path", "report"), Column("calls", "calls", "int"),
                                Column("long_calls", "long", "int"), Column("blocking_calls", "blocking", "int"),
                                Column("long_ns", "long time", "ns"), Column("steps", "steps", "int")], rows + [total])


if __name__ == "__main__":
    main()
