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
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from ...topo.errors import BadInput

__all__ = ["Family", "FAMILIES", "PROTOCOLS", "load_family", "family_of"]

HERE = Path(__file__).parent / "families"
FAMILIES = tuple(sorted(p.stem for p in HERE.glob("*.toml")))
PROTOCOLS = ("ll", "ll128", "simple")
TIER_FAMILY = {"nvlink": "nvlink5", "ici": "tpu-ici", "ualink": "ualink", "xgmi": "infinity-fabric"}
DEFAULT_FAMILY = "tomahawk-ethernet"


@dataclass(frozen=True)
class Family:
    name: str
    efficiency: float                      # fraction of raw line rate the transport delivers
    channels: int                          # parallel channels (chunks in flight, p2p peers at once)
    message_overhead_us: float             # per message beyond the first, before the channel spread
    in_network_efficiency: float           # in-switch reduction's achieved fraction (NVLS)
    bw_fraction: Mapping[str, float]       # protocol -> fraction of the delivered rate
    chunk_bytes: Mapping[str, float]       # protocol -> data bytes per channel per pipeline slot
    algorithms: Mapping[str, Mapping]      # algorithm -> {"protocols", "base_latency_us", "step_latency_us"}

    def _algo(self, algorithm: str) -> Mapping:
        # an algorithm the file does not list is priced with the ring's constants
        return self.algorithms.get(algorithm) or self.algorithms["ring"]

    def protocols_for(self, algorithm: str) -> tuple[str, ...]:
        return tuple(self._algo(algorithm)["protocols"])

    def base_latency_us(self, algorithm: str, protocol: str) -> float:
        return float(self._algo(algorithm)["base_latency_us"][protocol])

    def step_latency_us(self, algorithm: str, protocol: str) -> float:
        return float(self._algo(algorithm)["step_latency_us"][protocol])


@functools.lru_cache(maxsize=None)
def load_family(name: str) -> Family:
    """The family ``name`` from its data file; BadInput names the valid ones."""
    if name not in FAMILIES:
        raise BadInput(f"unknown fabric family {name!r}; choose one of: {', '.join(FAMILIES)}")
    d = tomllib.loads((HERE / f"{name}.toml").read_text(encoding="utf-8"))
    protos = d["protocols"]
    return Family(name=name, efficiency=float(d["efficiency"]), channels=int(d["channels"]),
                  message_overhead_us=float(d["message_overhead_us"]),
                  in_network_efficiency=float(d["in_network_efficiency"]),
                  bw_fraction={p: float(v["bw_fraction"]) for p, v in protos.items()},
                  chunk_bytes={p: float(v["chunk_bytes"]) for p, v in protos.items()},
                  algorithms=d["algorithms"])


def family_of(G) -> Family:
    """``G``'s family: its ``family`` graph attribute, else inferred from its link tiers."""
    name = G.graph.get("family")
    if not name:
        tiers = {d.get("tier") for *_, d in G.edges(data=True)}
        name = next((f for t, f in TIER_FAMILY.items() if t in tiers), DEFAULT_FAMILY)
    return load_family(str(name))
