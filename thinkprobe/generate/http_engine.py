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
      that costs the other prompts of the call;
    * a reply whose text cannot be stored (a lone surrogate such as ``\\ud800``, which JSON escapes allow
      but UTF-8 cannot write): that prompt's ``error`` naming the character, not transient (a seeded request
      brings the same text again), so the unit is excluded with that reason and the rest of the job goes on;
    * a reply larger than ``max_reply_bytes``, nested deeper than ``max_json_depth`` or holding more than
      ``max_json_containers`` objects and arrays: that prompt's ``error`` (transient, not retried within the
      call), naming the limit. The body is read in pieces and reading stops at the limit (a declared
      ``Content-Length`` over it is refused before reading), and depth and size are checked on the bytes
      before anything is parsed: a hostile or broken endpoint holds at most ``max_reply_bytes`` per request
      in flight, never a reply's worth of Python objects. The check is one linear pass (an unterminated
      string costs what a terminated one does), and an error reply (4xx/5xx) is read under the same limits
      before its message is parsed. At open, ``GET /models`` over a limit is an
      :class:`EngineError` naming it (never a bare ``RecursionError``).

Token ids, stop reasons and counts
    ``return_token_ids`` (``auto`` by default) asks the server for the completion's token ids: ``auto`` asks
    a vLLM server (its ``/models`` listing says ``owned_by: vllm``) and no other, ``true`` always asks,
    ``false`` never does. A vLLM server is also told ``skip_special_tokens: false`` when the caller keeps
    special tokens (continuation sampling does), so its text holds what the offline engine's would. A choice that came back with ids has them in
    ``Completion.token_ids``; one without has ``has_token_ids = False`` and the server's token count for a
    single completion (``usage.completion_tokens``), else none, never a false 0. vLLM's ``stop_reason``
    (the stop string, or the stop token id, that ended a completion) is passed on, so a stop string is told
    from the end of sequence; a server that does not report it leaves it ``None`` (read as the end of
    sequence).

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

from ..boundedjson import json_shape
from .interface import Completion, EngineError, Generation, SamplingSpec

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
_READ_PIECE = 1 << 20  # a reply's body is read in pieces of this size, up to max_reply_bytes


class _Transient(Exception):
    pass


