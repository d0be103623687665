"""The HTTP backend's reply limits: what a hostile or broken endpoint costs the client (issue 28, item 4).

A loopback OpenAI-compatible server in this process answers one prompt with a 400 MB reply (streamed in 1 MB
pieces, chunked or with its length declared), a deeply nested reply, or a legitimate one (16 continuations of
40,000 tokens each with their token ids, about 6.6 MB); the client (the real HttpEngine, default limits) runs
in a child process, which reports its peak resident memory (/proc VmHWM) and the call's wall time. Prints
one table. ``--package DIR`` measures another checkout's thinkprobe (DIR holds its ``thinkprobe/``), e.g. the
release before the limits: ``git worktree add /tmp/before <commit>``.

    .venv/bin/python bench/http_limits_bench.py [--package DIR]

``--checks`` (issue 37, item 1) times the reply checks themselves against the reply's size instead: the
shape check on the bytes (``json_shape``) and, for bodies within the limits, the parse, for 1 KB to 64 MB
of each shape (a legitimate completion, an unterminated string of escaped quotes: the case that was
quadratic, empty strings back to back, brackets nested to the depth limit, small objects) in one process;
the per-MB column shows the growth is linear. ``--max-mb N`` stops at N MB.

    .venv/bin/python bench/http_limits_bench.py --checks [--max-mb 64]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HUGE = 400 * 2**20

CLIENT = r"""
import json, re, sys, time
from thinkprobe.generate.engine import SamplingSpec, open_engine
engine = open_engine({"name": "m", "backend": "openai", "base_url": sys.argv[1], "served_model": "m",
                      "timeout_s": 120.0, "max_retries": 0})
t0 = time.perf_counter()
g = engine.generate([[int(sys.argv[2])]], [SamplingSpec(max_tokens=4)])[0]
print(json.dumps({"seconds": time.perf_counter() - t0, "error": g.error,
                  "peak_rss_mb": int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read())[1]) / 1024}))
"""


def legit() -> bytes:
    text = "Let me think. The answer is 42, so 6*7=42.\n" * 3000
    return json.dumps({"choices": [{"index": i, "text": text, "token_ids": list(range(20000, 60000)),
                                    "finish_reason": "length", "stop_reason": None} for i in range(16)],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 640000}}).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, data: bytes, length: bool = True, chunked: bool = False):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length" if length else "Transfer-Encoding", str(len(data)) if length else "chunked")
        self.end_headers()
        if chunked:
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
        else:
            self.wfile.write(data)

    def do_GET(self):
        self._send(json.dumps({"data": [{"id": "m", "max_model_len": 4096}]}).encode())

    def do_POST(self):
        case = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["prompt"][0]
        if case == 3:
            return self._send(b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        if case == 4:
            return self._send(legit())
        piece = b"The answer is 7. " * (2**20 // 17)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length" if case == 2 else "Transfer-Encoding", str(HUGE) if case == 2 else "chunked")
        self.end_headers()
        try:
            for data in [b'{"choices": [{"text": "'] + [piece] * (HUGE // len(piece)):
                self.wfile.write(data if case == 2 else b"%x\r\n%s\r\n" % (len(data), data))
        except OSError:
            pass


def main() -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    package = sys.argv[sys.argv.index("--package") + 1] if "--package" in sys.argv else str(REPO)
    env = {**os.environ, "PYTHONPATH": package}
    rows = []
    for case, name in ((1, "400 MB, chunked (no length)"), (2, "400 MB, Content-Length declared"),
                       (3, "nested 100,000 deep"), (4, "legitimate: n=16 x 40k tokens with ids (6.6 MB)")):
        out = subprocess.run([sys.executable, "-c", CLIENT, url, str(case)], capture_output=True, text=True,
                             env=env, cwd=package, timeout=600)
        if out.returncode:
            rows.append((name, "-", "-", "client crashed: " + out.stderr.strip().splitlines()[-1][:70]))
            continue
        res = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append((name, f"{res['peak_rss_mb']:.0f}", f"{res['seconds']:.2f}", (res["error"] or "ok")[:90]))
    httpd.shutdown()
    print(f"thinkprobe from {package}; load {os.getloadavg()[0]:.2f} (1 min); default limits "
          "(thinkprobe.generate.defaults.HTTP_DEFAULTS)")
    print("| reply | client peak RSS (MB) | call (s) | result |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


SHAPES = {
    "legitimate completion": lambda n: (b'{"choices": [{"index": 0, "finish_reason": "stop", "text": "'
                                        + b"The answer is 7. " * (n // 17) + b'"}]}'),
    "unterminated \\\" string": lambda n: b'{"choices": [{"text": "' + b'\\"' * (n // 2),
    "empty strings": lambda n: b"[" + b'"",' * (n // 3) + b'""]',
    "nested 65 deep, repeated": lambda n: b"[" + b",".join([b"[" * 64 + b"]" * 64] * max(1, n // 130)) + b"]",
    "small objects": lambda n: b"[" + b"{}," * (n // 3) + b"{}]",
}


def checks(max_mb: int) -> None:
    """The reply checks' time against size (in this process: no server)."""
    import time

    from thinkprobe.generate.http_engine import HttpEngine, _OverLimit, json_shape

    limits = HttpEngine.__new__(HttpEngine)  # the checks alone: no endpoint to open
    limits.max_json_depth, limits.max_json_containers = 64, 100_000
    sizes = [2**10 * 4**k for k in range(9) if 2**10 * 4**k <= max_mb * 2**20]  # 1 KB, 4 KB, ... 64 MB
    print(f"load {os.getloadavg()[0]:.2f} (1 min); json_shape and, within the limits, json.loads "
          "(HttpEngine._parse); default depth and container limits")
    print("| shape | size | check (s) | s per MB | result |")
    print("|---|---|---|---|---|")
    for name, make in SHAPES.items():
        for size in sizes:
            body = make(size)
            t0 = time.perf_counter()
            try:
                json_shape(body, 64)
                limits._parse(body)
                result = "parsed"
            except _OverLimit as exc:
                result = "over a limit: " + str(exc)[:40]
            except ValueError as exc:
                result = "refused: " + str(exc)[:40]
            secs = time.perf_counter() - t0
            label = f"{len(body) / 2**20:.0f} MB" if len(body) >= 2**20 else f"{len(body) / 2**10:.0f} KB"
            print(f"| {name} | {label} | {secs:.4f} | {secs / (len(body) / 2**20):.3f} | {result} |", flush=True)


if __name__ == "__main__":
    if "--checks" in sys.argv:
        checks(int(sys.argv[sys.argv.index("--max-mb") + 1]) if "--max-mb" in sys.argv else 64)
    else:
        main()
