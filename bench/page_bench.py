"""Trace pages (`thinkprobe show`): page size and render time in a real headless chromium, per trace length;
and the report's own pages: a 5,000-row table page and a model summary.

    .venv/bin/python bench/page_bench.py            # needs ../shared/corpus and Debian's chromium

It times whichever thinkprobe is on PYTHONPATH (so one script measures the code before and after a change).

Traces of about 1k, 5k and 20k tokens are cut from real reasoning: the 6,656-token DeepSeek-R1 MMLU trace of
the thought-branches corpus, followed (for the 20k one) by the next-longest real traces of that corpus,
joined by blank lines; each is cut at the paragraph break nearest its target. Every trace is analysed (the
full pipeline) and written as a page; the page is opened three times in chromium and the median is kept of
(a) the browser's load time (navigation start to the end of the load event, which includes our script
laying out every arc) and (b) the wall time from `goto` until the page says it has been drawn. The page
build (the HTML from the analysed data, written to disk) is the median of 5 builds.

The report pages: the metrics table of 5,000 rows (the analysed traces' metrics repeated under distinct
ids, every trace id linked to a page, the id columns of the study's table) written by
`stages.tables.html_table` as the `report_tables` rule writes it, and one model's summary page
(`view.model_page.model_page`: the radar, 3 mechanisms, an exclusion table, 3 trace links); medians of 5.
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
TABLE_ROWS = 5_000


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
    from thinkprobe.view.trace_page import typed_arcs, write_page
    from thinkprobe.stages.page_sources import page_from_trace

    chromium = shutil.which("chromium")
    if not CORPUS.exists() or not chromium:
        sys.exit(f"needs {CORPUS} and chromium (apt-get install chromium)")
    text, encoder, rows, analysed = real_text(), load_encoder(), [], []
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
            builds = []
            for _ in range(5):
                t0 = time.perf_counter()
                size = write_page(data, str(out))
                builds.append(time.perf_counter() - t0)
            build = statistics.median(builds)
            if not analysed:  # the process's first page: the templates (if any) are compiled here
                rows.append(("first page build of the process (s; the 1k page)", f"{builds[0]:.3f}"))
            analysed.append(data)
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
                     (f"{label}: page build (s, median of 5)", f"{build:.3f}"),
                     (f"{label}: page size (KiB)", f"{size / 1024:,.0f}"),
                     (f"{label}: chromium load incl. arc layout (ms, median of 3)", f"{statistics.median(loads):,.0f}"),
                     (f"{label}: goto -> drawn, wall (ms, median of 3)", f"{1000 * statistics.median(walls):,.0f}")]
        rows += report_pages(analysed, Path(tmp))
        browser.close()
    print_table(rows)


def _median_time(fn, n: int = 5) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def report_pages(analysed, tmp: Path) -> list[tuple[str, str]]:
    """Build time and size of a 5,000-row report table page and of a model summary page."""
    import pandas as pd

    from thinkprobe.outputs import provenance, write_table
    from thinkprobe.stages.tables import ID_COLUMNS, html_table
    from thinkprobe.view.model_page import model_page
    from thinkprobe.vocabulary import DIMENSIONS, METRIC_NAMES

    records = []
    for i in range(TABLE_ROWS):
        data = analysed[i % len(analysed)]
        ids = {"trace_id": f"deepseek-r1/mmlu/q{i:05d}/1", "model": "deepseek-r1", "question_set": "mmlu",
               "question_id": f"q{i:05d}", "run": "1", "domain": "science", "record_id": f"real-{i}"}
        records.append({**ids, **{m: data.metrics.get(m) for m in METRIC_NAMES}})
    table = tmp / "metrics.parquet"
    write_table(str(table), pd.DataFrame(records, columns=ID_COLUMNS + list(METRIC_NAMES)),
                provenance(["outputs"], {}, []))
    links = {r["trace_id"]: f"../pages/{r['trace_id']}.html" for r in records}
    out = tmp / "metrics.html"
    table_s = _median_time(lambda: html_table(str(table), str(out), "Metrics per trace (19 metrics)", links=links))
    dims = {d: 0.1 * k for k, d in enumerate(DIMENSIONS)}
    profiles = pd.DataFrame([{"level": "model", "trace_id": "", "model": "deepseek-r1", "n_traces": 200, **dims}])
    exclusions = pd.DataFrame({"model": ["deepseek-r1"] * 4, "stage": ["import", "import", "metrics", "segment"],
                               "reason": ["missing: no record", "missing: no record", "too short: 3 words",
                                          "no reasoning: empty"]})
    traces = pd.DataFrame({"model": ["deepseek-r1"] * 3, "mechanism": ["early", "late", "switch"]})
    pages = {f"deepseek-r1/mmlu/q{i:05d}/1": f"../../pages/deepseek-r1/mmlu/q{i:05d}/1.html" for i in range(3)}
    html: list[str] = []
    summary_s = _median_time(lambda: html.append(model_page("deepseek-r1", profiles, exclusions, traces, pages)))
    return [(f"report table page, {TABLE_ROWS:,} rows x {len(records[0])} columns: build (s, median of 5)",
             f"{table_s:.3f}"),
            (f"report table page, {TABLE_ROWS:,} rows: size (KiB)", f"{out.stat().st_size / 1024:,.0f}"),
            ("model summary page: build (ms, median of 5)", f"{1000 * summary_s:.1f}"),
            ("model summary page: size (KiB)", f"{len(html[-1].encode()) / 1024:.1f}")]


if __name__ == "__main__":
    main()
