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


class ParamsError(ValueError):
    """A parameter key or value is not acceptable; the message names the key and what is allowed."""


@dataclass(frozen=True)
class InputParams:
    """Which traces are analysed at all (input validation, before layer 1)."""

    require_think: bool = True  # paper §7: the framework needs <think> traces; False analyses the whole text
    min_words: int = 80  # ours: shorter traces carry too little structure to profile
    max_trace_bytes: int = 2_000_000  # ours: ~500k tokens, beyond any model's context; larger is excluded


@dataclass(frozen=True)
class SegmentationParams:
    """Layer 1, structural segmentation (paper §3.4)."""

    branch_header_max_tokens: int = 12  # a branch header under 12 tokens absorbs its following span
    min_span_sentences: int = 2  # a none span under 2 sentences ...
    min_span_tokens: int = 30  # ... or under 30 tokens merges forward
    cue_lexicon: str = ""  # path of a cue lexicon; empty = the packaged lexicons/cues.tsv


@dataclass(frozen=True)
class TextTilingParams:
    """Layer 2, soft boundary detection by TextTiling (paper §3.4)."""

    enabled: bool = True
    window: int = 3  # sentences in each half-window
    prominence: float = 0.15  # minimum prominence of a similarity minimum
    threshold_percentile: float = 30.0  # tau = P30 of the trace's inter-sentence cosines
    min_sentences: int = 6  # ours: a none span is "long" (tiled) from 2 x window sentences


@dataclass(frozen=True)
class TrajectoryParams:
    """Layer 3, semantic trajectory (paper §3.4)."""

    branch_percentile: float = 25.0  # tau_branch = P25 of consecutive-TU cosines
    elab_percentile: float = 65.0  # tau_elab = P65


@dataclass(frozen=True)
class CrossSegmentParams:
    """Layer 4, cross-segment arcs (paper §3.4) and our CRIT definition."""

    synthesis_similarity: float = 0.50  # cosine to a prior segment centroid
    synthesis_min_segments: int = 2  # bridged prior segments needed for synthesis
    revision_min_index: int = 4  # revision arcs for v_j with j > 4
    revision_min_gap: int = 4  # j - i >= 4
    revision_divergence_window: int = 4  # some TU in (i, i+4) ...
    revision_divergence_similarity: float = 0.45  # ... below 0.45 to v_i
    revision_similarity: float = 0.65  # BACK when sim(v_j, v_i) > 0.65
    critique_similarity: float = 0.50  # ours: CRIT from a backtrack TU when sim > 0.50


@dataclass(frozen=True)
class ClassificationParams:
    """Node classification rules 4-5 (paper §3.4): RFR when 0.25 < cos(v, v0) < 0.72."""

    reframe_min_similarity: float = 0.25
    reframe_max_similarity: float = 0.72


@dataclass(frozen=True)
class MetricParams:
    """Constants of the 19 metrics (paper §3.5)."""

    domain_spread_similarity: float = 0.45  # DS: agglomerative clustering threshold
    first_ideas: int = 3  # FID: the first three HYP nodes
    redundancy_similarity: float = 0.75  # RR: pairs above 0.75
    hedge_lexicon: str = ""  # path of a hedge lexicon; empty = the packaged lexicons/hedges.txt


@dataclass(frozen=True)
class EncoderParams:
    """The sentence encoder (paper: all-MiniLM-L6-v2)."""

    model: str = "all-MiniLM-L6-v2"  # packaged weights; or a sentence-transformers id or a local path
    backend: str = "auto"  # auto | onnx | sentence-transformers
    batch_size: int = 16
    max_seq_length: int = 256  # the model's own limit


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
    encoder: EncoderParams = field(default_factory=EncoderParams)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, where: str = "analysis") -> "Params":
        """Build from a nested mapping; missing keys keep their defaults, unknown keys are an error."""
        data = data or {}
        if not isinstance(data, dict):
            raise ParamsError(f"{where}: expected a mapping of sections, got {type(data).__name__}")
        sections = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(sections))
        if unknown:
            raise ParamsError(f"{where}: unknown section(s) {unknown}; allowed: {sorted(sections)}")
        built = {}
        for name, f in sections.items():
            built[name] = _section_from_dict(f.default_factory, data.get(name), f"{where}.{name}")
        return cls(**built)


def _section_from_dict(section_cls, data: dict[str, Any] | None, where: str):
    data = data or {}
    if not isinstance(data, dict):
        raise ParamsError(f"{where}: expected a mapping, got {type(data).__name__}")
    allowed = {f.name: f for f in fields(section_cls)}
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ParamsError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    defaults = section_cls()
    values = {}
    for name, value in data.items():
        expected = type(getattr(defaults, name))
        values[name] = _coerce(value, expected, f"{where}.{name}")
    obj = section_cls(**values)
    _check_ranges(obj, where)
    return obj


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


_PERCENTILES = {"threshold_percentile", "branch_percentile", "elab_percentile"}
_POSITIVE_INTS = {"window", "min_sentences", "first_ideas", "batch_size", "max_seq_length", "max_trace_bytes",
                  "synthesis_min_segments", "revision_divergence_window"}
_NON_NEGATIVE_INTS = {"min_words", "branch_header_max_tokens", "min_span_sentences", "min_span_tokens",
                      "revision_min_index", "revision_min_gap"}


def _check_ranges(obj, where: str) -> None:
    for f in fields(obj):
        v = getattr(obj, f.name)
        key = f"{where}.{f.name}"
        if f.name in _PERCENTILES and not 0.0 <= v <= 100.0:
            raise ParamsError(f"{key}: {v} is not a percentile in [0, 100]")
        if f.name in _POSITIVE_INTS and v < 1:
            raise ParamsError(f"{key}: {v} must be >= 1")
        if f.name in _NON_NEGATIVE_INTS and v < 0:
            raise ParamsError(f"{key}: {v} must be >= 0")
        if (f.name.endswith("_similarity") or f.name == "prominence") and not -1.0 <= v <= 2.0:
            raise ParamsError(f"{key}: {v} is not a cosine-scale value in [-1, 2]")
    if isinstance(obj, ClassificationParams) and obj.reframe_min_similarity >= obj.reframe_max_similarity:
        raise ParamsError(f"{where}: reframe_min_similarity must be below reframe_max_similarity")
    if isinstance(obj, TrajectoryParams) and obj.branch_percentile > obj.elab_percentile:
        raise ParamsError(f"{where}: branch_percentile must not exceed elab_percentile")
    if isinstance(obj, EncoderParams) and not obj.model:
        raise ParamsError(f"{where}.model: the encoder model must not be empty")
    if isinstance(obj, EncoderParams) and obj.backend not in ("auto", "onnx", "sentence-transformers"):
        raise ParamsError(f"{where}.backend: {obj.backend!r} is not one of auto, onnx, sentence-transformers")


def load_params(config: str | None = None, overrides: list[str] | tuple[str, ...] = ()) -> Params:
    """Parameters from a YAML file (its ``analysis`` section, or the whole file) plus ``section.key=value`` overrides."""
    import yaml

    data: dict[str, Any] = {}
    where = "analysis"
    if config:
        try:
            with open(config, encoding="utf-8") as fh:
                loaded = yaml.safe_load(fh) or {}
        except (OSError, yaml.YAMLError) as exc:
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
        data[parts[0]][parts[1]] = yaml.safe_load(raw)
    return Params.from_dict(data, where)
