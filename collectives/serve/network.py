"""A layer's network time with a named communication library, through the flow solver.

The jobs of a layer are the step model's (:func:`fabricsim.collectives.jobs.step.layer_jobs`:
TP all-reduces, MoE dispatch and combine on the mesh's groups, experts placed round-robin,
the balanced router's traffic matrix).  Each job is priced by :func:`~fabricsim.collectives.price` (what
:func:`~fabricsim.collectives.jobs.mix` gives a job alone) on the (possibly degraded) fabric
graph -- every group of the job at once, so the groups contend for links -- with the library's algorithm and constants (``libraries.toml``):

* ``nccl``: the fabric family's NCCL model (algorithm and protocol by NCCL's tuner form);
* ``trtllm`` (all-reduce): TensorRT-LLM's one-shot (every rank pushes its S bytes to every
  peer, then reduces locally: an all-to-all-v of S per pair, one step) or two-shot (the
  ``direct`` reduce-scatter + all-gather, S/n per pair, two steps), whichever the solver
  prices cheaper;
* ``deepep-ll`` (all-to-all): DeepEP's low-latency kernels, a ``direct`` all-to-all (every
  destination at once) of the same traffic matrix;
* ``jalapeno-ce`` (both; ``auto`` offers it on Tomahawk Ethernet with Jalapeño chips only): Jalapeño's
  compiler-orchestrated collectives over its scale-up Ethernet (seed 003), the same one-shot /
  two-shot all-reduce and direct all-to-all, with a scale-up Ethernet endpoint's latency per step.

A library's ``algorithms`` say which of these forms it runs (``one-shot`` / ``two-shot`` for an
all-reduce, ``direct`` for an all-to-all).

``auto`` prices every library that implements a collective and runs on the fabric's families and
chip (TensorRT-LLM and DeepEP need NVIDIA NVLink / RDMA; Jalapeño's engine its own chips; NCCL's
family model runs everywhere) and keeps the cheapest, per collective.  A named library is used where it implements the
collective, whatever the fabric (a what-if), and nccl elsewhere.  A layer's network time chains its jobs by their dependencies; jobs a layer
runs concurrently (the shared-expert all-reduce beside dispatch and combine) are each
priced alone on the fabric and overlap in time (their contention with each other is not
modelled: they use different groups of the mesh).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

import networkx as nx
import numpy as np

from ...topo.errors import BadInput
from ..jobs.mix import Job
from ..price import price
from ..jobs.models import Model
from ..jobs.step import PlannedJob, layer_jobs

__all__ = ["LIBRARIES", "LIBRARY_CHOICES", "Library", "NetCollective", "NetLayer", "NetworkPricer", "library"]

_FILE = Path(__file__).with_name("libraries.toml")


@dataclass(frozen=True)
class Library:
    """A communication library's constants (``libraries.toml``)."""
    name: str
    description: str
    collectives: tuple
    algorithms: tuple = ()
    families: tuple = ()        # fabric families it runs on (empty: every fabric)
    efficiency: float | None = None
    step_latency_us: float | None = None
    message_overhead_us: float | None = None
    source: str = ""
    auto: bool = True           # ``auto`` may pick it (False: only when named, a what-if)
    chips: tuple = ()           # accelerators it runs on (empty: every chip)
    moe_dedup: str = "rank"     # what one copy of a MoE dispatch is (collectives.traffic DEDUPS)

    def engine_algorithm(self, collective: str) -> str | None:
        """The first of the library's algorithms the engine's registry runs for ``collective`` (None: none)."""
        from ..algorithms import ALGORITHMS
        return next((a for a in self.algorithms if a in ALGORITHMS[collective]), None)

    def price_kwargs(self) -> dict[str, Any]:
        """``mix`` keywords: nccl none (the families), the others the ideal protocol with their constants."""
        if self.efficiency is None:
            return {}
        return {"protocol": "ideal", "efficiency": self.efficiency,
                "step_overhead_ns": self.step_latency_us * 1e3, "message_overhead_ns": self.message_overhead_us * 1e3}


