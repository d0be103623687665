"""Which engine failures are transient, and the error a job raises for them, shared by every GPU stage.

An expensive stage (trace collection, continuation sampling) stores every finished result for good, so a
failure must be sorted before it is stored:

* **transient**: the engine or the endpoint failed for the request (connection refused or dropped, a
  timeout or the request's total deadline, HTTP 5xx or 429 after the retries, a reply that is not the expected
  shape, a redirect the client refuses to follow). The same request may well succeed later, so the result is
  NOT stored; the job stores everything else, then fails with :class:`TransientFailures` naming the items, and
  the next run retries exactly those.
* **permanent**: a property of the item itself, which the same request would hit again (a prompt longer than
  the context, a request the server refuses with 4xx). Stored with its reason, never retried.

The engines mark the first kind with ``Generation.info["transient"] = True``
(:mod:`thinkprobe.generate.http_engine`); a fault of the offline engine as a whole raises
:class:`~thinkprobe.generate.engine.EngineError` and fails the job, which is retried the same way.
"""

from __future__ import annotations

from typing import Mapping


class TransientFailures(RuntimeError):
    """Some items could not be produced for a reason outside them (engine/endpoint); rerun to retry them."""


def is_transient(gen) -> bool:
    """True when ``gen`` (a :class:`~thinkprobe.generate.engine.Generation`) failed for a transient reason."""
    return gen.error is not None and bool(gen.info.get("transient"))


def transient_failures(failures: Mapping[str, str], total: int, what: str) -> TransientFailures:
    """The job's error after storing every other item: how many failed, and the first few with their reason."""
    first = "; ".join(f"{k}: {v}" for k, v in list(failures.items())[:5])
    return TransientFailures(
        f"{len(failures)} of {total} {what} could not be generated because the engine or endpoint failed "
        f"(transient: not stored; everything else is stored and will not be generated again; rerun to retry "
        f"these): {first}")
