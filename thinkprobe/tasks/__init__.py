"""The answer tasks: one file per task, each declaring what belongs to its answer format.

A task (``thinkprobe/tasks/<task>.py``) says, in one place: the answer format the prompt asks for (the
``native`` sentence and the ``cot`` closing words of :mod:`thinkprobe.generate.prompts`), how a final answer
is extracted from a generated text and made canonical (so that equivalent answers share a label, the
trajectory paper's deterministic parser with a null category, its App. A.1), the planner's prior on the
reasoning length of a native reasoner's trace, and the loader of its question records (``Task.read``: the
fields, the gold, the ids; a question set names it as ``source: <task>``,
:func:`thinkprobe.generate.questions.source_names`). The schema's task and source enums (``x-enum-from``) and the planner's
token priors (``x-default-from``) are generated from this registry (:mod:`thinkprobe.config`), the prompts and
the parser (:mod:`thinkprobe.trajectories.parsing`) read it, and an unknown task is an error naming the known
ones. A task also holds its forced-answer cue (``Task.answer_cue``, :func:`answer_cues`): a setting, which the
trajectory settings of a batch of that task resolve from here once (config overrides it per task) and carry as
a value, so the sampling code (:mod:`thinkprobe.trajectories.forced`) holds no cue and no task file enters the
forced estimator's code hash (docs/sampling-store.md, docs/adding-a-task.md).

The registry follows the project's layout (DESIGN.md section 2): a dict filled by :func:`register` (with
each task file's ``TASK``), :func:`get` raising an error that names the known members, :func:`names`. A task
file imports only :mod:`thinkprobe.tasks._task` and its extractor, never this module, so no import goes in a
circle. This package sits just above the
core modules (``tests/test_import_graph.py``): it imports only them, so the question loaders and the
trajectory labeller can both use it.
"""

from __future__ import annotations

import importlib
import pkgutil

from ._task import Choices, Extractor, Task  # noqa: F401 - re-exported: what a task file declares

class UnknownTask(ValueError):
    """A task name that no file of :mod:`thinkprobe.tasks` registers."""


_REGISTRY: dict[str, Task] = {}
_LOADED = False


def register(task: Task) -> Task:
    """Add ``task`` to the registry (each task file's ``TASK``, below; a test's own task); a second task of one
    name is refused."""
    if task.name in _REGISTRY and _REGISTRY[task.name] is not task:
        raise ValueError(f"task {task.name!r} is registered twice")
    _REGISTRY[task.name] = task
    return task


def _load() -> None:
    """Import every task file (a file of this folder whose name has no leading ``_``). The explicit import at
    the end of this module names them too, so that the code hashes (:mod:`thinkprobe.codedeps`) see every
    task's extraction; a file missing from it is still loaded here, and a test says it is missing."""
    global _LOADED
    if not _LOADED:
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
            if not info.name.startswith("_"):
                register(importlib.import_module(f"{__name__}.{info.name}").TASK)
        _LOADED = True


def get(name: str) -> Task:
    """The task called ``name``; an unknown name raises :class:`UnknownTask` naming the known ones.

    >>> get("gsm8k").name
    'gsm8k'
    >>> get("mmlu")
    Traceback (most recent call last):
    ...
    thinkprobe.tasks.UnknownTask: unknown task 'mmlu': known tasks are arc, choice, gsm8k, math, open, svamp
    """
    _load()
    if name not in _REGISTRY:
        raise UnknownTask(f"unknown task {name!r}: known tasks are {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def names() -> list[str]:
    """Every task, sorted (the schema's enum of a question's task)."""
    _load()
    return sorted(_REGISTRY)


def answer_names() -> list[str]:
    """The tasks whose answers get a discrete label (the schema's enum of the forced-answer cues)."""
    return [n for n in names() if _REGISTRY[n].discrete]


def answer_cues() -> dict[str, str]:
    """The default forced-answer cue of every task that has one (``Task.answer_cue``): what
    ``trajectories.forced.answer_cues`` overrides per task.

    >>> answer_cues()["arc"] == answer_cues()["choice"] == "\\nTherefore, the answer is ("
    True
    """
    return {n: get(n).answer_cue for n in names() if get(n).answer_cue is not None}


def token_priors() -> dict[str, int]:
    """The planner's prior reasoning tokens per task (the schema's default of ``planning.trace_tokens_prior``)."""
    return {n: get(n).trace_tokens for n in names()}


from . import arc, choice, gsm8k, math, open, svamp  # noqa: E402 - every task file (see _load)

for _module in (arc, choice, gsm8k, math, open, svamp):
    register(_module.TASK)