@lru_cache(maxsize=1)
def _libraries() -> dict[str, Library]:
    with open(_FILE, "rb") as fh:
        data = tomllib.load(fh)
    return {k: Library(name=k, description=v["description"], collectives=tuple(v["collectives"]),
                       algorithms=tuple(v.get("algorithms", ())), families=tuple(v.get("families", ())),
                       efficiency=v.get("efficiency"),
                       step_latency_us=v.get("step_latency_us"), message_overhead_us=v.get("message_overhead_us"),
                       source=v.get("source", ""), auto=bool(v.get("auto", True)),
                       chips=tuple(v.get("chips", ())), moe_dedup=v.get("moe_dedup", "rank"))
            for k, v in data.items()}


LIBRARIES = tuple(_libraries())
# the engine algorithm each library form is priced as (NetworkPricer._price_job): one-shot is a direct all-to-all of
# S to every peer, two-shot the direct all-reduce (reduce-scatter + all-gather); what symmetry folds verify
ENGINE_ALGORITHM = {"one-shot": "direct", "two-shot": "direct"}
LIBRARY_CHOICES = ("auto",) + LIBRARIES


def library(name: str) -> Library:
    if name not in _libraries():
        raise BadInput(f"unknown library {name!r}; choose one of: {', '.join(LIBRARY_CHOICES)}")
    return _libraries()[name]


def _libs_for(collective: str, choice: str, families: set[str] | None = None,
              chip: str | None = None) -> list[Library]:
    """The libraries that price ``collective`` under the user's choice (nccl where the named one lacks it);
    ``auto`` keeps those that run on every family of the fabric (``families``) and on its ``chip``."""
    if choice not in LIBRARY_CHOICES:
        raise BadInput(f"unknown library {choice!r}; choose one of: {', '.join(LIBRARY_CHOICES)}")
    if choice == "auto":
        return [lib for lib in _libraries().values() if collective in lib.collectives and lib.auto
                and (not lib.families or families is None or families <= set(lib.families))
                and (not lib.chips or chip in lib.chips)]
    lib = library(choice)
    return [lib if collective in lib.collectives else library("nccl")]


@dataclass(frozen=True)
class NetCollective:
    """One collective of a layer as priced: which library and algorithm, when it ran."""
    name: str
    collective: str
    library: str
    algorithm: str
    start_s: float
    finish_s: float
    bytes_total: float

    @property
    def time_s(self) -> float:
        return self.finish_s - self.start_s

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "collective": self.collective, "library": self.library,
                "algorithm": self.algorithm, "time_s": self.time_s, "start_s": self.start_s,
                "finish_s": self.finish_s, "bytes_total": self.bytes_total}


@dataclass(frozen=True)
class NetLayer:
    """A layer's collectives and its network time (the last one's finish)."""
    time_s: float
    collectives: tuple

    def libraries(self) -> dict[str, str]:
        """collective kind -> library (``all-reduce``: ``trtllm`` ...)."""
        return {c.collective: c.library for c in self.collectives}


