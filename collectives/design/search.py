"""Search a design space for its Pareto front: build, bill, bound, price, compare.

Each design (one combination of the space's ``vary``) is evaluated in four steps, the
cheap ones first so the expensive ones run only where they can matter:

1. **build** the fabric (the builder refuses a value it cannot build: the design is
   *refused* with the builder's reason) and count its **bill of materials**
   (:func:`fabricsim.topo.parts.bill_of_materials`): ``capex_usd``, ``power_kw``,
   ``chips`` -- known exactly before anything is solved;
2. **constraints** on those figures (``capex_usd_max`` ...): a design outside them is
   *pruned* without a solve;
3. a **lower bound** of the workload's time -- for a single-job workload, the job's
   link-load bound (:func:`~fabricsim.collectives.price` with ``bound_only``; the
   flow-level time is never below it).  A design whose bound is already beaten by a
   design priced earlier that is no worse on every other objective is dominated
   whatever its exact time: *pruned* (exact: the front is unchanged, a test compares
   it with brute force).  A bound above ``time_s_max`` prunes too.
4. the **flow-level price** of the workload (every job together, as :func:`mix`) and,
   when an objective asks for it, the failure atlas's worst N-1 slowdown.

Designs run in waves (``runner.map``, a local process pool or Dask as ``sweep`` uses);
each wave sees the front of the waves before it.  Results are cached by the design's
parameters within a run, and a :class:`~fabricsim.collectives.whatif.dask_runner.ResumableRunner`
(``--resume FILE``) keeps them across runs.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import networkx as nx
import numpy as np

from ...topo.errors import FabricError
from ...topo.parts import bill_of_materials
from .pareto import pareto_mask
from .space import CONSTRAINTS, OBJECTIVES, _CHEAP, DesignSpace

__all__ = ["DesignPoint", "DesignResult", "design", "evaluate"]

Builder = Callable[..., nx.Graph]       # build(name, **params_as_set_strings) -> graph


@dataclass(frozen=True)
class DesignPoint:
    """One design: its parameters, what it scored, and what happened to it.

    ``status``: ``ok`` (priced), ``pruned`` (a constraint or a dominating bound ruled
    it out before pricing; ``reason`` says which), ``infeasible`` (priced, but outside a
    ``time_s`` constraint), ``refused`` (the builder or the workload refused it).
    """

    params: dict
    status: str
    objectives: dict = field(default_factory=dict)
    reason: str = ""
    bound_time_s: float = math.nan
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        def num(v):
            return v if isinstance(v, (int, float)) and math.isfinite(v) else None
        return {"params": dict(self.params), "status": self.status,
                "objectives": {k: num(v) for k, v in self.objectives.items()}, "reason": self.reason,
                "bound_time_s": num(self.bound_time_s), "seconds": self.seconds}


@dataclass(frozen=True)
class DesignResult:
    """Every design evaluated and the Pareto front among the priced ones."""

    space: DesignSpace
    points: tuple[DesignPoint, ...]
    pareto: tuple[int, ...]              # indices into points, in the space's order
    seconds: float = 0.0

    @property
    def evaluated(self) -> int:
        """Designs priced by the solver."""
        return sum(p.status in ("ok", "infeasible") for p in self.points)

    @property
    def pruned(self) -> int:
        return sum(p.status == "pruned" for p in self.points)

    @property
    def refused(self) -> int:
        return sum(p.status == "refused" for p in self.points)

    def front(self) -> list[DesignPoint]:
        return [self.points[i] for i in self.pareto]

    def summary(self) -> str:
        return (f"design {self.space.builder}: {len(self.points):,} design(s), {self.evaluated:,} priced, "
                f"{self.pruned:,} pruned, {self.refused:,} refused; Pareto front {len(self.pareto)} "
                f"on {' / '.join(self._senses())} in {self.seconds:.1f} s")

    def _senses(self) -> list[str]:
        return [f"min {o}" for o in self.space.minimize] + [f"max {o}" for o in self.space.maximize]

    def __repr__(self) -> str:
        return f"DesignResult({self.summary()})"

    def to_text(self) -> str:
        """The front as a table (parameters, objectives), then the counts."""
        names = list(self.space.vary)
        objs = list(self.space.objectives)
        head = names + objs
        rows = [[str(p.params[n]) for n in names] + [_fmt(o, p.objectives.get(o)) for o in objs]
                for p in self.front()]
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
        out = [self.summary(), "",
               "  ".join(h.ljust(w) for h, w in zip(head, widths)),
               "  ".join("-" * w for w in widths)]
        out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        reasons: dict[str, int] = {}
        for p in self.points:
            if p.status in ("pruned", "refused", "infeasible"):
                key = f"{p.status}: {p.reason.split(':')[0]}"
                reasons[key] = reasons.get(key, 0) + 1
        if reasons:
            out += [""] + [f"note: {n:,} {k}" for k, n in sorted(reasons.items())]
        return "\n".join(out)

    def as_dict(self) -> dict[str, Any]:
        return {"builder": self.space.builder, "space": self.space.as_dict(), "designs": len(self.points),
                "evaluated": self.evaluated, "pruned": self.pruned, "refused": self.refused,
                "seconds": self.seconds,
                "pareto": [self.points[i].as_dict() for i in self.pareto],
                "all": [p.as_dict() for p in self.points]}


def _fmt(name: str, v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if name == "time_s":
        return f"{v * 1e6:,.2f} us"
    if name in ("capex_usd", "capex_per_chip_usd"):
        return f"${v:,.0f}"
    if name == "power_kw":
        return f"{v:,.1f} kW"
    if name == "chips":
        return f"{int(v):,}"
    return f"x{v:.4g}"


# ----------------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class _Task:
    index: int
    key: str
    params: dict                     # the design's varied values (reported)
    params_text: dict                # every builder parameter as --set text (built)
    space: DesignSpace
    build: Builder
    front: tuple = ()                # (objective vector, bound-free) of priced designs so far


def _cheap(space: DesignSpace, G: nx.Graph) -> dict[str, float]:
    bom = bill_of_materials(G, space.parts)
    chips = sum(1 for _, d in G.nodes(data=True) if d.get("kind") == "chip")
    return {"capex_usd": bom.capex_usd, "power_kw": bom.power_kw, "chips": float(chips),
            "capex_per_chip_usd": bom.capex_usd / chips if chips else math.nan}


def _violated(space: DesignSpace, values: dict[str, float]) -> str:
    for name, bound in space.constraints.items():
        what, end = CONSTRAINTS[name]
        if what not in values:
            continue
        v = values[what]
        if (end == "max" and v > bound) or (end == "min" and v < bound):
            return f"{name}: {what} {v:,.6g} {'>' if end == 'max' else '<'} {bound:,.6g}"
    return ""


def _senses(space: DesignSpace) -> list[str]:
    return ["minimize"] * len(space.minimize) + ["maximize"] * len(space.maximize)


def _dominated_by_bound(space: DesignSpace, cheap: dict, bound_s: float, front: Sequence[tuple]) -> str:
    """A priced design that beats this one whatever its exact time (time at or above ``bound_s``)."""
    objs, senses = list(space.objectives), _senses(space)
    if "time_s" not in objs or "worst_n1_slowdown" in objs:
        return ""
    sign = np.array([1.0 if s == "minimize" else -1.0 for s in senses])
    mine = np.array([bound_s if o == "time_s" else cheap[o] for o in objs]) * sign
    ti = objs.index("time_s")
    for vec, params in front:
        other = np.asarray(vec, dtype=float) * sign
        if not np.all(other <= mine):
            continue
        rest = np.delete(np.arange(len(objs)), ti)
        # exact time >= bound: strictly faster than the bound, or as fast and strictly better elsewhere
        if other[ti] < mine[ti] or np.any(other[rest] < mine[rest]):
            return f"dominated: time >= its bound {bound_s * 1e6:,.2f} us, beaten by {params}"
    return ""


def _jobs(space: DesignSpace, G: nx.Graph):
    from ..jobs.mix import jobs_from_dict
    return jobs_from_dict({"job": [dict(j) for j in space.jobs]}, G, base=space.base, where="[workload]")


def _bound_s(G: nx.Graph, job) -> float:
    from ..price import price
    kw = {"size_bytes": job.size_bytes} if job.traffic is None else {"traffic": job.traffic}
    return price(G, job.collective, groups=job.groups, algorithm=job.algorithm, bound_only=True, **kw).time_s


def _worst_n1(space: DesignSpace, params_text: dict) -> float:
    from ..jobs.mix import _size
    from ..whatif.atlas import atlas
    j = space.jobs[0]
    if "group_size" not in j or "size" not in j:
        raise FabricError("worst_n1_slowdown needs the first job to give group_size and size")
    a = atlas(space.builder, dict(params_text), collective=j["collective"], size_bytes=_size(j["size"]),
              group_size=int(j["group_size"]), placement=j.get("placement", "packed"))
    worst = [c.slowdown_max for c in a.classes if c.slowdown_max is not None]
    return max(worst) if worst else 1.0


def evaluate(task: _Task) -> tuple[int, DesignPoint]:
    """Evaluate one design (a worker function: picklable task in, index and point out)."""
    from ..jobs.mix import mix
    t0 = time.perf_counter()
    space = task.space

    def done(status, objectives=None, reason="", bound=math.nan):
        return task.index, DesignPoint(dict(task.params), status, dict(objectives or {}), reason, bound,
                                       time.perf_counter() - t0)

    try:
        G = task.build(space.builder, **task.params_text)
        values = _cheap(space, G)
        objectives = {o: values[o] for o in space.objectives if o in _CHEAP}
        why = _violated(space, values)
        if why:
            return done("pruned", objectives, why)
        jobs = _jobs(space, G)
        bound = math.nan
        if len(jobs) == 1 and "time_s" in space.objectives:
            bound = _bound_s(G, jobs[0])
            why = _violated(space, {"time_s": bound}) or _dominated_by_bound(space, values, bound, task.front)
            if why:
                return done("pruned", objectives, why, bound)
        if "time_s" in space.objectives or any(c.startswith("time_s") for c in space.constraints):
            objectives["time_s"] = mix(G, jobs).makespan_s
        if "worst_n1_slowdown" in space.objectives:
            objectives["worst_n1_slowdown"] = _worst_n1(space, task.params_text)
        why = _violated(space, objectives)
        return done("infeasible" if why else "ok", objectives, why, bound)
    except FabricError as exc:
        return done("refused", {}, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


# ----------------------------------------------------------------------------- the search
def design(space: DesignSpace, *, build: Builder, runner=None, wave: int | None = None,
           progress: Callable[[str], None] | None = None, prune: bool = True) -> DesignResult:
    """Evaluate every design of ``space`` and return the Pareto front of the priced ones.

    Parameters
    ----------
    space : DesignSpace
    build : ``build(builder_name, **params)`` -> graph, parameters as ``--set`` strings
        (the CLI passes :func:`fabricsim.fabrics.build`).
    runner : a runner with ``map(fn, tasks)`` (``LocalRunner(workers)``, a Dask or resumable
        runner as ``sweep`` uses); in-process by default.
    wave : designs per wave (each wave prunes against the front of the ones before);
        default 4 per worker, at least 8.
    progress : ``progress(message)`` after each wave (the CLI writes it to stderr).
    prune : ``False`` prices every design inside the constraints (the brute-force check).

    Returns
    -------
    DesignResult
    """
    from ..whatif.sweeps import LocalRunner
    runner = runner or LocalRunner()
    workers = getattr(runner, "workers", 1) or 1
    wave = wave or max(8, 4 * workers)
    designs = list(space.designs())
    points: list[DesignPoint | None] = [None] * len(designs)
    cache: dict[str, int] = {}
    front: list[tuple] = []
    senses = _senses(space)
    t0 = last = time.perf_counter()
    for lo in range(0, len(designs), wave):
        tasks = []
        for i in range(lo, min(lo + wave, len(designs))):
            key = space.key(designs[i])
            if key in cache:                       # the same design twice (a [set] value also varied)
                points[i] = points[cache[key]]
                continue
            cache[key] = i
            tasks.append(_Task(i, key, designs[i], space.params_text(designs[i]), space, build,
                               tuple(front) if prune else ()))
        for i, point in runner.map(evaluate, tasks):
            points[i] = point
        priced = [p for p in points[:lo + wave] if p is not None and p.status == "ok"]
        if priced:
            vals = np.array([[p.objectives[o] for o in space.objectives] for p in priced])
            mask = pareto_mask(vals, senses)
            front = [(tuple(vals[k]), _short(priced[k].params)) for k in np.flatnonzero(mask)]
        now = time.perf_counter()
        if progress and (now - last > 2 or lo + wave >= len(designs)):
            last = now
            done = min(lo + wave, len(designs))
            eta = (now - t0) / done * (len(designs) - done)
            progress(f"design: {done:,}/{len(designs):,} designs, front {len(front)}, "
                     f"{now - t0:.0f} s, ETA {eta:.0f} s")
    ok = [i for i, p in enumerate(points) if p.status == "ok"]
    pareto: tuple[int, ...] = ()
    if ok:
        vals = np.array([[points[i].objectives[o] for o in space.objectives] for i in ok])
        pareto = tuple(ok[k] for k in np.flatnonzero(pareto_mask(vals, senses)))
    return DesignResult(space, tuple(points), pareto, time.perf_counter() - t0)


def _short(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())
