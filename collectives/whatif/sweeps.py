"""Failure sweeps: every failure of a class, every pair, or seeded samples, ranked worst first.

Public names
------------
Sweep, sweep
    Every failure of a class (N-1), every pair (N-2), or K seeded random samples,
    priced independently and ranked worst first, with the distribution of slowdowns.
Runner, LocalRunner
    How a sweep's scenarios are run: ``runner.map(fn, tasks)`` yields ``fn(task)``
    for every task, in any order, as each completes.  ``LocalRunner(workers=N)``
    runs them in-process (N = 1) or in a process pool (a Dask cluster and resuming
    from a results file: :mod:`fabricsim.collectives.whatif.dask_runner`).
(Pictures of a sweep: :func:`fabricsim.collectives.plots.plot_sweep`.)

Notes
-----
* A scenario's slowdown is as :func:`~fabricsim.collectives.whatif.scenario.whatif`'s:
  ``degraded.time_s / baseline.time_s``, over what could be priced (``partial``).
* A sweep resolves ``algorithm="auto"`` once, on the intact fabric, and prices every
  scenario with that algorithm, so slowdowns compare like with like (NCCL too picks
  its algorithm from the topology, not per failure).  ``whatif`` lets ``auto`` choose
  again on the degraded graph; both reports name the algorithm.
* A sweep task is small and picklable: the fabric's name (or file) and parameters,
  the failure specs and the price options.  Each worker process builds the fabric
  once and caches it (:func:`functools.lru_cache`), so a distributed runner (Dask:
  ``client.submit`` per task, ``as_completed`` for results) ships no graphs.  Every
  scenario is computed on its own from the same inputs and the results are sorted
  by (slowdown, spec text), so a sweep is bit-for-bit identical whatever the runner
  or the worker count.
* A sweep folds its scenarios into orbits under the fabric's verified symmetries
  (:mod:`fabricsim.collectives.whatif.orbits`) and solves one representative per orbit;
  every scenario is reported with its orbit's result, ``orbit`` and ``orbit_size``, and
  the sweep's ``method`` says which generators held and why the others were refused
  (``fold=False`` solves every scenario).
* ``recovery="restart"`` (:mod:`~fabricsim.collectives.whatif.scenario`'s Notes) re-places
  the job on each scenario's survivors by rank order.  A symmetry of the fabric maps a
  scenario's survivors onto the other's but not their rank order, so the restarted
  placements of two scenarios of one orbit need not be images of each other and the
  orbit argument fails: a restart sweep does not fold.  It prices every scenario, and
  refuses more than ``MAX_RESTART_SCENARIOS`` of them (sample them instead).
"""
from __future__ import annotations

import functools
import itertools
import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

import networkx as nx
import numpy as np

from ...topo import routing as _routing, solver as _solver  # noqa: F401  (loaded before workers fork: one code version)
from ...topo.errors import BadInput
from ...topo.failures import apply_failures, chip_tier_bandwidth, domains
from ..placement import by_size, chip_ranks
from ..price import CostReport, _finite, price
from .scenario import REL_TOL, _check_price_kwargs, _ratio, check_recovery, job_groups, restart_job

__all__ = ["Sweep", "sweep", "shared_pairs", "Runner", "LocalRunner"]

# full enumeration of C(k, n) scenarios above this count is refused (use samples=)
MAX_SCENARIOS = 100_000
# a restart sweep prices every scenario (no fold): more than this is refused (sample them).  I: a bound on
# work, one full price per scenario; a 2,048-chip pod all-to-all prices in seconds, so 256 is minutes
MAX_RESTART_SCENARIOS = 256
HIST_BINS = 10
# wall seconds a sweep of pairs (n >= 2) may be estimated to take before it is refused (budget_s="auto");
# N-1 sweeps are bounded by their scenario count alone.  I: a bound on work, not a fact
DEFAULT_N2_BUDGET_S = 600.0
# the confidence of the sampled-worst statement (a sweep of samples): 95 % (I: a convention)
SAMPLE_CONFIDENCE = 0.95


# ---------------------------------------------------------------------------------------
# Runners
# ---------------------------------------------------------------------------------------
class Runner(Protocol):
    """Runs a sweep's tasks: ``map(fn, tasks)`` yields ``fn(task)`` per task as each completes.

    ``fn`` is a module-level function and every task a small picklable object; the
    order of results does not matter (the sweep sorts them).
    """

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[Any]: ...


# local worker processes per core past which more only contend (I: the solves are CPU-bound, one core each;
# 8 leaves room for processes waiting on I/O or memory).  Was unbounded: --workers 100000 forked 100,000
# processes (design's pool starts them all at once).
WORKERS_PER_CORE = 8


def max_local_workers() -> int:
    """The most local worker processes a :class:`LocalRunner` starts: :data:`WORKERS_PER_CORE` per core."""
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


