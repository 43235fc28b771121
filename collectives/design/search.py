"""Search a design space for its Pareto front: build, bill, bound, price, compare.

Each design (one combination of the space's ``vary``) is evaluated in four steps, the
cheap ones first so the expensive ones run only where they can matter:

1. **build** the fabric (the builder refuses a value it cannot build: the design is
   *refused* with the builder's reason) and count its **bill of materials**
   (:func:`fabricsim.topo.parts.bill_of_materials`): ``capex_usd``, ``power_kw``,
   ``chips`` -- known exactly before anything is solved;
2. **constraints** on those figures (``capex_usd_max`` ...): a design outside them is
   *pruned* without a solve;
3. a **lower bound** of the workload's time -- for a single-job workload: an
   all-to-all's rack-cut bound (bytes leaving a rack over the capacity leaving it, no
   routing: :func:`_cut_bound_s`), else the job's link-load bound
   (:func:`~fabricsim.collectives.price` with ``bound_only``, which routes every flow and
   turns itself off once it costs more than it saves); the flow-level time is never
   below either.  A design whose bound is already beaten by a
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
from .space import CONSTRAINTS, _CHEAP, DesignSpace

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
    timings: dict = field(default_factory=dict, compare=False)   # bound_s, price_s: wall seconds spent

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
    pareto: tuple[int, ...]              # indices into points (in the order they were evaluated)
    seconds: float = 0.0
    method: str = "exhaustive"           # exhaustive | nsga2 (seed s)
    space_size: int = 0                  # designs in the space (points: those evaluated)
    complete: bool = True                # False: stopped at the time budget
    notes: tuple = ()

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
        of = f" of {self.space_size:,}" if self.space_size and self.space_size != len(self.points) else ""
        return (f"design {self.space.builder} ({self.method}): {len(self.points):,}{of} design(s), "
                f"{self.evaluated:,} priced, "
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
        if reasons or self.notes:
            out += [""] + [f"note: {n:,} {k}" for k, n in sorted(reasons.items())]
            out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)

    def as_dict(self) -> dict[str, Any]:
        return {"builder": self.space.builder, "space": self.space.as_dict(), "method": self.method,
                "space_designs": self.space_size, "designs": len(self.points), "complete": self.complete,
                "evaluated": self.evaluated, "pruned": self.pruned, "refused": self.refused,
                "seconds": self.seconds, "notes": list(self.notes),
                "pareto": [self.points[i].as_dict() for i in self.pareto],
                "all": [p.as_dict() for p in self.points]}


def _fmt(name: str, v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if name == "time_s":
        return f"{v * 1e6:,.2f} us"
    if name in ("capex_usd", "capex_per_chip_usd", "network_capex_usd"):
        return f"${v:,.0f}"
    if name in ("power_kw", "network_power_kw"):
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
    front: tuple = ()                # (objective vector, parameters) of the front priced so far
    use_bound: bool = True           # compute the link-load bound (off once bounds cost as much as prices)


def _cheap(space: DesignSpace, G: nx.Graph) -> dict[str, float]:
    bom = bill_of_materials(G, space.parts)
    chips = sum(1 for _, d in G.nodes(data=True) if d.get("kind") == "chip")
    net = [ln for ln in bom.lines if ln.kind != "chip"]
    return {"capex_usd": bom.capex_usd, "power_kw": bom.power_kw, "chips": float(chips),
            "network_capex_usd": sum(ln.count * ln.price_usd for ln in net if ln.price_usd is not None),
            "network_power_kw": sum(ln.count * ln.watts for ln in net if ln.watts is not None) / 1000,
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


def _cut_bound_s(G: nx.Graph, job) -> float | None:
    """A lower bound of an all-to-all's time from rack cuts, in O(links); ``None`` where it has none.

    Every byte a rank sends to a rank in another rack (``rack`` node attribute) crosses the
    links leaving its rack, so the time is at least, over racks, the bytes leaving the rack
    over the capacity leaving it (per direction).  The flow-level price (latency added,
    efficiency <= 1) is never below it.  All-to-all of ``S`` (``S / n`` to each peer) only.
    """
    if job.collective != "all-to-all" or job.traffic is not None or not job.size_bytes:
        return None
    from ...topo.routing import link_table
    rack_of = {n: d.get("rack") for n, d in G.nodes(data=True)}
    chip_of = {d["rank"]: n for n, d in G.nodes(data=True) if d.get("kind") == "chip" and "rank" in d}
    out_bytes: dict = {}
    for grp in job.groups:
        racks = [rack_of.get(chip_of.get(int(r))) for r in grp]
        if any(r is None for r in racks):
            return None
        per_pair = job.size_bytes / len(grp)
        counts: dict = {}
        for r in racks:
            counts[r] = counts.get(r, 0) + 1
        for r, m in counts.items():
            out_bytes[r] = out_bytes.get(r, 0.0) + m * (len(grp) - m) * per_pair
    lt = link_table(G)
    src_rack = [rack_of.get(lt.nodes[i]) for i in lt.src.tolist()]
    dst_rack = [rack_of.get(lt.nodes[i]) for i in lt.dst.tolist()]
    cap = lt.capacity_Bps
    out_cap: dict = {}
    for a, b, c in zip(src_rack, dst_rack, cap.tolist()):
        if a is not None and a != b:
            out_cap[a] = out_cap.get(a, 0.0) + c
    best = 0.0
    for r, nbytes in out_bytes.items():
        if nbytes > 0:
            if out_cap.get(r, 0.0) <= 0:
                return None                       # unreachable: let the price say so
            best = max(best, nbytes / out_cap[r])
    return best


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

    spent: dict[str, float] = {}

    def done(status, objectives=None, reason="", bound=math.nan):
        return task.index, DesignPoint(dict(task.params), status, dict(objectives or {}), reason, bound,
                                       time.perf_counter() - t0, spent)

    try:
        G = task.build(space.builder, **task.params_text)
        values = _cheap(space, G)
        objectives = {o: values[o] for o in space.objectives if o in _CHEAP}
        why = _violated(space, values)
        if why:
            return done("pruned", objectives, why)
        jobs = _jobs(space, G)
        bound = math.nan
        # a bound prunes only against a front (or a time_s_max): none yet, nothing to compare it with
        if len(jobs) == 1 and "time_s" in space.objectives \
                and (task.front or "time_s_max" in space.constraints):
            t1 = time.perf_counter()
            bound = _cut_bound_s(G, jobs[0])          # cheap (no routing) where it applies
            if bound is not None:
                spent["cut_bound_s"] = time.perf_counter() - t1
            elif task.use_bound:
                bound = _bound_s(G, jobs[0])          # the link-load bound: routes every flow
                spent["bound_s"] = time.perf_counter() - t1
            else:
                bound = math.nan
            why = "" if math.isnan(bound) else \
                (_violated(space, {"time_s": bound}) or _dominated_by_bound(space, values, bound, task.front))
            if why:
                return done("pruned", objectives, why, bound)
        if "time_s" in space.objectives or any(c.startswith("time_s") for c in space.constraints):
            t1 = time.perf_counter()
            objectives["time_s"] = mix(G, jobs).makespan_s
            spent["price_s"] = time.perf_counter() - t1
        if "worst_n1_slowdown" in space.objectives:
            objectives["worst_n1_slowdown"] = _worst_n1(space, task.params_text)
        why = _violated(space, objectives)
        return done("infeasible" if why else "ok", objectives, why, bound)
    except FabricError as exc:
        return done("refused", {}, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


# ----------------------------------------------------------------------------- the search
#: Spaces up to this many designs are searched exhaustively by ``search="auto"``.
EXHAUSTIVE_MAX = 2_000
SEARCHES = ("auto", "exhaustive", "nsga2")


class _Search:
    """The shared part of every search: unique designs evaluated in waves, the front so far."""

    def __init__(self, space: DesignSpace, build: Builder, runner, prune: bool, results_file=None):
        self.space, self.build, self.runner, self.prune = space, build, runner, prune
        self.points: list[DesignPoint | None] = []
        self.index: dict[str, int] = {}
        self.front: list[tuple] = []               # (objective vector, short params) of the front so far
        self._front_points: list[DesignPoint] = []
        self.use_bound = prune
        self._bound_cost = _BoundCost()
        self.senses = _senses(space)
        self.store = _Store(results_file, space, prune) if results_file is not None else None
        self.reused = 0

    def wave(self, designs: Sequence[dict]) -> list[DesignPoint]:
        """Evaluate the designs not seen yet (one ``runner.map``); every design's point, in order."""
        tasks, keys, new = [], [self.space.key(d) for d in designs], []
        for d, key in zip(designs, keys):
            if key in self.index:                  # seen (or twice in this wave)
                continue
            self.index[key] = len(self.points)
            kept = self.store.get(key) if self.store is not None else None
            self.points.append(kept)
            if kept is not None:
                self.reused += 1
                new.append(kept)
                continue
            tasks.append(_Task(self.index[key], key, d, self.space.params_text(d), self.space, self.build,
                               tuple(self.front) if self.prune else (), self.use_bound))
        for i, point in self.runner.map(evaluate, tasks):
            self.points[i] = point
            new.append(point)
            if self.store is not None:
                self.store.put(self.space.key(point.params), point)
        self.use_bound = self.use_bound and self._bound_cost.add(new)
        # a design off the front stays off it: the new front is among the old front and this wave's priced
        cands = self._front_points + [p for p in new if p.status == "ok"]
        if cands:
            vals = np.array([[p.objectives[o] for o in self.space.objectives] for p in cands])
            keep = np.flatnonzero(pareto_mask(vals, self.senses))
            self._front_points = [cands[k] for k in keep]
            self.front = [(tuple(vals[k]), _short(cands[k].params)) for k in keep]
        return [self.points[self.index[k]] for k in keys]

    def result(self, seconds: float, method: str, complete: bool, notes: Sequence[str] = ()) -> DesignResult:
        if self.reused:
            notes = [f"{self.reused:,} design(s) taken from the results file {self.store.path}"] + list(notes)
        points = tuple(p for p in self.points if p is not None)
        ok = [i for i, p in enumerate(points) if p.status == "ok"]
        pareto: tuple[int, ...] = ()
        if ok:
            vals = np.array([[points[i].objectives[o] for o in self.space.objectives] for i in ok])
            pareto = tuple(ok[k] for k in np.flatnonzero(pareto_mask(vals, self.senses)))
        return DesignResult(self.space, points, pareto, seconds, method=method, space_size=self.space.size,
                            complete=complete, notes=tuple(notes))


