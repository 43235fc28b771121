"""Delay jobs of a mix: time that passes on no link (a rank's compute between its collectives).

A delay job is a :class:`~fabricsim.collectives.jobs.mix.Job` of collective ``"delay"`` with
``delay_s`` seconds and no groups.  In the mix it starts when the jobs it comes ``after`` have
finished, like any job, and ends ``delay_s`` later; it moves no bytes, so it slows no other job.
In a ``[[job]]`` table::

    [[job]]
    name = "rank0 attention"
    collective = "delay"
    duration = "120us"          # or seconds as a number; s, ms, us, ns
    after = ["tp0 all-reduce"]

The mix walks a job as steps of (latency, flows); a delay is one step of latency ``delay_s``
and no flows, so the event loop needs no case of its own.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ...topo.errors import BadInput

__all__ = ["DELAY", "DELAY_KEYS", "delay_job", "delay_plan", "parse_duration"]

DELAY = "delay"
DELAY_KEYS = ("name", "collective", "duration", "after")
_UNITS_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def parse_duration(v) -> float:
    """``"120us"``, ``"1.5 ms"`` or seconds as a number -> seconds (finite, >= 0)."""
    if isinstance(v, bool):
        raise BadInput(f"duration {v!r} is not a time")
    if isinstance(v, (int, float)):
        value = float(v)
    elif isinstance(v, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-z]*)\s*", v)
        if not m or m[2] not in _UNITS_S:
            raise BadInput(f"duration {v!r} is not a time; use seconds or a number with s, ms, us, ns")
        value = float(m[1]) * _UNITS_S[m[2]]
    else:
        raise BadInput(f"duration {v!r} is not a time")
    if not (math.isfinite(value) and value >= 0):
        raise BadInput(f"duration {v!r} must be a finite time >= 0")
    return value


def delay_job(t: dict, label: str):
    """A ``[[job]]`` table of collective ``delay`` -> a delay :class:`Job`."""
    from .mix import Job
    for key in t:
        if key not in DELAY_KEYS:
            raise BadInput(f"{label}: unknown key {key!r} for a delay; valid: {', '.join(DELAY_KEYS)}")
    if "duration" not in t:
        raise BadInput(f"{label}: a delay needs duration (e.g. \"120us\")")
    try:
        d = parse_duration(t["duration"])
    except BadInput as exc:
        raise BadInput(f"{label}: {exc}") from None
    after = t.get("after", [])
    if isinstance(after, str):
        after = [after]
    if not isinstance(after, list) or not all(isinstance(a, str) for a in after):
        raise BadInput(f"{label}: after {after!r} must be a list of job names")
    return Job(t["name"], DELAY, (), None, None, DELAY, tuple(after), delay_s=d)


@dataclass(frozen=True)
class _DelayPhase:
    """One step of latency and no flows (the fields the mix's router reads)."""

    name: str = DELAY
    repeat: int = 1
    in_network: bool = False
    size_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    src: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    dst: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass(frozen=True)
class _DelayReport:
    """What the mix reads of a job's price report: a delay alone takes its duration."""

    time_s: float
    algorithm: str = DELAY
    link_bytes: None = None
    partial: bool = False
    notes: tuple = ()
    groups: int = 0
    group_size: int = 0
    base_latency_s: float = 0.0


def delay_plan(job, plan_cls):
    """The mix's plan of a delay job: one step of ``delay_s`` latency, no flows."""
    d = float(job.delay_s)
    if not (math.isfinite(d) and d >= 0):
        raise BadInput(f"job {job.name!r}: delay {d!r} s must be a finite time >= 0")
    return plan_cls(job, _DelayReport(d), [_DelayPhase()], [0.0], [d], (DELAY, job.name), 0.0, [1.0])
