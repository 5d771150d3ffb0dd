"""The house rules of issue 20, checked: layers as subpackages, small modules, a thin CLI, SQL by layer."""
import ast
import re
from pathlib import Path

import click

from nsysh2d.cli import main
from nsysh2d.model.pipeline import BACKLOG, PIPELINE
from nsysh2d.source import sql

PKG = Path(__file__).resolve().parent.parent / "nsysh2d"
QUERIES = PKG.parent / "queries"


def test_layers_are_subpackages():
    subs = {p.parent.name for p in PKG.glob("*/__init__.py")}
    assert {"source", "model", "analyses", "present", "cli", "runner", "capture", "checker", "static", "rules"} <= subs


def test_no_module_over_300_lines():
    sizes = {str(p.relative_to(PKG)): len(p.read_text().splitlines()) for p in PKG.rglob("*.py")}
    assert max(sizes.values()) <= 300, {k: v for k, v in sizes.items() if v > 300}


def test_cli_command_bodies_at_most_20_lines():
    commands = {c.callback.__name__ for c in main.commands.values() if isinstance(c, click.Command)}
    long = {}
    for node in (n for p in (PKG / "cli").glob("*.py") for n in ast.parse(p.read_text()).body):
        if isinstance(node, ast.FunctionDef) and node.name in commands:
            body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body  # the docstring is help text
            lines = {n.lineno for stmt in body for n in ast.walk(stmt) if hasattr(n, "lineno")}
            if len(lines) > 20:
                long[node.name] = len(lines)
    assert len(commands) >= 7 and not long, long


def test_every_step_has_its_sql_file_with_a_header():
    for step in PIPELINE + BACKLOG:
        text = sql.load(f"model/{step.name}")
        assert text.startswith(f"-- {step.name}:"), step.name
    for f in QUERIES.glob("*/*.sql"):
        assert f.read_text().startswith(f"-- {f.stem}:"), f
    assert not list(QUERIES.glob("*.sql")), "every query lives in its layer's folder"


def test_one_parameter_style():
    # Python formats no SQL: every value reaches a query as a $parameter.
    for f in QUERIES.glob("*/*.sql"):
        assert "{" not in f.read_text().replace("{}", ""), f


def test_rules_are_written_once():
    texts = {f.name: f.read_text() for f in QUERIES.glob("*/*.sql")}
    assert [n for n, t in texts.items() if "0.5 *" in t] == ["rules.sql"]
    assert [n for n, t in texts.items() if "16777216" in t] == ["global_tid.sql"]
    kind_joins = [n for n, t in texts.items() if "k.src_kind IS NOT DISTINCT FROM c.src_kind" in t]
    assert kind_joins == ["labels.sql"]


