"""A ``models:`` entry parsed once: the frozen :class:`ModelSpec` every module takes (issue 34, item 2).

A model entry is read in one place: :meth:`ModelSpec.from_config` checks its keys (:func:`entry_problems`: an
unknown key names the model, the key and the known keys; a renamed key its new name), fills the common defaults
(:data:`~thinkprobe.generate.defaults.MODEL_DEFAULTS`, a hub model's ``revision``) and merges its backend's
defaults (the backend's ``settings``, :mod:`thinkprobe.generate.backends`): the one merge. What comes out is
frozen and hashable, with typed fields (``spec.backend``, ``spec.hub_id``, ``spec.settings``): no module outside
this one and the backend registry reads a model entry with ``.get`` (``tests/test_house_rules.py``).

The keys of an entry are declared by the registry: :data:`COMMON_KEYS` (every backend's: the reasoning mode, the
prompt, the per-model sampling overrides, and the planning and resource keys) and each backend's own ``keys``
(a key of another backend is accepted and ignored, as the schema always did). Renamed keys are
:data:`RENAMED_KEYS` and each backend's ``renamed``.

What passes between jobs stays a plain mapping, byte for byte as before: the rule params carry
:meth:`ModelSpec.as_dict` (Snakemake compares params between runs; a changed repr reruns every job) and the
stored identities (:func:`thinkprobe.protect.identity`, the collection store's unit settings) are built from it,
so no stored GPU work changes its key. The engines (:mod:`thinkprobe.generate.vllm_engine`,
:mod:`thinkprobe.generate.http_engine`) and the model lookup they call
(:func:`thinkprobe.generate.models.resolve_model`) receive the spec itself through their backend's ``open`` and read its fields (``settings``: the merge done here),
so the defaults merge has this one home.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from .defaults import MODEL_DEFAULTS, MODEL_RESOURCE_KEYS


class ModelSpecError(ValueError):
    """A model entry with an unknown or renamed key, or of an unknown backend."""


# Keys every backend reads: which backend, how the model reasons and is prompted, its sampling overrides, and the
# keys that size or place its jobs (MODEL_RESOURCE_KEYS: never in a rule's params nor an identity).
COMMON_KEYS: tuple[str, ...] = ("backend", "sampling", *MODEL_DEFAULTS, *sorted(MODEL_RESOURCE_KEYS - set(MODEL_DEFAULTS)))

# Keys the workflow plan adds to a hub model's entry for its jobs (thinkprobe.study.workflowplan: the fetch manifest,
# the model cache) and a test's cache folder: accepted in an entry the plan filled, refused in a config.
PLAN_KEYS: tuple[str, ...] = ("manifest", "model_cache", "cache_dir")

# Old key -> new key of every backend's entries (a backend's own renames: its ``Backend.renamed``).
RENAMED_KEYS: dict[str, str] = {}


def _registry():
    from . import backends

    return backends


def known_keys() -> list[str]:
    """Every key a model entry may hold: the common keys and every backend's own (sorted)."""
    reg = _registry()
    return sorted({*COMMON_KEYS, *(k for n in reg.names() for k in reg.get(n).keys)})


def renamed_keys() -> dict[str, str]:
    """Old key -> new key, the common renames and every backend's."""
    reg = _registry()
    out = dict(RENAMED_KEYS)
    for n in reg.names():
        out.update(reg.get(n).renamed)
    return out


def entry_problems(name: str, entry: Mapping[str, Any], planned: bool = True) -> list[str]:
    """The key problems of the entry of model ``name``: the one home of the unknown-key and renamed-key checks
    (the config's, :mod:`thinkprobe.generate.model_checks`, with ``planned`` False: no :data:`PLAN_KEYS`; and every
    spec's, :meth:`ModelSpec.from_config`).

    >>> entry_problems("m", {"backend": "vllm", "path": "smollm2"})
    []
    >>> entry_problems("m", {"backend": "vllm", "pathh": "x"})[0][:60]
    "models.m.pathh: unknown key of model 'm' (known keys: api_ke"
    """
    if not isinstance(entry, Mapping):
        return [f"models.{name}: a model entry is a mapping, not {type(entry).__name__}"]
    renamed, known = renamed_keys(), set(known_keys())
    allowed = known | set(PLAN_KEYS) if planned else known
    problems = []
    for key in entry:
        if key == "name":
            if entry[key] != name:
                problems.append(f"models.{name}.name = {entry[key]!r}: a model is named by its key ({name!r})")
        elif key in renamed:
            problems.append(f"models.{name}.{key}: this key is now models.{name}.{renamed[key]}; rename it in the "
                            "config (see docs/changes.md)")
        elif key not in allowed:
            problems.append(f"models.{name}.{key}: unknown key of model {name!r} (known keys: {', '.join(sorted(known))})")
    return problems


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return FrozenMap(value)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, FrozenMap):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


