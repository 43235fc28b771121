"""Failure atlas: every failure class of a fabric, N-1, with its blast radius and slowdowns; availability.

Public names
------------
Atlas, AtlasClass, atlas
    For one workload (collective, groups, size), every failure class of the fabric (or
    those named) swept N-1 by the existing sweep (orbit-folded, exact), one row per
    class: scenarios, orbits solved, blast radius (chips and groups affected, at most),
    slowdown min / median / max and the worst scenario.  A class that cannot be run
    within the bounds (``max_orbits``, ``budget_s``) or that the sweep refuses is kept
    with a one-line reason, never run unbounded.
Rates, load_rates, DEFAULT_RATES_PATH
    Per failure class an annualised failure rate per element and a mean repair time,
    from ``failure_rates.toml`` (cited, F/D/I labelled) or a user file over it.
Availability, availability
    From an atlas and rates: per class the expected fraction of the year degraded, the
    fraction the collective cannot run at all, and the year's time-weighted slowdown;
    analytic (rare independent failures) and, with ``samples``, a seeded Monte Carlo.
plot_atlas
    One figure: the slowdowns of every class as a box per class.

How a class is run
------------------
:func:`~fabricsim.collectives.whatif.sweeps.sweep` with ``n=1``, folding on, and a
runner that wraps the caller's (local, process pool or Dask): each orbit representative
is priced by :func:`~fabricsim.collectives.whatif.scenario.whatif` against the intact price
(computed once for the whole atlas), so a scenario carries the sweep's fields and
whatif's blast radius: ``chips_affected`` (chips of whatif's ``affected_chips`` that were lost,
cut off, or are in a group whose time changed or that broke), ``groups_affected``
(``len(affected_groups)``: groups slowed or broken) and ``chips_touched``
(``affected_chips["count"]``: also chips whose link capacity changed with no effect on their group).  Both are orbit
invariants (a symmetry maps chips onto chips and groups onto groups), so every member of an
orbit carries its representative's counts.  ``algorithm="auto"`` is resolved once on the
intact fabric, as a sweep does.

Bounds: a class with more orbits than ``max_orbits`` is refused before anything is solved;
``budget_s`` bounds each class's wall time: after each representative the time per
representative so far times those left is compared with the budget (refused when over), and
in-process (and in each local worker process) an interval timer stops a representative that
runs past the class's deadline.  On Dask the timer cannot interrupt a running task (tasks run
in worker threads): only the estimate applies there.

Availability formulas (``rates``: per class ``rate_per_year`` = lambda failures per
element-year, ``repair_h`` = r hours; ``n`` elements; slowdown ``s_e`` of element ``e``'s
failure; an element whose failure priced nothing or only part (broken groups, pairs without
a route) leaves the collective unable to run as placed: it is *down*, not slowed)::

    p            = lambda * r / 8760                     probability one element is down at a random time
    failures/yr  = n * lambda
    degraded     = n * p                                 expected fraction of the year some element is down
    down         = p * #{e : s_e is NaN or partial}      ... and the collective cannot run at all
    excess       = p * sum_{e priced} (s_e - 1)          time-weighted mean of (slowdown - 1) over the year
    expected_slowdown = 1 + excess                       (down time counts as 1 here: it is ``down``)

Totals add the classes.  The assumption: failures are independent and rare, so two are
almost never down at once (no overlap term; the exact per-element unavailability
``lambda r / (1 + lambda r)`` differs by O(p^2)).  Classes that overlap (``node`` holds
every chip and switch, ``switch`` every role-switch) would count twice: the default rates
give them no rate, and a class without a rate is listed but left out of the totals.

The Monte Carlo draws ``samples`` independent years: per class K ~ Poisson(n lambda)
failures, each on a uniformly drawn element, starting uniformly in a circular year and
lasting r hours (fixed); at any time the slowdown is the largest of the down elements'
(the pair itself is not priced: the max is a lower bound, I), and the collective is down
while any down element has NaN.  It reports the same quantities with the standard error
over the sampled years, and how many failures overlapped another.
"""
from __future__ import annotations

import functools
import json
import math
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import networkx as nx
import numpy as np

try:
    import tomllib
except ModuleNotFoundError:      # Python < 3.11
    import tomli as tomllib

from ...topo.console import ticker
from ...topo.text import fmt_bytes, pct, table, us, x
from ...topo.errors import BadInput, close_matches
from ...topo.failures import domain_classes, domains
from ..price import CostReport, _finite, price
from .scenario import _check_price_kwargs, whatif
from .sweeps import LocalRunner, _Task, _fabric, _groups, _plain, fabric_source, sweep

__all__ = ["Atlas", "AtlasClass", "atlas", "Rates", "load_rates", "DEFAULT_RATES_PATH", "Availability",
           "availability", "plot_atlas", "HOURS_PER_YEAR"]

HOURS_PER_YEAR = 8760.0      # 365 x 24 (the rates are per 365-day year)
DEFAULT_MAX_ORBITS = 512     # orbits a class may solve before it is refused (I: a bound, not a fact)
DEFAULT_BUDGET_S = 120.0     # wall seconds a class may take (I: a bound, not a fact)
# Monte Carlo years at most: each is a Python loop step (~0.1 ms per year and class measured on the 2-core test
# machine, so 10^6 years of 9 classes take ~15 min) and 24 bytes per year and class; 10^6 years already put the
# standard error near 1/1000 of the spread (I: a bound, not a fact).  Was unbounded: 10^10 ran out of memory.
MAX_MC_SAMPLES = 1_000_000
DEFAULT_RATES_PATH = Path(__file__).with_name("failure_rates.toml")
RARE = 0.05                  # total expected fraction down above which the no-overlap sum is flagged (I)


