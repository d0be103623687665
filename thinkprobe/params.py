"""Every tunable constant of the extraction pipeline and the metrics, with the paper's values as defaults.

The parameters are grouped by the layer that uses them, so that a changed value invalidates exactly the
stage that reads it (the workflow passes each group to its own rule). ``config/config.yaml`` mirrors
:meth:`Params.to_dict` key for key; a test keeps the two identical.

Where the ThinkProbe paper gives a number, the default is that number and the field's comment cites the
section. Where the paper is silent, the default is our choice and the comment says so.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, fields
from typing import Any

from .vocabulary import DIMENSION_MAPS, METRIC_NAMES


class ParamsError(ValueError):
    """A parameter key or value is not acceptable; the message names the key and what is allowed."""


def _p(default: Any, minimum: float | None = None, maximum: float | None = None, choices: tuple = (),
       doc: str = ""):
    """A parameter field: its default and its allowed range (``minimum``/``maximum`` inclusive, or ``choices``).

    The default and the range live here only: the workflow schema's ``analysis`` block is generated from
    these fields (:func:`analysis_schema`, filled in by :func:`thinkprobe.config.load_schema`); ``doc`` is
    the key's description there.
    """
    return field(default=default, metadata={"minimum": minimum, "maximum": maximum, "choices": choices, "doc": doc})


COSINE = {"minimum": -1.0, "maximum": 1.0}  # every similarity threshold is a cosine similarity
PERCENT = {"minimum": 0.0, "maximum": 100.0}


@dataclass(frozen=True)
class InputParams:
    """Which traces are analysed at all (input validation, before layer 1)."""

    require_think: bool = _p(True)  # paper §7: the framework needs <think> traces; False analyses the whole text
    min_words: int = _p(0, 0, doc="exclude traces with fewer words of reasoning (0: off, as in the paper)")  # ours, off: the paper excludes no trace for its length (>0 excludes shorter ones)
    max_trace_bytes: int = _p(2_000_000, 1)  # ours: ~500k tokens, beyond any model's context; larger is excluded


@dataclass(frozen=True)
class SegmentationParams:
    """Layer 1, structural segmentation (paper §3.4)."""

    branch_header_max_tokens: int = _p(12, 0)  # a branch header under 12 tokens absorbs its following span
    min_span_sentences: int = _p(2, 0)  # a none span under 2 sentences ...
    min_span_tokens: int = _p(30, 0)  # ... or under 30 tokens merges forward
    cue_lexicon: str = _p("", doc="path of a cue lexicon (empty: packaged)")  # path of a cue lexicon; empty = the packaged lexicons/cues.tsv
    max_thought_units: int = _p(5000, 1, doc="a trace cut into more thought units is excluded before encoding")  # ours: a trace cut into more TUs is excluded before encoding (cost bound)


@dataclass(frozen=True)
class TextTilingParams:
    """Layer 2, soft boundary detection by TextTiling (paper §3.4, App. D)."""

    enabled: bool = _p(True)
    window: int = _p(3, 1)  # sentences in each half-window
    prominence: float = _p(0.15, 0.0, 2.0)  # minimum prominence of a similarity minimum
    threshold_percentile: float = _p(30.0, **PERCENT)  # tau = P30 of the trace's block similarities
    scope: str = _p("paragraphs", choices=("paragraphs", "none_spans"))  # Algorithm 1 (default) or §3.4's reading
    min_sentences: int = _p(2, 1)  # ours: a paragraph with fewer sentences is never split
    max_tu_sentences: int = _p(24, 1)  # ours: a paragraph with no valley is cut into parts of at most this
    max_sentences: int = _p(50000, 1)  # ours: a trace with more sentences is excluded before layer 2 encodes any


@dataclass(frozen=True)
class TrajectoryParams:
    """Layer 3, semantic trajectory (paper §3.4)."""

    branch_percentile: float = _p(25.0, **PERCENT)  # tau_branch = P25 of consecutive-TU cosines
    elab_percentile: float = _p(65.0, **PERCENT)  # tau_elab = P65


@dataclass(frozen=True)
class CrossSegmentParams:
    """Layer 4, cross-segment arcs (paper §3.4, Algorithm 1 in App. D)."""

    synthesis_similarity: float = _p(0.50, **COSINE)  # cosine to a prior segment centroid
    synthesis_min_segments: int = _p(2, 1)  # bridged prior segments needed for synthesis
    synthesis_max_targets: int = _p(8, 1)  # ours: SYNT edges per TU, to the most similar bridged segments
    revision_min_index: int = _p(4, 0)  # revision arcs for v_j with j > 4
    revision_min_gap: int = _p(4, 0)  # j - i >= 4
    revision_divergence_window: int = _p(4, 1)  # some TU in (i, i+4) ...
    revision_divergence_similarity: float = _p(0.45, **COSINE)  # ... below 0.45 to v_i
    revision_similarity: float = _p(0.65, **COSINE)  # backward arc when sim(v_j, v_i) > 0.65


@dataclass(frozen=True)
class ClassificationParams:
    """Node classification (paper §3.4): rules 4-5, RFR when 0.25 < cos(v, v0) < 0.72, and the typer that decides rules 2-3.

    The typer: the paper's rules 2-3 (default) or the learned layer (ours, :mod:`thinkprobe.learned_typer`)."""

    reframe_min_similarity: float = _p(0.25, **COSINE)
    reframe_max_similarity: float = _p(0.72, **COSINE)
    typer: str = _p("paper", choices=("paper", "learned"),
                    doc="what decides the metacognitive node types CRT and MET: paper (rules 2-3 of the paper's "
                        "priority hierarchy, section 3.4) or learned (a logistic regression on the thought unit's "
                        "embedding and cue features, trained on LLM step labels; docs/validity.md). Every other "
                        "rule stays the paper's; a change reruns the graph jobs and everything after them")  # ours (issue 36)


