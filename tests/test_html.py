"""`--format html` (issue 16): one self-contained page per command, checked in a real headless Chromium
(Debian's `chromium`, driven by Playwright) with the network off: the plots' marks exist, the figures shown
are the JSON's, the browser logs nothing and fetches nothing, and a screenshot is written as a test artifact
(test-artifacts/, or $NSYSH2D_TEST_ARTIFACTS)."""
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from conftest import H200, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from html_screenshot import CHROMIUM, open_page  # noqa: E402

from nsysh2d.units import format_bytes, format_ns  # noqa: E402

QWEN = H200 / "qwen3vl-before.sqlite"
BEFORE, AFTER = H200 / "train-loop-before.sqlite", H200 / "train-loop-after.sqlite"
SWEEP = H200 / "h2d-sweep.sqlite"
ARTIFACTS = Path(os.environ.get("NSYSH2D_TEST_ARTIFACTS", ROOT / "test-artifacts"))


@pytest.fixture(scope="module")
def browser_page():
    assert Path(CHROMIUM).exists() or shutil.which("chromium"), (
        f"{CHROMIUM} missing: apt-get install chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        opened = []

        def load(path: Path, shot: str):
            browser, page, console, refused = open_page(p, path)
            opened.append(browser)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
            assert (ARTIFACTS / shot).stat().st_size > 10_000
            return page, console, refused

        yield load
        for b in opened:
            b.close()


def html_and_json(cli, tmp_path, *args, name="page.html"):
    out = tmp_path / name
    cache = () if args[0] == "threshold" else ("--no-cache",)
    r = cli(*args, "--format", "html", "-o", str(out), *cache)
    assert r.exit_code in (0, 1), r.output
    j = cli(*args, "--format", "json", *cache)
    return out, json.loads(j.stdout)


def self_contained(path: Path):
    text = path.read_text(encoding="utf-8")
    assert path.stat().st_size < 5 * 1024 * 1024
    assert "<script" not in text
    # No reference to anything outside the file: the only URLs are XML namespaces of the inline SVG.
    refs = re.findall(r'(?:src|href|url)\s*[=(]\s*["\']?([^"\')\s>]+)', text)
    assert all(r.startswith("#") for r in refs), [r for r in refs if not r.startswith("#")][:5]
    assert not re.search(r"@import|<link|<iframe|<img", text)


def floats(locator, attr):
    return [int(float(v)) for v in locator.evaluate_all(f"els => els.map(e => e.getAttribute('{attr}'))")]


def test_analyze_page(cli, tmp_path, browser_page):
    path, doc = html_and_json(cli, tmp_path, "analyze", QWEN, "--top", "500")
    rep = doc["reports"][0]
    self_contained(path)
    page, console, refused = browser_page(path, "analyze-qwen3vl.png")
    assert console == [] and refused == []
    for key, value in rep["totals"].items():
        cell = page.locator(f'[data-figure="{key}"]')
        if cell.count():
            assert cell.get_attribute("data-value") == str(value), key
    assert page.locator('[data-figure="blocking_ns"]').inner_text() == format_ns(rep["totals"]["blocking_ns"])
    marks = page.locator('#timeline-0 g.mark[data-series^="copies-"]')
    assert marks.count() == len(rep["top"]) == 7
    assert sorted(floats(marks, "data-host-ns")) == sorted(t["host_ns"] for t in rep["top"])
    titles = marks.locator("title").all_text_contents()
    for t in rep["top"]:
        want = f"{format_ns(t['host_ns'])} {t['source_class']} copy of {format_bytes(t['bytes'])} at {t['site_line']}"
        assert any(x.startswith(want) and t["nvtx_path"] in x for x in titles), want
    assert page.locator('#timeline-0 g.mark[data-series="backlog"]').count() == sum(1 for t in rep["top"] if t["backlog_ns"])
    bars = page.locator("#bars-site-0 g.mark.bar")
    sites = [r for r in rep["by_site"] if r["long_calls"]]
    assert bars.count() == 2 * len(sites)
    shown = dict(zip(bars.evaluate_all("els => els.map(e => e.dataset.series + '|' + e.dataset.group)"),
                     floats(bars, "data-value-ns")))
    for r in sites:
        assert shown[f"bars-site-0-0|{r['group']}"] == r["blocking_ns"]
        assert shown[f"bars-site-0-1|{r['group']}"] == r["gpu_idle_ns"]
    rows = page.locator("#top-0 tbody tr")
    assert rows.count() == len(rep["top"])
    # each fix once, under the table, referred to by number from the rows (issue 56: not repeated per row)
    ref = rows.nth(0).locator('[data-key="fix_ref"]').inner_text()
    notes = page.locator("p.note").all_inner_texts()
    assert f"{ref} {rep['top'][0]['source_class']}: {rep['top'][0]['fix']}" in notes
    assert len([n for n in notes if n.startswith("[")]) == len({(t["source_class"], t["fix"]) for t in rep["top"]})
    assert page.locator("svg").count() == 3


def test_compare_page(cli, tmp_path, browser_page):
    path, doc = html_and_json(cli, tmp_path, "compare", BEFORE, AFTER)
    doc = doc["compare"]
    self_contained(path)
    page, console, refused = browser_page(path, "compare-train-loop.png")
    assert console == [] and refused == []
    assert [len(doc["steps_series"][side]) for side in ("before", "after")] == [30, 30]
    marks = page.locator("#steps g.mark")
    assert marks.count() == 60
    assert sorted(floats(marks, "data-value-ns")) == sorted(
        s["blocking_ns"] for side in ("before", "after") for s in doc["steps_series"][side])
    bars = page.locator("#bars-class g.mark.bar")
    by_class = {r["key"]: r for r in doc["by_class"]}
    shown = dict(zip(bars.evaluate_all("els => els.map(e => e.dataset.series + '|' + e.dataset.group)"),
                     floats(bars, "data-value-ns")))
    assert shown["bars-class-0|pageable"] == round(by_class["pageable"]["blocking_ns_per_step_before"])
    assert shown["bars-class-1|pageable"] == by_class["pageable"]["blocking_ns_per_step_after"] == 0
    total = page.locator("#totals tbody tr", has_text="GPU idle per step (during long copies)")
    assert total.locator('[data-key="before_s"]').inner_text() == format_ns(doc["totals"]["gpu_idle_ns_per_step_before"])


def test_threshold_page(cli, tmp_path, browser_page):
    path, doc = html_and_json(cli, tmp_path, "threshold", SWEEP)
    self_contained(path)
    page, console, refused = browser_page(path, "threshold-sweep.png")
    assert console == [] and refused == []
    series = doc["thresholds"]
    marks = page.locator("#threshold g.mark")
    assert marks.count() == sum(len(s["sizes"]) for s in series)
    assert page.locator('#threshold [id^="threshold-"]').count() == sum(1 for s in series if s["threshold_bytes"])
    rows = page.locator("#thresholds tbody tr")
    assert rows.count() == len(series)
    first = series[0]
    want = format_bytes(first["threshold_bytes"]) if first["threshold_bytes"] else None
    if want:
        assert want in rows.nth(0).inner_text()


def test_gate_page(cli, tmp_path, browser_page):
    out = tmp_path / "gate.html"
    r = cli("gate", QWEN, AFTER, "--max-gpu-idle-per-step", "1ms", "--format", "html", "--no-cache")
    assert r.exit_code == 1
    out.write_text(r.stdout, encoding="utf-8")
    doc = json.loads(cli("gate", QWEN, AFTER, "--max-gpu-idle-per-step", "1ms", "--format", "json",
                         "--no-cache").stdout)
    self_contained(out)
    page, console, refused = browser_page(out, "gate.png")
    assert console == [] and refused == []
    assert page.locator("#verdict").inner_text() == "FAIL"
    rules = page.locator("tr[data-rule]")
    want = [(x["name"], str(x["passed"]).lower()) for v in doc["verdicts"] for x in v["rules"]]
    got = list(zip(rules.evaluate_all("els => els.map(e => e.dataset.rule)"),
                   rules.evaluate_all("els => els.map(e => e.dataset.passed)")))
    assert got == want


def test_html_needs_nothing_but_the_file(cli, tmp_path):
    """The page's bytes do not depend on where it was written, and nothing beside the input is written."""
    a, _ = html_and_json(cli, tmp_path, "analyze", QWEN, name="a.html")
    (tmp_path / "sub").mkdir()
    b, _ = html_and_json(cli, tmp_path / "sub", "analyze", QWEN, name="b.html")
    assert a.read_bytes() == b.read_bytes()