# ---------------------------------------------------------------------------------------
# Bounds: refusing a class before or while it runs
# ---------------------------------------------------------------------------------------
class _OverBound(BaseException):
    """A class went past a bound (orbits, time).  A BaseException so that no ``except Exception``
    inside the pricing swallows the timer's interrupt; caught by :func:`atlas` only."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _on_alarm(signum, frame):
    raise _OverBound("did not finish within the time budget")


def _atlas_scenario(deadline: float | None, task) -> dict:
    """Worker: one sweep task priced through ``whatif`` (the sweep's fields and the blast radius).

    ``deadline`` (``time.time()`` seconds) stops it with :class:`_OverBound` where an interval
    timer can run (the main thread of this process)."""
    timer = deadline is not None and threading.current_thread() is threading.main_thread()
    if timer:
        left = deadline - time.time()
        if left <= 0:
            raise _OverBound("did not finish within the time budget")
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, left)
    try:
        return _scenario(task)
    finally:
        if timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


_BASELINES: dict[tuple, CostReport] = {}
_BASELINES_KEPT = 4          # intact prices kept per process (as the sweep's fabric cache keeps 4 fabrics)


def _keep_baseline(key: tuple, report: CostReport) -> None:
    _BASELINES[key] = report
    while len(_BASELINES) > _BASELINES_KEPT:
        _BASELINES.pop(next(iter(_BASELINES)))


def _baseline_key(task) -> tuple:
    return (task.fabric, task.params_json, repr(task.groups), task.collective, task.size_bytes,
            repr(task.price_kwargs))


def _baseline(task) -> CostReport:
    """The intact price of a task's workload, once per process."""
    key = _baseline_key(task)
    if key not in _BASELINES:
        G = _fabric(task.fabric, task.params_json)
        _keep_baseline(key, price(G, task.collective, groups=_groups(task.fabric, task.params_json, task.groups),
                                  size_bytes=task.size_bytes, **dict(task.price_kwargs)))
    return _BASELINES[key]


def _scenario(task) -> dict:
    base = _baseline(task)
    if not task.specs:
        return {"index": task.index, "baseline": base}
    G = _fabric(task.fabric, task.params_json)
    groups = _groups(task.fabric, task.params_json, task.groups)
    w = whatif(G, list(task.specs), task.collective, groups=groups, size_bytes=task.size_bytes, baseline=base,
               **dict(task.price_kwargs))
    r, ac = w.degraded, w.affected_chips
    hit = {g["group"] for g in w.affected_groups}
    blast = sum(1 for c in ac["chips"] if c["lost"] or c["cut_off"] or c["group"] in hit)
    return {"index": task.index, "failed": list(task.specs), "time_s": float(r.time_s),
            "bandwidth_time_s": float(r.bandwidth_time_s), "algorithm": r.algorithm, "partial": bool(r.partial),
            "broken_groups": int(r.broken_groups.get("count", 0)),
            "unreachable_pairs": int(r.unreachable_pairs.get("count", 0)),
            "chips_lost": int(ac["lost"]), "chips_bandwidth_changed": int(ac["tier_bandwidth_changed"]),
            "chips_cut_off": int(ac["cut_off"]), "chips_affected": int(blast), "chips_touched": int(ac["count"]),
            "groups_affected": len(w.affected_groups),
            "top_bottleneck": r.bottlenecks[0]["link"] if r.bottlenecks else None,
            **({"method": _plain(r.method)} if isinstance(getattr(r, "method", None), dict) else {})}


def _local_workers(runner) -> int:
    """Worker processes of a local runner (1 for anything else: a Dask runner's cluster size is not known here)."""
    w = getattr(runner, "workers", 1)
    return w if isinstance(w, int) and not isinstance(w, bool) and w >= 1 else 1


@dataclass
class _AtlasRunner:
    """Wraps the caller's runner: every task goes to :func:`_atlas_scenario` (whatif with the
    blast radius) instead of the sweep's own worker, under the class's deadline."""

    inner: Any
    deadline: float | None = None

    def map(self, fn, tasks):
        # fn is the sweep's own worker (sweeps._run_scenario): _atlas_scenario returns its fields and more
        return self.inner.map(functools.partial(_atlas_scenario, self.deadline), tasks)


class _ClassBounds:
    """The sweep's progress hook for one class: refuses too many orbits before any is solved,
    and a class whose time per representative so far says it will not end within the budget."""

    def __init__(self, max_orbits: int, budget_s: float | None, t0: float, base_time_s: float,
                 say: Callable[[str], None] = lambda msg: None, label: str = "", quiet_s: float = 2.0,
                 workers: int = 1):
        self.max_orbits, self.budget_s, self.t0, self.base_time_s = max_orbits, budget_s, t0, base_time_s
        self.say, self.label, self.quiet_s = say, label, quiet_s
        self.workers = max(1, int(workers))    # representatives solved at once (local worker processes)
        self.scenarios = self.orbits = 0
        self.seen: set = set()
        self.worst: tuple[float, str] | None = None     # the worst priced scenario solved so far

    def so_far(self) -> str:
        """What the solved orbits say before the class was stopped (a lower bound on its worst)."""
        if self.worst is None:
            return ""
        return f"; worst of the {len(self.seen):,} orbit(s) solved: x{self.worst[0]:.6g} ({self.worst[1]})"

    def plan(self, scenarios: int, orbits: int) -> None:
        self.scenarios, self.orbits = int(scenarios), int(orbits)
        if orbits > self.max_orbits:
            raise _OverBound(f"{orbits:,} orbits of {scenarios:,} scenarios to solve is more than max_orbits "
                             f"{self.max_orbits:,} (--max-orbits); sweep it on its own (fabricsim sweep --class, "
                             f"--samples K)")

    def __call__(self, done: int, total: int, result: dict) -> None:
        key = result.get("orbit", result.get("index"))
        new = key not in self.seen
        self.seen.add(key)
        if new and len(self.seen) < (self.orbits or total) and time.monotonic() - self.t0 > self.quiet_s:
            self.say(f"{self.label}: {len(self.seen):,}/{self.orbits or total:,} orbit(s) solved, "
                     f"{time.monotonic() - self.t0:,.0f} s")
        t = result.get("time_s", math.nan)
        if math.isfinite(t) and not result.get("partial") and self.base_time_s > 0:
            s = t / self.base_time_s
            if self.worst is None or s > self.worst[0]:
                self.worst = (s, "; ".join(result.get("failed", [])))
        if self.budget_s is None:
            return
        solved, el = len(self.seen), time.monotonic() - self.t0
        left = (self.orbits or total) - solved
        # w workers run the representatives w at a time: el covers ceil(solved / w) rounds, and the
        # ones left take ceil(left / w) more (w = 1: el / solved per representative left)
        w = min(self.workers, (self.orbits or total))
        est = el + el / math.ceil(solved / w) * math.ceil(left / w)
        if left > 0 and est > self.budget_s:
            raise _OverBound(f"estimated {est:,.0f} s ({solved:,} of {self.orbits or total:,} orbits took "
                             f"{el:,.1f} s{f' on {w} workers' if w > 1 else ''}) is over the {self.budget_s:g} s "
                             f"budget (--budget-s)")


# ---------------------------------------------------------------------------------------
# Atlas
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AtlasClass:
    """One failure class of an atlas.

    Attributes
    ----------
    failure_class : str
    scenarios : int
        Domains of the class (N-1: one scenario each).
    orbits, solved : int or None
        Orbits of the scenarios under the verified symmetries, representatives priced.
    chips_affected_max, groups_affected_max : int or None
        The largest blast radius of a scenario of the class: chips lost, cut off or in a group whose
        time changed or that broke; groups slowed or broken (whatif's ``affected_groups``).
    chips_touched_max : int or None
        The most chips of a scenario that were lost or whose link capacity changed or whose group was
        hit (whatif's ``affected_chips["count"]``).
    chips_affected_median : float or None
    slowdown_min, slowdown_median, slowdown_max : float or None
        Over the scenarios that priced something (every scenario counts: orbits weigh by size).
    worst : str or None
        The spec of the worst priced scenario (ties: the first by spec text), else of the first
        scenario that priced nothing.
    worst_slowdown : float or None
    partial, unpriced : int
        Scenarios whose price left something out; scenarios that priced nothing (the collective
        cannot run: every group lost a chip).
    slowdowns : tuple of float
        Every scenario's slowdown in domain order (NaN: nothing priced), for plots and availability.
    partials : tuple of bool
        Per scenario in domain order: the price left out broken groups or pairs without a route.
    skipped : str or None
        Why the class was not run (a bound or the sweep's refusal); the counts are then partial.
    seconds : float
        Wall time of the class.
    """

    failure_class: str
    scenarios: int
    orbits: int | None = None
    solved: int | None = None
    chips_affected_max: int | None = None
    groups_affected_max: int | None = None
    chips_touched_max: int | None = None
    chips_affected_median: float | None = None
    slowdown_min: float | None = None
    slowdown_median: float | None = None
    slowdown_max: float | None = None
    worst: str | None = None
    worst_slowdown: float | None = None
    partial: int = 0
    unpriced: int = 0
    slowdowns: tuple = field(default=(), repr=False)
    partials: tuple = field(default=(), repr=False)
    skipped: str | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return _finite({"class": self.failure_class, "scenarios": self.scenarios, "orbits": self.orbits,
                        "solved": self.solved, "chips_affected_max": self.chips_affected_max,
                        "groups_affected_max": self.groups_affected_max, "chips_touched_max": self.chips_touched_max,
                        "chips_affected_median": self.chips_affected_median,
                        "slowdown_min": self.slowdown_min, "slowdown_median": self.slowdown_median,
                        "slowdown_max": self.slowdown_max, "worst": self.worst,
                        "worst_slowdown": self.worst_slowdown, "partial": self.partial, "unpriced": self.unpriced,
                        "skipped": self.skipped, "seconds": self.seconds})


@dataclass(frozen=True)
class Atlas:
    """Every failure class of a fabric, N-1, for one workload.

    Attributes
    ----------
    fabric, params, collective, algorithm, protocol, size_bytes, group_size, groups
        The workload (``algorithm``/``protocol`` as resolved on the intact fabric).
    baseline : CostReport
    classes : tuple of AtlasClass
        In :func:`~fabricsim.topo.failures.domain_classes` order.
    notes : tuple of str
    """

    fabric: str
    params: dict
    collective: str
    algorithm: str
    protocol: str
    size_bytes: float
    group_size: int
    groups: int
    baseline: CostReport
    classes: tuple
    notes: tuple = ()

    def get(self, failure_class: str) -> AtlasClass:
        for c in self.classes:
            if c.failure_class == failure_class:
                return c
        raise BadInput(f"no class {failure_class!r} in this atlas{close_matches(failure_class, self.names)}; "
                       f"choose one of: {', '.join(self.names)}")

    @property
    def names(self) -> list[str]:
        return [c.failure_class for c in self.classes]

    def to_text(self) -> str:
        """The atlas as ``fabricsim atlas`` prints it: one row per class, then the notes."""
        out = [f"{self.collective} on {self.fabric}: {self.groups:,} group(s) of {self.group_size}, S = {fmt_bytes(self.size_bytes)}, "
               f"algorithm {self.algorithm} ({self.protocol}); intact {us(self.baseline.time_s)}; every class N-1"
               + ("; N-2 within shared domains (rows 'x2 same')" if any(" x2 same " in c.failure_class
                                                                        for c in self.classes) else "")]
        rows = []
        for c in self.classes:
            if c.skipped:
                rows.append([c.failure_class, f"{c.scenarios:,}", "" if c.orbits is None else f"{c.orbits:,}", "", "",
                             "", "", "", f"not run: {c.skipped}", f"{c.seconds:.1f}"])
                continue
            rows.append([c.failure_class, f"{c.scenarios:,}", f"{c.orbits:,}", f"{c.chips_affected_max:,}",
                         f"{c.groups_affected_max:,}", x(c.slowdown_min), x(c.slowdown_median), x(c.slowdown_max),
                         (c.worst or "") + (f"  ({c.unpriced:,} priced nothing)" if c.unpriced else ""),
                         f"{c.seconds:.1f}"])
        out.append(table(rows, ["class", "scenarios", "orbits", "chips hit", "groups hit", "min", "median", "max",
                                 "worst", "s"]))
        out.append("chips hit / groups hit: the most of one scenario (chips lost, cut off or in a group that slowed or "
                   "broke; groups slowed or broken)")
        out.extend(f"note: {n}" for n in self.notes)
        return "\n".join(out)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``fabricsim atlas --json``)."""
        return _finite({"fabric": self.fabric, "params": self.params, "collective": self.collective,
                        "algorithm": self.algorithm, "protocol": self.protocol, "size_bytes": self.size_bytes,
                        "group_size": self.group_size, "groups": self.groups,
                        "baseline_time_s": self.baseline.time_s,
                        "classes": [c.as_dict() for c in self.classes], "notes": list(self.notes)})


def _class_row(G, cls: str, s, seconds: float) -> AtlasClass:
    scen = s.scenarios
    by_spec = {sc["failed"][0]: sc for sc in scen}
    sm = s.summary
    finite = [sc for sc in scen if math.isfinite(sc["slowdown"])]
    worst = max(finite, key=lambda sc: sc["slowdown"]) if finite else (scen[0] if scen else None)
    if finite:
        top = worst["slowdown"]
        worst = min((sc for sc in finite if sc["slowdown"] == top), key=lambda sc: sc["failed"])
    chips = [sc.get("chips_affected", 0) for sc in scen]
    groups = [sc.get("groups_affected", 0) for sc in scen]
    touched = [sc.get("chips_touched", 0) for sc in scen]
    ids = [f"{cls}:{d.id}" for d in domains(G, [cls])[cls]]
    return AtlasClass(cls, len(scen), sm.get("orbits"), sm.get("solved"),
                      max(chips) if chips else None, max(groups) if groups else None,
                      max(touched) if touched else None,
                      float(np.median(chips)) if chips else None, sm.get("min"), sm.get("median"), sm.get("max"),
                      "; ".join(worst["failed"]) if worst else None,
                      worst["slowdown"] if worst and math.isfinite(worst["slowdown"]) else None,
                      int(sm.get("partial", 0)), int(sm.get("unpriced", 0)),
                      tuple(float(by_spec[i]["slowdown"]) for i in ids),
                      tuple(bool(by_spec[i]["partial"]) for i in ids), None, seconds)


def shared_pair_classes(G, classes: Sequence[str]) -> list[tuple[str, str]]:
    """The (failure class, shared tag) pairs an atlas's N-2 rows sweep: ``link`` with every edge
    tag the fabric has (``ocs``, ``harness``), and each switch role class (``rail-switch`` ...)
    with ``rack`` where the fabric has racks, among ``classes``."""
    from ...topo.failures import failure_class
    from .sweeps import shared_pairs
    have = set(domain_classes(G))
    out = [(c, tag) for c in classes if (fc := failure_class(c)) is not None
           for tag in fc.shared_with if tag in have]     # the registry says which shared domains pair a class
    # only where two domains do share the tag (rail switches sit in no rack, say)
    return [(c, t) for c, t in out if shared_pairs(G, domains(G, [c])[c], t)]


def _pair_row(label: str, s, seconds: float) -> AtlasClass:
    """An N-2 row: the pairs' slowdowns (no per-domain order: availability has no rate for pairs)."""
    scen = s.scenarios
    sm = s.summary
    finite = [sc for sc in scen if math.isfinite(sc["slowdown"])]
    worst = None
    if finite:
        top = max(sc["slowdown"] for sc in finite)
        worst = min((sc for sc in finite if sc["slowdown"] == top), key=lambda sc: sc["failed"])
    chips = [sc.get("chips_affected", 0) for sc in scen]
    groups = [sc.get("groups_affected", 0) for sc in scen]
    touched = [sc.get("chips_touched", 0) for sc in scen]
    return AtlasClass(label, len(scen), sm.get("orbits"), sm.get("solved"),
                      max(chips) if chips else None, max(groups) if groups else None,
                      max(touched) if touched else None, float(np.median(chips)) if chips else None,
                      sm.get("min"), sm.get("median"), sm.get("max"),
                      " + ".join(worst["failed"]) if worst else None,
                      worst["slowdown"] if worst else None, int(sm.get("partial", 0)), int(sm.get("unpriced", 0)),
                      tuple(float(sc["slowdown"]) for sc in scen), tuple(bool(sc["partial"]) for sc in scen),
                      None, seconds)


