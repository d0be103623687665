"""A Hugging Face hub endpoint on loopback for the hub-model and hub-dataset tests (no hub is reachable from the
test machines).

It speaks the part of the hub's protocol that decides what huggingface_hub raises: ``X-Error-Code:
RepoNotFound`` (404) for a repository whose name contains ``nosuch``, ``RevisionNotFound`` for the revision
``badrev``, and 503 (the hub is down) for everything else, so that ``snapshot_download`` falls back to the
cache as it does on a cluster whose hub is unreachable. Models and datasets alike (``/api/models/...``,
``/api/datasets/...``). Every request is recorded (method, path, whether an ``Authorization`` header came
with it), so a test can tell which jobs touched the network.
"""

from __future__ import annotations

import http.server
import threading


class FakeHub:
    def __init__(self):
        self.requests: list[tuple[str, str, str | None]] = []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                hub.requests.append((self.command, self.path, self.headers.get("Authorization")))
                if "nosuch" in self.path:
                    return self._error(404, "RepoNotFound", "Repository not found")
                if "/revision/badrev" in self.path:
                    return self._error(404, "RevisionNotFound", "Invalid rev id: badrev")
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _error(self, status, code, message):
                body = ('{"error": "%s"}' % message).encode()
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                self.send_header("X-Error-Message", message)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_HEAD = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)  # shutdown() waits one poll

    def model_requests(self) -> list[tuple[str, str, str | None]]:
        """Requests about models (huggingface_hub also asks unrelated endpoints at import)."""
        return [r for r in self.requests if r[1].startswith("/api/models/")
                or ("/resolve/" in r[1] and not r[1].startswith("/datasets/"))]

    def dataset_requests(self) -> list[tuple[str, str, str | None]]:
        """Requests about datasets (repository info, file listings, downloads)."""
        return [r for r in self.requests if r[1].startswith(("/api/datasets/", "/datasets/"))]

    def __enter__(self) -> "FakeHub":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
