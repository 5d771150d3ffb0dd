"""The `nsysh2d` command: a thin click layer over the library.

Heavy modules (duckdb, polars, rich) are imported inside the commands that need them, so that
`nsysh2d profile` runs on a GPU box that has only torch and click.
"""
from __future__ import annotations

import os
from pathlib import Path

import click

from ..analyses.options import GROUPS, Options
from ..errors import BadInput
from .check import check   # commands of their own modules: commands.py stays small
from .config import gate_settings, scheduler_setting
from .kit import Group, emit, error_line, exit_code, note
from .lint import lint
from .options import (calls_option, config_option, csv_table_option, direction_option, duration, format_option,
                      jobs_option, min_duration_option, no_cache_option, nsys_option, output_option, profile_options,
                      quiet_option, report_options, scheduler_option, source_root_option, steady_after_option,
                      step_pattern_option)
from .summary import api_summary, threshold
from .tools import cache_clear, recipe_path, version_option


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@version_option
@quiet_option
def main():
    """Find, explain and gate long-blocking host-to-device copies in nsys and torch.profiler traces.

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
    profile failed, 5 import/export failed, 6 output not writable, 70 internal error. Shell
    completion: eval "$(_NSYSH2D_COMPLETE=bash_source nsysh2d)" (zsh_source, fish_source).
    """


for command in (check, lint, api_summary, threshold, cache_clear, recipe_path):
    main.add_command(command)


# ----------------------------------------------------------------------------------------- profile
@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@profile_options
@click.argument("target", nargs=-1, type=click.UNPROCESSED, required=True)
def profile(output_dir, name, variants, no_variants, nsys_path, trace, cudabacktrace, sample,
            python_backtrace, nsys_args, export_args, importer_lib, python_exe, dry_run, sites, kineto, target):
    """Run a workload (or any command) under `nsys profile` and export SQLite.

    \b
      nsysh2d profile workloads/qwen3vl.py                 # every variant (before, after, uva)
      nsysh2d profile workloads/qwen3vl.py -- --steps 20   # arguments for the workload
      nsysh2d profile --name train -- python train.py      # any command
      nsysh2d profile --kineto workloads/qwen3vl.py        # torch.profiler, no nsys

    For a workload with a --variant option, each variant is captured (NAME-VARIANT.sqlite).
    If nsys leaves a .qdstrm because it could not find its importer, a QdstrmImporter near the
    nsys binary finishes the job. Prints what it wrote and the command to run next.
    """
    from ..capture.nsys import CaptureOptions, ProfileRequest, profile_targets   # lazy: --help stays fast

    req = ProfileRequest(list(target), output_dir, name, variants, no_variants, nsys_path, importer_lib, python_exe,
                         dry_run, kineto, sites)
    opts = CaptureOptions(trace=trace, cudabacktrace=cudabacktrace, sample=sample, python_backtrace=python_backtrace,
                          extra=list(nsys_args), export_extra=list(export_args))
    return profile_targets(req, opts, echo=note)


@main.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=True))
@report_options
@click.option("--top", type=click.IntRange(0, 1_000_000),
              help="How many of the longest calls to list.  [default: 10; html: 500, the timeline's marks]")
@click.option("--by", type=click.Choice(GROUPS, case_sensitive=False), default="kind", show_default=True,
              help="Group by memory kind, call site, true source class, NVTX range or stream.")
@jobs_option
@no_cache_option
@csv_table_option
def analyze(reports, min_duration, direction, calls, fmt, output, step_pattern, nsys_path, scheduler, steady_after,
            top, by, jobs, no_cache, csv_table):
    """Report long-blocking async memcpy calls in nsys or torch.profiler traces.

    REPORT: an nsys SQLite export, a .nsys-rep (exported by the nsys CLI), a torch.profiler (Kineto) trace
    (.json, .json.gz), or a folder of them (one report each). Read-only: nothing is written beside them.

    \b
    A call is *long* when its host-side duration (what the CPU thread lost) is at least
    --min-duration, and *blocking* when it is long and waited for the GPU: it returned only after
    its own GPU copy had started, or it lasted at least half of the GPU work queued ahead of it.
    *GPU idle*: time during a long call when its device ran no kernel (what it cost the GPU; groups
    rank by it). Per-step figures count copies made during steps only (--step-pattern).
    \b
      nsysh2d analyze run.sqlite
      nsysh2d analyze run.sqlite --by site --min-duration 1ms
      nsysh2d analyze rank*.sqlite --format json -o report.json

    \b
    Environment: NSYSH2D_CACHE_DIR (cache folder; default $XDG_CACHE_HOME or ~/.cache, then
    /nsysh2d), NSYSH2D_THREADS (threads per report; default the CPUs this process may use,
    shared among the reports analyzed at once, at most 8), NSYSH2D_MEMORY_LIMIT (DuckDB's memory
    cap before it spills to the cache folder; default 160MB for up to 2 threads, 40MB more per
    thread beyond), NSYSH2D_TIMING=1 (threads, memory cap, and the wall time, CPU time and peak
    memory of each stage on stderr).
    """
    from .. import present   # lazy: --help stays fast
    from ..runner.run import analyze_many   # lazy: --help stays fast

    top = top if top is not None else 500 if fmt.lower() == "html" else 10
    opts = Options(min_ns=min_duration, direction=direction.lower(), top=top, step_pattern=step_pattern,
                   calls=calls.lower(), steady_after=steady_after).check()
    reps, errors = analyze_many(list(reports), opts, jobs=jobs, nsys=nsys_path, use_cache=not no_cache,
                                scheduler=scheduler_setting(scheduler))
    for _path, msg, _code_ in errors:
        click.echo(error_line(msg), err=True)
    if errors and not reps and fmt.lower() != "json":  # nothing to show: the error lines say it all (JSON
        return exit_code(errors)                          # still gets its document, with the errors)
    view = present.AnalyzeView(reps, errors, by, top, inputs=len(reps) + len(errors), csv_table=csv_table.lower())
    emit(present.output(fmt, view), output)
    return exit_code(errors)


