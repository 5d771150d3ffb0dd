"""The figures of the HTML report, drawn with matplotlib as inline SVG (docs/html-report.md says why).

Each mark that stands for a copy (or a group) gets a `<title>` (the browser's tooltip) and data-* attributes
with the raw figures, so the page can be read by a person and checked by a test against the JSON.
"""
from __future__ import annotations

import io
import re

from ..errors import BadInput
from ..units import format_bytes, format_ns
from . import safe

CLASS_COLORS = {"pageable": "#d62728", "pinned_strided": "#ff7f0e", "pinned": "#2ca02c", "managed": "#9467bd",
                "device": "#1f77b4", "unknown": "#7f7f7f"}


def _plt(what: str = "--format html", svg: bool = True):
    try:
        import matplotlib   # lazy: matplotlib (about 0.3 s) loads only when a plot is drawn
    except ImportError:
        raise BadInput(f"{what} needs matplotlib (a dependency of nsysh2d: reinstall it, or pip install matplotlib)") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt   # lazy: matplotlib (about 0.3 s) loads only when a plot is drawn

    if svg:
        plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "nsysh2d", "font.size": 8})
    return plt


def _render(fig) -> str:
    """The figure as an <svg> element, without the XML prolog; no date, so the same figure gives the same bytes."""
    plt = _plt()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _svg(fig, marks: dict[str, list[dict]]) -> str:
    """The figure as an <svg> element; the points of each collection whose gid is a key of `marks` become
    `<g class="mark">` with the dict's `title` as tooltip and its other keys as data-* attributes."""
    text = _render(fig)
    for gid, items in marks.items():
        m = re.search(rf'(\n *)<g id="{re.escape(gid)}">(.*?)\1</g>', text, re.S)  # up to its own closing tag
        if not m:
            continue
        uses = iter(items)

        def wrap(u, uses=uses):
            item = next(uses, None)
            if item is None:
                return u.group(0)
            attrs = " ".join(f'data-{k}="{safe.html(str(v))}"' for k, v in item.items() if k != "title")
            return f'<g class="mark" data-series="{gid}" {attrs}><title>{safe.html(item["title"])}</title>{u.group(0)}</g>'

        body = re.sub(r"<use [^>]*/>", wrap, m.group(2))
        text = text[:m.start(2)] + body + text[m.end(2):]
    return text


def copy_title(t: dict) -> str:
    return (f"{format_ns(t['host_ns'])} {t.get('source_class')} copy of {format_bytes(t.get('bytes'))}"
            f" at {t.get('site_line') or t.get('site') or '(no call site)'}; NVTX {t.get('nvtx_path') or '-'};"
            f" backlog {format_ns(t.get('backlog_ns'))}, GPU idle {format_ns(t.get('gpu_idle_ns'))}")


