"""Calibration files: measured constants for the step cost model, per collective, algorithm and protocol.

A calibration is a TOML file (``--calibration cal.toml``).  Every part is optional;
flat keys apply to every collective, sections narrow them down, and the most
specific value wins (``Calibration.lookup``)::

    efficiency = 0.9              # flat: every collective
    step_latency_us = 1.0
    [all-reduce]                  # per collective
    efficiency = 0.47
    base_latency_us = 12.0
    [all-reduce.nvls]             # per collective + algorithm
    step_latency_us = 2.0
    [all-reduce.nvls.simple]      # per collective + algorithm + protocol (ll | ll128 | simple | ideal)
    efficiency = 0.5

Parameters (`PARAMS`; floats, integers accepted; booleans, strings, nan and inf refused):

* ``efficiency`` in (0, 1]: the fraction of the raw line rate the kernels and transport
  deliver.  It replaces the fabric family's default; a protocol's own bandwidth fraction
  (LL 1/2, LL128 120/128 ...) still multiplies on top.
* ``base_latency_us`` >= 0: fixed latency added once per collective (NCCL's ``baseLat``).
* ``step_latency_us`` >= 0: latency added per step (per hop / pipeline step); what
  ``price(step_overhead_ns=)`` and ``--step-latency-us`` mean (ns = us x 1000).

Collective and algorithm names are those of `fabricsim.collectives.algorithms.ALGORITHMS`;
protocols are `PROTOCOLS`.  Every mistake is one `~fabricsim.topo.errors.BadInput` line
``FILE: where: what is wrong; valid choices``.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10: the backport pyproject declares
    import tomli as tomllib

from ...topo.errors import BadInput, close_matches
from ...topo.inputs import read_input_text

__all__ = ["Calibration", "PARAMS", "PROTOCOLS", "load_calibration", "calibration_from_dict",
           "dumps_calibration"]

# name -> (low, high, low_inclusive); high is always inclusive (inf: no upper bound)
PARAMS: dict[str, tuple[float, float, bool]] = {
    "efficiency": (0.0, 1.0, False),
    "base_latency_us": (0.0, math.inf, True),
    "step_latency_us": (0.0, math.inf, True),
}
PROTOCOLS = ("ll", "ll128", "simple", "ideal")


def _algorithms() -> Mapping[str, Mapping]:
    from ..algorithms import ALGORITHMS       # late: collectives imports cost
    return ALGORITHMS


def _frozen(d: Mapping) -> Mapping:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class Calibration:
    """Measured model constants: ``flat`` for every collective, ``sections`` narrower.

    ``sections`` maps ``"all-reduce"``, ``"all-reduce.nvls"`` or
    ``"all-reduce.nvls.simple"`` to that section's parameters; ``path`` names the
    file it was read from (None when built in code).

    Examples
    --------
    >>> cal = calibration_from_dict({"efficiency": 0.9, "all-reduce": {"efficiency": 0.5,
    ...                              "nvls": {"simple": {"step_latency_us": 2}}}})
    >>> cal.lookup("all-reduce", "nvls", "simple")
    {'efficiency': 0.5, 'step_latency_us': 2.0}
    >>> cal.lookup("all-gather", "ring", "ll")
    {'efficiency': 0.9}
    """
    flat: Mapping[str, float] = field(default_factory=dict)
    sections: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    path: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "flat", _frozen(self.flat))
        object.__setattr__(self, "sections", _frozen({k: _frozen(v) for k, v in self.sections.items()}))

    def __hash__(self):
        return hash((tuple(sorted(self.flat.items())),
                     tuple(sorted((k, tuple(sorted(v.items()))) for k, v in self.sections.items())),
                     self.path))

    def lookup(self, collective: str, algorithm: str | None, protocol: str | None) -> dict[str, float]:
        """Merged params, most specific wins: flat < collective < collective.algorithm < ...protocol.

        ``algorithm`` None stops at the collective's section, ``protocol`` None at the
        algorithm's (an engine without that choice).
        """
        return merged(self.flat, self.sections, collective, algorithm, protocol)


def merged(flat: Mapping[str, float], sections: Mapping[str, Mapping[str, float]], collective: str,
           algorithm: str | None, protocol: str | None) -> dict[str, float]:
    """``flat`` updated by the sections of ``collective``, then ``.algorithm``, then ``.protocol``
    (a None part stops there): the lookup every calibration holder shares."""
    out = dict(flat)
    key = str(collective)
    out.update(sections.get(key, {}))
    for part in (algorithm, protocol):
        if part is None:
            break
        key = f"{key}.{str(part).lower()}"
        out.update(sections.get(key, {}))
    return out


def _where(parts) -> str:
    return ".".join(parts) if parts else "top level"


def _value(path, parts, key, value) -> float:
    low, high, low_incl = PARAMS[key]
    at = ".".join((*parts, key))
    rng = f"{low:g} {'<=' if low_incl else '<'} {key}" + (f" <= {high:g}" if math.isfinite(high) else "")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = repr(value) if isinstance(value, (bool, str, int, float)) else type(value).__name__
        raise BadInput(f"{path}: {at} = {shown[:40]} is not a number; expected a number with {rng}")
    v = float(value)
    if not math.isfinite(v):
        raise BadInput(f"{path}: {at} = {v} is not finite; expected a number with {rng}")
    if v < low or (v == low and not low_incl) or v > high:
        raise BadInput(f"{path}: {at} = {v:g} is out of range; expected {rng}")
    return v


def calibration_from_dict(data: dict, path: str = "<dict>") -> Calibration:
    """Validate a parsed calibration (the TOML as nested dicts) into a `Calibration`.

    Raises
    ------
    BadInput
        One line naming ``path``, the key and the valid choices or range.

    Examples
    --------
    >>> calibration_from_dict({"all-reduce": {"nvls": {"fast": {}}}})
    Traceback (most recent call last):
    ...
    fabricsim.topo.errors.BadInput: <dict>: all-reduce.nvls: unknown protocol 'fast'; valid: \
