"""Concurrent jobs in one max-min solve: collectives sharing the links, step by step.

Model (the README repeats it):

* Each job is a collective on its groups, priced by :func:`~fabricsim.collectives.price`
  with the same options: its algorithm (``auto`` picks as ``price`` does, for the job
  alone), its phases (each repeated ``repeat`` times), and each step's latency.
* A job starts when every job it comes ``after`` has finished (at 0 when it has no
  dependencies).  It walks its steps in order; a step is its latency (the price
  model's per-step latency: route latency, per-step and per-message overheads) and
  then its flows; the next step starts when the last flow of this one finishes.
* At every instant the flows of every running job's current step share the links by
  max-min fairness (``topo.solver.maxmin_rates``); time advances to the next flow
  completion or step boundary, and the rates are solved again.
* A job running with no other job able to run (the rest wait for it) takes exactly
  its solo time from its price report, so a chain of ``after`` jobs costs the sum of
  their prices without a flow being routed twice.  Jobs in lockstep on the same
  flows (identical jobs started together) are solved as one set of flows with
  multiplicity.
* Bottlenecks: every link's bytes over the whole mix (from each job's price) and its
  utilization over the makespan, busiest first.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ...topo.errors import BadInput
from ...topo.units import parse_size
from ..engine import _finite          # JSON has no inf/nan: null for them, as the price report

__all__ = ["Job", "JobResult", "MixResult", "mix", "load_jobs", "jobs_from_dict", "JOB_KEYS"]

BOTTLENECKS_SHOWN = 10
# flows finishing within this relative distance of the next event retire with it
# (the solver's own rel_tol for simulate)
REL_TOL = 1e-9
PROGRESS_EVERY_S = 2.0


@dataclass(frozen=True)
class Job:
    """One collective of a mix: ``size_bytes`` (nccl-tests S) or an all-to-all-v ``traffic`` matrix."""

    name: str
    collective: str
    groups: tuple
    size_bytes: float | None = None
    traffic: np.ndarray | None = field(default=None, compare=False)
    algorithm: str = "auto"
    after: tuple[str, ...] = ()
    delay_s: float = 0.0            # collective "delay": seconds on no link (collectives/jobs/delays.py)


@dataclass(frozen=True)
class JobResult:
    name: str
    collective: str
    algorithm: str
    start_s: float
    finish_s: float
    bytes_total: float          # every rank's buffer (S x ranks), or the matrix's sum, diagonal included
    solo_s: float = float("nan")    # the job's price alone
    groups: int = 0
    group_size: int = 0

    @property
    def time_s(self) -> float:
        return self.finish_s - self.start_s

    @property
    def slowdown(self) -> float | None:
        """Time beside the other jobs over the job's price alone (None when it has no price alone)."""
        return self.time_s / self.solo_s if self.solo_s > 0 else None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "collective": self.collective, "algorithm": self.algorithm,
                "start_s": self.start_s, "finish_s": self.finish_s, "time_s": self.time_s,
                "solo_s": self.solo_s, "slowdown": self.slowdown,
                "bytes_total": self.bytes_total, "groups": self.groups, "group_size": self.group_size}


@dataclass(frozen=True)
class MixResult:
    makespan_s: float
    jobs: tuple[JobResult, ...]
    bottlenecks: tuple
    notes: tuple = ()
    fabric: str = "?"
    events: int = 0             # max-min solves while two or more jobs ran

    def summary(self) -> str:
        """One line: the jobs and the makespan (what a notebook shows)."""
        slow = max(self.jobs, key=lambda j: j.finish_s - j.start_s, default=None)
        return (f"{len(self.jobs)} job(s) on {self.fabric}: makespan {self.makespan_s * 1e6:,.2f} us"
                + ("" if slow is None else f", longest {slow.name!r}"))

    def __repr__(self) -> str:
        return f"MixResult({self.summary()})"

    def as_dict(self) -> dict[str, Any]:
        return _finite({"fabric": self.fabric, "makespan_s": self.makespan_s,
                        "jobs": [j.as_dict() for j in self.jobs], "bottlenecks": list(self.bottlenecks),
                        "events": self.events, "notes": list(self.notes)})