class FrozenMap(Mapping):
    """A read-only, hashable mapping (nested mappings and lists frozen too) that keeps its keys' order; equal to
    every mapping of the same items, whatever their order.

    >>> m = FrozenMap({"b": 1, "a": [1, {"c": 2}]})
    >>> list(m), m == {"a": [1, {"c": 2}], "b": 1}, hash(m) == hash(FrozenMap({"a": [1, {"c": 2}], "b": 1}))
    (['b', 'a'], False, True)
    >>> m.thaw()
    {'b': 1, 'a': [1, {'c': 2}]}
    """

    __slots__ = ("_items", "_dict")

    def __init__(self, data: Mapping[str, Any] = ()):  # type: ignore[assignment]
        items = tuple((k, _freeze(v)) for k, v in dict(data).items())
        object.__setattr__(self, "_items", items)
        object.__setattr__(self, "_dict", dict(items))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._dict[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def __hash__(self) -> int:
        return hash(frozenset(self._items))

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, FrozenMap):
            return self._dict == other._dict
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._dict!r})"

    def thaw(self) -> dict[str, Any]:
        """A plain, mutable copy (nested tuples as lists: what YAML and JSON gave)."""
        return _thaw(self)


@dataclass(frozen=True)
class ModelSpec:
    """One model, parsed once from its validated ``models:`` entry (:meth:`from_config`).

    Fields are the entry's keys with their defaults filled (``None``: not stated and no default). ``engine`` is
    the ``engine:`` section as stated (vLLM), ``settings`` the backend's settings with its defaults merged (the
    one merge: vLLM's engine arguments over ``VLLM_ENGINE_DEFAULTS``, an endpoint's keys over ``HTTP_DEFAULTS``),
    ``max_model_len`` the context length the entry states (``None``: the engine's own). ``params_b``,
    ``total_params_b``, ``weights_gb`` and ``trace_tokens`` are the planner's figures; ``api_key_env`` the
    variable holding an endpoint's API key; ``manifest``, ``model_cache`` and ``cache_dir`` what the workflow plan
    (or a test) adds for the model lookup (:data:`PLAN_KEYS`: the fetch manifest, the hub cache, the cache
    folder); ``resources`` every stated
    key of :data:`~thinkprobe.generate.defaults.MODEL_RESOURCE_KEYS` (a job's resources, never a param). ``entry`` is the filled
    entry itself, which the collection's rule params and unit identities carry (:meth:`as_dict`); ``stated`` the
    entry as written (with its name), which the trajectory sampling's params, a continuation batch's identity and
    its provenance carry (:meth:`as_stated`): both exactly as before the spec existed, so no param and no stored
    identity changed with it.
    """

    name: str
    backend: str
    path: str | None
    hub_id: str | None
    revision: str | None
    served_model: str | None
    base_url: str | None
    tokenizer: str | None
    api_key_env: str | None
    reasoning: str
    prompt_variant: str
    think_prefill: bool
    system_prompt: str
    device: str
    gpu_model: str
    sampling: FrozenMap
    engine: FrozenMap
    settings: FrozenMap
    max_model_len: int | None
    params_b: float | None
    total_params_b: float | None
    weights_gb: float | None
    trace_tokens: FrozenMap
    resources: FrozenMap
    manifest: str | None
    model_cache: str | None
    cache_dir: str | None
    entry: FrozenMap
    stated: FrozenMap

    def __post_init__(self) -> None:
        hash(self)  # every field is hashable (a FrozenMap, a tuple or a scalar): a spec can key a cache

    @classmethod
    def from_config(cls, name: str, entry: Mapping[str, Any]) -> "ModelSpec":
        """The spec of model ``name`` from its config entry (validated by the schema; a filled entry, as the rule
        params carry it, gives the same spec). Raises :class:`ModelSpecError` for an unknown or renamed key,
        naming the model, the key and the known keys or the new name, and for an unknown backend."""
        problems = entry_problems(name, entry)
        if problems:
            raise ModelSpecError("; ".join(problems))
        kind = _registry().of({**entry, "name": name})  # an unknown backend: UnknownBackend, naming the known ones
        # ``backend`` is the entry's own value (equal to ``kind.name``): the configuration reference's derivation
        # (scripts/config_reference.py) follows a key by the string it stated, so a registry copy would hide that the
        # collection jobs' params hold it
        filled = {"name": name, **MODEL_DEFAULTS, **{k: v for k, v in entry.items() if k != "name"}}
        if filled.get("hub_id"):
            filled.setdefault("revision", "main")
        settings = FrozenMap(kind.settings(filled))
        stated = settings.get("max_model_len")
        return cls(
            name=name, backend=filled["backend"], path=filled.get("path"), hub_id=filled.get("hub_id"),
            revision=filled.get("revision"), served_model=filled.get("served_model"),
            base_url=filled.get("base_url"), tokenizer=filled.get("tokenizer"), api_key_env=filled.get("api_key_env"),
            reasoning=filled["reasoning"],
            prompt_variant=filled["prompt_variant"], think_prefill=bool(filled["think_prefill"]),
            system_prompt=filled["system_prompt"] or "", device=filled["device"], gpu_model=filled["gpu_model"],
            sampling=FrozenMap(filled.get("sampling") or {}), engine=FrozenMap(filled.get("engine") or {}),
            settings=settings, max_model_len=int(stated) if stated else None,
            params_b=filled.get("params_b"), total_params_b=filled.get("total_params_b"),
            weights_gb=filled.get("weights_gb"), trace_tokens=FrozenMap(filled.get("trace_tokens") or {}),
            resources=FrozenMap({k: filled[k] for k in sorted(MODEL_RESOURCE_KEYS) if k in filled}),
            manifest=filled.get("manifest"), model_cache=filled.get("model_cache"), cache_dir=filled.get("cache_dir"),
            entry=FrozenMap(filled), stated=FrozenMap({"name": name, **{k: v for k, v in entry.items() if k != "name"}}))

    @classmethod
    def named(cls, model: str, backend: str) -> "ModelSpec":
        """The spec of a model named by one string (a command line's ``--model``: for vLLM a local folder, named by
        its folder's name, or a built-in name), through its backend's ``named``; a backend whose models need a
        config entry is refused, naming the backends that take a name."""
        from pathlib import Path

        kind = _registry().get(backend)
        if kind.named is None:
            able = [n for n in _registry().names() if _registry().get(n).named is not None]
            raise ModelSpecError(f"backend {backend!r} cannot open a model from its name alone (backends that "
                                 f"can: {', '.join(able)})")
        name = Path(model).name if Path(model).is_dir() else model
        return cls.from_config(name, {"backend": kind.name, **kind.named(model)})

    @classmethod
    def of(cls, model: "ModelSpec | Mapping[str, Any]") -> "ModelSpec":
        """``model`` itself when it is a spec, else the spec of a filled entry (one that names its model, as the
        rule params carry it)."""
        if isinstance(model, ModelSpec):
            return model
        if not isinstance(model, Mapping) or not model.get("name"):
            raise ModelSpecError(f"a model is a ModelSpec or an entry with its name, not {model!r}")
        return cls.from_config(str(model["name"]), model)

    def as_dict(self) -> dict[str, Any]:
        """The filled entry as a plain mapping, keys in their order: what the rule params, the engines and the stored
        identities receive (what ``collection_jobs.model_settings`` returned before the spec: the same mapping)."""
        return self.entry.thaw()

    def as_stated(self) -> dict[str, Any]:
        """The entry as written, with its name first, as a plain mapping (no default filled in)."""
        return self.stated.thaw()

    @property
    def kind(self):
        """The backend's declaration (:class:`~thinkprobe.generate.backends.Backend`)."""
        return _registry().get(self.backend)

    @property
    def weights(self) -> str:
        """What names the model's weights, for messages and records: its path, hub id, served name or name."""
        return str(self.path or self.hub_id or self.served_model or self.name)

    def gpus(self) -> int:
        """GPUs one generation job of this model asks SLURM for (its backend's need)."""
        return int(self.kind.gpus(self.as_dict()))

    def identity_settings(self) -> dict[str, Any]:
        """The engine settings that enter a protected batch's identity (the backend's ``identity_keys``)."""
        return {k: self.settings.get(k) for k in self.kind.identity_keys}


def model_specs(config: Mapping[str, Any]) -> dict[str, ModelSpec]:
    """Every ``models:`` entry of a validated config, parsed (by name)."""
    return {str(n): ModelSpec.from_config(str(n), e or {}) for n, e in (config.get("models") or {}).items()}
