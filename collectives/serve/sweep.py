"""``fabricsim serve``: a concurrency sweep with mesh and library search, token economics per point.

Aggregated serving (prefill and decode on the same chips, as InferenceX's single-turn runs):
``C`` users each send an ISL-token prompt and read OSL tokens.  Per concurrency and mesh:

* **TTFT** = one prefill step on the mesh (:func:`.model.step_terms`, ``prefill``), which
  takes one ISL-token prompt per TP group at once (attention is data-parallel over the
  TP groups, as the decode batch is);
* a decode step serves all ``C`` sequences at the mean context ISL + OSL/2 and emits
  ``a`` tokens per sequence (``a`` = 1, or the MTP acceptance length);
* the prefills of the other users interleave with the batch's decode steps: ``R`` =
  ceil(C / TP groups) prefill rounds per request lifetime, so
  ``e2e = R x TTFT + (OSL / a) x decode step`` and ``TPOT = (e2e - TTFT) / OSL`` (at
  C = 1: decode step / a, the min TBT);
* throughput = ``C x (ISL + OSL) / e2e`` (input + output tokens, InferenceX's "mixed"),
  per chip of the mesh, per kW of package TDP, and $ per million tokens where the chip's
  price per hour is known.

KV-cache capacity (HBM x usable fraction - weights) bounds ``C`` per mesh.  Without a
mesh, each concurrency searches ``tp`` (powers of two dividing the heads) x ``ep``
(powers of two up to the experts, and chips/tp) over up to the fabric's chips (``dp`` =
1: further replicas serve further users at the same per-chip rate), pruning by the
roofline alone (no network: an upper bound on throughput, a lower bound on TPOT); the
point kept is the best tokens/s per kW, and ``min_tbt_ms`` is the least TPOT a mesh reaches
at the lowest concurrency of the sweep (TPOT rises with concurrency).  The sweep stops two levels
past the peak tokens/s per kW (``max_concurrency`` caps it).  Network prices are cached by (mesh,
tokens, library), and routing's products by the pinned graph (:mod:`fabricsim.topo.graphcache`).

``disaggregate={"prefill": P, "decode": D}`` splits the chips into a prefill pool and a decode pool
and moves each prompt's KV cache between them over the fabric (:mod:`.disagg`: its own TTFT, TPOT
and throughput model replaces the interleaving above).

``menu="inferencex"`` replaces the search with the published runs (:mod:`.menu`): each
concurrency level is a run's sequences per decode worker, priced on that run's mesh only, and
every level is kept (no early stop); ``min_tbt_ms`` is then at the menu's lowest concurrency.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable

import networkx as nx
import numpy as np

from ...topo.accelerators import Accelerator, accelerator_of
from ...topo.errors import BadInput, about
from ...topo.graphcache import pinned
from ..jobs.models import Model, load_model
from ..jobs.step import check_mesh, layer_jobs
from ..placement import chip_ranks, parse_mesh
from .arch import ChipConstants, arch_of, chip_constants
from .menu import MENUS, menu_runs
from .model import OVERLAPS, StepTerms, acceptance_length, kv_capacity, step_terms
from .network import ENGINE_ALGORITHM, LIBRARY_CHOICES, NetworkPricer, library

__all__ = ["ServePoint", "ServeResult", "FailResult", "ClassRow", "ClassResult", "serve", "serve_failed",
           "serve_failure_class", "candidate_meshes", "plot_frontier"]

# past the peak, each doubling of concurrency only lengthens every user's wait: the sweep stops
# after this many levels in a row below the best tokens/s per kW so far
STOP_AFTER_FALLING = 2


def _columns(head: list[str], rows: list[list[str]], left: int = 0) -> list[str]:
    """Header, rule and rows of a table whose first ``left`` columns are left-aligned, the rest right-aligned
    (figures); :func:`fabricsim.topo.text.table` left-aligns every column."""
    w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]

    def line(cells):
        return "  ".join(c.ljust(x) if i < left else c.rjust(x) for i, (c, x) in enumerate(zip(cells, w)))
    return [line(head), "  ".join("-" * x for x in w), *(line(r) for r in rows)]


@dataclass(frozen=True)
class ServePoint:
    """One concurrency on one mesh: latency, throughput and what bounds it."""
    concurrency: int
    mesh: dict
    chips: int
    library: str
    tpot_s: float
    ttft_s: float
    e2e_s: float
    tokens_per_s: float               # input + output, the whole mesh
    tokens_per_s_per_user: float      # output tokens per second one user reads (1 / TPOT)
    tokens_per_s_per_chip: float
    tokens_per_s_per_kw: float
    usd_per_mtok: float | None
    bound: str
    accepted: float                   # tokens per sequence per decode step
    decode: StepTerms = field(repr=False)
    prefill: StepTerms = field(repr=False)
    disagg: Any = field(default=None, repr=False)   # DisaggTerms when the pools are split (.disagg)

    @property
    def mesh_text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.mesh.items())

    def summary(self) -> str:
        return (f"C={self.concurrency} mesh {self.mesh_text}: TPOT {self.tpot_s * 1e3:.3f} ms, TTFT "
                f"{self.ttft_s * 1e3:.1f} ms, {self.tokens_per_s_per_kw:,.0f} tok/s/kW, {self.bound}-bound")

    def __repr__(self) -> str:
        return f"ServePoint({self.summary()})"

    def as_dict(self) -> dict[str, Any]:
        """The issue's point schema (units in the names)."""
        return {"concurrency": self.concurrency, "mesh": self.mesh_text, "library": self.library,
                "tpot_ms": self.tpot_s * 1e3, "ttft_ms": self.ttft_s * 1e3, "e2e_s": self.e2e_s,
                "tokens_per_s_per_user": self.tokens_per_s_per_user,
                "tokens_per_s_per_chip": self.tokens_per_s_per_chip,
                "tokens_per_s_per_kw": self.tokens_per_s_per_kw, "usd_per_mtok": self.usd_per_mtok,
                "bound": self.bound} | ({"disaggregate": self.disagg.as_dict()} if self.disagg is not None else {})