def test_typed_results_round_trip_through_json(cli):
    import json

    from conftest import AFTER, BEFORE, SWEEP
    from nsysh2d.analyses.compare import Comparison, compare
    from nsysh2d.analyses.gate import GateResult, GateSettings, judge
    from nsysh2d.analyses.h2d_blocking import Report
    from nsysh2d.analyses.options import Options
    from nsysh2d.analyses.threshold import ThresholdResult, threshold_report
    from nsysh2d.runner.run import analyze_many, analyze_one

    rb, ra = analyze_one(str(BEFORE), Options()), analyze_one(str(AFTER), Options())
    for obj, cls in [(rb, Report), (compare(rb, ra), Comparison), (threshold_report(str(SWEEP)), ThresholdResult),
                     (judge(*analyze_many([str(BEFORE), "nope.sqlite"], GateSettings().options()), GateSettings()), GateResult)]:
        doc = json.loads(json.dumps(obj.to_json(), default=str))
        assert cls.from_json(doc).to_json() == doc


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports, at the top or inside functions alike (a lazy import is an
    edge of the graph all the same)."""
    mods = {}
    for f in PKG.rglob("*.py"):
        if "recipe" in f.parts:   # run by nsys's recipe runner, not imported by the package
            continue
        name = ".".join(f.relative_to(PKG.parent).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = f
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        pkg = m if f.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[:len(pkg.split(".")) - (node.level - 1)] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                names = [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for t in names:
                while t and t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != m and not m.startswith(t + "."):   # a module's own packages come with it
                    graph[m].add(t)
    return graph


def test_no_import_cycles():
    """Issue 36: orchestration never sits below what it drives (run.py picks an executor; executors.py and
    cluster.py map jobs.py's run_job over Jobs; gate.py and baseline.py share analyses/rules.py), checked over every
    import."""
    graph = import_graph()
    assert graph["nsysh2d.runner.run"] >= {"nsysh2d.runner.executors"} and "nsysh2d.runner.cluster" not in graph["nsysh2d.runner.run"]
    assert graph["nsysh2d.runner.executors"] >= {"nsysh2d.runner.jobs", "nsysh2d.runner.cluster"} and graph["nsysh2d.runner.cluster"] >= {"nsysh2d.runner.jobs"}

    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for n in graph[todo.pop()] - seen:
                seen.add(n)
                todo.append(n)
        return seen

    cycles = sorted(m for m in graph if m in reach(m))
    assert not cycles, cycles


def test_the_cache_module_is_a_leaf():
    """cache.py imports nothing of the package but errors, so input adapters and outputs can use it."""
    assert import_graph()["nsysh2d.cache"] <= {"nsysh2d.errors"}


# Layers, lowest first: what a module may import is at its own layer or below (issue 36: no upward
# imports). Base modules import only each other; the orchestration and the CLI sit on top of everything.
LAYERS = [("nsysh2d.errors", "nsysh2d.units", "nsysh2d.cache", "nsysh2d.cpus"),   # the leaves
          ("nsysh2d.rules", "nsysh2d.capture"), ("nsysh2d.source",), ("nsysh2d.model",), ("nsysh2d.analyses",),
          ("nsysh2d.present", "nsysh2d.checker", "nsysh2d.static", "nsysh2d.analysis"), ("nsysh2d.runner",),
          ("nsysh2d.cli", "nsysh2d.recipe")]


def layer_of(module: str) -> int:
    for i, names in enumerate(LAYERS):
        if any(module == n or module.startswith(n + ".") for n in names):
            return i
    return len(LAYERS)   # the package's __init__ only: it may import the facade


def test_no_upward_imports():
    upward = [f"{m} -> {d}" for m, deps in import_graph().items() for d in deps if layer_of(d) > layer_of(m)]
    assert not upward, upward
    assert layer_of("nsysh2d.source.export") == 2 and layer_of("nsysh2d.cli.commands") == len(LAYERS) - 1
    unplaced = sorted(m for m in import_graph() if layer_of(m) == len(LAYERS) and m != "nsysh2d")
    assert not unplaced, f"every module belongs to a layer: {unplaced}"


def test_at_most_8_layers_deep():
    """Issue 55: the longest chain of imports between wings (a subpackage, or a top-level module) is at most 8
    wings long, counted over every import, lazy ones included (it was 14 floors of modules at 687e296)."""
    wing = lambda m: ".".join(m.split(".")[:2])  # noqa: E731
    wings: dict[str, set] = {}
    for m, deps in import_graph().items():
        wings.setdefault(wing(m), set()).update(wing(d) for d in deps if wing(d) != wing(m))

    def depth(w, seen=()):
        assert w not in seen, f"a cycle between wings: {seen + (w,)}"
        return 1 + max((depth(d, seen + (w,)) for d in wings.get(w, ())), default=0)
    deepest = max(wings, key=depth)
    assert depth(deepest) <= 8, (deepest, depth(deepest))
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= 6 and set(top) == {"__init__.py", "analysis.py", "errors.py", "units.py", "cache.py",
                                          "cpus.py"}, top


SQL_IN_PYTHON = re.compile(r"""(?:f?["'])(SELECT|INSERT|CREATE|ATTACH|LOAD|SET|PRAGMA|DROP|DELETE|UPDATE)\s""")


def test_python_builds_sql_only_where_the_file_says_why():
    """Issue 36: SQL lives in queries/; a Python module with SQL text in a string says why, in a comment that
    starts with 'SQL in Python:'. A new such module fails here until it does (and is then reviewed)."""
    with_sql = {str(f.relative_to(PKG.parent)) for f in PKG.rglob("*.py")
                if "recipe" not in f.parts and SQL_IN_PYTHON.search(f.read_text())}
    unexplained = [f for f in sorted(with_sql) if "# SQL in Python: " not in (PKG.parent / f).read_text()]
    assert not unexplained, unexplained
    # 10: source/stacks.py (stop 49) reads the stack tables inside SQLite (blobs DuckDB rejects; CUDA_CALLCHAINS
    # filtered by the calls' ids), out of trace.py, which still sets up its connection.
    assert len(with_sql) <= 10, sorted(with_sql)   # raise on purpose, with the reason written in the module


def test_executors_are_one_strategy(tmp_path):
    """Issue 36: serial and process-pool executors are the same `map` (the Dask one: tests/test_cluster.py), so
    every analysis gets them; their results equal, whatever order the jobs finish in."""
    from conftest import AFTER, BEFORE

    from nsysh2d.analyses.options import Options
    from nsysh2d.runner.cluster import Dask
    from nsysh2d.runner.executors import Processes, Serial, executor
    from nsysh2d.runner.jobs import Job

    assert isinstance(executor(None, 1), Serial) and isinstance(executor(None, 2), Processes)
    assert isinstance(executor("local", 2), Dask) and executor("local", 1).workers is None
    out = {}
    for ex in (Serial(), Processes(2)):
        got = {}
        ex.map([Job(str(p), "range-times", Options(), use_cache=False) for p in (BEFORE, AFTER)],
               lambda i, result: got.__setitem__(i, result().to_json()))
        out[type(ex).__name__] = got
    assert out["Serial"] == out["Processes"] and sorted(out["Serial"]) == [0, 1]
    assert out["Serial"][0]["path"] == str(BEFORE)


def test_one_format_ladder():
    """Issue 36: every command's output is present.output(fmt, view); outside present/ nothing builds a document,
    renders sections or picks a renderer by format, and each view gives output() what its formats need."""
    from nsysh2d import present
    from nsysh2d.present import views

    outside = [str(f.relative_to(PKG)) for f in PKG.rglob("*.py") if "present" not in f.parts
               and re.search(r"\b(document|render_sections|rows_csv|to_markdown)\(", f.read_text())]
    assert not outside, outside
    ladders = [str(f.relative_to(PKG)) for f in (PKG / "present").glob("*.py")
               if f.name != "__init__.py" and re.search(r'fmt == "(json|csv|html)"', f.read_text())]
    assert not ladders, ladders
    kinds = [v for v in vars(views).values() if isinstance(v, type) and issubclass(v, views.View) and v is not views.View]
    assert len(kinds) >= 7
    for kind in kinds:   # a view states its document and either its sections or a text of its own
        assert kind.document is not views.View.document, kind
        assert kind.sections is not views.View.sections or kind.text is not views.View.text, kind

    class Rows(views.View):
        heading = "h"

        def document(self):
            return {"rows": [{"a": 1}]}

        def csv_rows(self):
            return [{"a": 1}]

        def sections(self):
            return [present.Section("t", [present.Column("a", "a", "int")], [{"a": 1}])]

    assert '"rows"' in present.output("json", Rows()) and present.output("csv", Rows()) == "a\n1\n"
    assert present.output("markdown", Rows()).startswith("## h") and "| 1 |" in present.output("markdown", Rows())


def test_every_subpackage_is_in_the_wheel():
    """pyproject lists the packages by hand: a subpackage left out installs from a checkout (editable) but not from
    `pip install .` (nsysh2d.capture was missing from a plain install once)."""
    import tomllib

    listed = set(tomllib.loads((PKG.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert {"nsysh2d." + p.parent.name for p in PKG.glob("*/__init__.py")} <= listed


def option_declarations() -> dict[str, list[str]]:
    """Each flag of a click.option(...) call in cli/ -> where it is declared (a flag chosen by an expression, as
    -o's --output or --output-dir, counts with its one declaration)."""
    where: dict[str, list[str]] = {}
    for f in sorted((PKG / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "option":
                flags = {s for a in node.args for n in ast.walk(a) if isinstance(n, ast.Constant)
                         and isinstance(n.value, str) and n.value.startswith("-") for s in n.value.split("/")}
                for flag in flags:
                    where.setdefault(flag, []).append(f"{f.name}:{node.lineno}")
    return where


def test_every_cli_option_is_declared_once():
    """Issue 55: an option several commands take is one declaration in cli/options.py (or a factory there, where its
    wording names the command's use), so --nsys or --format cannot drift apart between commands."""
    where = option_declarations()
    assert {"--nsys", "--format", "-o", "--output", "--min-duration", "--no-cache", "-j", "--by"} <= set(where)
    twice = {flag: places for flag, places in where.items() if len(places) > 1}
    assert not twice, twice
    # and every flag a command really takes is one of those declarations (none made some other way)
    taken = {o for c in [main, *main.commands.values()] for p in c.params if isinstance(p, click.Option)
             for o in p.opts + p.secondary_opts}
    assert taken - {"-h", "--help"} <= set(where), taken - set(where)
    shared = {flag for flag in where if sum(flag in p.opts for c in main.commands.values() for p in c.params
                                            if isinstance(p, click.Option)) > 1}
    assert all(where[flag][0].startswith("options.py:") for flag in shared), {f: where[f] for f in shared}


def lazy_imports_without_reason() -> list[str]:
    """Every import inside a function body whose line (or the opening line of its `from ... import (`) does not
    say `# lazy: <why>`."""
    bad = []
    for f in sorted(PKG.rglob("*.py")):
        rel = str(f.relative_to(PKG.parent))
        lines = f.read_text().splitlines()
        for fn in ast.walk(ast.parse(f.read_text())):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and "# lazy: " not in lines[node.lineno - 1]:
                        bad.append(f"{rel}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return sorted(set(bad))


def test_imports_at_the_top_unless_lazy_says_why():
    """Issue 55: a module's imports are at its top, where a reader looks; an import inside a function stays only
    where start-up needs it (profiling on a bare GPU box without DuckDB or polars, `--help`, a cache hit, torch
    only when a script runs) and its line says why: `# lazy: <why>`."""
    bad = lazy_imports_without_reason()
    assert not bad, f"{len(bad)} lazy imports without a reason:\n" + "\n".join(bad)


# Issue 55 part 2: which format a trace came in is decided in one module, source/inputs.py (its adapters). What counts
# as deciding it, anywhere else in the package (checked on the syntax tree, so comments and docstrings do not count):
# - a string constant that is exactly a trace's suffix (".sqlite", ".nsys-rep", ".qdrep", ".qdstrm", ".json",
#   ".json.gz"): there is no other use for one than testing or making a trace's name; a constant inside an f-string
#   names a file being written (the cache's exports), and help texts are sentences, not such constants;
# - a call of the content sniffers (file_checks.is_sqlite, kineto_json.sniff, kineto_json.names_trace_events);
# - a comparison (==, !=, in, not in) with a format's name ("kineto", "nsys-sqlite"): model/, analyses/ and
#   present/ ask the adapter (trace.input) or, for a stored report, the class its "format" names (inputs.named).
# capture/ is exempt: it writes files of those names.
FORMAT_DECIDER = "source/inputs.py"
FORMAT_EXEMPT = ("capture/",)
TRACE_SUFFIXES = {".sqlite", ".nsys-rep", ".qdrep", ".qdstrm", ".json", ".json.gz"}
SNIFFERS = {"is_sqlite", "sniff", "names_trace_events"}
FORMAT_NAMES = {"kineto", "nsys-sqlite"}


def format_tests(code: str) -> list[str]:
    """Where `code` decides a trace's format (the three kinds above), as 'line: what'."""
    tree = ast.parse(code)
    in_fstring = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and n.value in TRACE_SUFFIXES and id(n) not in in_fstring:
            found.append(f"{n.lineno}: suffix {n.value!r}")
        elif isinstance(n, ast.Call):
            name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)
            if name in SNIFFERS:
                found.append(f"{n.lineno}: calls {name}")
        elif isinstance(n, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in n.ops):
            names = [c.value for c in (n.left, *n.comparators) if isinstance(c, ast.Constant) and c.value in FORMAT_NAMES]
            found += [f"{n.lineno}: compares with the format name {v!r}" for v in names]
    return sorted(found, key=lambda hit: (int(hit.split(":")[0]), hit))


def test_the_input_format_is_decided_in_one_module():
    # the checker finds each kind (so an empty answer below means something)
    planted = ('p.endswith((".nsys-rep", ".qdrep"))\nis_sqlite(p)\nkineto_json.sniff(p)\n'
               'rep.get("format") == "kineto"\nf"{key}.sqlite"\nhelp="nsys SQLite exports or .nsys-rep files"\n')
    assert format_tests(planted) == ["1: suffix '.nsys-rep'", "1: suffix '.qdrep'", "2: calls is_sqlite",
                                     "3: calls sniff", "4: compares with the format name 'kineto'"]
    found = {}
    for f in sorted(PKG.rglob("*.py")):
        rel = str(f.relative_to(PKG))
        if rel == FORMAT_DECIDER or rel.startswith(FORMAT_EXEMPT):
            continue
        if hits := format_tests(f.read_text()):
            found[rel] = hits
    assert not found, found
    # the decider does decide: every format's class is there, and the package's openers go through it
    from nsysh2d.source import inputs
    assert {"NsysSqlite", "NsysRep", "KinetoJson", "KinetoLegacy"} <= set(vars(inputs))
    assert "input_for(" in (PKG / "source" / "trace.py").read_text()