# ----------------------------------------------------------------------------- validation
def _order(jobs: Sequence[Job]) -> list[int]:
    """Check names and ``after``; a topological order of the jobs (input order among equals)."""
    names = [j.name for j in jobs]
    seen: set[str] = set()
    for nm in names:
        if not isinstance(nm, str) or not nm:
            raise BadInput(f"job name {nm!r} must be a non-empty string")
        if nm in seen:
            raise BadInput(f"duplicate job name {nm!r}; every job needs its own name")
        seen.add(nm)
    index = {nm: i for i, nm in enumerate(names)}
    for j in jobs:
        for a in j.after:
            if a not in index:
                from ...topo.errors import close_matches
                raise BadInput(f"job {j.name!r}: after {a!r} names no job{close_matches(a, names)}; "
                               f"jobs: {', '.join(names)}")
            if a == j.name:
                raise BadInput(f"job {j.name!r} comes after itself")
    # Kahn's algorithm in waves (a wave: the jobs whose dependencies are all in earlier waves, in file order),
    # counting each job's unmet dependencies: linear in jobs and edges (a 3,000-job chain took minutes when every
    # wave re-checked every job); a leftover job sits on a cycle
    deps = {i: {index[a] for a in j.after} for i, j in enumerate(jobs)}
    unmet = {i: len(d) for i, d in deps.items()}
    waiting: dict[int, list[int]] = {}
    for i, d in deps.items():
        for k in d:
            waiting.setdefault(k, []).append(i)
    done: list[int] = []
    wave = [i for i, n in unmet.items() if n == 0]
    while wave:
        done.extend(wave)
        nxt = []
        for k in wave:
            for i in waiting.get(k, ()):
                unmet[i] -= 1
                if unmet[i] == 0:
                    nxt.append(i)
        wave = sorted(nxt)
    if len(done) < len(jobs):
        left = {i: d for i, d in deps.items() if unmet[i] > 0}
        cyc = _cycle(left, names)
        raise BadInput(f"jobs depend on each other in a cycle: {' -> '.join(cyc)}")
    return done


def _cycle(left: dict[int, set[int]], names) -> list[str]:
    i = next(iter(left))
    path: list[int] = []
    while i not in path:
        path.append(i)
        i = next(d for d in left[i] if d in left)
    cyc = path[path.index(i):] + [i]
    return [names[k] for k in reversed(cyc)]


# ----------------------------------------------------------------------------- per-job plan
@dataclass
class _Plan:
    """A job priced alone, and its phases for the shared solve (routed on first use)."""

    job: Job
    report: Any                      # CostReport alone
    phases: list                     # Phase objects (live groups)
    step_bw_s: list[float]
    step_lat_s: list[float]
    key: tuple                       # identical jobs share a key
    bytes_total: float
    rate_scale: list = field(default_factory=list)   # per phase: bytes x this move through the solve capacity
    memory_limit_bytes: int | None = None
    base_s: float = 0.0              # per-call latency before the first step (protocol model)
    flows: dict = field(default_factory=dict)       # phase index -> (P, Q, sizes)

    def steps(self):
        """(phase index, repetition) of every step in order."""
        for i, ph in enumerate(self.phases):
            for r in range(ph.repeat):
                yield i, r


def _job_key(job: Job, algorithm: str) -> tuple:
    T = job.traffic
    import hashlib
    tkey = None if T is None else (np.shape(T), hashlib.sha256(
        np.ascontiguousarray(T, dtype=np.float64).tobytes()).hexdigest())
    return (job.collective, algorithm, tuple(map(tuple, job.groups)), job.size_bytes, tkey)