def design(space: DesignSpace, *, build: Builder, runner=None, wave: int | None = None,
           progress: Callable[[str], None] | None = None, prune: bool = True, search: str = "auto",
           evaluations: int = 500, seed: int = 0, budget_s: float | None = None,
           results_file=None) -> DesignResult:
    """Search ``space`` and return the Pareto front of the priced designs.

    Parameters
    ----------
    space : DesignSpace
    build : ``build(builder_name, **params)`` -> graph, parameters as ``--set`` strings
        (the CLI passes :func:`fabricsim.fabrics.build`).
    runner : a runner with ``map(fn, tasks)`` (``LocalRunner(workers)``, a Dask or resumable
        runner as ``sweep`` uses); in-process by default.
    wave : designs per wave (each wave prunes against the front of the ones before);
        default 4 per worker, at least 8.
    progress : ``progress(message)`` after waves (the CLI writes it to stderr).
    prune : prune designs outside the constraints or whose link-load bound a priced design already
        beats (exact); ``False`` prices every design inside the constraints (the brute-force check).
    search : ``exhaustive`` (every design: the exact front), ``nsga2`` (Optuna's NSGA-II
        sampler proposes designs, ``evaluations`` of them: the best front found, not proven),
        or ``auto``: exhaustive up to :data:`EXHAUSTIVE_MAX` designs, else nsga2.
    evaluations : with nsga2: distinct designs to evaluate.
    seed : seed of the nsga2 search.
    budget_s : stop starting new waves after this many seconds; the result says it is partial.
    results_file : a JSON-lines file keeping every evaluated design; a rerun of the same space
        (builder, fixed parameters, workload, objectives, constraints, parts) takes them from it.

    Returns
    -------
    DesignResult
    """
    from ..whatif.sweeps import LocalRunner
    from ...topo.errors import BadInput
    if search not in SEARCHES:
        raise BadInput(f"search {search!r}; choose one of: {', '.join(SEARCHES)}", param="search")
    if isinstance(evaluations, bool) or not isinstance(evaluations, int) or evaluations < 1:
        raise BadInput(f"evaluations {evaluations!r}; a positive integer")
    runner = runner or LocalRunner()
    workers = getattr(runner, "workers", 1) or 1
    if isinstance(runner, LocalRunner) and workers > 1:
        # one pool for the whole search (LocalRunner.map starts a pool per call, i.e. per wave)
        with _Pool(workers) as pool:
            return design(space, build=build, runner=pool, wave=wave, progress=progress, prune=prune,
                          search=search, evaluations=evaluations, seed=seed, budget_s=budget_s,
                          results_file=results_file)
    wave = wave or max(8, 4 * workers)
    if search == "auto":
        search = "exhaustive" if space.size <= EXHAUSTIVE_MAX else "nsga2"
    if search == "nsga2" and evaluations >= space.size:
        search = "exhaustive"                      # as many evaluations as designs: look at them all
    run = _Search(space, build, runner, prune, results_file)
    t0 = last = time.perf_counter()

    def report(done: int, total: int) -> None:
        nonlocal last
        now = time.perf_counter()
        if progress and (now - last > 2 or done >= total):
            last = now
            eta = (now - t0) / max(done, 1) * (total - done)
            progress(f"design: {done:,}/{total:,} designs, front {len(run.front)}, {now - t0:.0f} s, "
                     f"ETA {eta:.0f} s")

    def over_budget() -> bool:
        return budget_s is not None and time.perf_counter() - t0 > budget_s

    if search == "exhaustive":
        designs, complete = list(space.designs()), True
        for lo in range(0, len(designs), wave):
            if over_budget():
                complete = False
                break
            run.wave(designs[lo:lo + wave])
            report(min(lo + wave, len(designs)), len(designs))
        notes = [] if complete else [f"stopped at --budget-s {budget_s:g}: {len(run.points):,} of "
                                     f"{space.size:,} designs evaluated; the front is of those"]
        return run.result(time.perf_counter() - t0, "exhaustive", complete, notes)
    return _nsga2(run, wave, evaluations, seed, over_budget, report, t0)