def _params_json(params) -> str:
    return json.dumps(params or {}, sort_keys=True, default=list)


def atlas(fabric: str | nx.Graph, params: dict | None, *, collective: str, size_bytes: float, group_size: int | None = None,
          placement: str = "packed", groups: Sequence[Sequence[int]] | None = None,
          classes: Sequence[str] | None = None, runner=None, max_orbits: int = DEFAULT_MAX_ORBITS,
          budget_s: float | None = DEFAULT_BUDGET_S, progress: Callable[[str], None] | None = None,
          n2_shared: bool = False, **price_kwargs) -> Atlas:
    """Sweep every failure class of ``fabric`` N-1 for one workload; one row per class.

    Parameters
    ----------
    fabric, params : a catalog name, fabric file or graph, and builder parameters (as :func:`sweep`).
    collective, size_bytes, group_size, placement, groups : the workload (as :func:`sweep`).
    classes : sequence of str, optional
        Only these failure classes (each one the fabric has); all by default.
    runner : Runner, optional
        ``LocalRunner()`` by default; a process pool or a Dask runner as for :func:`sweep`.
    max_orbits : int
        A class with more orbits than this is refused before anything is solved.
    budget_s : float or None
        Wall seconds per class (see the module notes); None: no time bound (orbits only).
    progress : callable, optional
        ``progress(message)`` at the start and end of each class, and after each orbit solved once a
        class has run 2 s (the CLI writes to stderr).
    n2_shared : bool
        Also N-2 within shared domains (:func:`shared_pair_classes`): every pair of links that share
        an optical circuit switch or a cable harness, every pair of switches of one role in one
        rack -- correlated failures -- one row each (``"link x2 same ocs"``), folded by the same
        symmetries and bounded by the same ``max_orbits`` / ``budget_s``.
    **price_kwargs : as :func:`~fabricsim.collectives.price` (``algorithm``, ``split`` ...).

    Returns
    -------
    Atlas

    Examples
    --------
    >>> a = atlas("jalapeno-rack", None, collective="all-reduce", size_bytes=2**30, group_size=8,
    ...           algorithm="ring", classes=["local-switch"])
    >>> c = a.get("local-switch")
    >>> c.scenarios, c.orbits, round(c.slowdown_max, 2), c.groups_affected_max, c.chips_affected_max
    (6, 1, 1.2, 16, 128)
    """
    _check_price_kwargs(price_kwargs)
    if not isinstance(max_orbits, int) or isinstance(max_orbits, bool) or max_orbits < 1:
        raise BadInput(f"max_orbits {max_orbits!r} must be a positive integer", param="max_orbits")
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and budget_s > 0 and math.isfinite(budget_s)):
        raise BadInput(f"budget_s {budget_s!r} must be a positive number of seconds (or None: no time bound)",
                       param="budget_s")
    if groups is not None and group_size is not None:
        raise BadInput("give group_size (with placement) or groups, not both")
    say = progress or (lambda msg: None)
    fabric, shown = fabric_source(fabric)
    pj = _params_json(params)
    G = _fabric(fabric, pj)
    have = domain_classes(G)
    wanted = have if classes is None else list(dict.fromkeys(classes))
    if not wanted:
        raise BadInput(f"no failure class named; choose from: {', '.join(have)}", param="classes")
    if classes is not None:
        domains(G, wanted)           # an unknown class: BadInput naming the valid ones
    gspec = ("explicit", tuple(tuple(int(r) for r in g) for g in groups)) if groups is not None else \
        ("size", group_size, placement)
    grp = _groups(fabric, pj, gspec)
    kw = dict(price_kwargs)
    if kw.get("calibration") is not None:
        from ..engine import CalibrationTable
        kw["calibration"] = CalibrationTable.of(kw["calibration"])
    base = price(G, collective, groups=grp, size_bytes=size_bytes, **kw)
    notes = []
    if kw.get("algorithm", "auto") == "auto":
        notes.append(f"auto picked {base.algorithm} ({base.protocol}) on the intact fabric; every scenario uses it")
    kw["algorithm"] = base.algorithm
    if kw.get("protocol", "auto") == "auto":
        kw["protocol"] = base.protocol
    sweep_kw = dict(kw)
    inner = runner or LocalRunner()
    # the intact price, computed once: the sweep's baseline task and every whatif read it from here
    probe = _Task(-1, fabric, pj, (), collective, gspec, float(size_bytes), tuple(sorted(sweep_kw.items())))
    _keep_baseline(_baseline_key(probe), base)
    rows = []
    for i, cls in enumerate(wanted, 1):
        n_dom = len(domains(G, [cls])[cls])
        say(f"atlas {i}/{len(wanted)} {cls}: {n_dom:,} scenario(s) ...")
        t0 = time.monotonic()
        bounds = _ClassBounds(max_orbits, budget_s, t0, float(base.time_s), say, f"atlas {i}/{len(wanted)} {cls}",
                              workers=_local_workers(inner))
        run = _AtlasRunner(inner, None if budget_s is None else time.time() + budget_s)
        try:
            s = sweep(fabric, params, cls, n=1, collective=collective, size_bytes=size_bytes,
                      group_size=group_size if groups is None else None, placement=placement, groups=groups,
                      runner=run, progress=bounds, fold=True, **sweep_kw)
        except _OverBound as exc:
            why = exc.reason + bounds.so_far()
            rows.append(AtlasClass(cls, n_dom, bounds.orbits or None, len(bounds.seen) or None, skipped=why,
                                   seconds=time.monotonic() - t0))
            say(f"atlas {i}/{len(wanted)} {cls}: skipped: {why}")
            continue
        except BadInput as exc:
            rows.append(AtlasClass(cls, n_dom, skipped=f"the sweep refused it: {exc}",
                                   seconds=time.monotonic() - t0))
            say(f"atlas {i}/{len(wanted)} {cls}: skipped: {exc}")
            continue
        row = _class_row(G, cls, s, time.monotonic() - t0)
        rows.append(row)
        say(f"atlas {i}/{len(wanted)} {cls}: {row.orbits:,} orbit(s), worst "
            f"{'n/a' if row.worst_slowdown is None else f'x{row.worst_slowdown:.6g}'}, {row.seconds:.1f} s")
    if n2_shared:
        for j, (cls, tag) in enumerate(shared_pair_classes(G, wanted), 1):
            label = f"{cls} x2 same {tag}"
            say(f"atlas N-2 {j}: {label} ...")
            t0 = time.monotonic()
            bounds = _ClassBounds(max_orbits, budget_s, t0, float(base.time_s), say, f"atlas N-2 {label}",
                                  workers=_local_workers(inner))
            run = _AtlasRunner(inner, None if budget_s is None else time.time() + budget_s)
            try:
                s = sweep(fabric, params, cls, n=2, shared=tag, collective=collective, size_bytes=size_bytes,
                          group_size=group_size if groups is None else None, placement=placement, groups=groups,
                          runner=run, progress=bounds, fold=True, budget_s=None, **sweep_kw)
            except _OverBound as exc:
                why = exc.reason + bounds.so_far()
                rows.append(AtlasClass(label, bounds.scenarios or 0, bounds.orbits or None, len(bounds.seen) or None,
                                       skipped=why, seconds=time.monotonic() - t0))
                say(f"atlas N-2 {label}: skipped: {why}")
                continue
            except BadInput as exc:
                rows.append(AtlasClass(label, 0, skipped=f"the sweep refused it: {exc}",
                                       seconds=time.monotonic() - t0))
                continue
            row = _pair_row(label, s, time.monotonic() - t0)
            rows.append(row)
            say(f"atlas N-2 {label}: {row.scenarios:,} pair(s), {row.orbits:,} orbit(s), worst "
                f"{'n/a' if row.worst_slowdown is None else f'x{row.worst_slowdown:.6g}'}, {row.seconds:.1f} s")
        notes.append("N-2 rows: pairs within one shared domain (links on one OCS or harness, switches of one role in "
                     "one rack); power shelves are not tagged in the graph, so no pairs by power shelf; "
                     "availability has no rate for pairs and leaves them out")
    skipped = [r.failure_class for r in rows if r.skipped]
    if skipped:
        notes.append(f"{len(skipped)} class(es) not run within the bounds: {', '.join(skipped)} (reasons in the rows)")
    if any(r.unpriced for r in rows):
        notes.append("a scenario that priced nothing (every group lost a chip) has no slowdown: counted as "
                     "'unpriced' and left out of min / median / max")
    return Atlas(shown, json.loads(pj), collective, base.algorithm, base.protocol, float(size_bytes),
                 int(base.group_size), int(base.groups), base, tuple(rows), tuple(notes))