def _plan(G, job: Job, view, price_kwargs, cache: dict) -> _Plan:
    from ..algorithms import phases as phases_of
    from ..placement import check_groups
    from ..price import price
    if job.collective == "delay":           # a rank's compute: latency only (collectives/jobs/delays.py)
        from .delays import delay_plan
        return delay_plan(job, _Plan)
    if (job.size_bytes is None) == (job.traffic is None):
        raise BadInput(f"job {job.name!r}: give a size or a traffic matrix (exactly one)")
    groups = [tuple(int(r) for r in g) for g in job.groups]
    if not groups:
        raise BadInput(f"job {job.name!r}: no groups")
    try:
        check_groups(G, groups)      # as price --groups: chips exist, none twice (in a group or across groups)
    except BadInput as exc:
        raise BadInput(f"job {job.name!r}: {exc}") from None
    key0 = _job_key(job, job.algorithm)
    if key0 in cache:
        rep = cache[key0]
    else:
        try:
            rep = price(G, job.collective, groups=groups, size_bytes=job.size_bytes, algorithm=job.algorithm,
                        traffic=job.traffic, **price_kwargs)
        except BadInput as exc:
            raise BadInput(f"job {job.name!r}: {exc}") from None
        cache[key0] = rep
    if not math.isfinite(rep.time_s):
        raise BadInput(f"job {job.name!r}: every group lost a chip; nothing to price")
    live = [groups[i] for i in rep.group_ids]
    T = job.traffic
    if T is not None:
        T = np.asarray(T, dtype=np.float64)
        if T.ndim == 3 and len(T) == len(groups):
            T = T[list(rep.group_ids)]
        size = rep.size_bytes
        total = float(T.sum()) * (len(groups) if T.ndim == 2 else 1)
    else:
        size = float(job.size_bytes)
        total = size * len(groups) * len(groups[0])
    plist = phases_of(job.collective, rep.algorithm, live, size, view, traffic=T)
    if [p.repeat for p in plist] != [p.repeat for p in rep.phases]:
        # the shared solve walks these phases with the report's step times: they must agree
        raise RuntimeError(f"job {job.name!r}: price reported phases {[p.name for p in rep.phases]} but "
                           f"{rep.algorithm} builds {[p.name for p in plist]}")
    return _Plan(job, rep, plist, [p.step_bandwidth_s for p in rep.phases],
                 [p.latency_per_step_s for p in rep.phases], _job_key(job, rep.algorithm), total,
                 [p.rate_scale for p in rep.phases], price_kwargs.get("memory_limit_bytes"),
                 base_s=rep.base_latency_s)