@dataclass(frozen=True)
class LocalRunner:
    """In-process (``workers=1``) or a :class:`~concurrent.futures.ProcessPoolExecutor` of ``workers``.

    Worker processes are forked after the parent built the fabric, so they start with
    it cached; otherwise each builds it once on its first task.
    """

    workers: int = 1

    def __post_init__(self):
        if not isinstance(self.workers, int) or self.workers < 1:
            raise BadInput(f"workers {self.workers!r} must be a positive integer", param="workers")
        if self.workers > max_local_workers():
            raise BadInput(f"workers {self.workers:,} is more than {max_local_workers():,} local processes "
                           f"({WORKERS_PER_CORE} per core of this machine's {os.cpu_count() or 1}); more only wait on "
                           f"each other (and each holds the fabric): use --scheduler for a cluster", param="workers")

    def map(self, fn, tasks):
        tasks = list(tasks)
        if self.workers == 1 or len(tasks) <= 1:
            for t in tasks:
                yield fn(t)
            return
        ex = ProcessPoolExecutor(max_workers=min(self.workers, len(tasks)))
        try:
            futures = [ex.submit(fn, t) for t in tasks]
            for f in as_completed(futures):
                yield f.result()
        finally:
            # an error or an abandoned iteration: drop the tasks not started yet
            ex.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------------------------
# Sweep: tasks and the worker side
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Task:
    """One scenario, small enough to ship to any worker."""

    index: int
    fabric: str
    params_json: str
    specs: tuple
    collective: str
    groups: tuple          # ("size", group_size, placement), ("explicit", groups) or, restarting after the
    #                        failures, ("restart", group_size, placement, spares)
    size_bytes: float
    price_kwargs: tuple    # sorted (key, value) pairs


def _is_file(fabric: str) -> bool:
    return fabric.endswith((".toml", ".graphml", ".json")) or Path(fabric).is_file()


_GRAPH = "graph:"      # a source naming a graph given as an object: "graph:<its pickle file>"


def fabric_source(fabric: str | nx.Graph) -> tuple[str, str]:
    """(source, display name) of a sweep's fabric: a name or file as given; a graph pickled once.

    Worker processes (a local pool, Dask) rebuild the intact fabric from a short string rather
    than receive the graph with every task.  A graph given as an object (a notebook's
    ``build(...)``, a modified copy) is written once, with pickle so it comes back exactly, to
    ``<tempdir>/fabricsim-graphs/<content hash>.pickle`` and named by that path; workers on this
    machine load it (a remote Dask scheduler's workers need a catalog name or fabric file).
    """
    if isinstance(fabric, nx.Graph):
        import hashlib
        import pickle
        import tempfile
        blob = pickle.dumps(fabric, protocol=pickle.HIGHEST_PROTOCOL)
        folder = Path(tempfile.gettempdir()) / "fabricsim-graphs"
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / f"{hashlib.sha256(blob).hexdigest()[:24]}.pickle"
        if not path.exists():
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(blob)
            os.replace(tmp, path)
        return _GRAPH + str(path), str(fabric.graph.get("name") or "graph")
    if not isinstance(fabric, (str, os.PathLike)):
        raise BadInput(f"fabric {fabric!r} is not a graph, a catalog name or a fabric file")
    fabric = os.fspath(fabric)
    return fabric, fabric


@functools.lru_cache(maxsize=4)
def _fabric(fabric: str, params_json: str) -> nx.Graph:
    """The intact fabric, built once per process (never mutated: failures copy it)."""
    params = json.loads(params_json)
    if fabric.startswith(_GRAPH):
        import pickle
        if params:
            raise BadInput(f"builder parameters {params} apply to a catalog name or fabric file, not to a graph; "
                           "build the graph with them first")
        with open(fabric[len(_GRAPH):], "rb") as fh:
            return pickle.load(fh)
    # imported here: collectives do not depend on the catalog except to build a sweep's fabric
    if _is_file(fabric):
        from ...fabrics.userfile import load_fabric
        return load_fabric(fabric, **params)
    from ...fabrics import build
    return build(fabric, **params)


@functools.lru_cache(maxsize=4)
def _groups(fabric: str, params_json: str, spec: tuple) -> tuple:
    if spec[0] == "explicit":
        return spec[1]
    G = _fabric(fabric, params_json)
    spares = spec[3] if spec[0] == "restart" else 0
    size = len(chip_ranks(G)) - spares if spec[1] is None else spec[1]   # 0 is refused by by_size, not "all"
    if spec[0] == "restart":
        return job_groups(G, size, spec[2], spares)
    return by_size(G, size, spec[2])


@functools.lru_cache(maxsize=4)
def _tier_bw(fabric: str, params_json: str) -> dict:
    return chip_tier_bandwidth(_fabric(fabric, params_json))


