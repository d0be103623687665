"""Writing results: atomic files, Parquet tables, graph JSON/GraphML, and provenance blocks.

Every file is written to a temporary name in the same folder and renamed into place, so a killed process
leaves either the old file or the new one, never a partial one. Files get the mode an ordinary ``open`` would
give them (``0o666`` less the umask), so results on a shared cluster are readable by collaborators when the
umask allows it (``mkstemp`` alone would create them ``0600``). Provenance records the thinkprobe version,
a hash of the source of the modules that produced the output, the parameters and the sha256 of each input.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

from . import __version__

PACKAGE_DIR = Path(__file__).resolve().parent


def current_umask() -> int:
    """The process umask, read without changing it (Linux ``/proc``), else by setting and restoring it."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file + rename), with the umask's file mode."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=1, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def write_table(path: str | os.PathLike, table, metadata: Mapping[str, Any] | None = None) -> None:
    """Write a pandas DataFrame (or a list of row dicts) as Parquet, atomically, with optional metadata."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = table if isinstance(table, pd.DataFrame) else pd.DataFrame(list(table))
    arrow = pa.Table.from_pandas(df, preserve_index=False)
    if metadata:
        meta = dict(arrow.schema.metadata or {})
        meta[b"thinkprobe"] = json.dumps(metadata, default=_json_default).encode()
        arrow = arrow.replace_schema_metadata(meta)
    buf = pa.BufferOutputStream()
    pq.write_table(arrow, buf)
    atomic_write_bytes(path, buf.getvalue().to_pybytes())


def read_table_metadata(path: str | os.PathLike) -> dict[str, Any]:
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(b"thinkprobe")
    return json.loads(raw) if raw else {}


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def source_hash(modules: Iterable[str]) -> str:
    """sha256 over the source files of the named thinkprobe modules (e.g. ``"graph"``, ``"lexicons/cues.tsv"``)."""
    h = hashlib.sha256()
    for name in sorted(set(modules)):
        h.update(name.encode())
        rel = name if "/" in name or name.endswith((".tsv", ".txt")) else name.replace(".", "/") + ".py"
        if not (PACKAGE_DIR / rel).is_file() and (PACKAGE_DIR / name.replace(".", "/") / "__init__.py").is_file():
            rel = name.replace(".", "/") + "/__init__.py"  # a package named by its folder: its __init__
        h.update((PACKAGE_DIR / rel).read_bytes())
    return h.hexdigest()


def provenance(modules: Iterable[str], params: Mapping[str, Any] | None = None,
               inputs: Iterable[str | os.PathLike] = (), **extra: Any) -> dict[str, Any]:
    """The provenance block stored in every output."""
    mods = sorted(set(modules))
    block: dict[str, Any] = {
        "thinkprobe_version": __version__,
        "modules": mods,
        "source_sha256": source_hash(mods),
        "params": dict(params or {}),
        "inputs": {str(p): sha256_file(p) for p in inputs},
    }
    block.update(extra)
    return block


def write_graph(path: str | os.PathLike, graph, fmt: str = "json") -> None:
    """Write a Thought Graph as node-link JSON, or GraphML (nested attributes become JSON strings; characters
    XML cannot hold are replaced one for one and counted in ``xml_replaced_chars``, CR kept: :mod:`.xmlsafe`)."""
    if fmt == "json":
        write_json(path, graph.to_node_link())
        return
    if fmt != "graphml":
        raise ValueError(f"unknown graph format {fmt!r}: json or graphml")
    import io

    import networkx as nx

    from .xmlsafe import keep_carriage_returns, xml_safe

    g = graph.to_networkx()
    for key, value in list(g.graph.items()):
        if value is None:
            g.graph[key] = ""
        elif isinstance(value, (dict, list, tuple)):
            g.graph[key] = json.dumps(value, default=_json_default)
        elif hasattr(value, "item"):
            g.graph[key] = value.item()
    replaced = 0  # characters XML cannot hold, replaced one for one (thinkprobe.xmlsafe)
    for attrs in [g.graph, *(d for _, d in g.nodes(data=True)), *(d for _, _, d in g.edges(data=True))]:
        for key, value in attrs.items():
            if isinstance(value, str):
                attrs[key], n = xml_safe(value)
                replaced += n
    if replaced:
        g.graph["xml_replaced_chars"] = replaced
    buf = io.BytesIO()
    nx.write_graphml(g, buf)
    atomic_write_bytes(path, keep_carriage_returns(buf.getvalue()))