@dataclass(frozen=True)
class MetricParams:
    """Constants of the 19 metrics (paper §3.5)."""

    domain_spread_similarity: float = _p(0.45, **COSINE)  # DS: merge while mean cosine *similarity* >= 0.45
    first_ideas: int = _p(3, 1)  # FID: the first three HYP nodes
    redundancy_similarity: float = _p(0.75, **COSINE)  # RR: pairs above 0.75
    hedge_lexicon: str = _p("", doc="path of a hedge lexicon (empty: packaged)")  # path of a hedge lexicon; empty = the packaged lexicons/hedges.txt


@dataclass(frozen=True)
class ProfileParams:
    """The 5D-CP (paper §3.5, eq. 1): which metrics make up each dimension.

    ``dimensions`` names a built-in map (``table2``: Table 2, all 19 metrics active, the default;
    ``app_g``: the reading under which Appendix G's arithmetic holds, Efficiency = TPI and RR with AT and
    ATU as unscored baselines) or is a mapping ``{dimension: [metric, ...]}`` (each metric at most once).
    """

    dimensions: str | dict = _p("table2", doc="the 5D-CP dimension map: table2 (paper Table 2, all 19 metrics), app_g "
                                "(Appendix G: Efficiency = TPI and RR), or a mapping {dimension: [metric, ...]}")


@dataclass(frozen=True)
class EncoderParams:
    """The sentence encoder (paper: all-MiniLM-L6-v2)."""

    model: str = _p("all-MiniLM-L6-v2")  # packaged weights; or a sentence-transformers id or a local path
    backend: str = _p("auto", choices=("auto", "onnx", "sentence-transformers"))
    batch_size: int = _p(16, 1)
    max_seq_length: int = _p(256, 1)  # the model's own limit


@dataclass(frozen=True)
class Params:
    """All parameters of one analysis."""

    input: InputParams = field(default_factory=InputParams)
    segmentation: SegmentationParams = field(default_factory=SegmentationParams)
    texttiling: TextTilingParams = field(default_factory=TextTilingParams)
    trajectory: TrajectoryParams = field(default_factory=TrajectoryParams)
    cross_segment: CrossSegmentParams = field(default_factory=CrossSegmentParams)
    classification: ClassificationParams = field(default_factory=ClassificationParams)
    metrics: MetricParams = field(default_factory=MetricParams)
    profile: ProfileParams = field(default_factory=ProfileParams)
    encoder: EncoderParams = field(default_factory=EncoderParams)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, where: str = "analysis") -> "Params":
        """Build from a nested mapping; missing keys keep their defaults, unknown keys are an error."""
        data, sections = _known_keys(data, cls, where, "section")
        built = {}
        for name, f in sections.items():
            built[name] = _section_from_dict(f.default_factory, data.get(name), f"{where}.{name}")
        out = cls(**built)
        if out.classification.typer == "learned" and out.encoder.model != EncoderParams().model:
            raise ParamsError(f"{where}.classification.typer: the learned typer's coefficients are for the default "
                              f"encoder's embeddings ({EncoderParams().model}), not {out.encoder.model!r}: use typer "
                              "paper with this encoder, or retrain it (scripts/train_typer.py)")
        return out