def _digest(a: np.ndarray | None) -> str:
    return "" if a is None else hashlib.sha1(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()


class NetworkPricer:
    """Prices layers' networks on one graph, caching by (mesh, layer kind, tokens, library).

    A sweep asks for the same (mesh, tokens) many times (every concurrency a mesh is tried
    at, both overlap halves); each distinct one is solved once.  ``ranks`` lays the mesh on those
    chip ranks, mesh rank ``i`` on ``ranks[i]`` (a disaggregated pool, :mod:`.disagg`); without it on
    ranks ``0 ..``.
    """

    def __init__(self, G: nx.Graph, model: Model, *, dispatch_dtype: str = "fp8", combine_dtype: str = "bf16",
                 ranks=None):
        self.G, self.model = G, model
        self.ranks = None if ranks is None else tuple(int(r) for r in ranks)
        self.dispatch_dtype, self.combine_dtype = dispatch_dtype, combine_dtype
        self._layers: dict[tuple, NetLayer] = {}
        self._jobs: dict[tuple, tuple[float, str]] = {}
        self.solves = 0
        from ..cost.family import families_of
        fam = families_of(G)
        self.families = {fam.primary.name} | {f.name for f in fam.by_tier.values()}
        from ...topo.accelerators import accelerator_of
        try:
            self.chip: str | None = accelerator_of(G).name
        except BadInput:      # a fabric whose chips the catalog does not know: libraries for any chip only
            self.chip = None

    def layer(self, kind: str, mesh: dict[str, int], tokens: int, library: str = "auto") -> NetLayer:
        key = (kind, tuple(sorted(mesh.items())), int(tokens), library)
        if key not in self._layers:
            self._layers[key] = self._price_layer(kind, mesh, int(tokens), library)
        return self._layers[key]

    def _planned(self, kind, mesh, tokens, dedup: str) -> list[PlannedJob]:
        planned = layer_jobs(self.G, self.model, kind, mesh=mesh, tokens=tokens, dispatch_dtype=self.dispatch_dtype,
                             combine_dtype=self.combine_dtype, dedup=dedup)
        if self.ranks is not None:
            planned = [replace(p, groups=tuple(tuple(self.ranks[r] for r in g) for g in p.groups)) for p in planned]
        return planned

    def _price_layer(self, kind, mesh, tokens, choice) -> NetLayer:
        # each library sends a MoE dispatch its own way (one copy per rank, per expert or per node): the layer's
        # jobs are planned once per copy rule the candidate libraries use, the same jobs in the same order
        plans = {"rank": self._planned(kind, mesh, tokens, "rank")}
        finish: dict[str, float] = {}
        cols = []
        for i, p0 in enumerate(plans["rank"]):            # layer_jobs lists jobs in dependency order
            start = max((finish[d] for d in p0.after), default=0.0)
            priced = []
            for lib in _libs_for(p0.collective, choice, self.families, self.chip):
                rule = lib.moe_dedup if p0.traffic is not None else "rank"    # traffic: a MoE dispatch / combine
                if rule not in plans:
                    plans[rule] = self._planned(kind, mesh, tokens, rule)
                p = plans[rule][i]
                priced.append(self._price_job(p, lib) + (lib.name, p))
            t, algorithm, lib_name, p = min(priced, key=lambda x: x[0])
            finish[p0.name] = start + t
            cols.append(NetCollective(p0.name, p0.collective, lib_name, algorithm, start, start + t,
                                      float(p.bytes_total)))
        return NetLayer(max(finish.values(), default=0.0), tuple(cols))

    def _price_job(self, p: PlannedJob, lib: Library) -> tuple[float, str]:
        key = (p.collective, p.groups, p.size_bytes, _digest(p.traffic), lib.name)
        if key in self._jobs:
            return self._jobs[key]
        kw = lib.price_kwargs()
        if p.collective == "all-reduce" and "one-shot" in lib.algorithms:
            n = p.group_size
            one = np.full((n, n), float(p.size_bytes)) * (1 - np.eye(n))   # one-shot: S to every peer
            cands = [("one-shot", Job(p.name, "all-to-all", p.groups, traffic=one, algorithm="direct"))]
            if "two-shot" in lib.algorithms:
                cands.append(("two-shot", Job(p.name, "all-reduce", p.groups, p.size_bytes, algorithm="direct")))
        elif p.collective == "all-to-all" and (a2a := lib.engine_algorithm("all-to-all")):
            cands = [(a2a, Job(p.name, "all-to-all", p.groups, traffic=p.traffic, algorithm=a2a))]
        else:
            cands = [(None, Job(p.name, p.collective, p.groups, p.size_bytes, traffic=p.traffic))]
        out = []
        for label, job in cands:
            # one job alone on the fabric: mix's price of it is price()'s (every group at once, sharing links)
            res = price(self.G, job.collective, groups=job.groups, size_bytes=job.size_bytes, traffic=job.traffic,
                        algorithm=job.algorithm, **kw)
            self.solves += 1
            out.append((float(res.time_s), label or res.algorithm))
        self._jobs[key] = min(out, key=lambda x: x[0])
        return self._jobs[key]
