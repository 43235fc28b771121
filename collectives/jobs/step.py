"""One model step's communication on a fabric: per layer, the collectives a layout needs, priced by ``mix``.

Model (the "Token cost" section of docs/guide.md repeats it):

* **Tokens.** A step processes ``tokens`` = ``batch`` (decode: one new token per
  sequence) or ``batch x seq`` (prefill), spread evenly over the mesh's chips.
* **Mesh.** ``tp`` x ``ep`` x ``dp`` over chip ranks, TP innermost (Megatron-Core order,
  :func:`fabricsim.collectives.placement.by_mesh`).  A mesh smaller than the fabric uses
  ranks ``0 .. tp*ep*dp - 1`` and leaves the rest idle (said in the notes).
* **Attention and dense MLPs are tensor-parallel, Megatron-style.**  With ``tp > 1``
  every layer all-reduces its attention output over each TP group
  (``attn-allreduce``, S = the group's tokens x hidden x 2 B, bf16), and a dense layer
  all-reduces its MLP output the same way (``mlp-allreduce``): the two all-reduces per
  layer of Megatron-LM's forward pass.  ``tp = 1`` is data-parallel attention (each chip
  its own sequences): no attention collective.
* **MoE layers are expert-parallel.**  Each chip dispatches its own ``tokens / chips``
  tokens (a TP group splits its tokens over its ranks first, which needs no traffic:
  they all hold them after the all-reduce) to ``top_k`` routed experts over its EP group
  (``dispatch``, fp8 by default, 1 B per element), and the experts' outputs come back
  (``combine``, bf16): all-to-all-v's built by :func:`fabricsim.collectives.traffic.moe_traffic`
  (experts placed round-robin; routing ``balanced`` by default, the expectation of a
  uniform router; one copy per (token, destination rank), fanned out to the rank's
  experts there, as DeepEP's kernels send it: ``dedup=rank``).  ``bytes_total`` counts
  every copy, local ones included.  With ``tp > 1`` the routed output, split over the TP ranks, is gathered
  back (``moe-allgather``) and a shared expert, TP-sharded like a dense MLP, reduces
  its output (``shared-allreduce``) *concurrently* with dispatch and combine
  (Megatron-Core's shared-expert overlap): the one place where two collectives of a
  layer overlap.  Shared experts are replicated on every chip, so with ``tp = 1`` they
  need no traffic.  Without an ``ep`` dimension (or ``ep = 1``) the experts are
  TP-sharded and the MoE block reduces like a dense MLP (``mlp-allreduce``).
* **Layers are sequential**: layer l + 1 starts when layer l's last collective ends
  (its input is layer l's output), so a step's time is the sum of its layers'
  makespans.  Layers of the same kind carry the same jobs on an idle fabric, so each
  kind is priced once and counted per layer: exact, not an approximation.
* **Compute** is not modelled unless ``compute_us`` is given: that many microseconds
  per layer, added in series with the layer's communication (no overlap assumed).
* Not modelled: pipeline parallelism, embedding / LM-head collectives, DeepSeek's
  node-limited routing and per-node deduplication of a token's copies (beyond one per
  rank), KV-cache traffic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import networkx as nx
import numpy as np

from ...topo.errors import BadInput
from ...topo.text import fmt_bytes, table, us
from ..placement import MESH_ORDER, by_mesh, chip_ranks, parse_mesh
from ..traffic import DEDUPS, DTYPE_BYTES, MoESpec, moe_traffic
from .models import Model, load_model

__all__ = ["PHASES", "MESH_DIMS", "StepCollective", "StepLayer", "StepResult", "PlannedJob", "layer_jobs", "step_scope_note",
           "mesh_groups", "step", "step_tokens", "plot_step", "PLOT_SUFFIXES"]

PHASES = ("decode", "prefill")
MESH_DIMS = ("tp", "ep", "dp")
ACT_DTYPE = "bf16"          # activations between layers and in the TP collectives (Megatron default)


@dataclass(frozen=True)
class StepCollective:
    """One collective of a layer: every group of its mesh dimension at once."""
    name: str                  # attn-allreduce, dispatch, combine, moe-allgather, shared-allreduce, mlp-allreduce
    collective: str            # all-reduce | all-to-all | all-gather
    over: str                  # mesh dimension whose groups run it
    groups: int
    group_size: int
    bytes_total: float         # all-to-all: every token-expert copy; all-reduce/-gather: S x ranks
    bytes_network: float | None  # all-to-all: the copies that leave their chip (others: None, algorithm-dependent)
    algorithm: str
    start_s: float             # within the layer
    finish_s: float
    attributed_s: float        # share of the layer's makespan: overlapping stretches split evenly

    @property
    def time_s(self) -> float:
        return self.finish_s - self.start_s

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "collective": self.collective, "bytes_total": self.bytes_total,
                "time_s": self.time_s, "over": self.over, "groups": self.groups, "group_size": self.group_size,
                "bytes_network": self.bytes_network, "algorithm": self.algorithm, "start_s": self.start_s,
                "finish_s": self.finish_s, "attributed_s": self.attributed_s}


@dataclass(frozen=True)
class StepLayer:
    index: int
    kind: str                  # dense | moe
    comm_s: float              # the layer's makespan
    compute_s: float
    collectives: tuple

    @property
    def time_s(self) -> float:
        return self.comm_s + self.compute_s

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "kind": self.kind, "time_s": self.time_s, "comm_s": self.comm_s,
                "compute_s": self.compute_s, "collectives": [c.as_dict() for c in self.collectives]}


@dataclass(frozen=True)
class StepResult:
    model: str
    fabric: str
    phase: str
    mesh: dict
    chips: int                 # chips the mesh uses
    batch: int
    seq: int
    tokens: int
    time_s: float              # communication + compute (if given), one step
    comm_s: float
    compute_s: float
    layers: tuple
    notes: tuple = ()
    bottlenecks: tuple = ()
    partial: bool = False

    @property
    def time_per_token_s(self) -> float:
        return self.time_s / self.tokens

    @property
    def tokens_per_s_comm_bound(self) -> float:
        return self.tokens / self.comm_s if self.comm_s > 0 else math.inf

    def by_collective(self) -> dict[str, dict[str, float]]:
        """Per collective name, summed over the layers: time, attributed time, bytes."""
        out: dict[str, dict[str, float]] = {}
        for layer in self.layers:
            for c in layer.collectives:
                d = out.setdefault(c.name, {"count": 0, "time_s": 0.0, "attributed_s": 0.0, "bytes_total": 0.0})
                d["count"] += 1
                d["time_s"] += c.time_s
                d["attributed_s"] += c.attributed_s
                d["bytes_total"] += c.bytes_total
        return out

    def to_text(self, compute_us: float | None = None) -> str:
        """The step as ``fabricsim step`` prints it (``compute_us``: the flat compute per layer it was
        priced with, named in the scope note)."""
        tps = self.tokens_per_s_comm_bound
        out = [f"{self.model} {self.phase} on {self.fabric}, mesh {mesh_text(self.mesh)} ({self.chips:,} chips), batch {self.batch:,}"
               + (f" x seq {self.seq:,}" if self.phase == "prefill" else "") + f" = {self.tokens:,} tokens per step",
               f"communication {us(self.comm_s)} per step, {us(self.comm_s / self.tokens)} per token; "
               + (f"{tps:,.0f} tokens/s bound by communication" if math.isfinite(tps) else "no communication")
               + (" (decode: each sequence waits a whole step per token)" if self.phase == "decode" and self.comm_s else "")]
        if self.compute_s:
            out.append(f"compute {us(self.compute_s)} per step (in series): {us(self.time_s)} per step, "
                       f"{self.tokens / self.time_s:,.0f} tokens/s")
        kinds: dict[str, list] = {}
        for layer in self.layers:
            kinds.setdefault(layer.kind, []).append(layer)
        out.append("")
        out.append(table([[k, len(ls), ", ".join(c.name for c in ls[0].collectives) or "-", us(ls[0].comm_s),
                            us(ls[0].comm_s * len(ls))] for k, ls in kinds.items()],
                          ["layers", "count", "collectives", "comm per layer", "comm per step"]))
        rows = []
        for k, ls in kinds.items():
            for c in ls[0].collectives:
                rows.append([k, c.name, c.collective, f"{c.groups:,} x {c.group_size}", c.algorithm,
                             fmt_bytes(c.bytes_total), us(c.start_s), us(c.time_s), us(c.attributed_s * len(ls)),
                             f"{c.attributed_s * len(ls) / self.comm_s:.1%}" if self.comm_s else "-"])
        if rows:
            out.append("")
            out.append(table(rows, ["layer", "collective", "kind", "groups", "algorithm", "bytes/layer", "starts",
                                     "time", "step share", "%"]))
        if self.bottlenecks:
            b = self.bottlenecks[0]
            if isinstance(b, dict) and "link" in b:
                kind = "moe" if any(layer.kind == "moe" and layer.collectives for layer in self.layers) else "dense"
                out.append(f"busiest link of a {kind} layer: {b['link']}" + (f" ({b['tier']}, "
                           f"{b['utilization']:.1%} of the layer's time)" if "utilization" in b else ""))
        if self.partial:
            out.append("PARTIAL: some pairs have no route or some groups lost a chip (see --json notes)")
        out.extend(f"note: {n}" for n in self.notes)
        out.append(step_scope_note(compute_us))
        return "\n".join(out)

    def as_dict(self) -> dict[str, Any]:
        tps = self.tokens_per_s_comm_bound
        return {"model": self.model, "phase": self.phase, "time_s": self.time_s,
                "tokens_per_s_comm_bound": None if math.isinf(tps) else tps,
                "layers": [layer.as_dict() for layer in self.layers],
                "fabric": self.fabric, "mesh": dict(self.mesh), "chips": self.chips, "batch": self.batch,
                "seq": self.seq, "tokens": self.tokens, "comm_s": self.comm_s, "compute_s": self.compute_s,
                "time_per_token_s": self.time_per_token_s,
                "tokens_per_s": self.tokens / self.time_s if self.time_s > 0 else None,
                "by_collective": self.by_collective(), "bottlenecks": list(self.bottlenecks),
                "partial": self.partial, "notes": list(self.notes)}


def step_scope_note(compute_us: float | None) -> str:
    """What a step's figures leave out: said on screen, not only in the docstring."""
    if compute_us is None:
        return ("note: communication only: compute, HBM traffic and the KV cache are not modelled "
                "(--compute-us US adds a flat compute time per layer); tokens/s is a bound set by communication")
    return (f"note: compute is a flat {compute_us:g} us per layer (--compute-us), added in series with no "
            f"overlap; HBM traffic and the KV cache are not modelled")