# ----------------------------------------------------------------------------------------- compare
@main.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=True))
@report_options
@no_cache_option
def compare(traces, min_duration, direction, calls, fmt, output, step_pattern, nsys_path, scheduler, steady_after, no_cache):
    """Compare two traces (before/after a fix), or three or more variants (side by side, then the first against
    each other): per memory kind, source class, call site and NVTX
    range, with deltas, per-step figures when both carry step ranges, and what disappeared or appeared.
    Beside the copies, the wall time of every NVTX range (the steps as one row: median, p90 per
    occurrence) and the CUDA API calls that grew inside it: a fix can move the cost (e.g. `.pin_memory()`
    paying cudaHostAlloc), which the copies alone do not show.

    \b
      nsysh2d compare before.sqlite after.sqlite
      nsysh2d compare before.sqlite after.sqlite --format markdown >> $GITHUB_STEP_SUMMARY
      nsysh2d compare before.sqlite after.sqlite uva.sqlite     # variants: side by side, then first vs each
      nsysh2d compare before-ranks/ after-ranks/                 # rank sets: rank i against rank i
    """
    from .. import present   # lazy: --help stays fast
    from ..analyses.compare import compare as do_compare, compare_many, compare_rank_sets   # lazy: --help stays fast
    from ..runner.run import analyze_all, compare_sides   # lazy: --help stays fast

    paths, ranks = compare_sides(list(traces))
    if len(paths) > 2 and fmt.lower() == "html":
        raise BadInput("--format html compares two traces; for more, use table, markdown, json or csv")
    opts = Options(min_ns=min_duration, direction=direction.lower(), top=10, step_pattern=step_pattern,
                   calls=calls.lower(), steady_after=steady_after).check()
    reps = analyze_all(paths, opts, nsys_path, not no_cache, scheduler_setting(scheduler))
    times = analyze_all(paths, opts, nsys_path, not no_cache, scheduler_setting(scheduler), "range-times")
    if ranks > 1:
        emit(present.output(fmt, present.CompareRanksView(compare_rank_sets(reps, times), paths)), output)
    elif len(paths) == 2:
        emit(present.output(fmt, present.CompareView(do_compare(*reps, times), *paths)), output)
    else:
        emit(present.output(fmt, present.CompareManyView(compare_many(reps, times), paths)), output)
    return 0


# ----------------------------------------------------------------------------------------- gate
@main.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("--max-long-calls", type=click.IntRange(0), default=0, show_default=True,
              help="Fail when more long-blocking copies than this are found.")
@click.option("--count", type=click.Choice(["blocking", "long"], case_sensitive=False), default="blocking", show_default=True,
              help="What a rule counts: long-blocking calls (long and waited for the GPU) or every long call.")
@min_duration_option
@click.option("--max-blocked-per-step", callback=duration, default=None,
              help="Fail when host time in long-blocking copies per NVTX step exceeds this (e.g. 1ms).")
@click.option("--max-gpu-idle-per-step", callback=duration, default=None,
              help="Fail when the GPU idles longer than this per NVTX step during long copies (e.g. 2ms).")
@click.option("--kind", "kinds", multiple=True, help="Only copies from this source memory kind (file label, "
              "e.g. Pageable); repeatable.")
@direction_option
@calls_option
@click.option("--baseline", type=click.Path(dir_okay=False), help="Findings stored by `nsysh2d baseline`: fail on new "
              "long-blocking call sites or growth beyond --tolerance.")
@click.option("--tolerance", default="10%", show_default=True, help="Growth over the baseline allowed (10% or 0.1).")
@step_pattern_option
@click.option("--warmup-steps", type=click.IntRange(0), default=0, show_default=True,
              help="With step ranges, the rules judge copies made during steps (the steady state); the first N "
                   "steps are warm-up and not judged either. Without step ranges it cannot apply: the verdict says "
                   "so (use --steady-after).")