class HttpEngine:
    """An OpenAI-compatible endpoint behind the :class:`~thinkprobe.generate.engine.Engine` interface."""

    backend = "openai"
    chat = True

    def __init__(self, spec: Any):
        """``spec``: the model's :class:`~thinkprobe.generate.modelspec.ModelSpec` (not imported here: the spec
        imports the backend registry, and this module is sampling code, hashed with what it imports); its
        ``settings`` are the entry's keys over :data:`~thinkprobe.generate.defaults.HTTP_DEFAULTS`, merged by the
        spec."""
        self.model = spec.name
        cfg = spec.settings
        base = spec.base_url
        if not base:
            raise EngineError(f"model {self.model!r}: backend 'openai' needs a base_url (e.g. http://host:8000/v1)")
        self.base_url = str(base).rstrip("/")
        self.served_model = str(spec.served_model or self.model)
        self.concurrency = max(1, int(cfg["concurrency"]))
        self.timeout_s = float(cfg["timeout_s"])
        self.max_retries = max(0, int(cfg["max_retries"]))
        self.backoff_s = float(cfg["backoff_s"])
        self.max_reply_bytes = int(cfg["max_reply_bytes"])
        self.max_json_depth = int(cfg["max_json_depth"])
        self.max_json_containers = int(cfg["max_json_containers"])
        ask_ids = cfg["return_token_ids"]
        if ask_ids not in (True, False, "auto"):
            raise EngineError(f"model {self.model!r}: return_token_ids must be true, false or auto, not {ask_ids!r}")
        self._tokenizer_path = spec.tokenizer
        self._tok = None
        key_env = spec.api_key_env
        self._headers = {"Content-Type": "application/json"}
        if key_env:
            key = os.environ.get(str(key_env), "")
            if not key:
                raise EngineError(f"model {self.model!r}: the API key variable {key_env} is not set "
                                  "(export it before running; the key is never written to any file)")
            self._headers["Authorization"] = f"Bearer {key}"
        info = self._open()
        self.version = f"openai-compatible {self.base_url} ({info.get('owned_by', 'unknown server')})"
        # vLLM's request extensions (token ids, skip_special_tokens) go only to a server that takes them
        self.vllm_server = info.get("owned_by") == "vllm"
        self.return_token_ids = ask_ids is True or (ask_ids == "auto" and self.vllm_server)
        self.max_model_len = int(spec.max_model_len or info.get("max_model_len") or 0)

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
        except _OverLimit as exc:
            raise EngineError(f"model {self.model!r}: endpoint {self.base_url} answered GET /models with a reply "
                              f"over a limit: {exc}") from exc
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
                    return self._parse(payload)
                detail = self._error_message(payload, headers.get("Reason", ""))
                if status not in RETRY_STATUS:
                    raise _Refused(f"HTTP {status}: {detail}")
                last = f"HTTP {status}: {detail}"
                retry_after = headers.get("Retry-After")
                if retry_after and retry_after.replace(".", "", 1).isdigit():
                    wait = min(60.0, float(retry_after))
            except _CrossOrigin as exc:
                raise _Transient(str(exc)) from None
            except _OverLimit:
                raise  # the same request would bring the same reply: not retried within the call
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
            status, headers, payload = _fetch(method, url, data, self._headers, deadline, self.timeout_s,
                                              self.max_reply_bytes)
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
        if self.vllm_server and not spec.skip_special_tokens:
            body["skip_special_tokens"] = False  # vLLM's extension: the text keeps special tokens
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
        except _OverLimit as exc:
            return Generation([], 0, None, time.perf_counter() - started, error=f"reply over a limit: {exc}",
                              info={"transient": True})
        seconds = time.perf_counter() - started
        try:
            return _generation(resp, seconds)
        except _Unstorable as exc:  # the same seeded request brings the same text: that unit's exclusion
            return Generation([], 0, None, seconds, error=f"the reply's text cannot be stored: {exc}")
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

    def _parse(self, payload: bytes) -> Any:
        """A reply's JSON, after its depth and size were checked on the bytes (:func:`json_shape`)."""
        self._check_shape(payload)
        return json.loads(payload.decode("utf-8"))

    def _check_shape(self, payload: bytes) -> None:
        """:class:`_OverLimit` when a body is nested deeper than ``max_json_depth`` or holds more than
        ``max_json_containers`` objects and arrays; ``ValueError`` when its brackets do not balance."""
        depth, containers = json_shape(payload, self.max_json_depth)
        if depth > self.max_json_depth:
            raise _OverLimit(f"its JSON is nested deeper than max_json_depth = {self.max_json_depth} levels")
        if containers > self.max_json_containers:
            raise _OverLimit(f"its JSON holds {containers} objects and arrays, more than max_json_containers = "
                             f"{self.max_json_containers}")

    def _error_message(self, payload: bytes, reason: str) -> str:
        """The server's message in an error reply (at most 300 characters). The body was read under
        ``max_reply_bytes`` like any reply, and it is parsed only within the same depth and container limits
        (issue 37: 60 MB of ``[{},{},...]`` in a 500 reply reached 1.5 GB per request); a body over them, or
        one that is no JSON, is quoted as text."""
        try:
            self._check_shape(payload)
        except (_OverLimit, ValueError):
            return _error_text(payload, reason)
        return _error_message(payload, reason)

    def close(self) -> None:
        self._headers = {}


class _Refused(Exception):
    pass


class _OverLimit(Exception):
    """A reply over ``max_reply_bytes``, ``max_json_depth`` or ``max_json_containers`` (the message names it)."""


class _CrossOrigin(Exception):
    """A redirect the client does not follow (another origin, or POST turned into GET)."""


class _Malformed(ValueError):
    pass


class _Unstorable(ValueError):
    """A reply whose text holds what UTF-8 cannot store (a lone surrogate such as ``\\ud800``, which JSON
    escapes allow): not transient, since a seeded request brings the same text again."""


def _unstorable(*texts: Any) -> str | None:
    """What in ``texts`` cannot be written as UTF-8 (a lone surrogate: JSON's ``\\ud800``), else ``None``."""
    for text in texts:
        if not isinstance(text, str):
            continue
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (f"a lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start} "
                    "(not a Unicode character; UTF-8 cannot store it)")
    return None


