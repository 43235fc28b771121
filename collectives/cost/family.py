"""Fabric families: the step model's constants, one TOML data file per family.

A fabric says its family in ``G.graph["family"]`` (set by the catalog builders); a user
graph without one is matched by its link tiers (``nvlink`` -> nvlink5, ``ici`` -> tpu-ici,
``ualink`` -> ualink, ``xgmi`` -> infinity-fabric, anything else -> tomahawk-ethernet; ``c2c`` is
not mapped to groq-c2c because NVLink-C2C and other die-to-die links share the name).  The graph carries raw line
rates only; the family file holds what the transport delivers of them (``efficiency``),
each protocol's bandwidth fraction and chunk, and per algorithm and protocol NCCL's base
latency (once per call) and step latency (per step).  Every figure in the files carries
its source and a found / derived / inferred label.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from ...topo.errors import BadInput

__all__ = ["Family", "Families", "FAMILIES", "PROTOCOLS", "TIME_MODELS", "load_family", "family_of", "families_of"]

HERE = Path(__file__).parent / "families"
FAMILIES = tuple(sorted(p.stem for p in HERE.glob("*.toml")))
PROTOCOLS = ("ll", "ll128", "simple")
TIER_FAMILY = {"nvlink": "nvlink5", "ici": "tpu-ici", "ualink": "ualink", "xgmi": "infinity-fabric"}
DEFAULT_FAMILY = "tomahawk-ethernet"
# how a phase's latency and transfer combine (see the engine's step model)
TIME_MODELS = ("additive", "pipelined")


@dataclass(frozen=True, repr=False)
class Family:
    name: str
    efficiency: float                      # fraction of raw line rate the transport delivers
    channels: int                          # parallel channels (chunks in flight, p2p peers at once)
    message_overhead_us: float             # per message beyond the first, before the channel spread
    in_network_efficiency: float           # in-switch reduction's achieved fraction (NVLS), at the largest group listed
    bw_fraction: Mapping[str, float]       # protocol -> fraction of the delivered rate
    chunk_bytes: Mapping[str, float]       # protocol -> data bytes per channel per pipeline slot
    algorithms: Mapping[str, Mapping]      # algorithm -> {"protocols", "base_latency_us", "step_latency_us"}
    # "additive": a phase costs its steps' latency plus its transfer (NCCL's tuner:
    # time = latency + bytes / bandwidth); "pipelined": chunks overlap latency and transfer
    time_model: str = "pipelined"
    launch_us: float = 0.0                 # per call, beyond the modelled latencies (host launch, nccl-tests loop)
    # NCCL's channel count by size: a call of B bytes runs on the most channels c <= channels
    # with B >= c x threads x thread_threshold_bytes (x ranks where threshold_per_rank lists it)
    threads: Mapping[str, int] = field(default_factory=dict)
    thread_threshold_bytes: Mapping[str, float] = field(default_factory=dict)
    threshold_per_rank: tuple = ()         # "algorithm.protocol" keys whose threshold scales with ranks
    in_network_by_ranks: tuple = ()        # ((ranks, efficiency), ...) ascending; empty: in_network_efficiency
    max_busbw_GBps: Mapping[str, float] = field(default_factory=dict)  # protocol -> cap on a rank's send rate (NCCL llMaxBw)
    # the algorithms auto chooses among for all-reduce / reduce-scatter / all-gather (what the
    # library runs); empty: every algorithm that applies.  All-to-all is p2p: always every one.
    auto_algorithms: tuple = ()
    # pipeline fill (additive families): a call's transfer pays fill_fraction x its bytes, up to
    # channels x fill_steps x fill_slot_bytes, a second time while the channels' pipelines fill
    # (0: no fill term)
    fill_fraction: float = 0.0
    fill_steps: int = 8
    fill_slot_bytes: float = 0.0

    def __repr__(self) -> str:
        return f"Family({self.name!r}, efficiency={self.efficiency:g}, time_model={self.time_model!r})"

    def _algo(self, algorithm: str) -> Mapping:
        # an algorithm the file does not list is priced with the ring's constants
        return self.algorithms.get(algorithm) or self.algorithms["ring"]

    def protocols_for(self, algorithm: str) -> tuple[str, ...]:
        return tuple(self._algo(algorithm)["protocols"])

    def bw_fraction_for(self, algorithm: str, protocol: str) -> float:
        """The protocol's fraction of the delivered rate for ``algorithm``: the algorithm's own
        ``bw_fraction`` row where the file gives one (NCCL's tree LL is 1/3.8), else the protocol's."""
        row = self._algo(algorithm).get("bw_fraction", {})
        return float(row.get(protocol, self.bw_fraction[protocol]))

    def cap_GBps(self, algorithm: str, protocol: str) -> float | None:
        """NCCL's cap on the protocol's bus rate (llMaxBw) for ``algorithm``: the algorithm's
        ``max_busbw_GBps`` row, else the protocol's; None when neither gives one."""
        row = self._algo(algorithm).get("max_busbw_GBps", {})
        v = row.get(protocol, self.max_busbw_GBps.get(protocol))
        return None if v is None else float(v)

    def base_latency_us(self, algorithm: str, protocol: str) -> float:
        return float(self._algo(algorithm)["base_latency_us"][protocol])

    def step_latency_us(self, algorithm: str, protocol: str) -> float:
        return float(self._algo(algorithm)["step_latency_us"][protocol])

    def auto_allows(self, collective: str, algorithm: str) -> bool:
        """Whether ``auto`` may pick ``algorithm`` for ``collective`` on this family."""
        return collective == "all-to-all" or not self.auto_algorithms or algorithm in self.auto_algorithms

    def channels_for(self, algorithm: str, protocol: str, nbytes: float, ranks: int) -> int:
        """Channels NCCL runs a call of ``nbytes`` on (``enqueue.cc``'s per-size reduction).

        Without thread figures for the protocol every channel runs (the family's count).

        >>> f = load_family("nvlink5")
        >>> f.channels_for("ring", "simple", 128 * 1024, 8), f.channels_for("ring", "simple", 2**30, 8)
        (4, 16)
        """
        nt = self.threads.get(protocol)
        thr = self.thread_threshold_bytes.get(protocol)
        if not nt or not thr:
            return self.channels
        if f"{algorithm}.{protocol}" in self.threshold_per_rank:
            thr = thr * ranks
        per_channel = nt * thr
        return int(max(1, min(self.channels, nbytes // per_channel)))

    def fill_bytes(self, nbytes: float, channels: int) -> float:
        """Bytes whose transfer a call of ``nbytes`` on ``channels`` channels pays twice while its pipelines fill.

        ``min(fill_fraction x nbytes, channels x fill_steps x fill_slot_bytes)``: the exposed share of
        the message while it fits in the slots the channels keep in flight, that capacity beyond.

        >>> f = load_family("nvlink4")
        >>> f.fill_bytes(4 * 2**20, 16) / 2**20, f.fill_bytes(2**30, 16) / 2**20
        (1.6, 16.0)
        """
        if self.fill_fraction <= 0 or nbytes <= 0:
            return 0.0
        return min(self.fill_fraction * nbytes, channels * self.fill_steps * self.fill_slot_bytes)

    def in_network_for(self, ranks: int) -> float:
        """In-network reduction's delivered fraction for a group of ``ranks`` (log-linear between rows)."""
        rows = self.in_network_by_ranks
        if not rows:
            return self.in_network_efficiency
        if ranks <= rows[0][0]:
            return rows[0][1]
        for (n0, e0), (n1, e1) in zip(rows, rows[1:]):
            if ranks <= n1:
                t = (math.log(ranks) - math.log(n0)) / (math.log(n1) - math.log(n0))
                return e0 + t * (e1 - e0)
        return rows[-1][1]


@dataclass(frozen=True)
class Families:
    """The cost family of every link tier of a fabric, and the one that runs the collective.

    ``primary`` (the ``family`` graph attribute, else the scale-up tier's) gives the
    protocols, base latency, channels and launch cost; each tier's family gives the
    delivered fraction of its links and the step latency of a phase whose flows cross it.
    ``defaulted`` names tiers the fabric's ``families`` attribute does not cover.
    """

    primary: Family
    by_tier: Mapping[str, Family]
    defaulted: tuple = ()

    def __repr__(self) -> str:
        tiers = ", ".join(f"{t}: {f.name}" for t, f in sorted(self.by_tier.items()))
        return f"Families(primary={self.primary.name!r}, {{{tiers}}})"

    @property
    def mixed(self) -> bool:
        """Tiers deliver different fractions of their line rate."""
        return len({f.efficiency for f in self.by_tier.values()} | {self.primary.efficiency}) > 1

    def of(self, tier: str) -> Family:
        return self.by_tier.get(tier, self.primary)

    def notes(self) -> tuple[str, ...]:
        if not self.defaulted:
            return ()
        return (f"tier{'s' if len(self.defaulted) > 1 else ''} {', '.join(self.defaulted)} not named in the "
                f"fabric's families: priced with the {self.primary.name} family",)


@functools.lru_cache(maxsize=None)
def load_family(name: str) -> Family:
    """The family ``name`` from its data file; BadInput names the valid ones."""
    if name not in FAMILIES:
        raise BadInput(f"unknown fabric family {name!r}; choose one of: {', '.join(FAMILIES)}")
    d = tomllib.loads((HERE / f"{name}.toml").read_text(encoding="utf-8"))
    protos = d["protocols"]
    time_model = str(d.get("time_model", "pipelined"))
    if time_model not in TIME_MODELS:
        raise BadInput(f"family {name!r}: time_model {time_model!r}; choose one of: {', '.join(TIME_MODELS)}")
    by_ranks = d.get("in_network_by_ranks", {})
    return Family(name=name, efficiency=float(d["efficiency"]), channels=int(d["channels"]),
                  message_overhead_us=float(d["message_overhead_us"]),
                  in_network_efficiency=float(d["in_network_efficiency"]),
                  bw_fraction={p: float(v["bw_fraction"]) for p, v in protos.items()},
                  chunk_bytes={p: float(v["chunk_bytes"]) for p, v in protos.items()},
                  algorithms=d["algorithms"], time_model=time_model,
                  launch_us=float(d.get("launch_us", 0.0)),
                  threads={p: int(v["threads"]) for p, v in protos.items() if "threads" in v},
                  thread_threshold_bytes={p: float(v["thread_threshold_bytes"]) for p, v in protos.items()
                                          if "thread_threshold_bytes" in v},
                  threshold_per_rank=tuple(d.get("threshold_per_rank", ())),
                  auto_algorithms=tuple(d.get("auto_algorithms", ())),
                  max_busbw_GBps={p: float(v["max_busbw_GBps"]) for p, v in protos.items() if "max_busbw_GBps" in v},
                  in_network_by_ranks=tuple(sorted((int(k), float(v)) for k, v in by_ranks.items())),
                  **_fill(name, d.get("fill", {})))


def _fill(name: str, d: dict) -> dict:
    """The ``[fill]`` table of a family file -> Family fields (absent: no fill term)."""
    if not d:
        return {}
    frac, steps, slot = float(d["fraction"]), int(d["steps"]), float(d["slot_bytes"])
    if not (0.0 <= frac <= 1.0) or steps < 1 or slot <= 0:
        raise BadInput(f"family {name!r}: [fill] fraction {frac:g} (0..1), steps {steps} (>= 1), "
                       f"slot_bytes {slot:g} (> 0) out of range")
    return {"fill_fraction": frac, "fill_steps": steps, "fill_slot_bytes": slot}


def family_of(G) -> Family:
    """``G``'s family: its ``family`` graph attribute, else inferred from its link tiers."""
    name = G.graph.get("family")
    if not name:
        tiers = {d.get("tier") for *_, d in G.edges(data=True)}
        name = next((f for t, f in TIER_FAMILY.items() if t in tiers), DEFAULT_FAMILY)
    return load_family(str(name))


def families_of(G) -> Families:
    """Each link tier's family: the ``families`` graph attribute (a JSON object tier -> family).

    A tier the attribute does not name takes the fabric's family (:func:`family_of`) and
    the report says so; a fabric without the attribute is one family throughout.
    """
    primary = family_of(G)
    raw = G.graph.get("families")
    if not raw:
        return Families(primary, {})          # one family throughout: every tier is the primary's
    tiers = sorted({str(d.get("tier")) for *_, d in G.edges(data=True)})
    try:
        named = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except (ValueError, TypeError):
        raise BadInput(f"graph attribute families {str(raw)[:80]!r} must be a JSON object tier -> family, "
                       f'e.g. {{"nvlink": "nvlink4", "rail": "infiniband"}}') from None
    if not isinstance(named, dict):
        raise BadInput(f"graph attribute families must be a JSON object tier -> family, not {type(named).__name__}")
    by_tier = {t: load_family(str(named[t])) if t in named else primary for t in tiers}
    return Families(primary, by_tier, tuple(t for t in tiers if t not in named))