def _nsga2(run: _Search, wave: int, evaluations: int, seed: int, over_budget, report, t0: float) -> DesignResult:
    """Optuna's NSGA-II sampler proposes designs (categorical parameters), ``wave`` at a time."""
    from ...topo.errors import BadInput
    try:
        import optuna
    except ImportError:
        raise BadInput("search nsga2 needs Optuna: pip install 'fabricsim[design]' (or use --search exhaustive "
                       "with --budget-s)") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = run.space
    names = list(space.vary)
    choices = {n: list(space.vary[n]) for n in names}
    sampler = optuna.samplers.NSGAIISampler(seed=seed, population_size=max(wave, 20))
    study = optuna.create_study(directions=_senses(space), sampler=sampler)
    asked, complete = 0, True
    while len(run.points) < evaluations and asked < 50 * evaluations:
        if over_budget():
            complete = False
            break
        trials = [study.ask() for _ in range(wave)]
        asked += len(trials)
        designs = [{n: t.suggest_categorical(n, choices[n]) for n in names} for t in trials]
        for t, p in zip(trials, run.wave(designs)):
            if p.status == "ok":
                study.tell(t, [p.objectives[o] for o in space.objectives])
            else:                                  # pruned (dominated), refused, infeasible: no values
                study.tell(t, state=optuna.trial.TrialState.FAIL)
        report(min(len(run.points), evaluations), evaluations)
    notes = [f"NSGA-II (Optuna, seed {seed}) evaluated {len(run.points):,} of {space.size:,} designs: the front "
             "is the best found, not proven (--search exhaustive prices every design)"]
    if not complete:
        notes.append(f"stopped at the time budget after {time.perf_counter() - t0:.0f} s")
    return run.result(time.perf_counter() - t0, f"nsga2 (seed {seed})", complete, notes)