def _run_scenario(task: _Task) -> dict:
    """Worker: price one scenario on the cached fabric; a small dict back."""
    G = _fabric(task.fabric, task.params_json)
    groups = _groups(task.fabric, task.params_json, task.groups)
    if not task.specs:
        # the baseline, run beside the scenarios when the algorithm is fixed in advance
        return {"index": task.index, "baseline": price(G, task.collective, groups=groups,
                                                       size_bytes=task.size_bytes, **dict(task.price_kwargs))}
    H, _ = apply_failures(G, task.specs)
    rec = {}
    if task.groups[0] == "restart":
        try:
            groups, info = restart_job(G, H, task.collective, groups, placement=task.groups[2], spares=task.groups[3])
        except BadInput as exc:
            # not one group fits the survivors: nothing to price, and the reason
            present = set(chip_ranks(H).tolist())
            return {"index": task.index, "failed": list(task.specs), "time_s": math.nan, "bandwidth_time_s": math.nan,
                    "algorithm": None, "partial": False, "broken_groups": 0, "unreachable_pairs": 0,
                    "chips_lost": sum(1 for k in _tier_bw(task.fabric, task.params_json) if k not in present),
                    "chips_bandwidth_changed": None, "top_bottleneck": None,
                    "recovery": {"restarted": False, "reason": str(exc)}}
        rec = {"recovery": {"restarted": True, **{k: info[k] for k in (
            "ranks_before", "ranks_after", "ranks_lost", "groups_lost", "group_size_after", "shrunk",
            "spares_used", "chips_dropped")}}}
    r = price(H, task.collective, groups=groups, size_bytes=task.size_bytes, reference=G, **dict(task.price_kwargs))
    tb0, tb1 = _tier_bw(task.fabric, task.params_json), chip_tier_bandwidth(H)
    lost = sum(1 for k in tb0 if k not in tb1)
    changed = sum(1 for k, v in tb0.items() if k in tb1 and (set(v) != set(tb1[k]) or any(
        abs(v[t] - tb1[k][t]) > REL_TOL * max(v[t], 1.0) for t in v)))
    return {"index": task.index, "failed": list(task.specs), "time_s": float(r.time_s),
            "bandwidth_time_s": float(r.bandwidth_time_s), "algorithm": r.algorithm, "partial": bool(r.partial),
            "broken_groups": int(r.broken_groups.get("count", 0)),
            "unreachable_pairs": int(r.unreachable_pairs.get("count", 0)),
            "chips_lost": lost, "chips_bandwidth_changed": changed,
            "top_bottleneck": r.bottlenecks[0]["link"] if r.bottlenecks else None, **rec,
            **({"method": _plain(r.method)} if isinstance(getattr(r, "method", None), dict) else {})}


def _scenario_result_error(res: Any, task: _Task) -> str | None:
    """Why ``res`` (read back from a results file) is not what :func:`_run_scenario` returns for ``task``;
    ``None`` when it is.  A resumed sweep refuses the file rather than rank a damaged record."""
    def count(x, none_ok=False):
        return (x is None and none_ok) or (isinstance(x, int) and not isinstance(x, bool) and x >= 0)

    def seconds(x):      # NaN: a restart with no group left to price
        return isinstance(x, (int, float)) and not isinstance(x, bool) and not x < 0

    if not isinstance(res, dict):
        return f"is {type(res).__name__}, not a scenario's result"
    if res.get("index") != task.index or res.get("failed") != list(task.specs):
        return f"is for another scenario (index {str(res.get('index'))[:40]}, failed {str(res.get('failed'))[:80]})"
    checks = {"time_s": seconds, "bandwidth_time_s": seconds, "partial": lambda x: isinstance(x, bool),
              "algorithm": lambda x: x is None or isinstance(x, str),
              "broken_groups": count, "unreachable_pairs": count, "chips_lost": count,
              "chips_bandwidth_changed": lambda x: count(x, none_ok=True),
              "top_bottleneck": lambda x: x is None or isinstance(x, str)}
    for key, ok in checks.items():
        if key not in res or not ok(res[key]):
            return f"has {key}={str(res.get(key, '(missing)'))[:40]}"
    for key in ("method", "recovery"):
        if key in res and not isinstance(res[key], dict):
            return f"has {key}={str(res[key])[:40]}"
    return None


_run_scenario.stored_result_error = _scenario_result_error


def _plain(obj: Any) -> Any:
    """Plain JSON values (numpy scalars to Python, tuples to lists, NaN to null), so a result with the
    price's ``method`` still round-trips exactly through a results file."""
    def default(x):
        return x.item() if hasattr(x, "item") else str(x)
    return json.loads(json.dumps(_finite(obj), default=default))


def shared_pairs(G, doms: list, tag: str) -> list[tuple[int, int]]:
    """Index pairs ``(i, j)``, ``i < j``, of ``doms`` that share a value of ``tag``.

    An edge tag (``ocs``, ``harness``: :data:`~fabricsim.topo.failures.EDGE_TAG_CLASSES`) is
    read on a domain's links; a node tag (``rack``, ``plane`` ...:
    :data:`~fabricsim.topo.failures.NODE_TAG_CLASSES`) on its nodes, and on a link whose two
    ends carry the same value.  Two domains share the tag when they have a value in common:
    the pairs that fail together when that shared thing (an optical switch, a harness, a
    rack's power) takes two of them down.
    """
    from ...topo.failures import EDGE_TAG_CLASSES, NODE_TAG_CLASSES
    if tag in EDGE_TAG_CLASSES:
        attr = EDGE_TAG_CLASSES[tag]

        def keys(d):
            return {G.edges[u, v].get(attr) for u, v in d.edges} - {None}
    elif tag in NODE_TAG_CLASSES:
        attr = NODE_TAG_CLASSES[tag]

        def keys(d):
            out = {G.nodes[x].get(attr) for x in d.nodes}
            out |= {G.nodes[u].get(attr) for u, v in d.edges if G.nodes[u].get(attr) == G.nodes[v].get(attr)}
            return out - {None}
    else:
        raise BadInput(f"shared tag {tag!r}; choose an edge tag ({', '.join(EDGE_TAG_CLASSES)}) or a node tag "
                       f"({', '.join(NODE_TAG_CLASSES)})")
    by_key: dict = {}
    for i, d in enumerate(doms):
        for k in keys(d):
            by_key.setdefault(k, []).append(i)
    pairs = {(a, b) for members in by_key.values() for a, b in itertools.combinations(sorted(set(members)), 2)}
    return sorted(pairs)