@steady_after_option
@click.option("--fail-on-cause", "fail_causes", multiple=True, help="Fail on any long call with this cause (backlog, "
              "launch_queue, own_transfer, host_allocation, new_host_allocation, unknown: see analyze); repeatable.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML (one test case per rule).")
@click.option("--summary", "summary_path", type=click.Path(dir_okay=False),
              help="Append a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY).")
@format_option(["table", "json", "markdown", "html"], help="html: the verdict as a page (with -o FILE.html).")
@output_option("Write the verdict here instead of stdout.")
@config_option("gate")
@nsys_option()
@scheduler_option
@source_root_option
@no_cache_option
@click.pass_context
def gate(ctx, reports, junit_path, summary_path, fmt, output, config_path, nsys_path, scheduler, no_cache, **given):
    """CI gate: exit 0 when the traces pass, 1 when a rule fails, 2 on bad input.

    \b
    Rules:
      max-long-calls        long-blocking copies found <= --max-long-calls (default 0)
      max-blocked-per-step  host time in long-blocking copies per NVTX step <= the limit
      max-gpu-idle-per-step GPU idle time during long copies per NVTX step <= the limit
      max-blocked-per-step-per-process (a trace of several processes) each one's own figure <= the limit
      no-new-sites          (with --baseline) no long-blocking call site the baseline lacks
      no-growth             (with --baseline) no site's long-copy time grew beyond --tolerance
      no-long-calls-of-cause (with --fail-on-cause) no long call with one of these causes

    Settings may also come from [tool.nsysh2d.gate] in pyproject.toml (the command line wins):
    max-long-calls, count, min-duration, max-blocked-per-step, max-gpu-idle-per-step, kinds, direction, calls, baseline,
    tolerance, step-pattern, warmup-steps, steady-after, fail-causes. When GITHUB_ACTIONS=true, failures are also printed as error annotations
    (at the offending Python lines where known; on stderr with --format json).

    \b
      nsysh2d baseline main.sqlite -o nsysh2d-baseline.json
      nsysh2d gate pr.sqlite --baseline nsysh2d-baseline.json --junit gate.xml
    """
    from .. import present   # lazy: --help stays fast
    from ..analyses.gate import GateSettings, judge   # lazy: --help stays fast
    from ..runner.run import analyze_many   # lazy: --help stays fast

    conf, conf_path = gate_settings(Path(config_path) if config_path else None)
    given.update(kinds=tuple(given["kinds"]), fail_causes=tuple(given["fail_causes"]),
                 direction=given["direction"].lower(), calls=given["calls"].lower())
    explicit = {k for k in given if ctx.get_parameter_source(k) is click.core.ParameterSource.COMMANDLINE}
    settings = GateSettings.resolve(given, explicit, conf, conf_path)
    result = judge(*analyze_many(list(reports), settings.options(), nsys=nsys_path, use_cache=not no_cache,
                                 scheduler=scheduler_setting(scheduler)), settings)
    for _path, msg, _c in result.errors:
        click.echo(error_line(msg), err=True)
    annotations = present.gate_files(result, junit_path, summary_path, os.environ.get("GITHUB_ACTIONS") == "true")
    # JSON on stdout stays parseable: the annotations then go to stderr (the runner reads both).
    if fmt == "json":
        click.echo(annotations, nl=False, err=True)
    else:
        emit(annotations, commands=True)
    emit(present.output(fmt, present.GateView(result)), output)
    return result.exit_code


# ----------------------------------------------------------------------------------------- baseline
@main.command()
@click.argument("report", type=click.Path(dir_okay=True))
@output_option("Baseline JSON to write.", required=True)
@min_duration_option
@direction_option
@calls_option
@step_pattern_option
@click.option("--accept", metavar="REASON", help="Why the findings stored are accepted (kept in the file and "
              "shown by the gate), e.g. 'model-init copies, tracked in #123'.")
@nsys_option()
@scheduler_option
@source_root_option
@no_cache_option
def baseline(report, output, min_duration, direction, calls, step_pattern, accept, nsys_path, scheduler, no_cache):
    """Store a trace's findings (per call site, NVTX range, kind, class; steps) for `gate --baseline`:
    the gate then fails only on findings that are new or grew beyond --tolerance.

    \b
      nsysh2d baseline main.sqlite -o nsysh2d-baseline.json --accept "model-init copies (#123)"
      nsysh2d gate pr.sqlite --baseline nsysh2d-baseline.json
    """
    from ..analyses.baseline import baseline_from, in_words   # lazy: --help stays fast
    from ..present import to_json   # lazy: --help stays fast
    from ..present.safe import terminal   # lazy: --help stays fast
    from ..runner.run import analyze_all   # lazy: --help stays fast

    opts = Options(min_ns=min_duration, direction=direction.lower(), step_pattern=step_pattern, calls=calls.lower())
    rep, = analyze_all([report], opts, nsys_path, not no_cache, scheduler_setting(scheduler))
    emit(to_json(baseline_from(rep, accept)), output)
    click.echo(f"wrote {terminal(output)}: {in_words(rep)}")
    return 0


