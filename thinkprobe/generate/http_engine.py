"""The OpenAI-compatible HTTP backend (the paper's set-up: models served by vLLM's OpenAI server).

Standard library only (``urllib`` + a thread pool): nothing to install on the machine that drives an
endpoint. A text prompt is sent as the user message of a chat completion (the server applies the chat
template; ``chat = True`` tells the caller so); a token-id prompt goes to ``/completions`` verbatim.

Faults and how they end
    * the API key variable named by ``api_key_env`` is unset or empty: :class:`EngineError` at open, naming
      the variable (never a value; the key is sent in the ``Authorization`` header and written nowhere);
    * the endpoint does not answer ``GET /models`` at open (after the retries): :class:`EngineError`;
    * 429, 5xx, timeouts, dropped connections: retried up to ``max_retries`` times with exponential
      backoff (``backoff_s`` doubling, capped at 30 s; a ``Retry-After`` header wins); if the request still
      fails, that prompt's :class:`Generation` has ``error`` and ``info["transient"] = True``;
    * any other 4xx (a refused request, e.g. a prompt longer than the context): that prompt's
      ``error`` says so, with the server's message; not retried;
    * a reply that is not the expected shape (not JSON, not an object, ``choices`` not a list of objects,
      a non-string text): that prompt's ``error`` (transient: a fault of the endpoint), never an exception
      that costs the other prompts of the call.

Deadline: ``timeout_s`` bounds each attempt as a whole (connect, send, headers and body), not each socket
read: a watchdog shuts the socket down when the attempt's time is up, so a peer that dribbles bytes holds a
request for at most ``timeout_s`` (then it is retried like a timeout).

Redirects: followed (at most 5) only within the configured endpoint's origin (scheme, host and port), with
the key. A redirect to any other origin is refused (transient error naming the target, the key never sent):
point ``base_url`` at the final endpoint instead.

At most ``concurrency`` requests are in flight at once. Requests go through :mod:`http.client` directly
(no proxy from the environment), so that the deadline and the redirect rule hold for every byte.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping, Sequence

from .defaults import HTTP_DEFAULTS
from .engine import Completion, EngineError, Generation, SamplingSpec

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class _Transient(Exception):
    pass


class HttpEngine:
    """An OpenAI-compatible endpoint behind the :class:`~thinkprobe.generate.engine.Engine` interface."""

    backend = "openai"
    chat = True

    def __init__(self, model_cfg: Mapping[str, Any]):
        self.model = str(model_cfg.get("name") or model_cfg.get("served_model"))
        cfg = {**HTTP_DEFAULTS, **{k: v for k, v in model_cfg.items() if k in HTTP_DEFAULTS}}
        base = model_cfg.get("base_url")
        if not base:
            raise EngineError(f"model {self.model!r}: backend 'openai' needs a base_url (e.g. http://host:8000/v1)")
        self.base_url = str(base).rstrip("/")
        self.served_model = str(model_cfg.get("served_model") or self.model)
        self.concurrency = max(1, int(cfg["concurrency"]))
        self.timeout_s = float(cfg["timeout_s"])
        self.max_retries = max(0, int(cfg["max_retries"]))
        self.backoff_s = float(cfg["backoff_s"])
        self.return_token_ids = bool(cfg["return_token_ids"])
        self._tokenizer_path = model_cfg.get("tokenizer")
        self._tok = None
        key_env = model_cfg.get("api_key_env")
        self._headers = {"Content-Type": "application/json"}
        if key_env:
            key = os.environ.get(str(key_env), "")
            if not key:
                raise EngineError(f"model {self.model!r}: the API key variable {key_env} is not set "
                                  "(export it before running; the key is never written to any file)")
            self._headers["Authorization"] = f"Bearer {key}"
        info = self._open()
        self.version = f"openai-compatible {self.base_url} ({info.get('owned_by', 'unknown server')})"
        self.max_model_len = int(model_cfg.get("max_model_len") or info.get("max_model_len") or 0)

    def __repr__(self) -> str:  # never shows the headers (the API key)
        return f"HttpEngine({self.base_url!r}, model={self.served_model!r})"

    def _open(self) -> dict[str, Any]:
        try:
            listing = self._request("GET", "/models", None)
        except (_Transient, OSError) as exc:
            raise EngineError(f"model {self.model!r}: endpoint {self.base_url} is unreachable after "
                              f"{self.max_retries + 1} attempts: {exc}") from exc
        except _Refused as exc:
            raise EngineError(f"model {self.model!r}: endpoint {self.base_url} refused GET /models: {exc}") from exc
        models = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(models, list):
            raise EngineError(f"model {self.model!r}: endpoint {self.base_url} answered GET /models with a reply "
                              "that is not a model listing")
        models = [m for m in models if isinstance(m, dict)]
        for m in models:
            if m.get("id") == self.served_model:
                return m
        raise EngineError(f"model {self.model!r}: endpoint {self.base_url} does not serve {self.served_model!r} "
                          f"(it serves: {', '.join(str(m.get('id')) for m in models) or 'nothing'})")

    def tokenizer(self):
        if self._tok is None:
            if not self._tokenizer_path:
                raise EngineError(f"model {self.model!r}: no local tokenizer configured (key 'tokenizer': a model "
                                  "name or folder) for the HTTP backend")
            from transformers import AutoTokenizer

            from .models import local_model_folder

            self._tok = AutoTokenizer.from_pretrained(str(local_model_folder(str(self._tokenizer_path))))
        return self._tok

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        """One request with retries on transient failures; raises _Transient or _Refused at the end."""
        data = json.dumps(body).encode() if body is not None else None
        last = ""
        for attempt in range(self.max_retries + 1):
            wait = min(30.0, self.backoff_s * (2 ** attempt)) * (0.5 + random.random() / 2)
            try:
                status, headers, payload = self._attempt(method, self.base_url + path, data)
                if status < 300:
                    return json.loads(payload.decode("utf-8"))
                detail = _error_message(payload, headers.get("Reason", ""))
                if status not in RETRY_STATUS:
                    raise _Refused(f"HTTP {status}: {detail}")
                last = f"HTTP {status}: {detail}"
                retry_after = headers.get("Retry-After")
                if retry_after and retry_after.replace(".", "", 1).isdigit():
                    wait = min(60.0, float(retry_after))
            except _CrossOrigin as exc:
                raise _Transient(str(exc)) from None
            except (http.client.HTTPException, TimeoutError, ConnectionError, OSError, ValueError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            if attempt < self.max_retries:
                time.sleep(wait)
        raise _Transient(f"{method} {path} failed {self.max_retries + 1} times; last: {last}")

    def _attempt(self, method: str, url: str, data: bytes | None) -> tuple[int, dict[str, str], bytes]:
        """One attempt, redirects included, within ``timeout_s`` in total: (status, headers, body)."""
        deadline = time.monotonic() + self.timeout_s
        origin = _origin(self.base_url)
        for _ in range(6):
            status, headers, payload = _fetch(method, url, data, self._headers, deadline, self.timeout_s)
            if status not in (301, 302, 303, 307, 308) or "Location" not in headers:
                return status, headers, payload
            target = urllib.parse.urljoin(url, headers["Location"])
            if _origin(target) != origin:
                raise _CrossOrigin(f"the endpoint redirected {method} {urllib.parse.urlsplit(url).path} to another "
                                   f"host ({_origin(target)}); not followed, so the API key is not sent there: "
                                   "set base_url to the final endpoint")
            url = target
            if status == 303 or (status in (301, 302) and method == "POST"):
                raise _CrossOrigin(f"the endpoint redirected {method} to {target} as a GET (HTTP {status}); not "
                                   "followed: set base_url to the final endpoint")
        raise ConnectionError("more than 5 redirects")

    def _one(self, prompt: str | Sequence[int], spec: SamplingSpec) -> Generation:
        body: dict[str, Any] = {"model": self.served_model, "n": spec.n, "temperature": spec.temperature,
                                "top_p": spec.top_p, "max_tokens": spec.max_tokens}
        if spec.seed is not None:
            body["seed"] = spec.seed
        if spec.stop:
            body["stop"] = list(spec.stop)
        if self.return_token_ids:
            body["return_token_ids"] = True
        if isinstance(prompt, str):
            path = "/chat/completions"
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            path = "/completions"
            body["prompt"] = [int(t) for t in prompt]
        started = time.perf_counter()
        try:
            resp = self._request("POST", path, body)
        except _Transient as exc:
            return Generation([], 0, None, time.perf_counter() - started, error=str(exc), info={"transient": True})
        except _Refused as exc:
            return Generation([], 0, None, time.perf_counter() - started, error=f"request refused: {exc}")
        seconds = time.perf_counter() - started
        try:
            return _generation(resp, seconds)
        except _Malformed as exc:
            return Generation([], 0, None, seconds, error=f"malformed reply from the endpoint: {exc}",
                              info={"transient": True})

    def generate(self, prompts: Sequence[str | Sequence[int]], sampling: Sequence[SamplingSpec]) -> list[Generation]:
        if len(prompts) != len(sampling):
            raise ValueError(f"{len(prompts)} prompts but {len(sampling)} sampling specs")
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._safe_one, prompts, sampling))

    def _safe_one(self, prompt: str | Sequence[int], spec: SamplingSpec) -> Generation:
        """:meth:`_one`, with any unexpected exception turned into that prompt's (transient) error."""
        started = time.perf_counter()
        try:
            return self._one(prompt, spec)
        except Exception as exc:  # noqa: BLE001 - one prompt's failure must never cost the others
            return Generation([], 0, None, time.perf_counter() - started,
                              error=f"request failed: {type(exc).__name__}: {exc}", info={"transient": True})

    def close(self) -> None:
        self._headers = {}