efficiency, base_latency_us, step_latency_us or a protocol section: ll, ll128, simple, ideal
    """
    if not isinstance(data, Mapping):
        raise BadInput(f"{path}: expected a table of calibration keys, got {type(data).__name__}")
    algos = _algorithms()
    flat: dict[str, float] = {}
    sections: dict[str, dict[str, float]] = {}

    def walk(table, parts, out):
        # level 0: params or collectives; 1: params or algorithms; 2: params or protocols; 3: params
        level = len(parts)
        if level == 0:
            kind, names = "collective", tuple(algos)
        elif level == 1:
            kind, names = "algorithm", tuple(algos[parts[0]])
        elif level == 2:
            kind, names = "protocol", PROTOCOLS
        else:
            kind, names = None, ()
        for key, value in table.items():
            key = str(key)
            if key in PARAMS:
                out[key] = _value(path, parts, key, value)
                continue
            if key not in names:
                valid = ", ".join(PARAMS) + (f" or a {kind} section: {', '.join(names)}" if kind else "")
                what = f"unknown {kind}" if kind and isinstance(value, Mapping) else "unknown key"
                raise BadInput(f"{path}: {_where(parts)}: {what} {key[:60]!r}"
                               f"{close_matches(key, (*PARAMS, *names))}; valid: {valid}")
            if not isinstance(value, Mapping):
                raise BadInput(f"{path}: {'.'.join((*parts, key))} must be a table ([{'.'.join((*parts, key))}]) "
                               f"of {', '.join(PARAMS)}, got {type(value).__name__}")
            sub: dict[str, float] = {}
            walk(value, (*parts, key), sub)
            if sub:
                sections[".".join((*parts, key))] = sub

    walk(data, (), flat)
    return Calibration(flat=flat, sections=sections, path=None if path == "<dict>" else path)


def load_calibration(path) -> Calibration:
    """Read a calibration TOML file (see the module docstring for the format).

    Raises
    ------
    BadInput
        ``FILE: ...`` one line: missing, a directory, unreadable, not UTF-8, bad TOML,
        unknown key, collective, algorithm or protocol, a value of the wrong type,
        nan/inf, or out of range.

    Examples
    --------
    >>> load_calibration("/")
    Traceback (most recent call last):
    ...
    fabricsim.topo.errors.BadInput: /: is a directory; expected a calibration TOML file
    """
    name = os.fspath(path)
    text = read_input_text(name, "a calibration TOML file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{name}: bad TOML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise BadInput(f"{name}: bad TOML: tables nested too deeply") from None
    return calibration_from_dict(data, name)


def _num(v: float) -> str:
    text = repr(float(v))
    return text if any(c in text for c in ".en") else text + ".0"


def dumps_calibration(cal: Calibration, header: str = "") -> str:
    """TOML text for ``cal`` that `load_calibration` reads back equal.

    ``header`` is written first as ``#`` comment lines.

    Examples
    --------
    >>> cal = calibration_from_dict({"efficiency": 1, "all-reduce": {"nvls": {"step_latency_us": 2.5}}})
    >>> print(dumps_calibration(cal, header="fit of x.log"))
    # fit of x.log
    efficiency = 1.0
    <BLANKLINE>
    [all-reduce.nvls]
    step_latency_us = 2.5
    <BLANKLINE>
    """
    lines = [f"# {h}".rstrip() for h in header.splitlines()] if header else []
    lines += [f"{k} = {_num(v)}" for k, v in cal.flat.items()]
    for sec, params in cal.sections.items():
        if lines:
            lines.append("")
        lines.append(f"[{sec}]")
        lines += [f"{k} = {_num(v)}" for k, v in params.items()]
    return "\n".join(lines) + "\n"
