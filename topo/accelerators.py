"""The roofline catalog: what an accelerator package computes, stores and draws.

``fabricsim serve`` prices a model step from three resources per chip -- dense compute per
precision, memory (HBM capacity and bandwidth, on-chip SRAM) and the network the fabric
graph describes -- and normalises throughput by package TDP and price.  The figures live
in ``accelerators.toml`` next to this module, each with its source and a label (F found,
D derived, I inferred) in a comment; :func:`accelerator` looks one up and
:func:`accelerator_of` finds the one a fabric's chips are (``G.graph["accelerator"]`` if
the builder or a fabric file names it, else the chips' ``model``).

Examples
--------
>>> a = accelerator("jalapeno")
>>> a.flops("fp4") / 1e15, a.hbm_Bps / 1e12, a.tdp_w
(13.4, 15.4, 700.0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

import networkx as nx

from .errors import BadInput, close_matches

__all__ = ["Accelerator", "PRECISIONS", "accelerator", "accelerator_names", "accelerator_of"]

#: Precisions from narrowest to widest; a chip without one runs at the next wider one.
PRECISIONS = ("fp4", "fp8", "bf16")

_FILE = Path(__file__).with_name("accelerators.toml")


@dataclass(frozen=True)
class Accelerator:
    """One accelerator package's roofline figures (per package, dense)."""
    name: str
    description: str
    flops_per_s: dict = field(repr=False)   # precision -> dense FLOP/s
    hbm_bytes: float
    hbm_Bps: float
    sram_bytes: float = 0.0
    tdp_w: float = math.nan
    usd_per_chip_hour: float = math.nan
    chip_models: tuple = ()
    sources: str = ""
    #: on-chip SRAM bandwidth, bytes/s (NaN when unpublished); for an SRAM-resident chip
    #: (``hbm_bytes`` NaN, e.g. Groq) weights and KV are read at this rate instead of ``hbm_Bps``
    sram_Bps: float = math.nan

    def flops(self, precision: str) -> float:
        """Dense FLOP/s at ``precision``, or at the next wider precision the chip has."""
        if precision not in PRECISIONS:
            raise BadInput(f"precision {precision!r}; choose one of: {', '.join(PRECISIONS)}")
        for p in PRECISIONS[PRECISIONS.index(precision):]:
            if p in self.flops_per_s:
                return float(self.flops_per_s[p])
        raise BadInput(f"accelerator {self.name!r} lists no compute at {precision} or wider")


def _positive(name: str, key: str, value, *, optional: bool = False) -> float:
    if optional and value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise BadInput(f"{_FILE.name}: [{name}] {key} = {value!r}; expected a positive number")
    return float(value)


def _from_dict(name: str, d: dict) -> Accelerator:
    flops = {p: _positive(name, f"{p}_flops", d[f"{p}_flops"]) for p in PRECISIONS if f"{p}_flops" in d}
    if not flops:
        raise BadInput(f"{_FILE.name}: [{name}] gives no compute; set one of "
                       + ", ".join(f"{p}_flops" for p in PRECISIONS))
    known = {"description", "chip_models", "hbm_bytes", "hbm_Bps", "sram_bytes", "sram_Bps", "tdp_w",
             "usd_per_chip_hour", "sources"} | {f"{p}_flops" for p in PRECISIONS}
    extra = sorted(set(d) - known)
    if extra:
        raise BadInput(f"{_FILE.name}: [{name}] unknown key {extra[0]!r}{close_matches(extra[0], known)}")
    return Accelerator(
        name=name, description=str(d.get("description", "")), flops_per_s=flops,
        hbm_bytes=_positive(name, "hbm_bytes", d.get("hbm_bytes", 0) or None, optional=True),
        hbm_Bps=_positive(name, "hbm_Bps", d.get("hbm_Bps", 0) or None, optional=True),
        sram_bytes=float(d.get("sram_bytes", 0.0)),
        tdp_w=_positive(name, "tdp_w", d.get("tdp_w"), optional=True),
        usd_per_chip_hour=_positive(name, "usd_per_chip_hour", d.get("usd_per_chip_hour"), optional=True),
        chip_models=tuple(d.get("chip_models", ())), sources=str(d.get("sources", "")),
        sram_Bps=_positive(name, "sram_Bps", d.get("sram_Bps"), optional=True))


@lru_cache(maxsize=1)
def _catalog() -> dict[str, Accelerator]:
    with open(_FILE, "rb") as fh:
        data = tomllib.load(fh)
    return {name: _from_dict(name, d) for name, d in data.items()}


def accelerator_names() -> list[str]:
    """The catalog's accelerator names, sorted."""
    return sorted(_catalog())


def accelerator(name: str) -> Accelerator:
    """Look up an accelerator by name; a one-line ``BadInput`` with the choices otherwise."""
    cat = _catalog()
    if name not in cat:
        raise BadInput(f"unknown accelerator {name!r}{close_matches(name, cat)}; "
                       f"choose one of: {', '.join(sorted(cat))}")
    return cat[name]


def accelerator_of(G: nx.Graph) -> Accelerator:
    """The accelerator a fabric's chips are.

    ``G.graph["accelerator"]`` when the builder or the fabric file names one; otherwise
    the one catalog entry whose ``chip_models`` holds the chips' device ``model`` (all chips
    must agree; a chip with its NIC, device ``"<gpu>+<nic>"``, is its GPU).  A one-line
    ``BadInput`` when neither says.
    """
    name = G.graph.get("accelerator")
    if name:
        return accelerator(str(name))
    models = {str(d.get("model")).split("+")[0] for _, d in G.nodes(data=True) if d.get("kind") == "chip"}
    found = [acc for acc in _catalog().values() if models and models <= set(acc.chip_models)]
    if len(found) == 1:
        return found[0]
    if found:   # one device model, several packages (GB200 and B200 are both "blackwell-gpu")
        raise BadInput(f"fabric {G.graph.get('name', '?')!r}: its chips ({', '.join(sorted(models))}) are "
                       f"any of {', '.join(a.name for a in found)}; set accelerator=NAME to say which")
    raise BadInput(f"fabric {G.graph.get('name', '?')!r}: its chips ({', '.join(sorted(map(str, models)))}) "
                   f"match no accelerator; set accelerator=NAME, one of: {', '.join(accelerator_names())}")
