"""Layer 1 of the extraction pipeline: structural segmentation into spans with boundary classes.

Paper §3.4, "Layer 1": markdown headers (``#``..``######``) and standalone bold lines are ``branch``
spans; each list item is one span; paragraphs break at blank lines and at single newlines where the
previous line ends a sentence and the next starts with an uppercase letter. The first sentence of each
``none`` span is matched against the cue lexicon (meta, convergence, backtrack, contrast, support). Then
short spans merge: a branch header under 12 tokens absorbs its following span; a ``none`` paragraph under
2 sentences or 30 tokens merges forward into the adjacent ``none`` paragraph.

Readings where the paper is silent (documented choices):

* List items are never merged: the paper makes each list item one TU, and merging short spans would undo
  that for nearly every item.
* A header absorbs exactly one following span, whatever its class; the result is a ``branch`` span.
* Text inside fenced code blocks is content of the enclosing paragraph, never a header or list item.
* Offsets are character offsets into the reasoning text; a span's text is ``text[start:end]`` verbatim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .lexicon import CueLexicon, load_cues
from .params import SegmentationParams
from .text import count_tokens

BOUNDARY_CLASSES = ("none", "branch", "meta", "convergence", "backtrack", "contrast", "support")

_HEADER = re.compile(r"^ {0,3}#{1,6}[ \t]+\S")
_BOLD_LINE = re.compile(r"^\s*(\*\*|__)(?=\S)(?:(?!\1).)+?(?<=\S)\1\s*:?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+\S")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_ENDS_SENTENCE = re.compile(r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]*_]*\s*$")
_LEADING_MARKUP = re.compile(r"^[\s*_\"'\u201c\u2018(\[>]+")
_SENT_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]*_]*|[\u3002\uff01\uff1f]+[\"'\u201d\u2019)\]]*")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf al mr mrs ms dr prof st no fig approx eq resp viz ca inc ltd jr sr".split()
)


@dataclass(slots=True)
class Span:
    """A contiguous stretch of the reasoning text: a candidate Thought Unit.

    ``sentences`` are absolute ``(start, end)`` character offsets; ``kind`` is ``header``, ``list_item``
    or ``paragraph``; ``origin`` says whether the span was made by layer 1 or split off by layer 2.
    """

    start: int
    end: int
    kind: str
    boundary: str = "none"
    sentences: list[tuple[int, int]] = field(default_factory=list)
    origin: str = "structural"

    def text(self, source: str) -> str:
        return source[self.start:self.end]


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence offsets inside ``text[start:end]``.

    A sentence ends at ``.``, ``!`` or ``?`` (plus closing quotes/brackets) followed by whitespace and a
    character that is not a lowercase letter, unless the word before is a known abbreviation; CJK
    terminal punctuation always ends a sentence.

    >>> s = "We know x = 3.5 here. Then, e.g. more. 好的。下一步"
    >>> [s[a:b] for a, b in split_sentences(s)]
    ['We know x = 3.5 here.', 'Then, e.g. more.', '好的。', '下一步']
    """
    end = len(text) if end is None else end
    out: list[tuple[int, int]] = []
    cur = _skip_space(text, start, end)
    for m in _SENT_END.finditer(text, start, end):
        e = m.end()
        if e <= cur:
            continue
        punct = text[m.start()]
        if punct in ".!?":
            if e < end and not text[e].isspace():
                continue
            nxt = _skip_space(text, e, end)
            if nxt < end and text[nxt].islower():
                continue
            if punct == "." and _is_abbreviation(text, cur, m.start()):
                continue
        out.append((cur, e))
        cur = _skip_space(text, e, end)
    if cur < end:
        tail_end = end
        while tail_end > cur and text[tail_end - 1].isspace():
            tail_end -= 1
        if tail_end > cur:
            out.append((cur, tail_end))
    return out


def _skip_space(text: str, i: int, end: int) -> int:
    while i < end and text[i].isspace():
        i += 1
    return i


def _is_abbreviation(text: str, lo: int, dot: int) -> bool:
    j = dot
    while j > lo and (text[j - 1].isalpha() or text[j - 1] == "."):
        j -= 1
    word = text[j:dot].lower()
    return word in _ABBREVIATIONS


