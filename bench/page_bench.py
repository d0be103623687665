"""Trace pages (`thinkprobe show`): page size and render time in a real headless chromium, per trace length.

    .venv/bin/python bench/page_bench.py            # needs ../shared/corpus and Debian's chromium

Traces of about 1k, 5k and 20k tokens are cut from real reasoning: the 6,656-token DeepSeek-R1 MMLU trace of
the thought-branches corpus, followed (for the 20k one) by the next-longest real traces of that corpus,
joined by blank lines; each is cut at the paragraph break nearest its target. Every trace is analysed (the
full pipeline) and written as a page; the page is opened three times in chromium and the median is kept of
(a) the browser's load time (navigation start to the end of the load event, which includes our script
laying out every arc) and (b) the wall time from `goto` until the page says it has been drawn.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
CORPUS = ROOT.parent / "shared" / "corpus" / "thought-branches" / "faithfulness" / "good_problems"
TARGETS = (1_000, 5_000, 20_000)


def real_text() -> str:
    """The longest distinct real reasoning texts of the corpus, longest first, joined by blank lines."""
    seen, texts = set(), []
    for path in sorted(CORPUS.glob("*.json")):
        for rec in json.loads(path.read_text()):
            t = rec.get("reasoning_text") if isinstance(rec, dict) else None
            if t and t not in seen:
                seen.add(t)
                texts.append(t)
    return "\n\n".join(sorted(texts, key=len, reverse=True))


def cut(text: str, tokens: int) -> str:
    """``text`` up to the paragraph break nearest ``tokens`` tokens (thinkprobe's token count)."""
    from thinkprobe.text import TOKEN_RE

    end = next((m.end() for i, m in enumerate(TOKEN_RE.finditer(text)) if i + 1 == tokens), len(text))
    left, right = text.rfind("\n\n", 0, end), text.find("\n\n", end)
    best = min((p for p in (left, right) if p > 0), key=lambda p: abs(p - end), default=end)
    return text[:best]


def main() -> None:
    from playwright.sync_api import sync_playwright

    from table import print_table
    from thinkprobe.encoder import load_encoder
    from thinkprobe.params import Params
    from thinkprobe.text import count_tokens
    from thinkprobe.view.page import typed_arcs, write_page
    from thinkprobe.view.sources import page_from_trace

    chromium = shutil.which("chromium")
    if not CORPUS.exists() or not chromium:
        sys.exit(f"needs {CORPUS} and chromium (apt-get install chromium)")
    text, encoder, rows = real_text(), load_encoder(), []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        for target in TARGETS:
            trace = Path(tmp) / f"trace{target}.json"
            body = cut(text, target)
            trace.write_text(json.dumps({"id": f"real-{target}", "model": "deepseek-r1", "reasoning": body}))
            t0 = time.perf_counter()
            data = page_from_trace(trace, params=Params(), encoder=encoder)
            analysis = time.perf_counter() - t0
            out = Path(tmp) / f"page{target}.html"
            t0 = time.perf_counter()
            size = write_page(data, str(out))
            build = time.perf_counter() - t0
            loads, walls = [], []
            for _ in range(3):
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                t0 = time.perf_counter()
                page.goto(out.as_uri())
                page.wait_for_selector("html[data-rendered='1']")
                walls.append(time.perf_counter() - t0)
                loads.append(page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd"))
                page.close()
            label = f"{target // 1000}k"
            rows += [(f"{label}: tokens / thought units / typed arcs",
                      f"{count_tokens(body):,} / {len(data.graph['nodes'])} / {len(typed_arcs(data.graph))}"),
                     (f"{label}: analysis (s, not part of the page)", f"{analysis:.2f}"),
                     (f"{label}: page build (s)", f"{build:.3f}"),
                     (f"{label}: page size (KiB)", f"{size / 1024:,.0f}"),
                     (f"{label}: chromium load incl. arc layout (ms, median of 3)", f"{statistics.median(loads):,.0f}"),
                     (f"{label}: goto -> drawn, wall (ms, median of 3)", f"{1000 * statistics.median(walls):,.0f}")]
        browser.close()
    print_table(rows)


if __name__ == "__main__":
    main()
