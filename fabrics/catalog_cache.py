"""The catalog's rows as ``fabricsim list`` shows them, without building every fabric on every call.

A fabric's description, source and default parameters are read from the registry.  Its chip
and switch-ASIC counts and its ``inferred`` note come from the built graph, and building the
biggest catalog fabrics takes seconds (tpu8t-virgo: ~546,000 links), so those three figures are
cached in a JSON file.  The file's key is a hash of every source file under ``fabrics/`` and
``topo/`` (the builders, the device catalog, the graph contract): any edit there, or a new
version, gives a new key and the figures are counted again from fresh builds.  Only fabrics
registered by this package are cached; one registered at run time is built every time.

The cache lives in ``$FABRICSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/fabricsim``, else
``~/.cache/fabricsim``.  A missing, unreadable, foreign or stale file is rebuilt; a directory
that cannot be written only costs the builds.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["catalog_rows", "cache_path"]

_PACKAGE = Path(__file__).resolve().parents[1]
_SOURCES = ("fabrics", "topo")
_VERSION = 1   # of the file's layout


def _source_key() -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(f"layout {_VERSION}".encode())
    for sub in _SOURCES:
        for p in sorted((_PACKAGE / sub).rglob("*")):
            if p.suffix in (".py", ".toml", ".json") and p.is_file():
                h.update(str(p.relative_to(_PACKAGE)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()


def cache_path(cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache file: ``catalog-<key>.json`` in ``cache_dir`` or the default directory."""
    if cache_dir is None:
        cache_dir = os.environ.get("FABRICSIM_CACHE_DIR")
    if not cache_dir:
        try:
            base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        except (RuntimeError, KeyError):   # no home directory: a temporary one (the builds are then repeated)
            base = tempfile.gettempdir()
        cache_dir = Path(base) / "fabricsim"
    return Path(cache_dir) / f"catalog-{_source_key()}.json"


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    fabrics = data.get("fabrics") if isinstance(data, dict) else None
    if not isinstance(fabrics, dict):
        return {}
    ok = {}
    for name, row in fabrics.items():   # a hand-edited or truncated entry is counted again
        if (isinstance(row, dict) and isinstance(row.get("chips"), int) and isinstance(row.get("switches"), int)
                and isinstance(row.get("inferred"), str)):
            ok[name] = row
    return ok


def _write(path: Path, fabrics: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".catalog-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"layout": _VERSION, "fabrics": fabrics}, fh, indent=1, sort_keys=True)
        os.replace(tmp, path)   # another process reading it sees the old file or the new one, whole
        for old in path.parent.glob("catalog-*.json"):   # files of older sources are never read again
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass


def _counts(name: str) -> dict:
    """Build ``name`` and count what the list shows: chips, physical switch ASICs, the inferred note."""
    from ..topo.contract import CHIP, KIND, SWITCH, asics_of
    from .registry import build
    G = build(name)
    return {"chips": sum(1 for _, d in G.nodes(data=True) if d.get(KIND) == CHIP),
            "switches": sum(asics_of(d) for _, d in G.nodes(data=True) if d.get(KIND) == SWITCH),
            "inferred": str(G.graph.get("inferred", ""))}


def catalog_rows(names=None, *, cache_dir: str | os.PathLike | None = None,
                 progress: Callable[[str], None] | None = None) -> list[dict]:
    """One row per catalog fabric: name, chips, switches, description, source, inferred, params.

    Parameters
    ----------
    names : iterable of str, optional
        Catalog names (default: the whole catalog, sorted).
    cache_dir : path, optional
        Where the counts are cached (default: see the module docstring).
    progress : callable, optional
        Told once when fabrics have to be built (a cold or stale cache).

    Returns
    -------
    list of dict
        ``params`` maps each builder parameter to its default.

    Examples
    --------
    >>> import tempfile
    >>> row, = catalog_rows(["nvl72"], cache_dir=tempfile.mkdtemp())
    >>> row["chips"], row["switches"]
    (72, 18)
    """
    from .registry import FABRICS, _fabric, param_specs
    names = sorted(FABRICS) if names is None else list(names)
    fabs = [_fabric(n) for n in names]
    path = cache_path(cache_dir)
    cached = _read(path)
    ours = {f.name for f in fabs if f.builder.__module__.startswith(__package__.split(".")[0] + ".")}
    missing = [f.name for f in fabs if f.name not in cached or f.name not in ours]
    if missing and progress is not None:
        progress(f"building {len(missing)} fabric(s) to count their chips and switches"
                 + (f" (caching the counts in {path.parent})" if set(missing) & ours else ""))
    fresh = {n: _counts(n) for n in missing}
    stored = {n: row for n, row in fresh.items() if n in ours}
    if stored:
        _write(path, {**cached, **stored})
    counts = {**cached, **fresh}
    return [{"name": f.name, "chips": counts[f.name]["chips"], "switches": counts[f.name]["switches"],
             "description": f.description, "source": f.source, "inferred": counts[f.name]["inferred"],
             "params": {k: p.default for k, p in param_specs(f.name).items()}} for f in fabs]
