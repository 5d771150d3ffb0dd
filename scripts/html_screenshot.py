#!/usr/bin/env python3
"""Open an nsysh2d HTML page in headless Chromium (Debian's `chromium`, driven by Playwright) with every
request that is not the file itself refused, and save a screenshot. Prints what the browser refused and
every console message (a self-contained page has neither).

usage: scripts/html_screenshot.py PAGE.html OUT.png [--full-page] [--width 1200] [--height 900]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def open_page(playwright, path: Path, width: int = 1200, height: int = 900):
    """(browser, page, console messages, refused requests) for a local HTML file, network off."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    context = browser.new_context(viewport={"width": width, "height": height}, offline=True)
    page = context.new_page()
    console, refused = [], []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    url = path.resolve().as_uri()

    def route(r):
        if r.request.url == url:
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.goto(url)
    page.wait_for_load_state("load")
    return browser, page, console, refused


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("page")
    ap.add_argument("out")
    ap.add_argument("--full-page", action="store_true")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--height", type=int, default=900)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page, console, refused = open_page(p, Path(args.page), args.width, args.height)
        page.screenshot(path=args.out, full_page=args.full_page)
        browser.close()
    for line in console + [f"refused: {u}" for u in refused]:
        print(line)
    print(f"wrote {args.out}")
    return 1 if console or refused else 0


if __name__ == "__main__":
    sys.exit(main())
