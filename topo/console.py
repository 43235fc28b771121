"""What a run says while it works, and results as JSON: one progress printer and one JSON emitter.

A notebook user and the CLI share them: ``progress`` is the ``progress=`` callback the long-running
entry points take (``sweep``, ``mix``, ``serve``, ``design`` ...); ``to_json`` is what ``--json`` prints.
"""
from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager

__all__ = ["progress", "timed", "to_json"]


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


@contextmanager
def timed(what: str, threshold_s: float = 2.0, say=None):
    """Say ``{what} in N s`` (through ``say``, default :func:`progress`) when the block took over ``threshold_s``.

    Examples
    --------
    >>> with timed("priced", say=print):
    ...     pass
    """
    t0 = time.perf_counter()
    yield
    if time.perf_counter() - t0 > threshold_s:
        (say or progress)(f"{what} in {time.perf_counter() - t0:.1f} s")