class _Refused(Exception):
    pass


class _CrossOrigin(Exception):
    """A redirect the client does not follow (another origin, or POST turned into GET)."""


class _Malformed(ValueError):
    pass


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


def _fetch(method: str, url: str, data: bytes | None, headers: Mapping[str, str], deadline: float,
           timeout_s: float) -> tuple[int, dict[str, str], bytes]:
    """One HTTP exchange that ends by ``deadline`` (time.monotonic): a watchdog shuts the socket down then."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ConnectionError(f"unsupported URL scheme in {url!r}")
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError(f"the request's deadline of {timeout_s:g} s passed")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=remaining)
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    watchdog = threading.Timer(remaining, cut)
    watchdog.daemon = True
    watchdog.start()
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request(method, target, body=data, headers=dict(headers))
        resp = conn.getresponse()
        payload = resp.read()
        if expired.is_set():
            raise TimeoutError(f"the request's deadline of {timeout_s:g} s passed")
        out = {k.title(): v for k, v in resp.getheaders()}
        out.setdefault("Reason", resp.reason or "")
        return resp.status, out, payload
    except (OSError, http.client.HTTPException) as exc:
        if expired.is_set():
            raise TimeoutError(f"the request's deadline of {timeout_s:g} s passed") from None
        raise exc
    finally:
        watchdog.cancel()
        conn.close()


def _generation(resp: Any, seconds: float) -> Generation:
    """The :class:`Generation` of a reply, or :class:`_Malformed` naming what is not the expected shape."""
    if not isinstance(resp, dict):
        raise _Malformed(f"expected a JSON object, got {type(resp).__name__}")
    choices = resp.get("choices")
    if choices is None:
        choices = []
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise _Malformed("'choices' is not a list of objects")
    usage = {} if resp.get("usage") is None else resp["usage"]
    if not isinstance(usage, dict):
        raise _Malformed("'usage' is not an object")
    details = usage.get("prompt_tokens_details") or {}
    if not isinstance(details, dict):
        details = {}
    comps = []
    for ch in sorted(choices, key=lambda c: c["index"] if isinstance(c.get("index"), int) else 0):
        msg = ch.get("message") or {}
        if not isinstance(msg, dict):
            raise _Malformed("a choice's 'message' is not an object")
        text = msg.get("content") if msg else ch.get("text")
        reasoning = msg.get("reasoning_content") or msg.get("reasoning") if msg else None
        if not isinstance(text, (str, type(None))) or not isinstance(reasoning, (str, type(None))):
            raise _Malformed("a choice's text is not a string")
        ids = ch.get("token_ids") or []
        if not isinstance(ids, list) or not all(isinstance(t, int) for t in ids):
            raise _Malformed("a choice's 'token_ids' is not a list of integers")
        reason = ch.get("finish_reason")
        comps.append(Completion(text=text or "", token_ids=list(ids),
                                finish_reason=reason if reason in ("stop", "length") else "error",
                                reasoning=reasoning))
    prompt_tokens = usage.get("prompt_tokens") or 0
    cached = details.get("cached_tokens")
    if not isinstance(prompt_tokens, int) or not isinstance(cached, (int, type(None))):
        raise _Malformed("'usage' token counts are not integers")
    if not comps:
        return Generation([], prompt_tokens, None, seconds, error="the endpoint returned no choices",
                          info={"transient": True})
    pids = resp.get("prompt_token_ids")
    if pids is not None and (not isinstance(pids, list) or not all(isinstance(t, int) for t in pids)):
        raise _Malformed("'prompt_token_ids' is not a list of integers")
    info = {"prompt_token_ids": list(pids)} if pids else {}
    return Generation(comps, prompt_tokens, cached, seconds, info=info)


def _error_message(payload: bytes, reason: str) -> str:
    try:
        data = json.loads(payload.decode("utf-8", "replace"))
        err = data.get("error", data) if isinstance(data, dict) else data
        msg = err.get("message") if isinstance(err, dict) else str(err)
        return str(msg or payload.decode("utf-8", "replace"))[:300]
    except Exception:  # noqa: BLE001 - any unreadable body: the status says enough
        return (payload.decode("utf-8", "replace").strip() or reason)[:300]
