"""The ``openai`` backend: any OpenAI-compatible HTTP endpoint (the paper's set-up: models served by vLLM's server).

The engine is :class:`thinkprobe.generate.http_engine.HttpEngine`; its settings are the model entry's own keys
over :data:`~thinkprobe.generate.defaults.HTTP_DEFAULTS`. The endpoint holds the model: a job is its client, so
it asks for no GPU and its memory holds no weights. The context length and whether the completions' token ids
come back (they decide how the reasoning's end is read) are part of a protected batch's identity.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..defaults import HTTP_DEFAULTS
from ._backend import Backend


def _open(spec: Any):
    from ..http_engine import HttpEngine

    return HttpEngine(spec)


def settings(model_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's keys with the HTTP defaults merged in.

    >>> settings({"max_model_len": 4096})["return_token_ids"]
    'auto'
    """
    return {**HTTP_DEFAULTS, **dict(model_cfg)}


BACKEND = Backend(
    name="openai",
    description="an OpenAI-compatible endpoint",
    open=_open,
    keys=("base_url", "served_model", "api_key_env", "max_model_len", "tokenizer", *HTTP_DEFAULTS),
    defaults=HTTP_DEFAULTS,
    settings=settings,
    identity_keys=("max_model_len", "return_token_ids"),
    continuations=True,
)