def _route_phase(G, plan: _Plan, i: int, table, cap: np.ndarray, split: str, tiers: str):
    """(flow_piece, piece_link, bytes) of one step of phase ``i``: reachable flows with bytes."""
    if i in plan.flows:
        return plan.flows[i]
    from ...topo import routing, solver
    from ...topo.errors import TooLarge
    ph = plan.phases[i]
    F = int(np.count_nonzero(ph.size_bytes > 0))
    # routing keeps ~3 pieces per flow (as price's guard assumes)
    est = solver.estimate_memory_bytes(n_flows=F, nnz_flow_piece=3 * F, n_pieces=max(1, F // 64),
                                       nnz_piece_link=max(1, F // 16), n_links=len(cap))
    try:
        solver.guard_memory(est, limit_bytes=plan.memory_limit_bytes, n_flows=F)
    except TooLarge:
        raise TooLarge(f"job {plan.job.name!r}: its step '{ph.name}' has {F:,} flows, ~{est / 2**30:.1f} GiB to "
                       f"solve beside other jobs; run it after them (alone it is priced as price does, by "
                       f"symmetry classes where they apply)") from None
    if ph.in_network:
        from ..engine import in_network_flows
        P, Q, sizes = in_network_flows(G, ph, table, cap)
    else:
        has = np.flatnonzero(ph.size_bytes > 0)          # a flow of no bytes is no flow
        routes = routing.route(G, ph.src[has], ph.dst[has], split=split, tiers=tiers, links=table)
        ok = np.asarray(routes.reachable, dtype=bool)   # unreachable pairs: the price's PARTIAL note
        P = sp.csr_array(routes.flow_piece)[np.flatnonzero(ok)]
        Q = sp.csr_array(routes.piece_link)
        sizes = np.asarray(ph.size_bytes, dtype=np.float64)[has[ok]]
    # the price's own scale: bytes x rate_scale through the solve capacities take the step's time alone
    plan.flows[i] = (P, Q, sizes * plan.rate_scale[i])
    return plan.flows[i]


# ----------------------------------------------------------------------------- the event loop
@dataclass
class _Run:
    """A running job: its step and, while its flows move, their bytes left."""

    plan: _Plan
    steps: list                   # remaining (phase, rep) steps, current first
    start_s: float
    lat_end: float | None = None  # in its step's latency until then
    left: np.ndarray | None = None    # bytes left per flow of the current step (transferring)
    mult: int = 1


def mix(G: nx.Graph, jobs: Sequence[Job], *, progress: Callable[[str], None] | None = None,
        **price_kwargs) -> MixResult:
    """Price ``jobs`` running together on ``G``: one max-min solve of every running job's flows.

    Parameters
    ----------
    G : fabric graph.
    jobs : the jobs; ``after`` names jobs that must finish before one starts.
    progress : called with a one-line message every few seconds of a long shared solve.
    **price_kwargs : passed to :func:`~fabricsim.collectives.price` for every job
        (``split``, ``tiers``, ``efficiency``, ``step_overhead_ns``, ...).

    Returns
    -------
    MixResult
        Each job's start and finish, the makespan and the busiest links.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> from fabricsim.collectives import by_size
    >>> G = build("jalapeno-rack")
    >>> g = by_size(G, 8)
    >>> a = Job("a", "all-reduce", g, 2**24, algorithm="ring")
    >>> b = Job("b", "all-reduce", g, 2**24, algorithm="ring", after=("a",))
    >>> r = mix(G, [a, b])
    >>> round(r.makespan_s / (2 * r.jobs[0].solo_s), 12)
    1.0
    """
    from ...topo import routing
    from ..algorithms import view_of
    if not jobs:
        raise BadInput("no jobs to run")
    if price_kwargs.get("bound_only"):
        raise BadInput("mix shares links by max-min fairness; bound_only does not apply")
    unknown = set(price_kwargs) - {"split", "tiers", "efficiency", "step_overhead_ns", "message_overhead_ns",
                                   "memory_limit_bytes", "symmetry", "calibration", "protocol", "options"}
    if unknown:
        raise BadInput(f"mix: unknown option(s) {', '.join(sorted(unknown))}")
    split = price_kwargs.get("split")
    split = getattr(price_kwargs.get("options"), "split", None) if split is None else split
    split_note = None
    if split == "adaptive":
        # mix shares links between jobs with the fixed-split solver; the multipath program
        # (collectives.adaptive) prices one collective at a time
        raise BadInput("mix: split 'adaptive' is not supported across jobs yet; choose equal or capacity")
    if split is None:
        from ...topo.routing.switching import default_split
        split, why = default_split(G)
        if split == "adaptive":
            split = "equal"
            split_note = (f"split equal: the fabric's default adaptive ({why}) is not modelled across jobs "
                          f"(mix shares links with the fixed-split solver)")
    price_kwargs = {**price_kwargs, "split": split}
    order = _order(jobs)
    view = view_of(G)
    cache: dict = {}
    plans = [None] * len(jobs)
    routed: dict[tuple, dict] = {}
    table = routing.link_table(G)
    from ..engine import PriceOptions, solve_capacity_Bps
    given = {k: v for k, v in price_kwargs.items() if k != "options"}
    opts = (price_kwargs.get("options") or PriceOptions()).replace(**given)
    # the capacities every job's price solved at; each phase's rate_scale is relative to them
    cap = solve_capacity_Bps(G, opts, table)
    raw = np.asarray(table.capacity_Bps, dtype=np.float64)
    t_prog = time.perf_counter()
    for k, i in enumerate(order, 1):
        plans[i] = _plan(G, jobs[i], view, price_kwargs, cache)
        # identical jobs (the same layer's collective repeated) route their phases once
        plans[i].flows = routed.setdefault(plans[i].key, {})
        if progress and time.perf_counter() - t_prog > PROGRESS_EVERY_S:
            t_prog = time.perf_counter()
            progress(f"mix: priced {k:,} of {len(jobs):,} jobs alone ({len(cache):,} distinct)")
    split, tiers = price_kwargs.get("split", "equal"), price_kwargs.get("tiers", "rule")
    index = {j.name: i for i, j in enumerate(jobs)}
    deps = [{index[a] for a in j.after} for j in jobs]
    start = [math.nan] * len(jobs)
    finish = [math.nan] * len(jobs)
    running: dict[int, _Run] = {}
    done: set[int] = set()
    now = 0.0
    events = 0

    def launch(t: float):
        for i in order:
            if i not in done and i not in running and deps[i] <= done:
                start[i] = t
                running[i] = _Run(plans[i], list(plans[i].steps()), t)
                _begin_step(running[i], t + plans[i].base_s)

    def settle(t: float):
        """Start the flows of steps whose latency has run out; retire finished steps and jobs."""
        changed = True
        while changed:
            changed = False
            for i, run in list(running.items()):
                if run.left is None and run.lat_end <= t * (1 + REL_TOL):
                    _start_flows(run, G, table, cap, split, tiers)
                    changed = True
                if run.left is not None and not np.any(run.left > 0):
                    run.steps.pop(0)
                    changed = True
                    if run.steps:
                        _begin_step(run, t)
                    else:
                        finish[i] = t
                        del running[i]
                        done.add(i)
                        launch(t)

    launch(0.0)
    settle(0.0)
    while running:
        if len(running) == 1:
            # nothing else can run until this job ends: it runs the rest of its steps alone
            (i, run), = running.items()
            finish[i] = now + _rest_alone(run, now, G, table, cap, split, tiers)
            now = finish[i]
            del running[i]
            done.add(i)
            launch(now)
            settle(now)
            continue
        moving = [i for i, r in running.items() if r.left is not None]
        t_next = min((r.lat_end for r in running.values() if r.left is None), default=math.inf)
        if moving:
            blocks = _lockstep(moving, running)
            rates = _rates(blocks, running, G, table, cap, split, tiers)
            events += 1
            ends = []
            for b, r in zip(blocks, rates):
                left = running[b[0]].left
                with np.errstate(divide="ignore", invalid="ignore"):
                    ends.append(np.where(left > 0, left / r, np.inf))
            t_flow = min(float(e.min()) for e in ends)
            t_next = min(t_next, now + t_flow)
            dt = t_next - now
            for b, r, e in zip(blocks, rates, ends):
                run = running[b[0]]
                left = np.maximum(run.left - r * dt, 0.0)
                # flows ending within the solver's tolerance of this event end with it, and
                # so do leftovers of roundoff (a few ulps of the flow's bytes), which would
                # otherwise end at a time ``now`` cannot resolve
                sizes = run.plan.flows[run.steps[0][0]][2]
                fin = (e <= dt * (1 + REL_TOL)) | (left <= sizes * 1e-12)
                left = np.where(fin, 0.0, left)
                for k in b:
                    running[k].left = left
        now = t_next
        settle(now)
        if progress and time.perf_counter() - t_prog > PROGRESS_EVERY_S:
            t_prog = time.perf_counter()
            progress(f"mix: {events:,} shared solves, t = {now * 1e6:,.2f} us, {len(running)} jobs running")
    r = _result(G, jobs, plans, start, finish, table, cap, events)
    return r if split_note is None else dataclasses.replace(r, notes=(split_note,) + r.notes)


def _begin_step(run: _Run, t: float) -> None:
    i, _ = run.steps[0]
    run.lat_end = t + run.plan.step_lat_s[i]
    run.left = None


def _start_flows(run: _Run, G, table, cap, split, tiers) -> None:
    i, _ = run.steps[0]
    _, _, sizes = _route_phase(G, run.plan, i, table, cap, split, tiers)
    run.lat_end = None
    run.left = sizes.copy()


def _lockstep(moving: list[int], running: dict[int, _Run]) -> list[list[int]]:
    """Running jobs on identical flows with identical bytes left: one block each."""
    blocks: list[list[int]] = []
    for i in moving:
        r = running[i]
        for b in blocks:
            q = running[b[0]]
            if q.plan.key == r.plan.key and q.steps[0][0] == r.steps[0][0] and \
                    (q.left is r.left or np.array_equal(q.left, r.left)):
                b.append(i)
                r.left = q.left
                break
        else:
            blocks.append([i])
    return blocks


def _rates(blocks, running, G, table, cap, split, tiers) -> list[np.ndarray]:
    """Max-min rates of every moving flow (per block, aligned with its ``left``)."""
    from ...topo import solver
    Ps, Qs, mult, alive = [], [], [], []
    for b in blocks:
        run = running[b[0]]
        P, Q, _ = _route_phase(G, run.plan, run.steps[0][0], table, cap, split, tiers)
        a = np.flatnonzero(run.left > 0)
        alive.append(a)
        Ps.append(P[a])
        Qs.append(Q)
        mult.append(np.full(len(a), float(len(b))))
    P = sp.block_diag(Ps, format="csr")
    Q = sp.vstack(Qs, format="csr")
    r = solver.maxmin_rates(P, Q, cap, multiplicity=np.concatenate(mult))
    out, lo = [], 0
    for b, a in zip(blocks, alive):
        full = np.zeros(len(running[b[0]].left))
        full[a] = r.rate_Bps[lo:lo + len(a)]
        lo += len(a)
        out.append(full)
    return out


def _rest_alone(run: _Run, now: float, G, table, cap, split, tiers) -> float:
    """Time from ``now`` until ``run`` ends, running alone (its solo step times)."""
    from ...topo import solver
    plan, steps = run.plan, run.steps
    t = 0.0
    if run.left is not None:
        # mid-step: its flows' bytes left, alone
        P, Q, _ = _route_phase(G, plan, steps[0][0], table, cap, split, tiers)
        a = np.flatnonzero(run.left > 0)
        if len(a):
            t += solver.simulate(P[a], Q, cap, run.left[a]).time_s
        steps = steps[1:]
    elif run.lat_end is not None:
        i = steps[0][0]
        t += (run.lat_end - now) + plan.step_bw_s[i]
        steps = steps[1:]
    for i, _ in steps:
        t += plan.step_lat_s[i] + plan.step_bw_s[i]
    return t


def _result(G, jobs, plans, start, finish, table, cap, events) -> MixResult:
    """Utilization is of the capacities the prices solved at, as price reports it; GB/s is raw line rate."""
    makespan = max(finish)
    raw = np.asarray(table.capacity_Bps, dtype=np.float64)
    link_bytes = np.zeros(len(cap))
    notes = []
    for p in plans:
        if p.report.link_bytes is not None:
            link_bytes += np.asarray(p.report.link_bytes)
        if p.report.partial:
            notes.append(f"PARTIAL: job {p.job.name!r}: " + "; ".join(n for n in p.report.notes if "PARTIAL" in n))
    util = np.divide(link_bytes, cap * makespan, out=np.zeros_like(link_bytes), where=cap * makespan > 0)
    top = np.argsort(-util, kind="stable")[:BOTTLENECKS_SHOWN]
    nodes = table.nodes
    bottlenecks = tuple({"link": f"{nodes[table.src[i]]} -> {nodes[table.dst[i]]}", "tier": str(table.tier[i]),
                         "utilization": float(util[i]), "bytes": float(link_bytes[i]),
                         "capacity_GBps": float(raw[i] / 1e9)} for i in top if util[i] > 0)
    res = tuple(JobResult(p.job.name, p.job.collective, p.report.algorithm, float(start[i]), float(finish[i]),
                          float(p.bytes_total), float(p.report.time_s), p.report.groups, p.report.group_size)
                for i, p in enumerate(plans))
    return MixResult(float(makespan), res, bottlenecks, tuple(notes), G.graph.get("name", "?"), events)


# ----------------------------------------------------------------------------- spec files
JOB_KEYS = ("name", "collective", "size", "traffic", "moe", "group_size", "count", "placement", "mesh", "over",
            "groups", "algorithm", "after")


def load_jobs(path, G: nx.Graph) -> list[Job]:
    """Jobs from a TOML file of ``[[job]]`` tables (see :func:`jobs_from_dict`)."""
    from pathlib import Path
    try:
        import tomllib
    except ModuleNotFoundError:          # Python 3.10
        import tomli as tomllib
    from ...topo.inputs import read_input_text
    p = Path(path)
    text = read_input_text(p, "a jobs TOML file of [[job]] tables")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{p}: not TOML ({exc})") from None
    return jobs_from_dict(data, G, base=p.parent, where=str(p))


def jobs_from_dict(data: dict, G: nx.Graph, *, base=None, where: str = "mix") -> list[Job]:
    """``{"job": [{name, collective, size | traffic | moe, group_size | mesh + over | groups, ...}]}`` -> jobs.

    Per job: ``name``; ``collective``; ``size`` (bytes, or "64MiB"; S as ``price`` takes
    it) or ``traffic`` (a matrix file or directory, relative to the spec) or ``moe`` (a
    MoE spec string, all-to-all only; ``ep`` = the group size); groups by
    ``group_size`` (with optional ``count``, ``placement``), ``mesh`` + ``over``, or
    ``groups`` (a list of rank lists, or a JSON groups file) — one group of every chip
    when none is given; ``algorithm`` (default auto); ``after`` (names).
    """
    from pathlib import Path
    from .. import placement as PL
    from ..algorithms import COLLECTIVES
    from ..traffic import MoESpec, load_matrix, moe_traffic
    from ...topo.errors import close_matches
    base = Path(base) if base is not None else Path(".")
    unknown_top = set(data) - {"job"}
    if unknown_top:
        raise BadInput(f"{where}: unknown top-level key(s) {', '.join(sorted(unknown_top))}; write [[job]] tables")
    tables = data.get("job")
    if not isinstance(tables, list) or not tables:
        raise BadInput(f"{where}: no [[job]] tables")
    jobs = []
    for k, t in enumerate(tables, 1):
        label = f"{where}: job {k}"
        if not isinstance(t, dict):
            raise BadInput(f"{label}: not a table")
        if "name" in t:
            if not isinstance(t["name"], str) or not t["name"]:
                raise BadInput(f"{label}: name {t['name']!r} must be a non-empty string")
            label = f"{where}: job {t['name']!r}"
        else:
            raise BadInput(f"{label}: missing name")
        if t.get("collective") == "delay":      # time on no link (collectives/jobs/delays.py)
            from .delays import delay_job
            jobs.append(delay_job(t, label))
            continue
        for key in t:
            if key not in JOB_KEYS:
                raise BadInput(f"{label}: unknown key {key!r}{close_matches(key, JOB_KEYS)}; valid: "
                               f"{', '.join(JOB_KEYS)}")
        coll = t.get("collective")
        if coll not in COLLECTIVES:
            raise BadInput(f"{label}: collective {coll!r}{close_matches(str(coll), COLLECTIVES)}; choose one of: "
                           f"{', '.join(COLLECTIVES)}" if coll is not None else f"{label}: missing collective")
        given = [x for x in ("size", "traffic", "moe") if x in t]
        if not given:
            raise BadInput(f"{label}: missing size (or traffic / moe for an all-to-all-v)")
        if len(given) > 1:
            raise BadInput(f"{label}: give one of size, traffic, moe (got {', '.join(given)})")
        if given[0] != "size" and coll != "all-to-all":
            raise BadInput(f"{label}: {given[0]} gives an all-to-all-v; {coll} takes size")
        try:
            groups = _job_groups(t, G, PL, base)
        except BadInput as exc:
            raise BadInput(f"{label}: {exc}") from None
        size = traffic = None
        try:
            if "size" in t:
                size = _size(t["size"])
            elif "traffic" in t:
                if not isinstance(t["traffic"], str):
                    raise BadInput(f"traffic {t['traffic']!r} must be a file or directory path")
                tp = Path(t["traffic"])
                traffic = load_matrix(tp if tp.is_absolute() else base / tp, len(groups[0]), len(groups))
            else:
                if not isinstance(t["moe"], str):
                    raise BadInput(f"moe {t['moe']!r} must be a spec string like experts=256,top_k=8,...")
                traffic = moe_traffic(MoESpec.parse(t["moe"]), len(groups[0])).matrix
        except BadInput as exc:
            raise BadInput(f"{label}: {exc}") from None
        alg = t.get("algorithm", "auto")
        if not isinstance(alg, str):
            raise BadInput(f"{label}: algorithm {alg!r} must be a name")
        after = t.get("after", [])
        if isinstance(after, str):
            after = [after]
        if not isinstance(after, list) or not all(isinstance(a, str) for a in after):
            raise BadInput(f"{label}: after {after!r} must be a list of job names")
        jobs.append(Job(t["name"], coll, tuple(groups), size, traffic, alg, tuple(after)))
    _order(jobs)
    return jobs


def _size(v) -> float:
    """A job's ``size`` -> bytes, by the one size rule (:func:`fabricsim.topo.units.parse_size`)."""
    return parse_size(v)


def _job_groups(t: dict, G, PL, base) -> tuple:
    how = [k for k in ("group_size", "mesh", "groups") if k in t]
    if len(how) > 1:
        raise BadInput(f"give one of group_size, mesh (+ over), groups (got {', '.join(how)})")
    if "over" in t and "mesh" not in t:
        raise BadInput("over needs mesh")
    if "mesh" in t:
        if "over" not in t:
            raise BadInput("mesh needs over (the dimension whose groups communicate)")
        return PL.by_mesh(G, PL.parse_mesh(str(t["mesh"])), str(t["over"]))
    if "groups" in t:
        g = t["groups"]
        if isinstance(g, str):
            from pathlib import Path
            return PL.from_file(G, g if Path(g).is_absolute() else base / g)
        if not (isinstance(g, list) and g and all(isinstance(x, list) and len(x) >= 2 for x in g)):
            raise BadInput("groups must be a list of rank lists (2+ ranks each) or a JSON groups file")
        return PL.check_groups(G, g)    # as price --groups: chips exist, none twice (in a group or across)
    size = t.get("group_size", len(PL.chip_ranks(G)))
    if isinstance(size, bool) or not isinstance(size, int):
        raise BadInput(f"group_size {size!r} must be an integer")
    count = t.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise BadInput(f"count {count!r} must be a positive integer")
    return PL.by_size(G, size, str(t.get("placement", "packed")), count=count)