def parameter_specs() -> dict[str, dict[str, dict[str, Any]]]:
    """Every parameter's default, type and allowed range, by section and key (what the schema must state)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for section in fields(Params):
        cls = section.default_factory
        out[section.name] = {
            f.name: {"default": f.default, "type": type(f.default).__name__, **f.metadata} for f in fields(cls)}
    return out


_SCHEMA_TYPES = {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}


def analysis_schema() -> dict[str, Any]:
    """The JSON schema of the workflow config's ``analysis`` section, generated from the dataclasses above.

    One home per fact: every key, default, type, bound and choice is read from the fields, so the schema
    (``config/schema.yaml`` says ``x-generated-from: thinkprobe.params.analysis_schema``) cannot disagree
    with :class:`Params`. :func:`Params.from_dict` still checks what a schema cannot (cross-key rules).

    >>> analysis_schema()["properties"]["texttiling"]["properties"]["window"]
    {'default': 3, 'type': 'integer', 'minimum': 1}
    """
    sections: dict[str, Any] = {}
    for section, keys in parameter_specs().items():
        props: dict[str, Any] = {}
        for key, spec in keys.items():
            prop: dict[str, Any] = {"default": spec["default"]}
            if (section, key) == ("profile", "dimensions"):
                prop["oneOf"] = [{"enum": list(DIMENSION_MAPS)},
                                 {"type": "object", "minProperties": 1,
                                  "additionalProperties": {"type": "array", "minItems": 1, "uniqueItems": True,
                                                           "items": {"enum": list(METRIC_NAMES)}}}]
            elif spec["choices"]:
                prop["enum"] = list(spec["choices"])
            else:
                prop["type"] = _SCHEMA_TYPES[spec["type"]]
            for bound in ("minimum", "maximum"):
                if spec[bound] is not None:
                    prop[bound] = spec[bound]
            if (section, key) == ("encoder", "model"):
                prop["minLength"] = 1  # as _check_ranges: the model must not be empty
            if spec["doc"]:
                prop["description"] = spec["doc"]
            props[key] = prop
        sections[section] = {"type": "object", "additionalProperties": False, "properties": props}
    return {"type": "object", "additionalProperties": False, "properties": sections}


RENAMED_PARAMS: dict[tuple[str, str], str] = {
    ("segmentation", "max_units"): "max_thought_units",  # "unit" alone is an analysis unit (docs/glossary.md)
    ("texttiling", "max_unit_sentences"): "max_tu_sentences",
}
"""(section, old key) -> new key: an old key is an error naming the new one (docs/changes.md, Renames (issue 27))."""


def _known_keys(data: Any, cls, where: str, what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``data`` (None for empty) checked against the fields of the dataclass ``cls``: the mapping and the
    fields by name. Not a mapping, a renamed key (named with its new name) or an unknown key is an error
    naming ``where``; ``what`` says what the keys are (``section`` for the top level, ``key`` in a section)."""
    data = data or {}
    if not isinstance(data, dict):
        raise ParamsError(f"{where}: expected a mapping of {what}s, got {type(data).__name__}")
    section = where.rsplit(".", 1)[-1]
    renamed = [f"{where}.{old}: this key is now {where}.{new}; rename it (see docs/changes.md, Renames (issue 27))"
               for (sec, old), new in RENAMED_PARAMS.items() if sec == section and old in data]
    if renamed:
        raise ParamsError("; ".join(renamed))
    allowed = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ParamsError(f"{where}: unknown {what}(s) {unknown}; allowed: {sorted(allowed)}")
    return data, allowed


def _section_from_dict(section_cls, data: dict[str, Any] | None, where: str):
    data, allowed = _known_keys(data, section_cls, where, "key")
    values = {}
    for name, value in data.items():
        if section_cls is ProfileParams and name == "dimensions":
            values[name] = _dimension_spec(value, f"{where}.{name}")
            continue
        expected = type(allowed[name].default)
        values[name] = _coerce(value, expected, f"{where}.{name}")
    obj = section_cls(**values)
    _check_ranges(obj, where)
    return obj