def check_scenario_count(k: int, n: int, samples: int | None) -> None:
    """Refuse (``param="samples"``) running all C(``k``, ``n``) failures of ``k`` domains when that is more than
    :data:`MAX_SCENARIOS`; a caller that knows ``k`` checks it before any pricing."""
    total = math.comb(k, n)
    if (samples is None or samples >= total) and total > MAX_SCENARIOS:
        raise BadInput(f"{total:,} scenarios (C({k}, {n})) is more than {MAX_SCENARIOS:,}; "
                       f"sample them (samples=K, --samples K)", param="samples")


def _scenarios(ids: list[str], n: int, samples: int | None, seed: int) -> list[tuple]:
    """Index tuples of the failures to run: all C(k, n), or ``samples`` of them (seeded)."""
    k = len(ids)
    total = math.comb(k, n)
    if samples is None or samples >= total:
        check_scenario_count(k, n, samples)
        return list(itertools.combinations(range(k), n))
    rng = np.random.default_rng(seed)
    if n == 1:
        return [(int(i),) for i in sorted(rng.choice(k, size=samples, replace=False))]
    if n == 2:
        flat = np.sort(rng.choice(total, size=samples, replace=False))
        # unrank a pair index in lexicographic order: pairs (i, j), i < j
        out = []
        for x in flat.tolist():
            i = int((2 * k - 1 - math.isqrt((2 * k - 1) ** 2 - 8 * x)) // 2)
            while math.comb(k, 2) - math.comb(k - i, 2) > x:
                i -= 1
            while math.comb(k, 2) - math.comb(k - i - 1, 2) <= x:
                i += 1
            j = x - (math.comb(k, 2) - math.comb(k - i, 2)) + i + 1
            out.append((i, int(j)))
        return out
    seen: dict[tuple, None] = {}
    while len(seen) < samples:
        seen.setdefault(tuple(sorted(int(i) for i in rng.choice(k, size=n, replace=False))), None)
    return sorted(seen)



# ---------------------------------------------------------------------------------------
# Orbit folding (collectives/whatif/orbits.py): one representative per orbit of scenarios
# ---------------------------------------------------------------------------------------
def _fold(G, groups, algorithm, failure_class, doms, ids, combos, fold: bool, tiers: str):
    """The orbits of ``combos`` and the ``method`` record (generators used and refused, why)."""
    from . import orbits as _orbits
    if not fold:
        return None, {"fold": False, "reason": "folding turned off (fold=False, --no-fold)"}
    sym = _orbits.fabric_symmetry(G, groups, algorithm)
    check = _orbits.RelayCheck(G) if sym.conditional else None

    def relays(combo) -> bool:
        return check([doms[j] for j in combo])

    orb = _orbits.scenario_orbits(sym, doms, combos, needs_positional=relays if sym.conditional else None)
    method = {"fold": True, "failure_class": failure_class, "scenarios": len(combos), "orbits": orb.n_orbits,
              "generators": [g for g in sym.explain()["generators"] if g["name"] in set(orb.used)],
              "refused": [{"name": n, "reason": r} for n, r in orb.refused],
              "preserves": _preserves(failure_class),
              "notes": list(orb.notes)}
    return orb, method


def _preserves(failure_class: str) -> str:
    from ...topo.failures import preserved_symmetries
    return preserved_symmetries(failure_class)


def _members(orb, S: int) -> list[list[int]]:
    if orb is None:
        return []
    order = np.argsort(orb.orbit, kind="stable")
    cuts = np.cumsum(orb.size)[:-1]
    return [x.tolist() for x in np.split(order, cuts)]


def _expand(res: dict, i: int, combos, ids, orb, images) -> dict:
    """Scenario ``i``'s result: its orbit representative's, with its own specs and orbit."""
    out = dict(res)
    out["index"] = i
    out["failed"] = [ids[j] for j in combos[i]]
    if orb is not None:
        o = int(orb.orbit[i])
        out["orbit"], out["orbit_size"] = o, int(orb.size[o])
        if images is not None and i != res["index"]:
            out["top_bottleneck"] = images.get(i, out.get("top_bottleneck"))
    return out


def _bottleneck_images(orb, by_rep: dict, G) -> dict[int, str | None]:
    """Each scenario's top bottleneck: the image of its representative's under the symmetry that maps
    the representative onto it (a link of equal utilization in that scenario)."""
    names = {str(v): i for i, v in enumerate(G.nodes)}
    nodes = list(G.nodes)
    rep_nodes = {}
    for r, res in by_rep.items():
        link = res.get("top_bottleneck")
        parts = link.split(" -> ") if isinstance(link, str) else []
        if len(parts) == 2 and all(p in names for p in parts):
            rep_nodes[r] = np.array([names[parts[0]], names[parts[1]]])
    out: dict[int, str | None] = {}
    for i, (a, b) in orb.map_nodes(rep_nodes).items():
        out[i] = f"{nodes[a]} -> {nodes[b]}"
    return out

# ---------------------------------------------------------------------------------------
# Sweep
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sweep:
    """Failures of one class priced one scenario at a time, ranked worst first.

    Attributes
    ----------
    fabric, params, failure_class, n, samples, seed, collective, algorithm
        What was swept (``algorithm`` is the one every scenario used).
    baseline : CostReport
        The intact price.
    scenarios : tuple of dict
        Worst first (ties by spec text): ``failed`` (spec texts), ``slowdown``,
        ``bandwidth_slowdown``, ``time_s``, ``partial``, ``broken_groups``,
        ``unreachable_pairs``, ``chips_lost``, ``chips_bandwidth_changed``,
        ``top_bottleneck``.  A scenario with nothing left to price (NaN slowdown)
        ranks first.
    summary : dict
        ``count``, ``min``, ``median``, ``p90``, ``max`` (of the slowdowns that
        exist), ``distinct`` (distinct slowdowns at 1e-9), ``partial``, ``unpriced``,
        ``histogram`` (``edges``, ``counts``); folded: ``orbits``, ``solved``.  Every
        scenario counts, so each orbit weighs by its size.
    notes : tuple of str
    method : dict
        Folded: ``fold``, ``failure_class``, ``scenarios``, ``orbits``, ``generators``
        (``name``, ``family``, ``conditional``), ``refused`` (``name``, ``reason``),
        ``preserves``, ``notes`` and ``representatives`` (``orbit``, ``failed``,
        ``orbit_size`` and the price's ``method`` where the cost report has one).
        Scenarios gain ``orbit`` and ``orbit_size``.  A restart sweep: ``fold`` False
        and the reason.
    recovery : dict
        ``mode`` (``reroute`` or ``restart``) and ``spares``.  With restart every scenario
        has ``recovery``: ``restarted`` and, when it did, ``ranks_before``, ``ranks_after``,
        ``ranks_lost``, ``groups_lost``, ``group_size_after``, ``shrunk``, ``spares_used``,
        ``chips_dropped`` and ``per_byte_slowdown`` (as :func:`~.scenario.whatif`'s), else
        ``reason``; ``summary["restart"]`` counts them.
    """

    fabric: str
    params: dict
    failure_class: str
    n: int
    samples: int | None
    seed: int
    collective: str
    algorithm: str
    baseline: CostReport
    scenarios: tuple
    summary: dict
    notes: tuple = ()
    method: dict = field(default_factory=dict)
    recovery: dict = field(default_factory=lambda: {"mode": "reroute", "spares": 0})

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``fabricsim sweep --json``); NaN and inf become null."""
        return _finite({
            "fabric": self.fabric, "params": self.params, "failure_class": self.failure_class, "n": self.n,
            "samples": self.samples, "seed": self.seed, "collective": self.collective,
            "algorithm": self.algorithm, "baseline": self.baseline.as_dict(),
            "scenarios": [dict(s) for s in self.scenarios], "summary": self.summary, "notes": list(self.notes),
            "method": self.method, "recovery": dict(self.recovery)})


def _check_budget(budget_s: float, elapsed_s: float, solved: int, to_solve: int, scenarios: int,
                  failure_class: str, n: int, samples: int | None) -> None:
    """Refuse a sweep whose time per representative so far says it will not end within ``budget_s``."""
    left = to_solve - solved
    if left <= 0 or solved <= 0:
        return
    est = elapsed_s + elapsed_s / solved * left
    if est > budget_s:
        raise BadInput(f"{'N-' + str(n) + ' ' if n > 1 else ''}{failure_class} sweep: {scenarios:,} scenarios fold "
                       f"into {to_solve:,} to solve, {elapsed_s / solved:,.1f} s each as measured on the first "
                       f"{solved:,}: ~{est:,.0f} s estimated, over the {budget_s:g} s budget; sample them "
                       f"(--samples K{f', now {samples}' if samples else ''}) or raise --budget-s")


def _sample_error(k: int, total: int, confidence: float = SAMPLE_CONFIDENCE) -> dict:
    """The stated error of a sweep of ``k`` samples out of ``total`` scenarios.

    The sampled worst is a lower bound on the worst; the fraction ``p`` of scenarios worse than
    it satisfies ``P(no sample among them) = (1 - p)**k`` for draws with replacement, so with
    ``confidence`` at most ``p = 1 - (1 - confidence)**(1 / k)`` are worse (``3 / k`` at 95 %,
    the rule of three); draws without replacement (as :func:`_scenarios` makes) miss them less
    often, so the bound holds for them too."""
    p = 1.0 - (1.0 - confidence) ** (1.0 / k)
    return {"samples": int(k), "of": int(total), "confidence": confidence, "worse_fraction": p,
            "worse_scenarios": int(math.floor(p * total))}


def _summary(scen: list[dict]) -> dict:
    x = np.array([s["slowdown"] for s in scen], dtype=float)
    ok = x[np.isfinite(x)]
    out = {"count": len(scen), "partial": sum(1 for s in scen if s["partial"]),
           "unpriced": int(len(x) - len(ok))}
    if not len(ok):
        return dict(out, min=None, median=None, p90=None, max=None, distinct=0, histogram={"edges": [],
                                                                                              "counts": []})
    srt = np.sort(ok)
    distinct = 1 + int(np.sum(np.diff(srt) > REL_TOL * np.abs(srt[1:])))
    lo, hi = float(srt[0]), float(srt[-1])
    if hi - lo <= REL_TOL * abs(hi):
        edges, counts = [lo, hi], [len(ok)]
    else:
        c, e = np.histogram(ok, bins=min(HIST_BINS, distinct), range=(lo, hi))
        edges, counts = [float(v) for v in e], [int(v) for v in c]
    return dict(out, min=lo, median=float(np.median(ok)), p90=float(np.percentile(ok, 90)), max=hi,
                distinct=distinct, histogram={"edges": edges, "counts": counts})


def sweep(fabric: str | nx.Graph, params: dict | None, failure_class: str, *, n: int = 1, samples: int | None = None,
          seed: int = 0, collective: str, size_bytes: float, group_size: int | None = None,
          placement: str = "packed", groups: Sequence[Sequence[int]] | None = None, runner: Runner | None = None,
          progress: Callable[[int, int, dict], None] | None = None, fold: bool = True, recovery: str = "reroute",
          spares: int = 0, shared: str | None = None, budget_s: float | str | None = "auto",
          note: Callable[[str], None] | None = None, **price_kwargs) -> Sweep:
    """Price every failure of ``failure_class`` (N-1), every pair (``n=2``), or seeded samples.

    Parameters
    ----------
    fabric : str or networkx.Graph
        A catalog name, a fabric file (.toml, .graphml, .json), or a graph (see :func:`fabric_source`).
    params : dict or None
        Builder parameters (``{"racks": 4}``) of a name or file; values may be strings as ``--set``
        gives them.
    failure_class : str
        A class of :func:`~fabricsim.topo.failures.domains` the fabric has
        (``rail-switch``, ``local-switch``, ``tray``, ``link``, ``rail`` ...).
    n : int
        Failures per scenario: 1 (N-1), 2 (all pairs, N-2), ...
    samples : int, optional
        Run this many scenarios drawn without replacement (seeded by ``seed``).
    seed : int
    collective, size_bytes : as :func:`~fabricsim.collectives.price`.
    group_size, placement : groups by :func:`~fabricsim.collectives.by_size` on the
        intact fabric (default: one group of every chip); or ``groups`` explicitly.
    runner : Runner, optional
        ``LocalRunner()`` (in-process) by default.
    progress : callable, optional
        ``progress(done, total, result)`` after each scenario, in the parent process
        whatever the runner (the CLI draws a bar on stderr); an orbit's scenarios are
        reported together when its representative is done.  If it has a ``plan``
        method, ``plan(scenarios, orbits)`` is called first.
    fold : bool
        Fold the scenarios into orbits of the verified symmetries and solve one per
        orbit (default); ``False`` solves every scenario.
    shared : str, optional
        With ``n=2``: only the pairs of domains that share a value of this tag (an edge tag
        such as ``ocs`` or ``harness``, or a node tag such as ``rack``): correlated failures in
        one shared domain (:func:`shared_pairs`).
    budget_s : float, None or "auto"
        Wall seconds the sweep may be estimated to take: after each representative solved,
        the time per representative so far times those left is compared with it, and a sweep
        over it stops with a one-line BadInput naming the estimate and the options that bound
        it (``samples=``, ``budget_s=``).  ``"auto"`` (default): ``DEFAULT_N2_BUDGET_S`` for
        pairs (``n >= 2``), no bound for N-1; ``None``: no bound.
    note : callable, optional
        ``note(msg)`` hears each step that takes seconds before the first scenario (listing the
        domains, pricing the intact fabric, folding) on a fabric of more than
        :data:`~fabricsim.topo.builders.ANNOUNCE_ELEMENTS` nodes and links.
    recovery, spares : as :func:`~fabricsim.collectives.whatif.scenario.whatif`: ``restart``
        re-places the job (``group_size`` and ``placement``, not ``groups``) on each
        scenario's survivors; it does not fold and runs at most ``MAX_RESTART_SCENARIOS``.
    **price_kwargs
        ``algorithm``, ``split``, ``tiers``, ``efficiency``, ``step_overhead_ns``,
        ``bound_only``, ``memory_limit_bytes``.

    Returns
    -------
    Sweep

    Examples
    --------
    >>> s = sweep("jalapeno-rack", None, "local-switch", collective="all-reduce", size_bytes=2**30,
    ...           group_size=8, algorithm="ring")
    >>> s.summary["count"], s.summary["distinct"], round(s.scenarios[0]["bandwidth_slowdown"], 9)
    (6, 1, 1.2)
    """
    _check_price_kwargs(price_kwargs)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise BadInput(f"n {n!r} must be a positive integer (1: single failures, 2: pairs)", param="n")
    if samples is not None and (not isinstance(samples, int) or isinstance(samples, bool) or samples < 1):
        raise BadInput(f"samples {samples!r} must be a positive integer", param="samples")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2 ** 63:
        raise BadInput(f"seed {seed!r} must be an integer from 0 to 2**63 - 1", param="seed")
    if groups is not None and group_size is not None:
        raise BadInput("give group_size (with placement) or groups, not both")
    check_recovery(recovery, spares)
    if budget_s == "auto":
        budget_s = DEFAULT_N2_BUDGET_S if n >= 2 else None
    if budget_s is not None and (isinstance(budget_s, bool) or not isinstance(budget_s, (int, float))
                                 or not (0 < budget_s < math.inf)):
        raise BadInput(f"budget_s {budget_s!r} must be a positive number of seconds, None (no bound) or 'auto'")
    if recovery == "restart" and groups is not None:
        raise BadInput("recovery 'restart' re-places the job by group_size and placement; explicit groups (a mesh, "
                       "a groups file, a count) cannot be re-placed: use recovery 'reroute'", param="recovery")
    fabric, shown = fabric_source(fabric)
    params_json = json.dumps(params or {}, sort_keys=True, default=list)
    G = _fabric(fabric, params_json)
    from ...topo.builders import announcer
    say = announcer(G, note)
    if say:
        say(f"sweep: listing the {failure_class} domains of {G.number_of_nodes():,} nodes and "
            f"{G.number_of_edges():,} links ...")
    doms = domains(G, [failure_class])[failure_class]
    if len(doms) < n:
        raise BadInput(f"{failure_class!r} has {len(doms)} domain(s) in {shown!r}; cannot fail {n} at once",
                       param="failure_class")
    ids = [f"{failure_class}:{d.id}" for d in doms]
    if shared is not None:
        if n != 2:
            raise BadInput(f"shared={shared!r} picks pairs: it needs n=2, not n={n}")
        combos = shared_pairs(G, doms, shared)
        if not combos:
            raise BadInput(f"no two {failure_class!r} domains of {shown!r} share a {shared!r}")
        if samples is not None and samples < len(combos):
            rng = np.random.default_rng(seed)
            combos = [combos[i] for i in sorted(rng.choice(len(combos), size=samples, replace=False).tolist())]
        if len(combos) > MAX_SCENARIOS:
            raise BadInput(f"{len(combos):,} shared pairs is more than {MAX_SCENARIOS:,}; sample them "
                           f"(samples=K, --samples K)", param="samples")
    else:
        combos = _scenarios(ids, n, samples, seed)
    if recovery == "restart" and len(combos) > MAX_RESTART_SCENARIOS:
        raise BadInput(f"{len(combos):,} scenarios with recovery 'restart' is more than {MAX_RESTART_SCENARIOS}: a "
                       f"restart does not fold by symmetry, so each is priced on its own; sample them "
                       f"(samples=K, --samples K)", param="samples")
    gspec = ("explicit", tuple(tuple(int(r) for r in g) for g in groups)) if groups is not None else \
        ("restart", group_size, placement, int(spares)) if recovery == "restart" else ("size", group_size, placement)
    _groups(fabric, params_json, gspec)          # cached before any worker is forked
    notes = []
    base = None
    if price_kwargs.get("algorithm", "auto") == "auto":
        if say:
            say(f"sweep: {len(combos):,} scenarios; pricing the intact fabric (auto picks the algorithm) ...")
        base = price(G, collective, groups=_groups(fabric, params_json, gspec), size_bytes=size_bytes,
                     **price_kwargs)
        kw = dict(price_kwargs, algorithm=base.algorithm)
        if price_kwargs.get("protocol", "auto") == "auto":
            kw["protocol"] = base.protocol     # the protocol auto chose with it
        notes.append(f"auto picked {base.algorithm} ({base.protocol}) on the intact fabric; every scenario uses it")
    else:
        kw = dict(price_kwargs)
    if kw.get("calibration") is not None:
        from ..engine import CalibrationTable
        kw["calibration"] = CalibrationTable.of(kw["calibration"])     # plain dicts: picklable for workers
    groups_t = _groups(fabric, params_json, gspec)
    if recovery == "restart":
        orb, method = None, {"fold": False, "reason": "recovery 'restart' re-places the job by rank order on each "
                             "scenario's survivors, which the fabric's symmetries do not keep: every scenario priced"}
    else:
        if say and fold:
            say(f"sweep: folding {len(combos):,} scenarios by the fabric's symmetries ...")
        orb, method = _fold(G, groups_t, kw.get("algorithm", "auto"), failure_class, doms, ids, combos, fold,
                            price_kwargs.get("tiers", "rule"))
    solve = orb.reps.tolist() if orb is not None else list(range(len(combos)))
    if progress is not None and hasattr(progress, "plan"):
        progress.plan(len(combos), len(solve))
    tasks = [_Task(i, fabric, params_json, tuple(ids[j] for j in combos[i]), collective, gspec, float(size_bytes),
                   tuple(sorted(kw.items()))) for i in solve]
    if base is None:
        # the baseline is one more task, so it runs beside the first scenarios
        tasks.insert(0, _Task(-1, fabric, params_json, (), collective, gspec, float(size_bytes),
                              tuple(sorted(kw.items()))))
    runner = runner or LocalRunner()
    by_rep: dict[int, dict] = {}
    members = _members(orb, len(combos))
    done = 0
    t0 = time.monotonic()
    for res in runner.map(_run_scenario, tasks):
        if "baseline" in res:
            base = res["baseline"]
            continue
        by_rep[int(res["index"])] = res
        if budget_s is not None:
            _check_budget(budget_s, time.monotonic() - t0, len(by_rep), len(solve), len(combos), failure_class, n,
                          samples)
        o = int(orb.orbit[res["index"]]) if orb is not None else None
        for i in members[o] if orb is not None else [int(res["index"])]:
            done += 1
            if progress is not None:
                progress(done, len(combos), _expand(res, i, combos, ids, orb, None))
    images = _bottleneck_images(orb, by_rep, G) if orb is not None else {}
    scen = []
    results = []
    for i in range(len(combos)):
        rep = int(orb.reps[orb.orbit[i]]) if orb is not None else i
        if rep in by_rep:
            results.append(_expand(by_rep[rep], i, combos, ids, orb, images))
    if orb is not None:
        method["representatives"] = [
            {"orbit": int(o), "failed": list(by_rep[int(r)]["failed"]), "orbit_size": int(orb.size[o]),
             **({"method": by_rep[int(r)]["method"]} if "method" in by_rep[int(r)] else {})}
            for o, r in enumerate(orb.reps.tolist()) if int(r) in by_rep]
    for res in results:
        s = dict(res)
        s.pop("index")
        s.pop("algorithm")
        s.pop("method", None)
        s = {"failed": s.pop("failed"), "slowdown": _ratio(res["time_s"], base.time_s),
             "bandwidth_slowdown": _ratio(res["bandwidth_time_s"], base.bandwidth_time_s), **s}
        if s.get("recovery", {}).get("restarted"):
            r = s["recovery"] = dict(s["recovery"])
            r["per_byte_slowdown"] = s["slowdown"] * r["ranks_before"] / r["ranks_after"]
        scen.append(s)
    scen.sort(key=lambda s: (math.isfinite(s["slowdown"]), -s["slowdown"] if math.isfinite(s["slowdown"]) else 0.0,
                             s["failed"]))
    summary = _summary(scen)
    if recovery == "restart":
        rs = [s["recovery"] for s in scen]
        ok = [r for r in rs if r.get("restarted")]
        pb = np.array([r["per_byte_slowdown"] for r in ok], dtype=float)
        pb = pb[np.isfinite(pb)]
        summary["restart"] = {"restarted": len(ok), "refused": len(rs) - len(ok),
                              "shrunk": sum(1 for r in ok if r["shrunk"] != "none"),
                              "used_spares": sum(1 for r in ok if r["spares_used"]),
                              "ranks_lost_max": max((r["ranks_lost"] for r in ok), default=None),
                              "per_byte_slowdown_max": float(pb.max()) if len(pb) else None}
        notes.append(f"recovery restart{f' with {spares} spare(s)' if spares else ''}: every scenario re-places the "
                     f"job on its surviving chips; {summary['restart']['shrunk']} of {len(ok)} restarted job(s) "
                     f"shrank" + (f", {len(rs) - len(ok)} could not restart (too few chips survive)"
                                  if len(rs) > len(ok) else ""))
    if orb is not None:
        summary["orbits"] = orb.n_orbits
        summary["solved"] = len(by_rep)
        notes.append(f"{len(combos):,} scenarios fall into {orb.n_orbits:,} orbit(s) under {len(orb.used)} verified "
                     f"symmetry generator(s); one representative per orbit was solved")
        notes.extend(orb.notes)
    total = len(shared_pairs(G, doms, shared)) if shared is not None else math.comb(len(doms), n)
    if len(combos) < total:
        summary["sampled"] = _sample_error(len(combos), total)
        notes.append(f"sampled {len(combos):,} of {total:,} scenarios (seed {seed}): the worst shown is a lower "
                     f"bound on the class's worst; with {SAMPLE_CONFIDENCE:.0%} confidence at most "
                     f"{summary['sampled']['worse_fraction']:.2%} of the scenarios (~"
                     f"{summary['sampled']['worse_scenarios']:,}) are worse than it")
    if summary["partial"]:
        notes.append(f"{summary['partial']} scenario(s) are PARTIAL (broken groups or pairs without a route): "
                     f"their slowdown covers what could be priced")
    if summary["unpriced"]:
        notes.append(f"{summary['unpriced']} scenario(s) priced nothing (every group lost a chip, or nothing could "
                     f"be priced): slowdown n/a, left out of the distribution")
    return Sweep(shown, json.loads(params_json), failure_class, n, samples, seed, collective, base.algorithm,
                 base, tuple(scen), summary, tuple(notes), method, {"mode": recovery, "spares": int(spares)})