# ---------------------------------------------------------------------------------------
# Rates
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rates:
    """Failure rates per class: ``{class: (rate_per_year, repair_h, source)}``; ``*-switch`` matches
    any ROLE-switch class without its own entry."""

    classes: dict
    path: str = ""

    def of(self, failure_class: str):
        """``(rate_per_year, repair_h, source)`` of a class, or None when it has no rate."""
        if failure_class in self.classes:
            return self.classes[failure_class]
        from ...topo.failures import failure_class as record
        fc = record(failure_class)
        return self.classes.get(fc.name) if fc is not None and fc.family else None   # a family's shared entry


def _rate_entries(doc: dict, where: str) -> dict:
    sect = doc.get("classes")
    if not isinstance(sect, dict):
        raise BadInput(f"{where}: no [classes.NAME] tables (each with rate_per_year and repair_h)")
    out = {}
    for name, v in sect.items():
        if not isinstance(v, dict):
            raise BadInput(f"{where}: classes.{name} is not a table (give rate_per_year and repair_h)")
        bad = [k for k in v if k not in ("rate_per_year", "repair_h", "source", "label")]
        if bad:
            raise BadInput(f"{where}: classes.{name}: unknown key(s) {', '.join(bad)}; valid: rate_per_year, "
                           f"repair_h, source, label")
        for k in ("rate_per_year", "repair_h"):
            x = v.get(k)
            if x is None:
                raise BadInput(f"{where}: classes.{name} has no {k}")
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
                raise BadInput(f"{where}: classes.{name}.{k} = {x!r} must be a finite number >= 0")
        if v["rate_per_year"] * v["repair_h"] / HOURS_PER_YEAR >= 1:
            raise BadInput(f"{where}: classes.{name}: rate_per_year x repair_h = "
                           f"{v['rate_per_year'] * v['repair_h']:g} h is a year or more down per element: "
                           f"not a rare failure")
        out[name] = (float(v["rate_per_year"]), float(v["repair_h"]),
                     f"{v.get('source', '')} ({v.get('label', '?')})".strip())
    return out