def _dimension_spec(value: Any, where: str) -> str | dict:
    if isinstance(value, str):
        if value not in DIMENSION_MAPS:
            raise ParamsError(f"{where}: {value!r} is not a dimension map; built-in: {sorted(DIMENSION_MAPS)}")
        return value
    if not isinstance(value, dict) or not value:
        raise ParamsError(f"{where}: expected the name of a built-in map {sorted(DIMENSION_MAPS)} "
                          f"or a mapping {{dimension: [metric, ...]}}")
    seen: dict[str, str] = {}
    out: dict[str, list[str]] = {}
    for dim, members in value.items():
        if not isinstance(dim, str) or not dim:
            raise ParamsError(f"{where}: dimension names must be non-empty strings, got {dim!r}")
        if not isinstance(members, (list, tuple)) or not members:
            raise ParamsError(f"{where}.{dim}: expected a non-empty list of metrics")
        for m in members:
            if m not in METRIC_NAMES:
                raise ParamsError(f"{where}.{dim}: unknown metric {m!r}; known: {list(METRIC_NAMES)}")
            if m in seen:
                raise ParamsError(f"{where}: metric {m!r} is in both {seen[m]!r} and {dim!r}")
            seen[m] = dim
        out[dim] = list(members)
    return out


def _coerce(value: Any, expected: type, where: str) -> Any:
    if expected is bool:
        if isinstance(value, bool):
            return value
        raise ParamsError(f"{where}: {value!r} is not a boolean (true/false)")
    if expected is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ParamsError(f"{where}: {value!r} is not an integer")
    if expected is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ParamsError(f"{where}: {value!r} is not a number")
    if expected is str:
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        raise ParamsError(f"{where}: {value!r} is not a string")
    return value


def _check_ranges(obj, where: str) -> None:
    for f in fields(obj):
        v = getattr(obj, f.name)
        key = f"{where}.{f.name}"
        lo, hi, choices = f.metadata.get("minimum"), f.metadata.get("maximum"), f.metadata.get("choices")
        if lo is not None and v < lo:
            raise ParamsError(f"{key}: {v} must be >= {lo}")
        if hi is not None and v > hi:
            raise ParamsError(f"{key}: {v} must be <= {hi}")
        if choices and v not in choices:
            raise ParamsError(f"{key}: {v!r} is not one of {', '.join(choices)}")
    if isinstance(obj, ClassificationParams) and obj.reframe_min_similarity >= obj.reframe_max_similarity:
        raise ParamsError(f"{where}: reframe_min_similarity must be below reframe_max_similarity")
    if isinstance(obj, TrajectoryParams) and obj.branch_percentile > obj.elab_percentile:
        raise ParamsError(f"{where}: branch_percentile must not exceed elab_percentile")
    if isinstance(obj, EncoderParams) and not obj.model:
        raise ParamsError(f"{where}.model: the encoder model must not be empty")


def load_params(config: str | None = None, overrides: list[str] | tuple[str, ...] = ()) -> Params:
    """Parameters from a YAML file (its ``analysis`` section, or the whole file) plus ``section.key=value`` overrides."""
    import yaml

    from .yamlread import load_yaml, read_yaml

    data: dict[str, Any] = {}
    where = "analysis"
    if config:
        try:
            loaded = read_yaml(config) or {}
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise ParamsError(f"{config}: cannot read the configuration: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ParamsError(f"{config}: expected a mapping at the top level")
        data = loaded.get("analysis", loaded) if "analysis" in loaded else loaded
        where = f"{config}: analysis" if "analysis" in loaded else config
        data = json.loads(json.dumps(data))  # a deep copy that overrides may edit
    for item in overrides:
        key, sep, raw = item.partition("=")
        parts = key.strip().split(".")
        if not sep or len(parts) != 2 or not all(parts):
            raise ParamsError(f"override {item!r}: expected section.key=value, e.g. trajectory.elab_percentile=70")
        data.setdefault(parts[0], {})
        if not isinstance(data[parts[0]], dict):
            raise ParamsError(f"override {item!r}: {parts[0]} is not a section")
        try:
            data[parts[0]][parts[1]] = load_yaml(raw, f"override {item!r}")
        except (ValueError, yaml.YAMLError) as exc:
            raise ParamsError(f"override {item!r}: {exc}") from None
    return Params.from_dict(data, where)