@dataclass(frozen=True)
class ServeResult:
    """A fabric's sweep: the best point per concurrency and the summary figures."""
    fabric: str
    model: str
    accelerator: str
    isl: int
    osl: int
    mtp: int
    overlap: str
    library: str
    points: tuple
    min_tbt_s: float
    min_tbt_point: ServePoint | None = field(default=None, repr=False)
    frontier: tuple = field(default=(), repr=False)   # every evaluated point (for --plot)
    kv_limit: int = 0
    solves: int = 0
    notes: tuple = ()
    constants: ChipConstants | None = field(default=None, repr=False)   # the chip constants the run used

    @property
    def peak(self) -> ServePoint:
        return max(self.points, key=lambda p: p.tokens_per_s_per_kw)

    @property
    def peak_tps_per_kw(self) -> float:
        return self.peak.tokens_per_s_per_kw

    @property
    def e2e_latency_s(self) -> float:
        return self.peak.e2e_s

    def summary(self) -> str:
        return (f"{self.model} on {self.fabric} ({self.accelerator}), ISL/OSL {self.isl}/{self.osl}"
                f"{f', MTP {self.mtp}' if self.mtp else ''}: min TBT {self.min_tbt_s * 1e3:.3f} ms, peak "
                f"{self.peak_tps_per_kw:,.0f} tok/s/kW at C={self.peak.concurrency} (e2e {self.e2e_latency_s:.2f} s)")

    def __repr__(self) -> str:
        return f"ServeResult({self.summary()})"

    def to_text(self) -> str:
        head = ["C", "mesh", "chips", "TPOT ms", "TTFT ms", "e2e s", "tok/s/user", "tok/s/chip", "tok/s/kW",
                "$/Mtok", "bound", "library"]
        rows = [[f"{p.concurrency:,}", p.mesh_text, f"{p.chips:,}", f"{p.tpot_s * 1e3:.3f}",
                 f"{p.ttft_s * 1e3:,.1f}", f"{p.e2e_s:,.2f}", f"{p.tokens_per_s_per_user:,.0f}",
                 f"{p.tokens_per_s_per_chip:,.0f}", f"{p.tokens_per_s_per_kw:,.0f}",
                 "-" if p.usd_per_mtok is None else f"{p.usd_per_mtok:,.3f}", p.bound, p.library]
                for p in self.points]
        if self.points[0].disagg is not None:
            head += ["prefill", "TTFT: prefill ms", "KV ms", "queue ms", "pools bound"]
            for r, p in zip(rows, self.points):
                d = p.disagg
                r += [d.prefill_mesh, f"{d.prefill_step_s * 1e3:,.2f}", f"{d.kv_transfer_s * 1e3:,.3f}",
                      f"{d.queue_s * 1e3:,.1f}", d.bound]
        lines = [self.summary(), *_columns(head, rows)]
        if self.min_tbt_point is not None:
            lines.append(f"min TBT point: {self.min_tbt_point.summary()}")
            lines.append(self.min_tbt_point.decode.to_text())
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """The issue's schema: fabric, model, points, min_tbt_ms, peak_tps_per_kw, e2e_latency_s."""
        return {"fabric": self.fabric, "model": self.model, "points": [p.as_dict() for p in self.points],
                "min_tbt_ms": self.min_tbt_s * 1e3, "peak_tps_per_kw": self.peak_tps_per_kw,
                "e2e_latency_s": self.e2e_latency_s}


def _pow2_upto(n: int) -> list[int]:
    out, v = [], 1
    while v <= n:
        out.append(v)
        v *= 2
    return out