def load_rates(path: str | Path | None = None) -> Rates:
    """The default rates (``failure_rates.toml``), with a user file's classes over them.

    Raises
    ------
    BadInput
        A missing or unreadable file, bad TOML, a negative or non-numeric rate or repair time.
    """
    def read(p: Path) -> dict:
        from ...topo.inputs import read_input_text
        try:
            return tomllib.loads(read_input_text(p, "a failure-rates TOML file"))
        except tomllib.TOMLDecodeError as exc:
            raise BadInput(f"rates file {str(p)!r} is not TOML: {exc}") from None
    classes = _rate_entries(read(DEFAULT_RATES_PATH), str(DEFAULT_RATES_PATH.name))
    if path is not None:
        classes.update(_rate_entries(read(Path(path)), f"rates file {str(path)!r}"))
    return Rates(classes, str(path or DEFAULT_RATES_PATH))


# ---------------------------------------------------------------------------------------
# Availability
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Availability:
    """Expected degradation over a year, per class and in total.

    Attributes
    ----------
    classes : tuple of dict
        ``class``, ``elements``, ``rate_per_year``, ``repair_h``, ``source``,
        ``failures_per_year``, ``fraction_degraded``, ``fraction_down``, ``mean_slowdown``
        (over elements whose failure is priced in full), ``expected_slowdown``; with Monte Carlo also ``mc`` (the same
        with ``*_se`` standard errors).  A class without a rate or not run: ``rate_per_year`` None
        and a ``note``.
    total : dict
        ``failures_per_year``, ``fraction_degraded``, ``fraction_down``, ``expected_slowdown``
        (and ``mc``).
    method : str
        ``analytic`` or ``analytic + monte carlo``.
    samples, seed : int or None
    notes : tuple of str
    """

    classes: tuple
    total: dict
    method: str
    samples: int | None = None
    seed: int | None = None
    notes: tuple = ()

    def to_text(self) -> str:
        """The availability table as ``fabricsim atlas --availability`` prints it."""
        mc = self.samples is not None
        rows = []
        for r in self.classes:
            if r.get("rate_per_year") is None:
                rows.append([r["class"], f"{r['elements']:,}", "", "", "", "", "", ""] + (["", ""] if mc else [])
                            + [r.get("note", "")])
                continue
            row = [r["class"], f"{r['elements']:,}", f"{r['rate_per_year']:g}", f"{r['repair_h']:g}",
                   f"{r['failures_per_year']:.4g}", pct(r["fraction_degraded"]), pct(r["fraction_down"]),
                   x(r["expected_slowdown"])]
            if mc:
                m = r["mc"]
                row += [f"{pct(m['fraction_degraded'])} +- {pct(m['fraction_degraded_se'])}",
                        f"{x(m['expected_slowdown'])} +- {m['expected_slowdown_se']:.2g}"]
            rows.append(row + [""])
        t = self.total
        tot = ["total", "", "", "", f"{t['failures_per_year']:.4g}", pct(t["fraction_degraded"]),
               pct(t["fraction_down"]), x(t["expected_slowdown"])]
        if mc:
            tot += [f"{pct(t['mc']['fraction_degraded'])} +- {pct(t['mc']['fraction_degraded_se'])}",
                    f"{x(t['mc']['expected_slowdown'])} +- {t['mc']['expected_slowdown_se']:.2g}"]
        rows.append(tot + [""])
        out = [f"availability over a year ({self.method}):",
               table(rows, ["class", "elements", "rate/yr", "repair h", "failures/yr", "degraded", "down",
                             "exp. slowdown"] + (["MC degraded", "MC slowdown"] if mc else []) + [""])]
        out.extend(f"note: {n}" for n in self.notes)
        return "\n".join(out)

    def as_dict(self) -> dict[str, Any]:
        return _finite({"classes": [dict(c) for c in self.classes], "total": self.total, "method": self.method,
                        "samples": self.samples, "seed": self.seed, "notes": list(self.notes)})