def timeline(top: list[dict]) -> str:
    """Host time of each listed copy at its start time, coloured by source class, and the GPU backlog the
    call met (grey crosses)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 3.2))
    t0 = min((t["api_start_ns"] for t in top), default=0)
    marks = {}
    for cls in sorted({t["source_class"] for t in top}):
        rows = sorted((t for t in top if t["source_class"] == cls), key=lambda t: t["api_start_ns"])
        gid = f"copies-{cls}"
        ax.scatter([(t["api_start_ns"] - t0) / 1e9 for t in rows], [t["host_ns"] / 1e6 for t in rows], s=18,
                   color=CLASS_COLORS.get(cls, "#333"), label=cls, gid=gid, zorder=3)
        marks[gid] = [{"title": copy_title(t), "host-ns": t["host_ns"], "class": cls, "bytes": t.get("bytes"),
                       "backlog-ns": t.get("backlog_ns"), "gpu-idle-ns": t.get("gpu_idle_ns")} for t in rows]
    with_backlog = sorted((t for t in top if t.get("backlog_ns")), key=lambda t: t["api_start_ns"])  # 0: none
    ax.scatter([(t["api_start_ns"] - t0) / 1e9 for t in with_backlog], [t["backlog_ns"] / 1e6 for t in with_backlog],
               marker="x", s=14, color="#888", label="GPU backlog at the call", gid="backlog", zorder=2)
    marks["backlog"] = [{"title": f"backlog {format_ns(t['backlog_ns'])} behind the {format_ns(t['host_ns'])} copy",
                         "backlog-ns": t["backlog_ns"]} for t in with_backlog]
    ax.set_xlabel("time since the first listed copy (s)")
    ax.set_ylabel("ms")
    ys = [t["host_ns"] for t in top] + [t["backlog_ns"] for t in with_backlog]
    if ys and max(ys) > 50 * min(ys):
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title("host time blocked per copy (dots) vs GPU backlog at the call (x)")
    fig.tight_layout()
    return _svg(fig, marks)


def bars(rows: list[dict], label: str, series: list[tuple[str, str]], title: str, gid: str, limit: int = 12) -> str:
    """Horizontal bars per group (rows in their report order), one bar per (key, legend) in `series` (ns)."""
    plt = _plt()
    rows = rows[:limit]
    fig, ax = plt.subplots(figsize=(9, max(1.8, 0.8 + 0.25 * len(rows) * len(series))))
    h = 0.8 / max(len(series), 1)
    marks = {}
    for i, (key, legend) in enumerate(series):
        name = f"{gid}-{i}"
        ys = [j + i * h for j in range(len(rows))]
        ax.barh(ys, [(r.get(key) or 0) / 1e6 for r in rows], height=h, label=legend, gid=name)
        marks[name] = [{"title": f"{r[label]}: {legend} {format_ns(r.get(key) or 0)}", "group": r[label],
                        "value-ns": r.get(key) or 0} for r in rows]
    ax.set_yticks([j + h * (len(series) - 1) / 2 for j in range(len(rows))])
    ax.set_yticklabels([_short(safe.plot_label(r[label])) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("ms")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(safe.plot_label(title))
    fig.tight_layout()
    return _bars_svg(fig, marks)


def _bars_svg(fig, marks) -> str:
    """Bars are patches: matplotlib writes each as its own `<g id="GID">`, in drawing order; each becomes a mark."""
    text = _render(fig)
    for gid, items in marks.items():
        for item in items:
            m = re.search(rf'<g id="{re.escape(gid)}">', text)
            if not m:
                break
            attrs = " ".join(f'data-{k}="{safe.html(str(v))}"' for k, v in item.items() if k != "title")
            text = (text[:m.start()] + f'<g class="mark bar" data-series="{gid}" {attrs}>'
                    f'<title>{safe.html(item["title"])}</title>' + text[m.end():])
    return text


def steps_plot(series: dict[str, list[dict]], title: str) -> str:
    """Host time blocked per step ordinal, one line per name in `series` ({step, blocking_ns})."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 2.8))
    marks = {}
    for name, rows in series.items():
        rows = sorted(rows, key=lambda r: r["step"])
        gid = safe.svg_id(f"steps-{name}")
        ax.plot([r["step"] for r in rows], [r["blocking_ns"] / 1e6 for r in rows], marker="o", ms=3,
                label=safe.plot_label(name), gid=gid)
        marks[gid] = [{"title": f"{name}: step {r['step']}: {format_ns(r['blocking_ns'])} blocked",
                       "step": r["step"], "value-ns": r["blocking_ns"]} for r in rows]
    ax.set_xlabel("step")
    ax.set_ylabel("ms blocked")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(safe.plot_label(title))
    fig.tight_layout()
    return _svg(fig, marks)


def threshold_figure(plt, series: list[dict], panel=(3.4, 3.2), marks: dict | None = None, title: str = ""):
    """Host time vs payload per variant, one panel per (backlog, in flight). With `marks` (the HTML page):
    the threshold dashed and each line's points recorded there for tagging."""
    panels = sorted({(r["backlog_us"], r["inflight"]) for r in series})
    n = max(len(panels), 1)
    fig, axes = plt.subplots(1, n, figsize=(panel[0] * n, panel[1]), sharey=True, squeeze=False)
    for ax, (backlog, inflight) in zip(axes[0], panels):
        for r in series:
            if (r["backlog_us"], r["inflight"]) != (backlog, inflight):
                continue
            gid = safe.svg_id(f"sizes-{r['variant']}-{backlog}-{inflight}")
            line, = ax.plot(r["sizes"], [h / 1e6 for h in r["median_host_ns"]], marker="o", ms=3,
                            label=safe.plot_label(r["variant"]), gid=gid)
            if marks is None:
                continue
            marks[gid] = [{"title": f"{r['variant']}: {format_bytes(b)}: {format_ns(h)} (median)", "bytes": b,
                           "host-ns": h} for b, h in zip(r["sizes"], r["median_host_ns"])]
            if r["threshold_bytes"]:
                ax.axvline(r["threshold_bytes"], color=line.get_color(), ls="--", lw=0.8,
                           gid=safe.svg_id(f"threshold-{r['variant']}-{backlog}-{inflight}"))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"backlog {backlog / 1000:g} ms, {inflight} in flight", fontsize=9)
        ax.set_xlabel("payload per copy (bytes)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("host time per call (ms, median)")
    axes[0][-1].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def threshold_plot(series: list[dict]) -> str:
    """The threshold figure of the HTML page, as tagged SVG."""
    marks: dict = {}
    return _svg(threshold_figure(_plt(), series, marks=marks), marks)


def save_threshold_plot(series: list[dict], path: str, title: str = "") -> None:
    """`threshold --plot FILE` (.png or .svg, by its suffix)."""
    plt = _plt("--plot", svg=False)
    fig = threshold_figure(plt, series, panel=(4.2, 3.8), title=title)
    fig.savefig(path)
    plt.close(fig)


def _short(s: str, n: int = 48) -> str:
    return s if len(s) <= n else "…" + s[-(n - 1):]