def step_tokens(phase: str, batch: int, seq: int | None) -> int:
    """Tokens one step processes: decode = batch, prefill = batch x seq."""
    if phase not in PHASES:
        raise BadInput(f"unknown phase {phase!r}; choose one of: {', '.join(PHASES)}", param="phase")
    for name, v in (("batch", batch), ("seq", seq)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise BadInput(f"{name} {v!r} must be a positive integer", param=name)
    if phase == "decode":
        if seq not in (None, 1):
            raise BadInput(f"seq {seq} applies to prefill; a decode step makes one token per sequence "
                           f"(drop --seq or use --phase prefill)", param="seq")
        return int(batch)
    if seq is None:
        raise BadInput("prefill needs --seq L (prompt tokens per sequence)", param="seq")
    return int(batch) * int(seq)


def mesh_groups(G: nx.Graph, mesh: dict[str, int], over: str) -> tuple[tuple[int, ...], ...]:
    """Groups of ``over``; a mesh smaller than the fabric takes ranks 0 .. size-1 (same layout as ``by_mesh``)."""
    n = len(chip_ranks(G))
    total = int(np.prod(list(mesh.values())))
    if total == n:
        return by_mesh(G, mesh, over)
    if total > n:
        raise BadInput(f"mesh {mesh_text(mesh)} needs {total:,} chips but {G.graph.get('name', 'the fabric')!r} "
                       f"has {n:,}", param="mesh")
    names = [k for k in MESH_ORDER if k in mesh] + [k for k in mesh if k not in MESH_ORDER]
    grid = np.arange(total).reshape([mesh[k] for k in reversed(names)])
    axis = len(names) - 1 - names.index(over)
    return tuple(tuple(int(r) for r in g) for g in np.moveaxis(grid, axis, -1).reshape(-1, mesh[over]))


def mesh_text(mesh: dict[str, int]) -> str:
    """A mesh as the CLI spells it.

    Parameters
    ----------
    mesh : dict of str to int
        Dimension name -> size, innermost first.

    Returns
    -------
    str
        ``"tp=8,ep=256"``.
    """
    return ",".join(f"{k}={v}" for k, v in mesh.items())


def check_mesh(mesh: dict[str, int] | str, model: Model, *, command: str = "step") -> dict[str, int]:
    """The mesh ``step`` will use for ``model``, checked: only tp/ep/dp, tp divides the heads, and so on.

    Parameters
    ----------
    mesh : dict of str to int, or str
        The mesh, or its text (``"tp=8,ep=256"``).
    model : Model
        The model whose heads and experts the mesh must divide.
    command : str
        The command named in the message about an unmodelled dimension (``serve`` checks its
        meshes here too).

    Returns
    -------
    dict of str to int
        The mesh.

    Raises
    ------
    BadInput
        A dimension ``step`` does not model, or a size the model cannot be split by.
    """
    mesh = parse_mesh(mesh) if isinstance(mesh, str) else dict(mesh)
    bad = [k for k in mesh if k not in MESH_DIMS]
    if bad:
        raise BadInput(f"mesh dimension {bad[0]!r} is not modelled by {command}; use {', '.join(MESH_DIMS)} "
                       f"(pipeline and context parallelism are not modelled)", param="mesh")
    tp, ep = mesh.get("tp", 1), mesh.get("ep", 1)
    if model.heads % tp:
        raise BadInput(f"tp={tp} must divide {model.name}'s {model.heads} attention heads", param="mesh")
    if ep > 1 and not model.moe_layers:
        raise BadInput(f"ep={ep} but {model.name} has no MoE layers; use tp and dp", param="mesh")
    if ep > model.experts > 0:
        raise BadInput(f"ep={ep} exceeds {model.name}'s {model.experts} routed experts (a rank would hold none)",
                       param="mesh")
    return mesh


@dataclass(frozen=True)
class PlannedJob:
    """One job of a layer (the fields of :class:`fabricsim.collectives.jobs.Job`) and what the step reports."""
    name: str
    collective: str
    groups: tuple
    size_bytes: float | None
    traffic: np.ndarray | None
    after: tuple
    over: str
    n_groups: int
    group_size: int
    bytes_total: float
    bytes_network: float | None


def scaleup_run(G: nx.Graph, members) -> int | None:
    """Ranks per scale-up domain (the chips' ``rack``) of an EP group whose ranks fill whole domains in runs
    of equal length (8 per HGX node of a rail cluster, 72 per NVL72); None when the fabric has no domains
    or the group does not split evenly (a MoE dispatch there counts one copy per rank)."""
    from ..algorithms import view_of
    dom = view_of(G).domain
    if dom is None:
        return None
    d = dom[np.asarray(members)]
    starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
    runs = np.diff(np.r_[starts, len(d)])
    if (runs != runs[0]).any() or len(np.unique(d)) != len(runs):
        return None
    return int(runs[0])


def layer_jobs(G: nx.Graph, model: Model, kind: str, *, mesh: dict[str, int], tokens: int,
               dispatch_dtype: str = "fp8", combine_dtype: str = "bf16", skew: str = "balanced",
               seed: int = 0, after: tuple[str, ...] = (), dedup: str = "rank") -> list[PlannedJob]:
    """The jobs of one ``kind`` (dense | moe) layer on the mesh, in dependency order (see the module notes).

    ``dedup`` is the MoE dispatch's copy rule (:data:`~fabricsim.collectives.traffic.DEDUPS`); ``node``
    takes its nodes from the fabric (:func:`scaleup_run` of the first EP group; one copy per rank where
    the group does not fill whole scale-up domains)."""
    tp, ep = mesh.get("tp", 1), mesh.get("ep", 1)
    chips = int(np.prod(list(mesh.values())))
    act = DTYPE_BYTES[ACT_DTYPE]
    out: list[PlannedJob] = []

    def tp_job(name: str, collective: str, deps: tuple[str, ...]) -> str:
        groups = mesh_groups(G, mesh, "tp")
        per_group = tokens / len(groups)
        if per_group != int(per_group):
            raise BadInput(f"{tokens:,} tokens do not split evenly over the {len(groups):,} TP groups of mesh "
                           f"{mesh_text(mesh)}; use a batch that is a multiple of {len(groups):,}", param="batch")
        # S as nccl-tests defines it: the all-reduce's per-rank buffer, the all-gather's whole
        # (gathered) buffer; either way every rank of every group ends holding S bytes
        size = per_group * model.hidden * act
        total = size * chips
        out.append(PlannedJob(name, collective, groups, size, None, tuple(deps), "tp", len(groups), tp,
                              total, None))
        return name

    last = after
    if tp > 1:
        last = (tp_job("attn-allreduce", "all-reduce", last),)
    if kind == "dense" or ep == 1:
        if tp > 1:
            tp_job("mlp-allreduce", "all-reduce", last)
        return out
    groups = mesh_groups(G, mesh, "ep")
    per_group = tokens / len(groups)
    if per_group != int(per_group) or per_group < 1:
        raise BadInput(f"{tokens:,} tokens do not split evenly over the {len(groups):,} EP groups of mesh "
                       f"{mesh_text(mesh)}; use a batch that is a multiple of {len(groups):,}", param="batch")
    start = last
    for name, dtype, deps in (("dispatch", dispatch_dtype, start), ("combine", combine_dtype, ("dispatch",))):
        # shared experts are replicated on every chip: their copies never leave it, so
        # they are left out of the all-to-all (shared=0) rather than carried on the diagonal
        node_ranks = (scaleup_run(G, groups[0]) or ep) if dedup == "node" else 8
        spec = MoESpec(experts=model.experts, top_k=model.top_k, tokens=int(per_group), hidden=model.hidden,
                       dtype=dtype, shared=0, skew=skew, seed=seed, phase=name, dedup=dedup,
                       node_ranks=node_ranks)
        t = moe_traffic(spec, ep)
        out.append(PlannedJob(name, "all-to-all", groups, None, t.matrix, tuple(deps), "ep", len(groups), ep,
                              float(t.bytes_total * len(groups)), float(t.bytes_network * len(groups))))
    if tp > 1:
        tp_job("moe-allgather", "all-gather", ("combine",))
        if model.shared:
            tp_job("shared-allreduce", "all-reduce", start)
    return out


def _attribute(spans: list[tuple[float, float]]) -> list[float]:
    """Each span's share of the union's length, overlapping stretches split evenly among the spans in them."""
    cuts = sorted({t for s in spans for t in s})
    share = [0.0] * len(spans)
    for lo, hi in zip(cuts, cuts[1:]):
        live = [i for i, (a, b) in enumerate(spans) if a <= lo and b >= hi]
        for i in live:
            share[i] += (hi - lo) / len(live)
    return share


def step(G: nx.Graph, model: Model | str, *, mesh: dict[str, int] | str, phase: str = "decode", batch: int = 1,
         seq: int | None = None, compute_us: float | None = None, dispatch_dtype: str = "fp8",
         combine_dtype: str = "bf16", skew: str = "balanced", seed: int = 0, dedup: str = "rank",
         progress: Callable[[str], None] | None = None, **price_kwargs) -> StepResult:
    """Price one model step's communication on ``G``: every layer's collectives, through :func:`mix`.

    Parameters
    ----------
    G : fabric graph.
    model : a :class:`Model` or a catalog name / TOML path (:func:`load_model`).
    mesh : ``{"tp": .., "ep": .., "dp": ..}`` or ``"tp=8,ep=16"``; its product is at most the chip count.
    phase : ``decode`` (tokens = batch) or ``prefill`` (tokens = batch x seq).
    compute_us : per-layer compute time, added in series (default: not modelled).
    dispatch_dtype, combine_dtype : element types of the MoE all-to-alls (fp8, bf16, fp16, fp32, or the 4-bit block formats nvfp4 and mxfp4 with their scales).
    skew, seed : the router model (:class:`fabricsim.collectives.traffic.MoESpec`); ``balanced`` is
        the expectation of a uniform router, ``uniform`` one sample of it, ``zipf:A`` hot experts.
    dedup : what one copy of a MoE dispatch is: rank (one per token and destination rank, DeepEP inside a
        node), node (one per token and destination node, forwarded inside it: DeepEP's internode kernels,
        nodes from the fabric's racks) or expert (one per token and expert: a plain all-to-all-v, DeepEP's
        low-latency kernels).
    progress : called with a short message before each priced layer kind.
    price_kwargs : passed to :func:`mix` (and by it to ``price``), e.g. ``efficiency``.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> r = step(build("jalapeno-rack"), "deepseek-r1", mesh="ep=128", batch=1024)
    >>> total = sum(c.bytes_total for l in r.layers for c in l.collectives if c.name == "dispatch")
    >>> from math import comb       # one copy per (token, rank): 8 experts of 256 over 128 ranks of 2
    >>> ranks_per_token = 128 * (1 - comb(254, 8) / comb(256, 8))
    >>> round(total / (58 * 1024 * 7168), 9) == round(ranks_per_token, 9), round(ranks_per_token, 4)
    (True, 7.8902)
    """
    from .mix import Job, mix    # the jobs engine (imported here: layer_jobs does not need it)
    model = load_model(model) if isinstance(model, str) else model
    tokens = step_tokens(phase, batch, seq)
    mesh = check_mesh(mesh, model)
    if compute_us is not None and not (math.isfinite(compute_us) and compute_us >= 0):
        raise BadInput(f"compute {compute_us!r} us per layer must be a finite number >= 0", param="compute_us")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise BadInput(f"seed {seed!r} must be an integer >= 0", param="seed")
    for name, dt in (("dispatch", dispatch_dtype), ("combine", combine_dtype)):
        if dt not in DTYPE_BYTES:
            raise BadInput(f"{name} dtype {dt!r}; choose one of: {', '.join(DTYPE_BYTES)}", param=f"{name}_dtype")
    if dedup not in DEDUPS:
        raise BadInput(f"dedup {dedup!r}; choose one of: {', '.join(DEDUPS)}", param="dedup")
    chips = int(np.prod(list(mesh.values())))
    n = len(chip_ranks(G))
    fabric = str(G.graph.get("name", "fabric"))
    notes = []
    if chips < n:
        notes.append(f"the mesh uses {chips:,} of {n:,} chips (ranks 0..{chips - 1}); the rest are idle")
    priced: dict[str, tuple[tuple, float]] = {}
    partial = False
    bottlenecks: tuple = ()
    for kind in ("dense", "moe"):
        count = model.dense_layers if kind == "dense" else model.moe_layers
        if not count:
            continue
        planned = layer_jobs(G, model, kind, mesh=mesh, tokens=tokens, dispatch_dtype=dispatch_dtype,
                             combine_dtype=combine_dtype, skew=skew, seed=seed, dedup=dedup)
        if not planned:
            priced[kind] = ((), 0.0)
            continue
        if progress:
            progress(f"pricing a {kind} layer: {', '.join(p.name for p in planned)} ({count} such layers)")
        res = mix(G, [Job(name=p.name, collective=p.collective, groups=p.groups, size_bytes=p.size_bytes,
                          traffic=p.traffic, after=p.after) for p in planned], progress=progress, **price_kwargs)
        by_name = {j.name: j for j in res.jobs}
        spans = [(by_name[p.name].start_s, by_name[p.name].finish_s) for p in planned]
        shares = _attribute(spans)
        cols = tuple(StepCollective(name=p.name, collective=p.collective, over=p.over, groups=p.n_groups,
                                    group_size=p.group_size, bytes_total=float(p.bytes_total),
                                    bytes_network=p.bytes_network, algorithm=by_name[p.name].algorithm,
                                    start_s=float(s), finish_s=float(f), attributed_s=float(a))
                     for p, (s, f), a in zip(planned, spans, shares))
        priced[kind] = (cols, float(res.makespan_s))
        if not bottlenecks or kind == "moe":
            bottlenecks = tuple(res.bottlenecks)
        notes.extend(f"{kind} layer: {x}" for x in res.notes)
        partial = partial or bool(getattr(res, "partial", False))
    kinds = [f"{model.dense_layers} dense" if model.dense_layers else "",
             f"{model.moe_layers} MoE" if model.moe_layers else ""]
    notes.append(f"each layer kind priced once ({' and '.join(k for k in kinds if k)} layers): layers run one "
                 f"after another from an idle fabric, so identical layers take identical time (exact)")
    compute_s = 0.0 if compute_us is None else compute_us * 1e-6
    layers = tuple(StepLayer(index=i, kind=model.kind(i), comm_s=priced[model.kind(i)][1], compute_s=compute_s,
                             collectives=priced[model.kind(i)][0]) for i in range(model.layers))
    comm = float(sum(layer.comm_s for layer in layers))
    if comm == 0:
        notes.append(f"mesh {mesh_text(mesh)} needs no communication for {model.name}: every chip holds "
                     f"whole layers and its own tokens")
    return StepResult(model=model.name, fabric=fabric, phase=phase, mesh=mesh, chips=chips, batch=int(batch),
                      seq=int(seq) if phase == "prefill" else 1, tokens=tokens, time_s=comm + compute_s * model.layers,
                      comm_s=comm, compute_s=compute_s * model.layers, layers=layers, notes=tuple(notes),
                      bottlenecks=bottlenecks, partial=partial)


PLOT_SUFFIXES = (".png", ".svg", ".pdf")
# one colour per collective of a layer, in the order a layer runs them
_COLORS = {"attn-allreduce": "#4c78a8", "dispatch": "#f58518", "combine": "#e45756", "moe-allgather": "#72b7b2",
           "shared-allreduce": "#54a24b", "mlp-allreduce": "#b279a2"}


def plot_step(results, path=None, *, per_token: bool = False, title: str | None = None, ax=None):
    """A stacked bar per result (fabric): the step's communication time by collective.

    Each segment is a collective's time summed over the layers, overlapping stretches
    split evenly among the collectives running in them (``attributed_s``), so a bar's
    height is the step's communication time.  ``per_token`` divides by the step's tokens.

    Parameters
    ----------
    results : sequence of StepResult
        One bar each.
    path : str or Path, optional
        ``.png``, ``.svg`` or ``.pdf``; nothing is written without it.
    per_token : bool
        Divide each bar by its step's tokens.
    title : str, optional
        Replaces the generated title.
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes instead of a new Figure.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import os, tempfile
    >>> from fabricsim.fabrics import build
    >>> r = step(build("jalapeno-rack"), "gpt-oss-120b", mesh="tp=8,ep=16", batch=128)
    >>> out = os.path.join(tempfile.mkdtemp(), "s.svg")
    >>> type(plot_step([r], out)).__name__, os.path.getsize(out) > 0
    ('Figure', True)
    """
    from pathlib import Path

    from matplotlib.figure import Figure

    results = list(results)
    p = None if path is None else Path(path)
    if p is not None and p.suffix.lower() not in PLOT_SUFFIXES:
        raise BadInput(f"plot file {str(p)!r}: use a {', '.join(PLOT_SUFFIXES)} file name")
    if p is not None and not p.parent.exists():
        raise BadInput(f"plot file {str(p)!r}: directory {str(p.parent)!r} does not exist")
    if not results:
        raise BadInput("no step results to plot")
    names = [n for n in _COLORS if any(n in r.by_collective() for r in results)]
    names += sorted({n for r in results for n in r.by_collective()} - set(names))
    if ax is None:
        fig = Figure(figsize=(max(6.0, 2.5 + 1.4 * len(results)), 4.6), dpi=110)
        ax = fig.subplots()
    else:
        fig = ax.figure
    x = np.arange(len(results))
    scale = [1e6 / (r.tokens if per_token else 1) for r in results]
    bottom = np.zeros(len(results))
    for name in names:
        h = np.array([r.by_collective().get(name, {}).get("attributed_s", 0.0) * s for r, s in zip(results, scale)])
        ax.bar(x, h, bottom=bottom, label=name, color=_COLORS.get(name))
        bottom += h
    for xi, r, s in zip(x, results, scale):
        ax.text(xi, r.comm_s * s, f"{r.comm_s * s:,.3g}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [f"{r.fabric}\n{mesh_text(r.mesh)}" for r in results], fontsize=8)
    ax.set_ylabel("communication per token (us)" if per_token else "communication per step (us)")
    r0 = results[0]
    ax.set_title(title or f"{r0.model} {r0.phase}, {r0.tokens:,} tokens per step", fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if p is not None:
        fig.savefig(p, dpi=fig.dpi, facecolor="white", bbox_inches="tight")
    return fig