def check_monte_carlo(samples: int | None, seed: int) -> None:
    """Refuse (``BadInput`` naming ``samples`` or ``seed``) a Monte Carlo :func:`availability` cannot run:
    fewer than 2 or more than :data:`MAX_MC_SAMPLES` years, a seed outside 0 .. 2**63 - 1."""
    if samples is not None and (not isinstance(samples, int) or isinstance(samples, bool)
                                or not 2 <= samples <= MAX_MC_SAMPLES):
        raise BadInput(f"samples {samples!r} must be an integer from 2 (the standard error needs two years) to "
                       f"{MAX_MC_SAMPLES:,}", param="samples")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2 ** 63:
        raise BadInput(f"seed {seed!r} must be an integer from 0 to 2**63 - 1 (the Monte Carlo's numpy seed)",
                       param="seed")


def availability(a: Atlas, rates: Rates | None = None, *, samples: int | None = None, seed: int = 0,
                 progress: Callable[[str], None] | None = None) -> Availability:
    """Turn an atlas and failure rates into the year's expected degradation (formulas: module notes).

    ``progress(msg)``, if given, hears how many years the Monte Carlo has drawn every 5 s.

    Examples
    --------
    >>> r = Rates({"local-switch": (0.5, 24.0, "toy")})
    >>> a = atlas("jalapeno-rack", None, collective="all-reduce", size_bytes=2**30, group_size=8,
    ...           algorithm="ring", classes=["local-switch"])
    >>> v = availability(a, r)
    >>> round(v.total["fraction_degraded"], 12) == round(6 * 0.5 * 24 / 8760, 12)
    True
    """
    rates = rates or load_rates()
    check_monte_carlo(samples, seed)
    rows, used = [], []
    for c in a.classes:
        r = rates.of(c.failure_class)
        row: dict[str, Any] = {"class": c.failure_class, "elements": c.scenarios}
        if r is None or c.skipped:
            row.update(rate_per_year=None, repair_h=None, source=None,
                       note="no rate for this class: left out" if r is None else f"not run: {c.skipped}")
            rows.append(row)
            continue
        lam, rep, src = r
        # a partial price (broken groups, pairs without a route): the collective cannot run as placed
        s = np.where(np.asarray(c.partials, dtype=bool), np.nan, np.asarray(c.slowdowns, dtype=float))
        p = lam * rep / HOURS_PER_YEAR
        priced = s[np.isfinite(s)]
        row.update(rate_per_year=lam, repair_h=rep, source=src, failures_per_year=len(s) * lam,
                   fraction_degraded=len(s) * p, fraction_down=p * float(np.sum(~np.isfinite(s))),
                   mean_slowdown=float(priced.mean()) if len(priced) else None,
                   expected_slowdown=1.0 + p * float(np.sum(priced - 1.0)))
        rows.append(row)
        used.append((row, lam, rep, s))
    total = {"failures_per_year": sum(r["failures_per_year"] for r, *_ in used),
             "fraction_degraded": sum(r["fraction_degraded"] for r, *_ in used),
             "fraction_down": sum(r["fraction_down"] for r, *_ in used),
             "expected_slowdown": 1.0 + sum(r["expected_slowdown"] - 1.0 for r, *_ in used)}
    notes = ["analytic: failures independent and rare (no two down at once); fraction_degraded = elements x "
             "rate x repair_h / 8760, expected_slowdown = 1 + sum over elements of rate x repair_h / 8760 x "
             "(slowdown - 1); down time (nothing priced, or a partial price: broken groups or pairs without a route) "
             "is fraction_down and counts as 1 in the slowdown",
             "classes that overlap (node / switch and their chips and role switches, link and lanes) count "
             "twice when both have a rate: the default file rates only one of each"]
    if total["fraction_degraded"] > RARE:
        notes.append(f"not rare: something is down {100 * total['fraction_degraded']:.3g}% of the year by the "
                     f"analytic sum, which counts overlapping failures twice; the Monte Carlo (--samples) counts "
                     f"each hour once")
    method = "analytic"
    if samples is not None:
        mc_rows, mc_total = _monte_carlo(used, samples, seed, progress)
        for (row, *_), m in zip(used, mc_rows):
            row["mc"] = m
        total["mc"] = mc_total
        method = "analytic + monte carlo"
        notes.append(f"monte carlo: {samples:,} seeded years (seed {seed}); Poisson failures per class, uniform "
                     f"element and start (circular year), fixed repair time; overlapping failures take the larger "
                     f"slowdown (a lower bound: pairs are not priced, I); *_se is the standard error over years")
    return Availability(tuple(rows), total, method, samples, seed if samples is not None else None, tuple(notes))