def storable(text: str) -> str:
    """``text`` with anything UTF-8 cannot store written as its escape (``\\ud800``): for messages."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


def _fetch(method: str, url: str, data: bytes | None, headers: Mapping[str, str], deadline: float,
           timeout_s: float, max_bytes: int) -> tuple[int, dict[str, str], bytes]:
    """One HTTP exchange that ends by ``deadline`` (time.monotonic): a watchdog shuts the socket down then.
    At most ``max_bytes`` of the body are read; a longer one raises :class:`_OverLimit`."""
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
        payload = _read_capped(resp, max_bytes)
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


def _read_capped(resp: http.client.HTTPResponse, max_bytes: int) -> bytes:
    """The body, read in pieces; :class:`_OverLimit` as soon as it exceeds ``max_bytes`` (the rest unread)."""
    declared = resp.getheader("Content-Length")
    if declared and declared.strip().isdigit() and int(declared) > max_bytes:
        raise _OverLimit(f"the endpoint announced a reply of {int(declared)} bytes, more than max_reply_bytes = "
                         f"{max_bytes}")
    pieces, size = [], 0
    while True:
        piece = resp.read(min(_READ_PIECE, max_bytes + 1 - size))
        if not piece:
            return b"".join(pieces)
        pieces.append(piece)
        size += len(piece)
        if size > max_bytes:
            raise _OverLimit(f"the reply exceeds max_reply_bytes = {max_bytes} bytes (reading stopped there)")


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
        ids = ch.get("token_ids")
        if ids is not None and (not isinstance(ids, list) or not all(isinstance(t, int) for t in ids)):
            raise _Malformed("a choice's 'token_ids' is not a list of integers")
        stop_reason = ch.get("stop_reason")
        if not isinstance(stop_reason, (str, int, type(None))) or isinstance(stop_reason, bool):
            raise _Malformed("a choice's 'stop_reason' is not a string or a token id")
        bad = _unstorable(text, reasoning, stop_reason)
        if bad:
            raise _Unstorable(f"choice {len(comps)}: {bad}")
        reason = ch.get("finish_reason")
        comps.append(Completion(text=text or "", token_ids=list(ids or []),
                                finish_reason=reason if reason in ("stop", "length") else "error",
                                reasoning=reasoning, stop_reason=stop_reason, has_token_ids=ids is not None))
    prompt_tokens = usage.get("prompt_tokens") or 0
    cached = details.get("cached_tokens")
    completion_tokens = usage.get("completion_tokens")
    if not all(isinstance(v, (int, type(None))) and not isinstance(v, bool)
               for v in (prompt_tokens, cached, completion_tokens)):
        raise _Malformed("'usage' token counts are not integers")
    if len(comps) == 1 and not comps[0].has_token_ids:
        comps[0].n_tokens = completion_tokens  # one completion: the server's count is its own
    if not comps:
        return Generation([], prompt_tokens, None, seconds, error="the endpoint returned no choices",
                          info={"transient": True})
    pids = resp.get("prompt_token_ids")
    if pids is not None and (not isinstance(pids, list) or not all(isinstance(t, int) for t in pids)):
        raise _Malformed("'prompt_token_ids' is not a list of integers")
    info: dict[str, Any] = {"prompt_token_ids": list(pids)} if pids else {}
    if completion_tokens is not None:
        info["completion_tokens"] = completion_tokens  # the server's count, all choices together
    return Generation(comps, prompt_tokens, cached, seconds, info=info)


def _error_message(payload: bytes, reason: str) -> str:
    """The message of an error body whose shape is within the limits (:meth:`HttpEngine._error_message`)."""
    try:
        data = json.loads(payload.decode("utf-8", "replace"))
        err = data.get("error", data) if isinstance(data, dict) else data
        msg = err.get("message") if isinstance(err, dict) else str(err)[:300]
        return storable(str(msg or _error_text(payload, reason)))[:300]
    except Exception:  # noqa: BLE001 - any unreadable body: the status says enough
        return _error_text(payload, reason)


def _error_text(payload: bytes, reason: str) -> str:
    """The first 300 characters of an error body as text (only its first 1,200 bytes are decoded)."""
    return (payload[:1200].decode("utf-8", "replace").strip() or reason)[:300]
