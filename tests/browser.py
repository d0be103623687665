"""A real headless browser for the trace-page tests: Debian's chromium, driven by Playwright.

``scripts/test.sh`` installs chromium (``apt-get install chromium``) where it is missing, as it installs
SLURM; Playwright's own browser download is not used (``executable_path`` points at the system browser).
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from .conftest import missing, require


def chromium_path() -> str:
    found = os.environ.get("THINKPROBE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        missing("chromium is not installed (scripts/test.sh installs it as root: apt-get install chromium)")
    return found


@contextmanager
def browser_page(width: int = 1280, height: int = 900):
    """A fresh page of a headless chromium; yields (page, console_errors) where console_errors collects
    every console error and uncaught page error."""
    sync_api = require("playwright.sync_api", "Playwright is not installed (pip install -e '.[dev]')")
    exe = chromium_path()
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            # no network at view time: any request that is not the page itself fails the test
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                       else (errors.append(f"network request: {route.request.url}"), route.abort()))
            yield page, errors
        finally:
            browser.close()


def open_page(page, path: Path) -> float:
    """Load a page file and wait until its script has drawn it; returns the milliseconds from navigation
    start to the end of the page's own rendering script (the browser's clock)."""
    page.goto(Path(path).resolve().as_uri())
    page.wait_for_selector("html[data-rendered='1']", timeout=10_000)
    return float(page.evaluate(
        "() => performance.getEntriesByType('navigation')[0].loadEventEnd || performance.now()"))


def screenshot_is_blank(png: bytes) -> bool:
    """Whether a screenshot is one flat colour (nothing drawn)."""
    import io

    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("L")
    lo, hi = img.getextrema()
    return hi - lo < 10 or sum(1 for c in img.histogram() if c) < 8
