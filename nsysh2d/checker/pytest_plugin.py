"""pytest fixtures of the runtime checker (nsysh2d.checker.runtime), registered as a pytest plugin on install.

    def test_step(no_blocking_h2d):      # fails if the test made a non_blocking H2D copy that blocks
        model_step(batch)

    def test_copies(h2d_check):          # the Checker itself: assert on h2d_check.copies / .flagged
        ...

ini option `h2d_devices` (default cuda): the device types whose incoming copies are watched.
"""
from __future__ import annotations

import pytest

from .runtime import Checker


def pytest_addoption(parser):
    parser.addini("h2d_devices", "device types whose non_blocking copies from the CPU nsysh2d watches "
                                 "(comma-separated)", default="cuda")


@pytest.fixture
def h2d_check(request):
    devices = tuple(d.strip() for d in request.config.getini("h2d_devices").split(",") if d.strip())
    with Checker(devices) as chk:
        yield chk


@pytest.fixture
def no_blocking_h2d(h2d_check):
    """The Checker; the test fails (in its call, not at teardown) when a copy it made blocks."""
    return h2d_check


_ACCEPTED: dict = {}   # site -> reason: copies accepted in source (nsysh2d/rules/allowlist.py), listed at the end


def pytest_terminal_summary(terminalreporter):
    if _ACCEPTED:
        terminalreporter.write_line(f"nsysh2d: {len(_ACCEPTED)} non_blocking copy site(s) accepted in source:")
        for site, reason in sorted(_ACCEPTED.items()):
            terminalreporter.write_line(f"  {site}: {reason}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    chk = getattr(item, "funcargs", {}).get("no_blocking_h2d") or getattr(item, "funcargs", {}).get("h2d_check")
    if chk is not None:
        from ..present.safe import terminal   # lazy: the plugin loads in every pytest run; present/ only after a check

        for c in [c for c in chk.copies if c.accepted] + chk.accepted_rewrites:
            _ACCEPTED[terminal(c.site_line or c.site)] = terminal(c.accepted)
    chk = getattr(item, "funcargs", {}).get("no_blocking_h2d")
    if chk is not None and (chk.flagged or chk.rewrites):
        lines = [f"{c.site_line or c.site}: {c.source_class} copy of {c.bytes} bytes: {c.fix}" for c in chk.flagged]
        lines += [f"{r.site_line or r.site}: {r.op} writes pinned memory that the copy at "
                  f"{r.copy_site_line or r.copy_site} may not have read yet: {r.fix}" for r in chk.rewrites]
        pytest.fail(f"{len(lines)} non_blocking host-to-device copies that wait for the GPU or race a write:\n"
                    + "\n".join(lines), pytrace=False)
    return result