class _Store:
    """Evaluated designs kept in a JSON-lines file, one ``{"space", "key", "point"}`` per line.

    ``space`` fingerprints what decides a design's result (builder, fixed parameters,
    workload, objectives, constraints, parts, pruning on or off); a file holding another
    space's results is refused in one line rather than mixed.  A truncated last line (a
    killed run) is dropped; any other line that is not a record refuses the file.
    """

    def __init__(self, path, space: DesignSpace, prune: bool):
        import hashlib
        import json
        from pathlib import Path
        from ...topo.errors import BadInput
        from ...topo.inputs import read_records, trim_cut_line
        self.path = Path(path)
        doc = {k: v for k, v in space.as_dict().items() if k != "vary"} | {"prune": prune}
        self.space = hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]
        self.kept: dict[str, DesignPoint] = {}
        if self.path.is_dir():
            raise BadInput(f"results file {self.path} is a directory; give a file name")
        if not self.path.parent.is_dir():
            raise BadInput(f"results file {self.path}: directory {self.path.parent} does not exist")
        def record(rec):
            pt = rec["point"]
            return str(rec["space"]), str(rec["key"]), DesignPoint(
                dict(pt["params"]), str(pt["status"]),
                {k: (math.nan if v is None else float(v)) for k, v in pt["objectives"].items()},
                str(pt["reason"]), math.nan if pt["bound_time_s"] is None else float(pt["bound_time_s"]),
                float(pt["seconds"]))

        for fp, key, point in read_records(self.path, "a design search's results", record):
            if fp != self.space:
                raise BadInput(f"results file {self.path} holds another design space's results; give a "
                               "new file (or delete it)")
            self.kept[key] = point
        trim_cut_line(self.path)            # a killed run's partial last record goes before appending

    def get(self, key: str) -> DesignPoint | None:
        return self.kept.get(key)

    def put(self, key: str, point: DesignPoint) -> None:
        import json
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"space": self.space, "key": key, "point": point.as_dict()}) + "\n")
        self.kept[key] = point