def _starts_upper(line: str) -> bool:
    body = _LEADING_MARKUP.sub("", line)
    return bool(body) and body[0].isupper()


def structural_blocks(text: str) -> list[Span]:
    """Cut ``text`` into header, list-item and paragraph spans (no cue classes, no merging yet)."""
    spans: list[Span] = []
    cur: Span | None = None
    in_fence = False
    prev_content = ""
    pos = 0
    for line in text.splitlines(keepends=True):
        line_start = pos
        pos += len(line)
        content = line.rstrip("\r\n")
        stripped = content.strip()
        ls = line_start + (len(content) - len(content.lstrip()))
        le = line_start + len(content.rstrip())
        if in_fence:
            if cur is None:
                cur = Span(ls, le, "paragraph")
            elif stripped:
                cur.end = le
            if _FENCE.match(content):
                in_fence = False
            prev_content = content
            continue
        if not stripped or _RULE.match(content):
            if cur is not None:
                spans.append(cur)
                cur = None
            prev_content = content
            continue
        if _FENCE.match(content):
            in_fence = True
            if cur is None:
                cur = Span(ls, le, "paragraph")
            else:
                cur.end = le
            prev_content = content
            continue
        if _HEADER.match(content) or _BOLD_LINE.match(content):
            if cur is not None:
                spans.append(cur)
                cur = None
            spans.append(Span(ls, le, "header", "branch"))
            prev_content = content
            continue
        if _LIST_ITEM.match(content):
            if cur is not None:
                spans.append(cur)
            cur = Span(ls, le, "list_item")
            prev_content = content
            continue
        if cur is None:
            cur = Span(ls, le, "paragraph")
        elif cur.kind == "list_item" and content[:1] in (" ", "\t"):
            cur.end = le
        elif _ENDS_SENTENCE.search(prev_content) and _starts_upper(stripped):
            spans.append(cur)
            cur = Span(ls, le, "paragraph")
        else:
            cur.end = le
        prev_content = content
    if cur is not None:
        spans.append(cur)
    for span in spans:
        span.sentences = split_sentences(text, span.start, span.end) or [(span.start, span.end)]
    return spans


def classify_cues(spans: list[Span], text: str, lexicon: CueLexicon) -> None:
    """Give each ``none`` span the class its first sentence announces (in place)."""
    for span in spans:
        if span.boundary == "none" and span.sentences:
            a, b = span.sentences[0]
            span.boundary = lexicon.classify(text[a:b])


def merge_short_spans(spans: list[Span], text: str, params: SegmentationParams) -> list[Span]:
    """Apply the two merging rules of layer 1 and return the merged span list."""
    absorbed: list[Span] = []
    i = 0
    while i < len(spans):
        s = spans[i]
        if (s.kind == "header" and s.boundary == "branch" and i + 1 < len(spans)
                and count_tokens(s.text(text)) < params.branch_header_max_tokens):
            nxt = spans[i + 1]
            absorbed.append(Span(s.start, nxt.end, "header", "branch", s.sentences + nxt.sentences))
            i += 2
        else:
            absorbed.append(s)
            i += 1

    def is_short(s: Span) -> bool:
        return (len(s.sentences) < params.min_span_sentences
                or count_tokens(s.text(text)) < params.min_span_tokens)

    out: list[Span] = []
    pending: Span | None = None
    for s in absorbed:
        mergeable = s.boundary == "none" and s.kind == "paragraph"
        if pending is not None:
            if mergeable:
                s = Span(pending.start, s.end, "paragraph", "none", pending.sentences + s.sentences)
            else:
                out.append(pending)
            pending = None
        if mergeable and is_short(s):
            pending = s
        else:
            out.append(s)
    if pending is not None:
        out.append(pending)
    return out


def segment(text: str, params: SegmentationParams | None = None, lexicon: CueLexicon | None = None) -> list[Span]:
    """Layer 1: the structural spans of ``text`` with boundary classes, after merging.

    >>> [s.boundary for s in segment("## Plan\\n\\nWait, that is wrong. It fails.")]
    ['branch']
    """
    params = params or SegmentationParams()
    lexicon = lexicon or load_cues(params.cue_lexicon or None)
    spans = structural_blocks(text)
    classify_cues(spans, text, lexicon)
    return merge_short_spans(spans, text, params)