def candidate_meshes(model: Model, chips: int) -> list[dict[str, int]]:
    """tp (powers of two dividing the heads) x ep (powers of two up to the experts, and chips/tp) fitting ``chips``."""
    out = []
    for tp in _pow2_upto(min(chips, model.heads)):
        if model.heads % tp:
            continue
        eps = {1}
        if model.experts:
            eps |= set(_pow2_upto(min(model.experts, chips // tp)))
            if chips // tp <= model.experts:
                eps.add(chips // tp)
        for ep in sorted(eps):
            if tp * ep <= chips:
                out.append({"tp": tp, "ep": ep} if ep > 1 else {"tp": tp})
    return out


def _check_mesh(mesh: dict[str, int], model: Model, chips: int) -> dict[str, int]:
    """``step``'s mesh check (dimensions, heads, experts), and the mesh must fit on the fabric."""
    mesh = check_mesh(mesh, model, command="serve")
    if math.prod(mesh.values()) > chips:
        raise BadInput(f"mesh {','.join(f'{k}={v}' for k, v in mesh.items())} needs "
                       f"{math.prod(mesh.values()):,} chips; the fabric has {chips:,}", param="mesh")
    return mesh


class _Ctx:
    def __init__(self, arch, acc, consts, pricer, isl, osl, mtp, library, overlap):
        self.arch, self.acc, self.consts, self.pricer = arch, acc, consts, pricer
        self.isl, self.osl, self.mtp, self.library, self.overlap = isl, osl, mtp, library, overlap
        self.accepted = acceptance_length(mtp, arch.mtp_acceptance) if mtp else 1.0
        self._prefill: dict = {}

    def prefill(self, mesh, network: bool) -> StepTerms:
        key = (tuple(sorted(mesh.items())), network)
        if key not in self._prefill:
            groups = math.prod(mesh.values()) // mesh.get("tp", 1)     # one prompt per TP group at once
            self._prefill[key] = step_terms(self.arch, self.acc, self.consts, mesh, phase="prefill",
                                            sequences=self.isl * groups, context=self.isl / 2,
                                            pricer=self.pricer if network else None, library=self.library,
                                            overlap=self.overlap)
        return self._prefill[key]

    def point(self, mesh, C, network: bool = True, prefill_network: bool | None = None) -> ServePoint:
        dec = step_terms(self.arch, self.acc, self.consts, mesh, phase="decode", sequences=C,
                         context=self.isl + self.osl / 2, pricer=self.pricer if network else None,
                         library=self.library, overlap=self.overlap, mtp=self.mtp)
        pre = self.prefill(mesh, network if prefill_network is None else prefill_network)
        chips = dec.chips
        rounds = -(-C // (chips // mesh.get("tp", 1)))      # prefill rounds: one prompt per TP group each
        decode_s = self.osl / self.accepted * dec.time_s
        e2e = rounds * pre.time_s + decode_s
        tpot = (e2e - pre.time_s) / self.osl
        tps = C * (self.isl + self.osl) / e2e
        per_chip = tps / chips
        usd = self.acc.usd_per_chip_hour
        bound = dec.bound if decode_s >= rounds * pre.time_s else f"prefill-{pre.bound}"
        return ServePoint(concurrency=C, mesh=dict(mesh), chips=chips,
                          library=dec.libraries() if network else "none",
                          tpot_s=tpot, ttft_s=pre.time_s, e2e_s=e2e, tokens_per_s=tps,
                          tokens_per_s_per_user=1.0 / tpot, tokens_per_s_per_chip=per_chip,
                          tokens_per_s_per_kw=per_chip / (self.acc.tdp_w / 1e3),
                          usd_per_mtok=(chips * usd / 3600 / tps * 1e6) if math.isfinite(usd) else None,
                          bound=bound, accepted=self.accepted, decode=dec, prefill=pre)


def _search(ctx: _Ctx, meshes, C, key: Callable[[ServePoint], float],
            errors: list | None = None, prefill_network: bool = True) -> tuple[ServePoint | None, list]:
    """The mesh maximising ``key`` at concurrency C: roofline bounds first, network priced best-first.
    Why a mesh cannot run C goes to ``errors``.  ``prefill_network=False`` leaves the prefill's network
    out while searching (exact when ``key`` does not depend on the prefill) and prices the winner's."""
    bounds = []
    for mesh in meshes:
        try:
            bounds.append((key(ctx.point(mesh, C, network=False)), mesh))
        except BadInput as exc:
            if errors is not None:
                errors.append(str(exc))
            continue
    bounds.sort(key=lambda x: (-x[0], math.prod(x[1].values())))    # ties: the fewest chips first
    best, seen = None, []
    for ub, mesh in bounds:
        if best is not None and ub <= key(best) + 1e-12 * abs(key(best)):
            break
        try:
            p = ctx.point(mesh, C, prefill_network=prefill_network)
        except BadInput as exc:
            if errors is not None:
                errors.append(str(exc))
            continue
        seen.append(p)
        if best is None or key(p) > key(best):
            best = p
    if best is not None and not prefill_network:
        best = ctx.point(best.mesh, C)
        seen = [best if q.mesh == best.mesh else q for q in seen]
    return best, seen


def serve(G: nx.Graph, model: Model | str, *, isl: int = 8192, osl: int = 1024,
          mesh: dict[str, int] | str | None = None, concurrency: int | None = None, mtp: int = 0,
          library: str = "auto", overlap: str = "none", accelerator: Accelerator | None = None,
          pricer: NetworkPricer | None = None, progress: Callable[[str], None] | None = None,
          max_concurrency: int | None = None, menu: str = "search",
          disaggregate: dict | str | None = None, constants=None) -> ServeResult:
    """Sweep concurrency (or price one) on ``G``; search the mesh when none is given.

    Parameters
    ----------
    G : fabric graph (its chips' accelerator from :func:`~fabricsim.fabrics.accelerators.accelerator_of`
        unless ``accelerator`` is given).
    model : a catalog model: deepseek-r1, kimi-k2, gpt-oss-120b (in a notebook also a :class:`Model`
        that ``arch.toml`` lists).
    isl : prompt tokens per request.
    osl : output tokens per request.
    mesh : tp=..,ep=..,dp=.. over chip ranks (or a dict), or search (TP x EP searched per concurrency;
        None too).
    concurrency : one concurrency (users); without it (None) the sweep runs 1, 2, 4, ... up to the
        KV-cache limit.
    mtp : draft tokens per decode step (MTP: DeepSeek's module; acceptance from ``arch.toml``).
    library : communication library: ``auto`` (the search picks per collective among those that run on
        the fabric), or one of :data:`~.network.LIBRARIES` (``libraries.toml``).
    overlap : none, or two-microbatch (DeepSeek's serving: one microbatch's communication under the
        other's compute, hidden completely: an upper bound on the gain).
    max_concurrency : the sweep's highest concurrency (default: the KV-cache limit).
    menu : search (every TP x EP mesh, concurrencies 1, 2, 4, ...) or inferencex (the decode meshes
        and concurrencies InferenceX published for the model and chip, collectives/serve/inferencex.toml;
        no ``mesh`` / ``concurrency`` with it).
    disaggregate : prefill=P,decode=D (or a dict): prefill on the first P chips in rank order, decode on
        the next D, each prompt's KV cache moved between them over the fabric (:mod:`.disagg`); a pool
        may name its chips instead, by rank ranges or node-id globs joined by + (prefill=0-63,decode=r01/*);
        ``mesh`` is then the decode pool's (dp fills the pool).  Without it (None): aggregated serving.
    constants : chip constants to override for this run, KEY=VALUE (e.g. prefill_compute_efficiency=0.25):
        fractions of peak (compute_efficiency, prefill_compute_efficiency, hbm_efficiency, hbm_usable), us per
        kernel or layer (launch_us, layer_us), kernel counts; the chip's arch.toml values otherwise (a dict, or
        a :class:`~.arch.ChipConstants` in a notebook).

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> r = serve(build("jalapeno-rack"), "gpt-oss-120b", mesh="tp=8", concurrency=8)
    >>> p = r.points[0]
    >>> round(p.tokens_per_s_per_kw * 0.7 * p.chips / (8 * (8192 + 1024) / p.e2e_s), 9)
    1.0
    """
    with pinned(G):        # the sweep never edits G: routing's link table, routes and folds are cached for it
        return _serve(G, model, isl=isl, osl=osl, mesh=mesh, concurrency=concurrency, mtp=mtp, library=library,
                      overlap=overlap, accelerator=accelerator, pricer=pricer, progress=progress,
                      max_concurrency=max_concurrency, menu=menu, disaggregate=disaggregate, constants=constants)


def _arch_and_model(model) -> tuple:
    """(Arch, Model) of a catalog name, a :class:`Model`, or an ``Arch`` given directly (a toy, or one
    ``arch.toml`` lacks)."""
    from .arch import Arch
    if isinstance(model, Arch):
        return model, model.model
    model = load_model(model) if isinstance(model, str) else model
    return arch_of(model), model


def _degraded_ctx(before: ServeResult, H: nx.Graph, arch, model: Model, acc) -> _Ctx:
    """The healthy sweep's pricing context (tokens, MTP, library, overlap) on the degraded fabric ``H``."""
    return _Ctx(arch, acc, before.constants, NetworkPricer(H, model), before.isl, before.osl, before.mtp,
                before.library, before.overlap)


def _serve(G, model, *, isl, osl, mesh, concurrency, mtp, library, overlap, accelerator, pricer,
           progress, max_concurrency, menu, disaggregate=None, constants=None) -> ServeResult:
    arch, model = _arch_and_model(model)
    acc = accelerator or accelerator_of(G)
    consts = constants if isinstance(constants, ChipConstants) else chip_constants(acc.name, constants)
    for name, v in (("isl", isl), ("osl", osl)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise BadInput(f"--{name} {v!r} must be a positive integer", param=name)
    if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int)
                                    or concurrency < 1):
        raise BadInput(f"--concurrency {concurrency!r} must be a positive integer", param="concurrency")
    if isinstance(mtp, bool) or not isinstance(mtp, int) or mtp < 0:
        raise BadInput(f"--mtp {mtp!r} must be an integer >= 0", param="mtp")
    if library not in LIBRARY_CHOICES:
        raise BadInput(f"--library {library!r}; choose one of: {', '.join(LIBRARY_CHOICES)}", param="library")
    if overlap not in OVERLAPS:
        raise BadInput(f"--overlap {overlap!r}; choose one of: {', '.join(OVERLAPS)}", param="overlap")
    if mtp and not arch.mtp_layers:
        raise BadInput(f"--mtp {mtp}: {model.name} has no multi-token-prediction module; use --mtp 0", param="mtp")
    if max_concurrency is not None and (isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int)
                                        or max_concurrency < 1):
        raise BadInput(f"--max-concurrency {max_concurrency!r} must be a positive integer",
                       param="max_concurrency")
    if menu not in MENUS:
        raise BadInput(f"--menu {menu!r}; choose one of: {', '.join(MENUS)}", param="menu")
    if menu != "search" and (isinstance(mesh, dict) or (mesh not in (None, "search")) or concurrency is not None):
        raise BadInput(f"--menu {menu} takes its meshes and concurrencies from the published runs; "
                       f"drop --mesh and --concurrency (or use --menu search)", param="menu")
    if not (math.isfinite(acc.hbm_bytes) and math.isfinite(acc.hbm_Bps) and math.isfinite(acc.tdp_w)):
        raise BadInput(f"accelerator {acc.name!r} lacks HBM capacity, HBM bandwidth or TDP; serve needs all three")
    n = len(chip_ranks(G))
    if isinstance(mesh, str) and mesh != "search":
        mesh = parse_mesh(mesh)
    runs: list[tuple[dict, int]] | None = None
    pools = None
    if disaggregate is not None:
        from .disagg import DisaggCtx, parse_disaggregate, pool_meshes
        pools = parse_disaggregate(disaggregate, n, G)
        if menu != "search":
            raise BadInput(f"--menu {menu} prices the published decode workers aggregated; drop --disaggregate "
                           f"or use --menu search", param="disaggregate")
        if isinstance(mesh, dict):
            check_mesh(mesh, model, command="serve")
        meshes = pool_meshes([dict(mesh)] if isinstance(mesh, dict) else candidate_meshes(model, pools.decode),
                             pools.decode)
        if not meshes:
            raise BadInput(f"mesh {','.join(f'{k}={v}' for k, v in mesh.items())} does not divide the "
                           f"{pools.decode:,}-chip decode pool; use a mesh whose chips divide it", param="mesh")
    elif menu != "search":
        entry, runs = menu_runs(menu, model.name, acc.name, mtp)
        meshes = list({tuple(m.items()): _check_mesh(dict(m), model, n) for m, _ in runs}.values())
    else:
        meshes = ([_check_mesh(dict(mesh), model, n)] if isinstance(mesh, dict)
                  else candidate_meshes(model, n))
    if pools is not None:
        ctx = DisaggCtx(G, arch, acc, consts, pools, isl, osl, mtp, library, overlap,
                        candidates=candidate_meshes(model, pools.prefill))
        pricer = ctx.pricer
    else:
        pricer = pricer or NetworkPricer(G, model)
        ctx = _Ctx(arch, acc, consts, pricer, isl, osl, mtp, library, overlap)
    limits = {tuple(m.items()): kv_capacity(arch, acc, consts, m, isl + osl) for m in meshes}
    kv_limit = max(limits.values(), default=0)
    if kv_limit < 1:
        raise BadInput(f"{model.name} does not fit on {'mesh ' + ','.join(f'{k}={v}' for k, v in meshes[0].items()) if len(meshes) == 1 else 'any mesh of the fabric'}: "
                       f"its weights leave no HBM for one sequence's KV cache ({acc.name}: "
                       f"{acc.hbm_bytes / 1e9:,.0f} GB)", param="mesh")
    if concurrency is not None:
        if concurrency > kv_limit:
            raise BadInput(f"--concurrency {concurrency:,} exceeds the KV-cache limit of {kv_limit:,} sequences "
                           f"at ISL+OSL {isl + osl:,}", param="concurrency")
        levels = [concurrency]
    elif runs is not None:
        levels = sorted({c for m, c in runs if c <= limits[tuple(m.items())]})
        if max_concurrency is not None:
            levels = [c for c in levels if c <= max_concurrency]
        if not levels:
            raise BadInput(f"no run of the {menu} menu ({entry}) fits the KV cache"
                           f"{'' if max_concurrency is None else f' at or below --max-concurrency {max_concurrency:,}'}",
                           param="menu")
    else:
        levels = _pow2_upto(min(kv_limit, max_concurrency or kv_limit))
    points, frontier, notes = [], [], []
    best_tbt: ServePoint | None = None
    from ...topo.builders import announcer
    if announcer(G, progress):
        # each network solve takes seconds on a fabric this large (tpu8t-virgo: ~25 s to the first point)
        progress(f"searching {len(meshes):,} mesh(es) at {len(levels):,} concurrency level(s) on "
                 f"{G.number_of_nodes():,} nodes and {G.number_of_edges():,} links ...")
    t0 = time.perf_counter()
    falling = 0
    for i, C in enumerate(levels):
        fit = ([m for m in meshes if limits[tuple(m.items())] >= C] if runs is None else
               [m for m in meshes if (m, C) in runs and limits[tuple(m.items())] >= C])
        errors: list[str] = []
        best, seen = _search(ctx, fit, C, key=lambda p: p.tokens_per_s_per_kw, errors=errors)
        frontier.extend(seen)
        fast = None
        if i == 0 or runs is not None:   # TPOT rises with concurrency: its minimum is at the lowest (a menu
            # ties meshes to concurrencies, so there every level is searched)
            # at C = 1 a request's TPOT is its decode alone (one prefill round, not in TPOT): the
            # prefill's network is priced for the fastest mesh only
            fast, seen2 = _search(ctx, fit, C, key=lambda p: -p.tpot_s, prefill_network=C > 1)
            frontier.extend(seen2)
        if best is None:
            why = errors[0] if len(fit) == 1 and errors else ("no mesh splits it evenly (sequences over TP "
                                                              "groups, tokens over EP groups)")
            notes.append(f"concurrency {C:,}: {why}")
            continue
        falling = falling + 1 if points and best.tokens_per_s_per_kw < max(
            q.tokens_per_s_per_kw for q in points) else 0
        points.append(best)
        if fast is not None and (best_tbt is None or fast.tpot_s < best_tbt.tpot_s):
            best_tbt = fast
        if progress and time.perf_counter() - t0 > 2:
            progress(f"concurrency {C:,}: {best.summary()} ({getattr(ctx, 'solves', pricer.solves)} network solves)")
        if runs is None and falling >= STOP_AFTER_FALLING and C < levels[-1]:
            notes.append(f"sweep stopped at concurrency {C:,}: tokens/s per kW fell {STOP_AFTER_FALLING} levels "
                         f"in a row past its peak (KV cache would allow {kv_limit:,}; --concurrency N prices any)")
            break
    if not points:
        raise BadInput(f"no concurrency of {levels[0]:,}..{levels[-1]:,} runs: {notes[0].split(': ', 1)[1]}"
                       if notes else f"no concurrency of {levels[0]:,}..{levels[-1]:,} runs", param="concurrency")
    if overlap == "two-microbatch":
        notes.append("two-microbatch overlap hides the shorter of compute and communication completely: an upper "
                     "bound (LMSYS measured two-batch overlap at +25.5% in decode and +27-35% in prefill; the ideal "
                     "gains 1.4-1.6x on the same runs, docs/token-validation.md)")
    changed = _changed_constants(chip_constants(acc.name), consts)
    if changed:
        notes.append(f"chip constants overridden for this run (--chip-set): {changed}; the catalog's are in "
                     f"collectives/serve/arch.toml")
    if consts.layer_us:
        notes.append(f"{acc.name}: {consts.launch_us:g} us per kernel launch but {consts.layer_us:g} us fixed per "
                     f"transformer layer per step, shown as 'launch' (FITTED on a published min TBT: "
                     f"collectives/serve/arch.toml, docs/token-validation.md)")
    notes.append(f"KV cache bounds concurrency at {kv_limit:,} sequences of {isl + osl:,} tokens "
                 f"({consts.hbm_usable:.0%} of {acc.hbm_bytes / 1e9:,.0f} GB HBM per chip, less the weights)")
    if pools is not None:
        notes.append(f"disaggregated serving: prefill on chips {_ranks_text(pools.prefill_at)} (its mesh per point: "
                     f"the least e2e), decode on chips {_ranks_text(pools.decode_at)}; "
                     f"each prompt's KV cache ({points[0].disagg.kv_bytes_per_prompt / 1e6:,.1f} MB) priced over the "
                     f"fabric beside one decode layer's collectives; TTFT = prefill + KV transfer + queueing "
                     f"(closed loop); per chip / kW over both pools' {pools.prefill + pools.decode:,} chips")
    else:
        notes.append("aggregated serving: the users' prefills (one prompt per TP group per round) interleave with "
                     "the batch's decode steps (e2e = rounds x TTFT + OSL x step / accepted); no queueing, "
                     "no disaggregation")
    if runs is not None:
        notes.append(f"menu {menu}: the decode meshes and concurrencies of {entry} (collectives/serve/inferencex.toml), "
                     f"per decode worker; prefill priced on the decode chips (InferenceX disaggregates it)")
    elif max_concurrency is not None:
        notes.append(f"concurrency capped at {max_concurrency:,} (--max-concurrency)")
    for p in (points[0].decode, points[0].prefill):
        notes.extend(p.notes)
    tbt = min(points + ([best_tbt] if best_tbt else []), key=lambda p: p.tpot_s)
    return ServeResult(fabric=str(G.graph.get("name", "fabric")), model=model.name, accelerator=acc.name,
                       isl=isl, osl=osl, mtp=mtp, overlap=overlap, library=library, points=tuple(points),
                       min_tbt_s=tbt.tpot_s, min_tbt_point=tbt, frontier=tuple(frontier), kv_limit=kv_limit,
                       solves=getattr(ctx, "solves", pricer.solves), notes=tuple(dict.fromkeys(notes)),
                       constants=consts)


def _changed_constants(base: ChipConstants, now: ChipConstants) -> str:
    """``prefill_compute_efficiency 0.151 -> 0.25, ...``: the constants a run overrode."""
    return ", ".join(f"{f.name} {getattr(base, f.name)!r} -> {getattr(now, f.name)!r}" for f in fields(ChipConstants)
                     if getattr(base, f.name) != getattr(now, f.name))


@dataclass(frozen=True)
class FailResult:
    """Each point of a healthy sweep re-priced on the degraded fabric, same mesh and concurrency."""
    fabric: str
    model: str
    failures: tuple
    before: ServeResult
    after: tuple                      # ServePoint per point of ``before``

    @property
    def peak_before(self) -> ServePoint:
        return self.before.peak

    @property
    def peak_after(self) -> ServePoint:
        i = self.before.points.index(self.before.peak)
        return self.after[i]

    def summary(self) -> str:
        b, a = self.peak_before, self.peak_after
        lost = b.tokens_per_s - a.tokens_per_s
        return (f"{self.model} on {self.fabric} with {', '.join(self.failures)}: at the healthy peak (C="
                f"{b.concurrency:,}, {b.mesh_text}) {b.tokens_per_s_per_kw:,.0f} -> {a.tokens_per_s_per_kw:,.0f} "
                f"tok/s/kW, TPOT {b.tpot_s * 1e3:.3f} -> {a.tpot_s * 1e3:.3f} ms, {lost:,.0f} tok/s lost "
                f"({lost / b.tokens_per_s:.1%})")

    def __repr__(self) -> str:
        return f"FailResult({self.summary()})"

    def to_text(self) -> str:
        head = ["C", "mesh", "TPOT ms", "after", "tok/s/kW", "after", "lost tok/s", "bound after"]
        rows = [[f"{b.concurrency:,}", b.mesh_text, f"{b.tpot_s * 1e3:.3f}", f"{a.tpot_s * 1e3:.3f}",
                 f"{b.tokens_per_s_per_kw:,.0f}", f"{a.tokens_per_s_per_kw:,.0f}",
                 f"{b.tokens_per_s - a.tokens_per_s:,.0f}", a.bound] for b, a in zip(self.before.points, self.after)]
        return "\n".join([self.summary(), *_columns(head, rows)])

    def as_dict(self) -> dict[str, Any]:
        return {"fabric": self.fabric, "model": self.model, "failures": list(self.failures),
                "points": [{"concurrency": b.concurrency, "mesh": b.mesh_text,
                            "tpot_ms_before": b.tpot_s * 1e3, "tpot_ms_after": a.tpot_s * 1e3,
                            "tokens_per_s_per_kw_before": b.tokens_per_s_per_kw,
                            "tokens_per_s_per_kw_after": a.tokens_per_s_per_kw,
                            "tokens_per_s_lost": b.tokens_per_s - a.tokens_per_s, "bound_after": a.bound}
                           for b, a in zip(self.before.points, self.after)],
                "before": self.before.as_dict()}


def _ranks_text(ranks) -> str:
    """Chip ranks as runs: ``0..63``, ``0..31, 64..95``."""
    runs, start = [], None
    for i, r in enumerate(ranks):
        if start is None:
            start = r
        if i + 1 == len(ranks) or ranks[i + 1] != r + 1:
            runs.append(f"{start}..{r}" if r > start else f"{r}")
            start = None
    return ", ".join(runs[:6]) + (f" (+{len(runs) - 6} more runs)" if len(runs) > 6 else "")


def serve_failed(G: nx.Graph, model: Model | str, failures, **kwargs) -> FailResult:
    """``serve`` on ``G``, then every point again on ``G`` with ``failures`` applied (the what-if
    machinery's :func:`~fabricsim.topo.failures.apply_failures` specs), same mesh and concurrency.

    Chips keep their ranks only if no chip fails; a failed chip is refused (the mesh would move).

    Parameters
    ----------
    failures : re-price every point with these failures (whatif's grammar, e.g. node:r00/lsw0):
        tokens/s per kW and TPOT before and after.
    """
    from ...topo.failures import apply_failures
    specs = [failures] if isinstance(failures, str) else list(failures)
    if not specs:
        raise BadInput("no failure given; e.g. --fail node:r00/lsw0", param="fails")
    H, applied = apply_failures(G, specs)
    if len(chip_ranks(H)) != len(chip_ranks(G)):
        raise BadInput(f"--fail {', '.join(specs)} removes chips; serve --fail prices network failures "
                       f"(switches, links, lanes) on an unchanged mesh", param="fails")
    before = serve(G, model, **kwargs)
    arch, model = _arch_and_model(model)
    acc = kwargs.get("accelerator") or accelerator_of(G)
    d0 = before.points[0].disagg
    if d0 is not None:        # the same pools and prefill mesh, re-priced on the degraded fabric
        from .disagg import DisaggCtx, parse_disaggregate
        ctx = DisaggCtx(H, arch, acc, before.constants, parse_disaggregate(kwargs["disaggregate"],
                        len(chip_ranks(G)), G), before.isl, before.osl, before.mtp, before.library, before.overlap,
                        prefill_mesh=parse_mesh(d0.prefill_mesh))

        def again(p):
            ctx.prefill_meshes = [parse_mesh(p.disagg.prefill_mesh)]    # each point keeps its prefill mesh
            return ctx.point(p.mesh, p.concurrency)
    else:
        ctx = _degraded_ctx(before, H, arch, model, acc)
    with pinned(H):
        after = tuple(again(p) if d0 is not None else ctx.point(p.mesh, p.concurrency) for p in before.points)
    return FailResult(fabric=before.fabric, model=before.model, failures=tuple(a["spec"] for a in applied),
                      before=before, after=after)


@dataclass(frozen=True)
class ClassRow:
    """One failure domain's orbit, its representative priced at the healthy peak point."""
    spec: str                         # the representative's failure spec
    size: int                         # domains in its orbit (each priced the same)
    point: ServePoint | None          # the peak point re-priced on the degraded fabric (None: not priced)
    note: str = ""                    # why not priced (a domain that removes chips)


@dataclass(frozen=True)
class ClassResult:
    """``serve`` at its healthy peak point with each domain of a failure class failed, one per orbit."""
    fabric: str
    model: str
    failure_class: str
    before: ServeResult
    rows: tuple                       # ClassRow per orbit, worst (least tokens/s per kW) first
    folded: str                       # how the domains were folded (or why not)
    generators: tuple = ()            # names of the symmetries the fold used

    @property
    def domains(self) -> int:
        return sum(r.size for r in self.rows)

    def summary(self) -> str:
        b = self.before.peak
        priced = [r for r in self.rows if r.point is not None]
        if not priced:
            return (f"{self.model} on {self.fabric}, {self.failure_class}: none of the {self.domains:,} domains "
                    f"could be priced ({self.rows[0].note})")
        worst = min(priced, key=lambda r: r.point.tokens_per_s_per_kw)
        n = sum(r.size for r in priced)
        mean = sum(r.size * r.point.tokens_per_s_per_kw for r in priced) / n
        w, h = worst.point.tokens_per_s_per_kw, b.tokens_per_s_per_kw
        return (f"{self.model} on {self.fabric}, every {self.failure_class} ({self.domains:,} domains in "
                f"{len(self.rows):,} orbits) at the healthy peak (C={b.concurrency:,}, {b.mesh_text}, "
                f"{h:,.0f} tok/s/kW): worst {worst.spec} -> {w:,.0f} ({w / h - 1:+.1%}), mean over domains "
                f"{mean:,.0f} ({mean / h - 1:+.1%})")

    def __repr__(self) -> str:
        return f"ClassResult({self.summary()})"

    def to_text(self) -> str:
        b = self.before.peak
        head = ["failure (orbit representative)", "domains", "TPOT ms", "tok/s/kW", "change", "bound"]
        rows = [[r.spec, f"{r.size:,}", f"{r.point.tpot_s * 1e3:.3f}", f"{r.point.tokens_per_s_per_kw:,.0f}",
                 f"{r.point.tokens_per_s_per_kw / b.tokens_per_s_per_kw - 1:+.2%}", r.point.bound]
                if r.point is not None else [r.spec, f"{r.size:,}", "-", "-", "-", r.note] for r in self.rows]
        return "\n".join([self.summary(), f"healthy: TPOT {b.tpot_s * 1e3:.3f} ms; folding: {self.folded}",
                          *_columns(head, rows, left=1)])

    def as_dict(self) -> dict[str, Any]:
        b = self.before.peak
        return {"fabric": self.fabric, "model": self.model, "failure_class": self.failure_class,
                "concurrency": b.concurrency, "mesh": b.mesh_text, "tpot_ms_before": b.tpot_s * 1e3,
                "tokens_per_s_per_kw_before": b.tokens_per_s_per_kw, "domains": self.domains, "folded": self.folded,
                "generators": list(self.generators),
                "orbits": [{"spec": r.spec, "domains": r.size, "note": r.note or None,
                            "tpot_ms_after": None if r.point is None else r.point.tpot_s * 1e3,
                            "tokens_per_s_per_kw_after": None if r.point is None else r.point.tokens_per_s_per_kw,
                            "bound_after": None if r.point is None else r.point.bound} for r in self.rows]}


def _serving_symmetry(G: nx.Graph, model: Model, point: ServePoint):
    """The generators verified for every collective the point's steps run (their groups and algorithms), or
    (None, why).  A MoE all-to-all-v must be uniform over each group's pairs (the balanced router's is), since
    the generators are verified for the groups and the algorithm, not for a matrix."""
    from ..whatif.orbits import Symmetry, fabric_symmetry
    common, ix = None, None
    for step in (point.decode, point.prefill):
        for layer in step.layers:
            if layer.net is None or not layer.net.collectives:
                continue
            kind = "moe" if layer.kind in ("moe", "mtp") else "dense"
            algo = {c.name: c.algorithm for c in layer.net.collectives}
            # each MoE job as the library that priced it sends it (its copy rule, libraries.toml moe_dedup)
            rule = {c.name: library(c.library).moe_dedup for c in layer.net.collectives}
            tokens = max(1, int(layer.tokens))
            plans = {d: layer_jobs(G, model, kind, mesh=point.mesh, tokens=tokens, dedup=d) for d in set(rule.values())}
            for i, first in enumerate(next(iter(plans.values()))):    # every plan: the same jobs, same order
                job = plans[rule[first.name]][i]
                if job.traffic is not None:
                    M = np.asarray(job.traffic, float)
                    off = M[..., ~np.eye(M.shape[-1], dtype=bool)]
                    if off.size and not np.allclose(off, off.flat[0], rtol=1e-12, atol=0.0):
                        return None, f"{job.name}'s traffic is not uniform over its pairs"
                a = algo.get(job.name, "direct")
                sym = fabric_symmetry(G, job.groups, ENGINE_ALGORITHM.get(a, a))
                # a conditional generator (no relay assumed) is left out rather than checked per orbit
                gens = {g.name: g for g in sym.generators if g.positional or not sym.conditional}
                common = gens if common is None else {k: v for k, v in common.items() if k in gens}
                ix = sym.ix
    if common is None:
        return None, "the point runs no collective, so no symmetry was verified (each domain priced; no network)"
    if not common:
        return None, "no generator keeps every collective's groups and algorithm"
    return Symmetry(tuple(common.values()), (), "", ix), tuple(sorted(common))


def serve_failure_class(G: nx.Graph, model: Model | str, failure_class: str, *, fold: bool = True,
                        progress: Callable[[str], None] | None = None, **kwargs) -> ClassResult:
    """``serve`` on ``G``, then its peak point re-priced with each domain of ``failure_class`` failed.

    Domains are folded into orbits of the fabric symmetries verified for every collective the
    point runs (its groups and algorithms, as sweeps fold); one domain per orbit is priced and
    stands for its orbit.  ``fold=False`` prices every domain (the cross-check).  A domain that
    removes chips is listed, not priced (the mesh would move).  ``kwargs`` are :func:`serve`'s.

    Parameters
    ----------
    failure_class : every domain of this class in turn (``fabricsim domains FABRIC`` lists them), each priced
        at the healthy sweep's peak point (same mesh and concurrency): tokens/s per kW and TPOT after, per
        orbit of the fabric's symmetries.
    fold : price one domain per orbit of the symmetries verified for the point's collectives (their groups
        and algorithms) and give it to the whole orbit; off prices every domain.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> r = serve_failure_class(build("jalapeno-rack"), "gpt-oss-120b", "local-switch", mesh="tp=8", concurrency=8,
    ...                         isl=1024, osl=128)
    >>> r.domains, len(r.rows)
    (6, 1)
    """
    from ...topo.failures import apply_failures, domains
    with about("failure_class"):
        doms = domains(G, [failure_class])[failure_class]
    if kwargs.get("disaggregate") is not None:
        raise BadInput("a failure-class sweep prices aggregated serving; drop --disaggregate (or use --fail SPEC)",
                       param="disaggregate")
    before = serve(G, model, progress=progress, **kwargs)
    arch, model = _arch_and_model(model)
    acc = kwargs.get("accelerator") or accelerator_of(G)
    p = before.peak
    names: tuple = ()
    if fold:
        from ..whatif.orbits import scenario_orbits
        sym, why = _serving_symmetry(G, model, p)
        if sym is not None:
            orb = scenario_orbits(sym, doms, [(i,) for i in range(len(doms))])
            reps, sizes, names = [int(r) for r in orb.reps], [int(s) for s in orb.size], why
            folded = (f"{len(reps):,} orbit(s) under {len(names)} symmetries verified for every collective the "
                      f"point runs (their groups and algorithms; names in --json)")
        else:
            reps, sizes, folded = list(range(len(doms))), [1] * len(doms), f"none: {why}"
    else:
        reps, sizes, folded = list(range(len(doms))), [1] * len(doms), "off (--no-fold): every domain priced"
    n_chips = len(chip_ranks(G))
    rows = []
    for k, (i, size) in enumerate(zip(reps, sizes)):
        spec = f"{failure_class}:{doms[i].id}"
        H, _ = apply_failures(G, [spec])
        if len(chip_ranks(H)) != n_chips:
            rows.append(ClassRow(spec, size, None, "removes chips: the mesh would move"))
            continue
        if progress and len(reps) > 4:
            progress(f"{failure_class}: orbit {k + 1:,} of {len(reps):,} ({spec})")
        ctx = _degraded_ctx(before, H, arch, model, acc)
        with pinned(H):
            rows.append(ClassRow(spec, size, ctx.point(p.mesh, p.concurrency)))
    rows.sort(key=lambda r: (r.point is None, r.point.tokens_per_s_per_kw if r.point else 0.0))
    return ClassResult(fabric=before.fabric, model=before.model, failure_class=failure_class, before=before,
                       rows=tuple(rows), folded=folded, generators=names)


PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def plot_frontier(results, path, *, title: str | None = None):
    """Tokens/s per kW against tokens/s per user, one Pareto frontier per fabric; save to ``path``."""
    from pathlib import Path

    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    p = Path(path)
    if p.suffix.lower() not in PLOT_SUFFIXES:
        raise BadInput(f"plot file {str(p)!r}: use a {', '.join(PLOT_SUFFIXES)} file name")
    fig = Figure(figsize=(7, 4.6), dpi=110)
    ax = fig.subplots()
    for r in results:
        pts = sorted({(q.tokens_per_s_per_user, q.tokens_per_s_per_kw) for q in list(r.points) + list(r.frontier)},
                     key=lambda x: -x[0])
        front, best = [], -1.0
        for x, y in pts:              # Pareto: for falling interactivity, keep rising throughput
            if y > best:
                front.append((x, y))
                best = y
        ax.plot([x for x, _ in front], [y for _, y in front], marker="o", ms=3, label=f"{r.fabric} ({r.accelerator})")
    ax.set_xscale("log")
    ax.set_xlabel("tokens/s per user (1 / TPOT)")
    ax.set_ylabel("tokens/s per kW (input + output, package TDP)")
    r0 = results[0]
    ax.set_title(title or f"{r0.model}, ISL/OSL {r0.isl}/{r0.osl}", fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    fig.savefig(p, dpi=fig.dpi, facecolor="white", bbox_inches="tight")
    return p
