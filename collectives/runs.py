"""What the commands do between parsing and printing, as library functions a notebook calls too.

The CLI parses options into these calls and formats what they return; placing the groups (by size,
mesh or file, ``auto`` pricing packed against slice, a restart's groups with spares held out), the
options' checks and the runs of ``price``, ``compare``, ``whatif``, ``sweep``, ``atlas``, ``calibrate``
and ``step`` live here.  Every bad input is a :class:`~fabricsim.topo.errors.BadInput` whose ``param``
names the parameter it is about (``"group_size"``, ``"mesh"``, ``"fails"`` ...), checked here once.

Examples
--------
>>> from fabricsim.fabrics import build
>>> from fabricsim.collectives.runs import GroupSpec, price_options, price_job
>>> G = build("jalapeno-rack")
>>> r = price_job(G, "all-reduce", price_options("all-reduce", size="64MiB"), GroupSpec(group_size=8))
>>> r.groups, r.group_size
(16, 8)
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Sequence

from ..topo.errors import BadInput, FabricError, about, close_matches
from ..topo.units import parse_size

__all__ = ["MAX_TIME_S", "GroupSpec", "check_algorithm", "check_fails", "price_options", "finite", "price_job",
           "price_traffic", "compare", "whatif_job", "sweep_job", "atlas_job", "mix_job", "chakra_to_mix", "design_job",
           "calibrate_logs",
           "step_jobs"]

MAX_TIME_S = 1e15   # ~30 million years: past it (or inf/NaN) a priced time is an overflow, not a result (I)


def check_algorithm(collective: str, algorithm: str) -> None:
    """An algorithm the collective does not have is refused before any work (``param="algorithm"``)."""
    from .algorithms import ALGORITHMS
    algos = ALGORITHMS.get(collective, {})
    if algorithm != "auto" and algorithm not in algos:
        raise BadInput(f"unknown algorithm {algorithm!r} for {collective}{close_matches(algorithm, algos)}; "
                       f"choose one of: auto, {', '.join(algos)}", param="algorithm")


def price_options(collective: str | None = None, *, size=None, algorithm: str = "auto", protocol: str = "auto",
                  calibration=None, split: str = "equal", tiers: str = "rule", efficiency: float | None = None,
                  step_latency_us: float | None = None, bound_only: bool = False, per_flow: bool = False):
    """The one :class:`~fabricsim.collectives.engine.PriceOptions` the pricing commands' options describe.

    Parameters
    ----------
    collective : the collective the options are for (its algorithms are checked), or None.
    size : S as nccl-tests defines it: per-rank buffer for all-reduce, whole buffer for the others, in
        bytes: 64MiB, 1GiB, 512KB ... (B = bytes; a lower-case b means bits and is refused); a number
        of bytes does too (:func:`~fabricsim.topo.units.parse_size`).
    algorithm : the collective's algorithm: ring, ring-linked, direct, halving-doubling, hierarchical,
        torus-rings, torus-concurrent, nvls (all-reduce); direct, pairwise, hierarchical (all-to-all);
        ``auto`` picks the cheapest (:data:`~fabricsim.collectives.algorithms.ALGORITHMS` has them all).
    protocol : step model: ``auto`` picks algorithm and protocol per size (NCCL-style, the fabric
        family's constants); ``ideal`` = protocol effects off (raw line rate, closed forms).
    calibration : TOML file of efficiency / step_latency_us, flat or in [collective] /
        [collective.algorithm] sections (``fabricsim calibrate`` writes one).
    split : routing split: ECMP ``equal`` over next hops, weighted by surviving ``capacity``, or
        ``adaptive`` (each flow spreads over all its equal-cost paths; multipath max-min fair rates,
        exact LP). The commands' default is what the fabric's switches do (its declared switching:
        adaptive on Jalapeno, NVL72 / rail clusters; equal elsewhere); where adaptive cannot run it
        falls back to equal with a note.
    tiers : ``rule``: the fabric's tier rules (Jalapeño: same rack local, other racks global);
        ``any``: every shortest path.
    efficiency : calibration: fraction of line rate the links deliver (0-1], for every collective.
        Default: the fabric family's (ideal: 1).
    step_latency_us : per-step overhead in microseconds (default: the fabric's, else 1 us).
    bound_only : price by the link-load bound only (fast, no fairness).
    per_flow : route and solve every flow even where symmetry (torus translations, interchangeable
        chips or positions) lets the phase be solved as classes (exact either way; a slower
        cross-check).
    """
    from .engine import PriceOptions
    if collective is not None:
        check_algorithm(collective, algorithm)
    cal = None
    if calibration:
        from .cost.calibration import load_calibration
        with about("calibration"):
            cal = load_calibration(calibration)
    options = PriceOptions(size_bytes=None if size is None else parse_size(size), algorithm=algorithm,
                           protocol=protocol, calibration=cal, split=split, tiers=tiers,
                           efficiency=None if efficiency is None else float(efficiency),
                           step_overhead_ns=None if step_latency_us is None else float(step_latency_us) * 1000.0,
                           bound_only=bound_only, symmetry=not per_flow)
    options.check()
    return options


def finite(r):
    """``r`` if its time is a result; a time that is inf, NaN or absurd raises ``FabricError`` saying why."""
    if not (math.isfinite(r.time_s) and r.time_s <= MAX_TIME_S):
        raise FabricError(
            f"{r.collective} on {r.fabric}: the priced time is {r.time_s:.3g} s, not a result; a link rate, "
            f"efficiency, latency or size in the fabric or options is too far out of range")
    return r


@dataclass(frozen=True)
class GroupSpec:
    """How a job's groups are chosen: by size (placement, count), by a mesh and the dimension that
    communicates (``over``), or from a groups file (``groups``, JSON).  Give one of group_size, mesh, groups.

    Parameters
    ----------
    group_size : chips per group; all groups run at once (default: one group of every chip).
    placement : with ``group_size``: packed | spread | random[:SEED] | slice (a torus: the most compact
        boxes, e.g. Ironwood's 4x4x4 cubes; elsewhere whole trays/racks/boards) | auto (prices packed
        and slice, keeps the cheaper, says which in a note).
    mesh : a parallelism mesh over chip ranks, TP innermost, e.g. tp=8,ep=32,dp=8.
    over : with ``mesh``: the dimension whose groups communicate (tp, ep, dp ...).
    groups : JSON file: a list of groups, each a list of chip ranks or node ids.
    count : with ``group_size``: run only this many groups (the size then need not divide the chips),
        e.g. one 64-chip group on every fabric.
    """

    group_size: int | None = None
    placement: str = "packed"
    mesh: str | None = None
    over: str | None = None
    groups: str | None = None
    count: int | None = None

    def __post_init__(self):
        if sum(x is not None for x in (self.group_size, self.mesh, self.groups)) > 1:
            raise BadInput("give one of --group-size, --mesh or --groups", param="group_size")
        if self.over is not None and self.mesh is None:
            raise BadInput("--over DIM needs --mesh (e.g. --mesh tp=8,ep=16 --over ep)", param="over")
        if self.mesh is not None and not self.over:
            raise BadInput("--mesh needs --over DIM (which dimension's groups communicate)", param="over")
        from .placement import parse_placement
        parse_placement(self.placement)

    @property
    def auto(self) -> bool:
        """``placement='auto'`` by size: packed and slice are priced and the cheaper kept."""
        return self.placement == "auto" and self.mesh is None and self.groups is None

    @property
    def explicit(self) -> bool:
        """Groups given as groups (a mesh, a file, a count), not by size and placement name."""
        return self.mesh is not None or self.groups is not None or bool(self.count)

    def size_on(self, G) -> int:
        """The group size on ``G``: as given, else every chip."""
        from .placement import chip_ranks
        return len(chip_ranks(G)) if self.group_size is None else self.group_size

    def groups_on(self, G) -> list:
        """The groups on ``G`` (``auto`` is cut as packed here; :func:`price_job` prices its candidates)."""
        from . import placement as P
        if self.mesh is not None:
            with about("mesh"):
                return P.by_mesh(G, P.parse_mesh(self.mesh), self.over)
        if self.groups is not None:
            with about("groups"):
                return P.from_file(G, self.groups)
        with about("group_size"):
            return P.by_size(G, self.size_on(G), "packed" if self.placement == "auto" else self.placement,
                             count=self.count)


def _auto_place(G, collective, spec: GroupSpec, options, traffic=None):
    """Price packed and slice (where they differ), keep the cheaper; its result's notes say which."""
    from .placement import auto_place
    from .price import price
    spec.groups_on(G)                                     # the usual size errors, as packed's
    with about("group_size"):
        choice = auto_place(G, spec.size_on(G), lambda g: price(G, collective, groups=g, traffic=traffic,
                                                                   options=options), count=spec.count)
    if not choice.note:
        return choice
    r = choice.result
    return dataclasses.replace(choice, result=dataclasses.replace(r, notes=(*r.notes, choice.note)))


def price_job(G, collective: str, options, spec: GroupSpec, traffic=None):
    """Price ``collective`` on the groups ``spec`` places on ``G`` (``auto``: the cheaper placement), checked finite."""
    from .price import price
    groups = spec.groups_on(G)
    with about("groups" if spec.groups is not None else "options"):
        if spec.auto:
            return finite(_auto_place(G, collective, spec, options, traffic).result)
        return finite(price(G, collective, groups=groups, traffic=traffic, options=options))


def price_traffic(G, collective: str, options, spec: GroupSpec, *, traffic=None, moe=None, progress=None):
    """An all-to-all-v from a byte-matrix file (``traffic``) or a MoE layer (``moe`` spec): (report, totals).

    The totals are bytes in all, over the network and local, and the imbalance (``price --json``'s
    ``"traffic"``).  ``progress(msg)`` hears of a matrix with many distinct flow sizes (a long solve).
    Give one of ``traffic`` and ``moe``, no size in ``options``, and ``collective`` all-to-all.

    Parameters
    ----------
    traffic : all-to-all-v: a byte matrix per group (CSV or .npy, row a = bytes rank a sends each
        rank), or a directory of one file per group; replaces ``size``.
    moe : all-to-all-v of a MoE layer's dispatch/combine, e.g.
        experts=256,top_k=8,tokens=1024,hidden=7168 [,dtype=fp8|bf16|fp16|fp32|nvfp4|mxfp4] [,shared=1]
        [,skew=uniform|balanced|zipf:A|FILE] [,seed=S] [,phase=dispatch|combine]
        [,placement=round-robin|contiguous] [,groups=G,topk_groups=g] [,dedup=rank|expert|node] [,node_ranks=8]
        (groups: DeepSeek-V3's group-limited router, g of G groups of consecutive experts first; rank, the default: one
        copy per token and destination rank, as DeepEP inside a node; expert: one per token and expert; node: one
        per token and destination node, to the rank on the sender's rail, forwarded there to the ranks that need
        it, as DeepEP's internode kernels do, nodes being node_ranks consecutive ranks); replaces ``size``.
    """
    import numpy as np

    from . import traffic as TR
    what = "traffic" if traffic else "moe"
    if bool(traffic) == bool(moe):
        raise BadInput("give --traffic or --moe, not both" if traffic else "give --traffic FILE or --moe SPEC",
                       param=what)
    if options.size_bytes is not None:
        raise BadInput(f"--{what} gives the bytes; leave out --size", param="size")
    if collective != "all-to-all":
        raise BadInput(f"--{what} is an all-to-all-v; {collective} takes --size", param=what)
    groups = spec.groups_on(G)
    with about("traffic" if traffic else "moe"):
        if traffic:
            T = TR.load_matrix(traffic, len(groups[0]), len(groups))
            summary = {"source": str(traffic),
                       **TR.summarize(T if T.ndim == 3 else np.broadcast_to(T, (len(groups),) + T.shape))}
        else:
            t = TR.moe_traffic(TR.MoESpec.parse(moe), len(groups[0]), progress=progress)
            T = t.matrix
            # every EP group routes its own tokens alike: totals over the groups
            summary = {"source": "moe", **TR.summarize(np.broadcast_to(T, (len(groups),) + T.shape)),
                       "groups": len(groups), "per_group": t.as_dict()}
            summary["imbalance"] = t.imbalance
        distinct, flows = TR.distinct_flow_sizes(T)
        if progress and distinct > 64 and flows > 4096:
            progress(f"traffic: {distinct:,} distinct flow sizes over {flows:,} flows per group; the solver "
                     f"retires them event by event (nothing is quantised), which can take minutes")
        return price_job(G, "all-to-all", options, spec, traffic=T), summary


def compare(graphs: Sequence, collective: str, options, spec: GroupSpec, *, progress=None) -> list:
    """The same collective, options and placement on several graphs: one report each, in order.

    Every graph's groups are placed before any is priced, so a group size that does not divide some
    fabric's chips stops the run first with an error naming it.
    """
    for G in graphs:
        spec.groups_on(G)
    out = []
    for G in graphs:
        if progress:
            progress(f"pricing on {G.graph.get('name', '?')} ...")
        out.append(price_job(G, collective, options, spec))
    return out


def check_fails(fails: Sequence[str]) -> None:
    """``node:a,node:b`` is two failures in one spec: refused, saying to give each on its own (``param="fails"``)."""
    import re

    from ..topo.failures import failure_class
    for text in fails:
        for prefix in re.findall(r",\s*([A-Za-z][\w-]*):", text):
            if failure_class(prefix) is not None:     # the registry knows the class: a second failure
                parts = ' '.join(f'--fail {p.strip()}' for p in text.split(',') if p.strip())
                raise BadInput(f"{text!r} holds several failures; repeat --fail for each ({parts})", param="fails")


def _recovery_groups(G, spec: GroupSpec, recovery: str, spares: int):
    """The job's groups: the spec's, or for a restart with spares the placement's with the spares held out."""
    from .whatif.scenario import job_groups
    if spares and recovery != "restart":
        raise BadInput(f"--spares {spares} needs --recovery restart (reroute keeps the job on its chips)",
                       param="spares")
    if recovery == "restart" and (spec.mesh is not None or spec.groups is not None):
        raise BadInput("restart re-places the job by --group-size and --placement; a --mesh or --groups job cannot "
                       "be re-placed (use --recovery reroute)", param="recovery")
    if not spares:
        return spec.groups_on(G)
    from .placement import chip_ranks
    size = len(chip_ranks(G)) - spares if spec.group_size is None else spec.group_size
    with about("group_size"):
        return job_groups(G, size, spec.placement, spares, spec.count)


def _auto_chosen(G, collective, spec: GroupSpec, options, size_bytes, progress=None):
    """``auto`` on the intact fabric: (the spec with the cheaper placement named, the choice) or (spec, None)."""
    if not spec.auto:
        return spec, None
    chose = _auto_place(G, collective, spec, options.replace(size_bytes=size_bytes))
    if progress and chose.note:
        progress(chose.note)
    return dataclasses.replace(spec, placement=chose.placement), chose


def whatif_job(G, fails: Sequence[str], collective: str, options, spec: GroupSpec, *, recovery: str = "reroute",
               spares: int = 0, explain: bool = False, progress=None):
    """:func:`~fabricsim.collectives.whatif.whatif` on ``spec``'s groups (``auto``: cheapest intact placement).

    ``progress(msg)``, if given, hears each pricing step on a fabric past
    :data:`~fabricsim.topo.builders.ANNOUNCE_ELEMENTS` nodes and links (each takes seconds there).

    Parameters
    ----------
    fails : failures (repeatable): node:ID, link:A--B, lanes:A--B=K, tray:ID, rail:2 ... (``fabricsim
        domains FABRIC`` lists a fabric's).
    recovery : reroute: the job keeps its chips, traffic routes around the failures; restart: the job
        is placed again on the surviving chips (and spares), all-to-all groups shrink, other
        collectives lose whole groups.
    spares : with ``recovery`` restart: hold the N highest-ranked chips out of the job, used first on
        restart.
    """
    from ..topo.builders import announcer
    from .whatif import whatif
    check_fails(fails)
    say = announcer(G, progress) or (lambda msg: None)
    size_bytes = options.size_bytes
    if spec.auto:
        say("whatif: choosing the placement on the intact fabric ...")
    spec, chose = _auto_chosen(G, collective, spec, options, size_bytes)
    groups = _recovery_groups(G, spec, recovery, spares)
    say(f"whatif: pricing the intact fabric and with {len(fails)} failure spec(s) applied ...")
    with about("fails"):
        w = whatif(G, list(fails), collective, groups=groups, size_bytes=size_bytes, explain=explain,
                   recovery=recovery, spares=spares, placement=spec.placement, **options.price_kwargs())
    if chose is not None and chose.note:
        w = dataclasses.replace(w, notes=(*w.notes, chose.note))
    finite(w.baseline)
    return w


@contextlib.contextmanager
def _made(runner, make_runner):
    """``runner``, or one ``make_runner()`` makes now and closes after."""
    if make_runner is None:
        yield runner
        return
    made = make_runner()
    try:
        yield made
    finally:
        getattr(made, "close", lambda: None)()


def _restart_check(spec: GroupSpec, recovery: str, spares: int) -> None:
    if spares and recovery != "restart":
        raise BadInput(f"--spares {spares} needs --recovery restart (reroute keeps the job on its chips)",
                       param="spares")
    if recovery == "restart" and (spec.explicit or spec.over is not None):
        raise BadInput("restart re-places the job by --group-size and --placement; a --mesh, --groups or --count "
                       "job cannot be re-placed (use --recovery reroute)", param="recovery")


def _failure_class_domains(G, classes, param):
    from ..topo.failures import domains
    with about(param):
        return domains(G, classes)


def sweep_job(fabric: str, sets: dict, G, failure_class: str, collective: str, options, spec: GroupSpec, *,
              n: int = 1, samples: int | None = None, seed: int = 0, fold: bool = True, recovery: str = "reroute",
              spares: int = 0, budget_s=None, runner=None, make_runner=None, progress=None, note=None):
    """:func:`~fabricsim.collectives.whatif.sweep` of ``fabric`` (built as ``G``) for ``spec``'s job.

    ``progress`` is the sweep's per-scenario callback; ``note(msg)`` hears what was chosen on the way.
    ``make_runner()``, if given, makes the runner once the inputs are checked (it is closed at the end).

    Parameters
    ----------
    failure_class : failure class to sweep: rail-switch, local-switch, tray, link, rail, rack ...
        (``fabricsim domains FABRIC`` lists them).
    n : failures per scenario: 1 = every single failure (N-1), 2 = every pair (N-2).
    samples : price this many random scenarios instead of all.
    seed : seed for ``samples``.
    fold : solve one scenario per orbit of the fabric's verified symmetries and give every scenario
        its orbit's result.
    budget_s : wall seconds the sweep may be estimated to take (time per representative so far x
        those left); over it, it stops and says so. Default: 600 for ``n`` 2 or more, no bound for N-1.
    """
    from ..topo.builders import announcer
    from .whatif import sweep
    say = announcer(G, note)
    if say:     # each step below takes seconds on a fabric this large
        say(f"sweep: counting the {failure_class} domains of {G.number_of_nodes():,} nodes and "
            f"{G.number_of_edges():,} links ...")
    k = len(_failure_class_domains(G, [failure_class], "failure_class")[failure_class])
    if isinstance(n, int) and 1 <= n <= k:   # too many scenarios: refused before the placement is priced
        from .whatif.sweeps import check_scenario_count
        check_scenario_count(k, n, samples)
    if note and samples is not None and samples >= math.comb(k, n):
        note(f"--samples {samples} >= the {math.comb(k, n):,} scenarios: all of them run")
    _restart_check(spec, recovery, spares)
    groups = spec.groups_on(G) if spec.explicit or spec.over is not None else None
    size_bytes = options.size_bytes
    if spec.auto:      # the placement cheapest on the intact fabric is swept, by name (workers cut it)
        if say:
            say(f"sweep: {k:,} domains; choosing the placement on the intact fabric ...")
        chosen, chose = _auto_chosen(G, collective, spec, options, size_bytes, note)
        if groups is None:
            spec = chosen
        else:
            groups = chose.groups
    with _made(runner, make_runner) as runner, about("options"):
        return sweep(fabric, sets, failure_class, n=n, samples=samples, seed=seed, collective=collective,
                     size_bytes=size_bytes, group_size=None if groups else spec.group_size,
                     placement=spec.placement, groups=groups, runner=runner, progress=progress, fold=fold,
                     recovery=recovery, spares=spares, budget_s="auto" if budget_s is None else float(budget_s),
                     note=note, **options.price_kwargs())


def atlas_job(fabric: str, sets: dict, G, collective: str, options, spec: GroupSpec, *, classes=None,
              runner=None, make_runner=None, max_orbits: int = 512, budget_s: float = 120.0, n2_shared: bool = False,
              progress=None):
    """:func:`~fabricsim.collectives.whatif.atlas.atlas` of ``fabric`` (built as ``G``) for ``spec``'s job
    (``make_runner`` as :func:`sweep_job`'s).

    Parameters
    ----------
    classes : only these failure classes, comma-separated (default: every class ``fabricsim domains
        FABRIC`` lists).
    max_orbits : a class with more orbits to solve is reported with the reason, not run.
    budget_s : wall seconds per class: a class estimated (or found) to take longer is stopped and
        reported.
    n2_shared : also N-2 within shared domains: every pair of links on one OCS or harness, every pair
        of same-role switches in one rack (one row each).
    """
    from .whatif.atlas import atlas
    if classes is not None:
        _failure_class_domains(G, classes or [""], "classes")
    size_bytes = options.size_bytes
    spec, _ = _auto_chosen(G, collective, spec, options, size_bytes, progress)
    groups = spec.groups_on(G) if spec.explicit or spec.over is not None else None
    with _made(runner, make_runner) as runner, about("options"):
        return atlas(fabric, sets, collective=collective, size_bytes=size_bytes,
                     group_size=None if groups else spec.group_size, placement=spec.placement, groups=groups,
                     classes=classes, runner=runner, max_orbits=max_orbits, budget_s=float(budget_s),
                     progress=progress, n2_shared=n2_shared, **options.price_kwargs())


def mix_job(G, spec=None, *, chakra=None, split: str = "equal", tiers: str = "rule", efficiency: float | None = None,
            step_latency_us: float | None = None, progress=None):
    """:func:`~fabricsim.collectives.jobs.mix` of the jobs in a ``spec`` file ([[job]] tables) or of the Chakra
    traces in the directory ``chakra`` (one of them) on ``G``; ``progress`` hears the traces' notes too.

    Parameters
    ----------
    chakra : instead of ``spec``: a directory of Chakra execution traces (<prefix>.<rank>.et, optional
        communicator-group JSON); needs fabricsim[chakra].
    split : ECMP split over next hops: equal, or weighted by surviving capacity. Default: the fabric's
        declared switching, adaptive read as equal (mix shares links with the fixed-split solver).
    tiers : rule: the fabric's tier rules; any: every shortest path.
    efficiency : fraction of line rate the links deliver (0-1], for every job. Default: each job is
        priced at the fabric family's figure, as price does (ideal fabrics: 1).
    step_latency_us : per-step overhead in microseconds (default: the fabric's, else 1 us).
    """
    from .jobs import load_jobs, mix
    if (spec is None) == (chakra is None):
        raise BadInput("give a SPEC file or --chakra DIR (one of them)", param="spec")
    if chakra is not None:
        from .jobs.chakra import load_chakra
        with about("chakra"):
            w = load_chakra(chakra)
        for note in w.notes if progress else ():
            progress(f"chakra: {note}")
    with about("spec"):
        jobs = load_jobs(spec, G) if chakra is None else list(w.jobs)
        return mix(G, jobs, split=split, tiers=tiers, efficiency=efficiency, progress=progress,
                   step_overhead_ns=None if step_latency_us is None else step_latency_us * 1000.0)


def chakra_to_mix(trace_dir, path):
    """Turn the Chakra traces in ``trace_dir`` into a mix TOML at ``path`` (notes as comments); the workload."""
    from pathlib import Path

    from .jobs.chakra import jobs_toml, load_chakra
    with about("trace_dir"):
        w = load_chakra(trace_dir)
    Path(path).write_text(f"# from the Chakra traces in {trace_dir}, written by fabricsim\n"
                          + "".join(f"# {n}\n" for n in w.notes) + "\n" + jobs_toml(w.jobs), encoding="utf-8")
    return w


def design_job(space, *, build, builders, make_runner=None, progress=None, **kw):
    """Load a design space file and search it (:func:`~fabricsim.collectives.design.design`); ``build`` and
    ``builders`` come from the fabric catalog (``fabrics.build``, ``fabrics.registry.builder_params()``), the
    rest of ``kw`` (prune, search, evaluations, seed, budget_s, results_file) is ``design``'s.  -> (space, result)."""
    from .design import design, load_space
    sp = load_space(space, builders=builders)
    if progress:
        progress(f"design: {sp.size:,} design(s) of {sp.builder} ...")
    with _made(None, make_runner) as runner:
        return sp, design(sp, build=build, runner=runner, progress=progress, **kw)


def calibrate_logs(G, logs: Sequence[str], *, collective: str | None = None, group_size: int | None = None,
                   mesh: str | None = None, over: str | None = None):
    """Fit the cost model to nccl-tests logs measured on ``G`` (:func:`~fabricsim.collectives.cost.calibrate`).

    Parameters
    ----------
    collective : the collective of a log that names no *_perf binary (pre-2.13 logs, pasted tables);
        default: inferred from its columns where they tell.
    group_size : chips per group, every group at once (default: one group of the log's rank count).
    mesh : a parallelism mesh over chip ranks, e.g. tp=8,dp=9; with ``over``.
    over : with ``mesh``: the dimension whose groups ran the measured collective.
    """
    from .cost.calibrate import calibrate
    from .cost.nccl_tests import parse_log
    groups = None
    if group_size or mesh:
        groups = GroupSpec(group_size=group_size, mesh=mesh, over=over).groups_on(G)
    with about("collective" if collective else "logs"):
        runs = [r for path in logs for r in parse_log(path, collective=collective)]
    with about("logs"):
        return calibrate(G, runs, groups=groups)


def step_jobs(graphs: dict, model, mesh: str, *, phase: str = "decode", batch: int = 1, seq: int | None = None,
              compute_us: float | None = None, dispatch_dtype: str = "fp8", combine_dtype: str = "bf16",
              skew: str = "balanced", seed: int = 0, dedup: str = "rank",
              progress: Callable[[str], None] | None = None) -> list:
    """One model step (:func:`~fabricsim.collectives.jobs.step.step`) on each of ``graphs`` ({label: graph}).

    The model, mesh, tokens and router are checked, and the mesh against every fabric, before any is
    priced.  ``progress`` hears each fabric's work where it is long (several fabrics, or over 512 chips).

    Parameters
    ----------
    model : a catalog model (deepseek-r1, kimi-k2, gpt-oss-120b) or a model .toml file (format in
        docs/guide.md).
    mesh : tp=..,ep=..,dp=.. over chip ranks, TP innermost (a mesh smaller than the fabric leaves the
        last chips idle).
    phase : decode: one token per sequence; prefill: seq tokens per sequence.
    batch : sequences in the step, over the whole mesh.
    seq : prefill: prompt tokens per sequence.
    compute_us : compute per layer in microseconds, added in series (default: compute not modelled).
    dispatch_dtype : MoE dispatch elements: fp8, bf16, fp16, fp32, nvfp4 (4.5 bits with its scales), mxfp4 (4.25).
    combine_dtype : MoE combine elements: fp8, bf16, fp16, fp32, nvfp4, mxfp4.
    skew : router: balanced (uniform expectation), uniform (one sample), zipf:A (hot experts) or a file
        of per-expert weights.
    seed : seed of a sampled router (uniform, zipf).
    dedup : one MoE dispatch copy per (token, rank) (DeepEP inside a node), per (token, node) forwarded
        inside it (DeepEP's internode kernels; nodes from the fabric's racks) or per (token, expert) (a plain
        all-to-all-v, DeepEP's low-latency kernels).
    """
    import time

    from .jobs.models import load_model
    from .jobs.step import check_mesh, step, step_tokens
    from .placement import chip_ranks, parse_mesh
    from .traffic.moe import parse_skew
    with about("model"):
        m = load_model(model)
    with about("mesh"):
        mesh_d = check_mesh(parse_mesh(mesh), m)
    with about("batch"):
        step_tokens(phase, batch, seq)
    with about("skew"):
        parse_skew(skew)
    need = math.prod(mesh_d.values())
    for name, G in graphs.items():
        if need > len(chip_ranks(G)):
            raise BadInput(f"mesh {mesh} needs {need:,} chips but {name!r} has {len(chip_ranks(G)):,}", param="mesh")
    results = []
    for name, G in graphs.items():
        say = ((lambda msg, name=name: progress(f"{name}: {msg}"))
               if progress and (len(graphs) > 1 or len(chip_ranks(G)) > 512) else None)
        t0 = time.perf_counter()
        with about("skew" if skew not in ("balanced", "uniform") else "options"):   # a weights file's errors
            try:
                results.append(step(G, m, mesh=mesh_d, phase=phase, batch=batch, seq=seq, compute_us=compute_us,
                                    dispatch_dtype=dispatch_dtype, combine_dtype=combine_dtype, skew=skew,
                                    seed=seed, dedup=dedup, progress=say))
            except BadInput as exc:     # which fabric, when there are several
                raise BadInput(f"{name}: {exc}", param=exc.param) from None
        if progress and time.perf_counter() - t0 > 2:
            progress(f"{name}: priced in {time.perf_counter() - t0:.1f} s")
    return results