class _Pool:
    """A process pool kept for a whole search; ``map`` yields results as they complete."""

    def __init__(self, workers: int):
        self.workers = workers

    def __enter__(self):
        from concurrent.futures import ProcessPoolExecutor
        self.ex = ProcessPoolExecutor(max_workers=self.workers)
        return self

    def __exit__(self, *exc):
        self.ex.shutdown(wait=True, cancel_futures=True)

    def map(self, fn, tasks):
        from concurrent.futures import as_completed
        for f in as_completed([self.ex.submit(fn, t) for t in tasks]):
            yield f.result()


class _BoundCost:
    """Whether computing bounds saves time, kept as running sums: what the pruned designs' prices
    would have cost (the mean price time) against what every bound cost.  Pruning stays exact
    either way; only its work is skipped once bounds cost more than they save."""

    def __init__(self):
        self.bounds = self.bounds_s = self.prices = self.prices_s = self.saved = 0

    def add(self, points: Sequence[DesignPoint]) -> bool:
        """Count ``points`` in; whether bounds still pay."""
        for p in points:
            if "bound_s" in p.timings:
                self.bounds += 1
                self.bounds_s += p.timings["bound_s"]
                self.saved += p.status == "pruned"
            if "price_s" in p.timings:
                self.prices += 1
                self.prices_s += p.timings["price_s"]
        if self.bounds < 8 or not self.prices:
            return True
        return self.saved * (self.prices_s / self.prices) > self.bounds_s


def _short(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())
