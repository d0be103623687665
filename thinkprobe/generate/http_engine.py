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
      ``error`` says so, with the server's message; not retried.

At most ``concurrency`` requests are in flight at once.
"""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
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
        except (_Transient, urllib.error.URLError, OSError) as exc:
            raise EngineError(f"model {self.model!r}: endpoint {self.base_url} is unreachable after "
                              f"{self.max_retries + 1} attempts: {exc}") from exc
        except _Refused as exc:
            raise EngineError(f"model {self.model!r}: endpoint {self.base_url} refused GET /models: {exc}") from exc
        models = listing.get("data") or []
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

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        """One request with retries on transient failures; raises _Transient or _Refused at the end."""
        data = json.dumps(body).encode() if body is not None else None
        last = ""
        for attempt in range(self.max_retries + 1):
            wait = min(30.0, self.backoff_s * (2 ** attempt)) * (0.5 + random.random() / 2)
            req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=self._headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    return json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                detail = _error_message(exc)
                if exc.code not in RETRY_STATUS:
                    raise _Refused(f"HTTP {exc.code}: {detail}") from None
                last = f"HTTP {exc.code}: {detail}"
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                if retry_after and retry_after.replace(".", "", 1).isdigit():
                    wait = min(60.0, float(retry_after))
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, ValueError) as exc:
                last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            if attempt < self.max_retries:
                time.sleep(wait)
        raise _Transient(f"{method} {path} failed {self.max_retries + 1} times; last: {last}")

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
        comps = []
        for ch in sorted(resp.get("choices") or [], key=lambda c: c.get("index", 0)):
            msg = ch.get("message") or {}
            text = msg.get("content") if msg else ch.get("text")
            reasoning = msg.get("reasoning_content") or msg.get("reasoning") if msg else None
            reason = ch.get("finish_reason")
            comps.append(Completion(text=text or "", token_ids=list(ch.get("token_ids") or []),
                                    finish_reason=reason if reason in ("stop", "length") else "error",
                                    reasoning=reasoning))
        usage = resp.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        if not comps:
            return Generation([], int(usage.get("prompt_tokens") or 0), None, seconds,
                              error="the endpoint returned no choices", info={"transient": True})
        info = {"prompt_token_ids": list(resp["prompt_token_ids"])} if resp.get("prompt_token_ids") else {}
        return Generation(comps, int(usage.get("prompt_tokens") or 0), details.get("cached_tokens"), seconds,
                          info=info)

    def generate(self, prompts: Sequence[str | Sequence[int]], sampling: Sequence[SamplingSpec]) -> list[Generation]:
        if len(prompts) != len(sampling):
            raise ValueError(f"{len(prompts)} prompts but {len(sampling)} sampling specs")
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._one, prompts, sampling))

    def close(self) -> None:
        self._headers = {}


class _Refused(Exception):
    pass


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode("utf-8", "replace")
        data = json.loads(body)
        err = data.get("error", data)
        msg = err.get("message") if isinstance(err, dict) else str(err)
        return str(msg or body)[:300]
    except Exception:  # noqa: BLE001 - any unreadable body: the status says enough
        return str(exc.reason)[:300]
