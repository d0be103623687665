"""The README's picture: a trace page of the embedded default, rendered by headless Chromium.

    python scripts/docs_screenshot.py        # writes docs/img/trace-page.png

The page is `thinkprobe show examples/traces/demo.jsonl --trace-id model_a-q01-r1` (the first trace of the
embedded default's inputs, analysed as the workflow analyses it); Playwright drives the system's chromium
(``THINKPROBE_CHROMIUM``, else ``chromium`` on the PATH), as the browser tests do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "img" / "trace-page.png"
TRACE = ("examples/traces/demo.jsonl", "model_a-q01-r1")


def main() -> None:
    from playwright.sync_api import sync_playwright

    exe = os.environ.get("THINKPROBE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        sys.exit("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "page.html"
        subprocess.run([sys.executable, "-m", "thinkprobe.cli", "show", TRACE[0], "--trace-id", TRACE[1],
                        "--out", str(page_file)], cwd=REPO, check=True)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 860}, device_scale_factor=1)
            page.goto(page_file.resolve().as_uri())
            page.wait_for_selector("html[data-rendered='1']", timeout=20_000)
            OUT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(OUT))
            browser.close()
    print(f"wrote {OUT.relative_to(REPO)} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
