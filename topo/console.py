"""What a run says while it works, and results as JSON: one progress printer and one JSON emitter.

A notebook user and the CLI share them: ``progress`` is the ``progress=`` callback the long-running
entry points take (``sweep``, ``mix``, ``serve``, ``design`` ...); ``to_json`` is what ``--json`` prints.
"""
from __future__ import annotations

import json
import sys

__all__ = ["progress", "to_json"]


def progress(msg: str) -> None:
    """Write ``fabricsim: msg`` to stderr (stdout stays the result's alone)."""
    print(f"fabricsim: {msg}", file=sys.stderr, flush=True)


def _default(o):
    if hasattr(o, "as_dict"):
        return o.as_dict()
    if hasattr(o, "item"):      # a numpy scalar
        return o.item()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def to_json(obj) -> str:
    """``obj`` (results' ``as_dict()``, numpy scalars, sets) as indented JSON text, keys in their order.

    Examples
    --------
    >>> print(to_json({"a": (1, 2)}))
    {
      "a": [
        1,
        2
      ]
    }
    """
    return json.dumps(obj, indent=2, sort_keys=False, default=_default)