def _union_len(starts: np.ndarray, ends: np.ndarray) -> float:
    """Length of the union of intervals [starts, ends) (sorted by start inside)."""
    if not len(starts):
        return 0.0
    o = np.argsort(starts, kind="stable")
    s, e = starts[o], np.maximum.accumulate(ends[o])
    gaps = np.maximum(s[1:] - e[:-1], 0.0)
    return float(e[-1] - s[0] - gaps.sum())


def _year(events: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict:
    """One sampled year's quantities from (start_h, duration_h, slowdown) per class, circular year."""
    T = HOURS_PER_YEAR
    out = {"per_class": []}
    all_s, all_e, all_v = [], [], []
    for st, du, sl in events:
        # split intervals that wrap around the year's end
        en = st + du
        wrap = en > T
        s2 = np.concatenate([st, np.zeros(int(wrap.sum()))])
        e2 = np.concatenate([np.minimum(en, T), en[wrap] - T])
        v2 = np.concatenate([sl, sl[wrap]])
        out["per_class"].append((s2, e2, v2))
        all_s.append(s2), all_e.append(e2), all_v.append(v2)
    return out | {"all": (np.concatenate(all_s) if all_s else np.zeros(0),
                          np.concatenate(all_e) if all_e else np.zeros(0),
                          np.concatenate(all_v) if all_v else np.zeros(0))}


def _measures(s: np.ndarray, e: np.ndarray, v: np.ndarray) -> tuple[float, float, float, int]:
    """(degraded h, down h, integral of (slowdown - 1) over running time in h, overlapping failures)."""
    if not len(s):
        return 0.0, 0.0, 0.0, 0
    degraded = _union_len(s, e)
    nan = ~np.isfinite(v)
    down = _union_len(s[nan], e[nan])
    # sweep the breakpoints: at each elementary segment, the max slowdown of the intervals covering it
    pts = np.unique(np.concatenate([s, e]))
    mids = (pts[:-1] + pts[1:]) / 2
    cover = (s[None, :] <= mids[:, None]) & (e[None, :] > mids[:, None])
    any_nan = (cover & nan[None, :]).any(axis=1)
    vals = np.where(cover & ~nan[None, :], v[None, :], 1.0).max(axis=1, initial=1.0)
    excess = float(np.sum(np.where(any_nan, 0.0, vals - 1.0) * np.diff(pts)))
    overl = int(np.sum(cover.sum(axis=1) > 1))
    return degraded, down, excess, overl


def _monte_carlo(used, samples: int, seed: int, progress=None):
    rng = np.random.default_rng(seed)
    T = HOURS_PER_YEAR
    per = np.zeros((samples, len(used), 3))
    tot = np.zeros((samples, 3))
    overlaps = 0
    tick = ticker(progress, 5.0)
    for y in range(samples):
        tick(y, samples, lambda: f"availability: {y:,} of {samples:,} years drawn")
        events = []
        for j, (row, lam, rep, s) in enumerate(used):
            k = rng.poisson(len(s) * lam)
            el = rng.integers(0, len(s), size=k)
            st = rng.uniform(0.0, T, size=k)
            events.append((st, np.full(k, rep), s[el]))
        yr = _year(events)
        for j, seg in enumerate(yr["per_class"]):
            d, dn, ex, _ = _measures(*seg)
            per[y, j] = (d / T, dn / T, ex / T)
        d, dn, ex, ov = _measures(*yr["all"])
        tot[y] = (d / T, dn / T, ex / T)
        overlaps += ov

    def stats(x: np.ndarray) -> dict:
        m, se = x.mean(axis=0), x.std(axis=0, ddof=1) / math.sqrt(samples)
        return {"fraction_degraded": float(m[0]), "fraction_degraded_se": float(se[0]),
                "fraction_down": float(m[1]), "fraction_down_se": float(se[1]),
                "expected_slowdown": 1.0 + float(m[2]), "expected_slowdown_se": float(se[2])}
    return [stats(per[:, j]) for j in range(len(used))], stats(tot) | {"overlapping_segments": overlaps}


# ---------------------------------------------------------------------------------------
# Figure
# ---------------------------------------------------------------------------------------
def plot_atlas(a: Atlas, path: str | Path) -> Path:
    """The slowdowns of every class run, a box per class (whiskers min to max, the worst labelled);
    classes skipped or with nothing priced are named on the axis with the reason in short."""
    from matplotlib.figure import Figure
    path = Path(path)
    names, data, labels = [], [], []
    for c in a.classes:
        s = np.asarray(c.slowdowns, dtype=float)
        s = s[np.isfinite(s)]
        names.append(c.failure_class + ("\n(skipped)" if c.skipped else "\n(none priced)" if not len(s) else
                                        "\n(partial)" if c.partial == c.scenarios else
                                        f"\n({c.partial} partial)" if c.partial else ""))
        data.append(s if len(s) else np.array([np.nan]))
    fig = Figure(figsize=(max(6.0, 0.75 * len(names) + 2), 4.6), dpi=110)
    ax = fig.subplots()
    ax.boxplot([d if np.isfinite(d).any() else [] for d in data], whis=(0, 100), showfliers=False)
    for i, d in enumerate(data, 1):
        if np.isfinite(d).any():
            ax.scatter([i], [np.nanmax(d)], marker="v", color="#c0392b", s=18, zorder=3)
    ax.axhline(1.0, color="#888888", lw=0.8, ls="--")
    ax.set_xticks(range(1, len(names) + 1), names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("slowdown (time failed / intact)")
    ax.set_title(f"{a.fabric}: every failure class N-1, {a.collective} ({a.algorithm}), "
                 f"{a.groups} group(s) of {a.group_size}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    return path
