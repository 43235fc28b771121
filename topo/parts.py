"""Parts: the price and power of what a fabric is built from, and its bill of materials.

The figures live in ``parts.toml`` next to this module (one table per part with
``price_usd``, ``watts``, ``source`` and a label F / D / I); a user's TOML of the same
schema overrides them part by part (:func:`load_parts`, ``fabricsim audit --parts FILE``).

Counting rule (:func:`count_parts`): everything is counted from the graph.

* **chips**: one part per chip node, by its ``model``; a composite model
  ``"<gpu>+<nic>"`` (a GPU with its scale-out NIC, :func:`fabricsim.fabrics.devices.gpu_with_nic`)
  counts one ``chip`` part ``<gpu>`` and one ``nic`` part ``<nic>``.
* **switches**: one part per physical ASIC, by the node's ``model``: a node with
  ``asics=k`` (a modelling group) counts ``k``.
* **links**: per bundle, ``ports`` = ``ceil(lanes / (port_gbps / lane_gbps))`` (a
  partly used port still takes a cable or a module).  ``optical``: one transceiver
  per end per port, ``2 x ports`` of ``optic-<port_gbps>g``; the graph carries no
  reach, so every module is priced as the DR-class (<= 500 m single-mode) part.
  ``copper``: one cable per port, ``ports`` of ``copper-<port_gbps>g``.  ``pcb``:
  board traces, no part (their cost is the board's, outside this model).
* **OCS ports**: a bundle with an ``ocs`` tag passes an optical circuit switch: two
  OCS ports per port (the circuit joins one port from each end), ``ocs-port``.

A part with no figure (no table, or a table without ``price_usd`` or ``watts``) is never
counted as 0: it appears in the BOM with ``None`` and in ``unpriced``, and the totals
``capex_usd`` / ``power_kw`` are sums over the parts that have the figure.
Placeholder devices (``generic-chip``, ``generic-switch``) are not parts and are
listed as unpriced like any other part without figures.
"""
from __future__ import annotations

import math
import tomllib
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import networkx as nx

from .contract import CHIP, KIND, LANE_GBPS, LANES, MEDIUM, MODEL, PORT_GBPS, SWITCH, asics_of
from .errors import BadInput
from .inputs import read_input_text

__all__ = ["Part", "BomLine", "Bom", "KINDS", "LABELS", "load_parts", "count_parts", "bill_of_materials"]

KINDS = ("chip", "nic", "switch", "optic", "copper", "ocs")
LABELS = ("F", "D", "I")
_FIELDS = ("price_usd", "watts", "source", "label")


@dataclass(frozen=True)
class Part:
    """One part's figures: ``price_usd`` and ``watts`` per unit (``None`` where unknown)."""

    name: str
    kind: str
    price_usd: float | None
    watts: float | None
    source: str
    label: str


@dataclass(frozen=True)
class BomLine:
    """One part of a bill of materials: how many, and the per-unit figures."""

    part: str
    kind: str
    count: int
    price_usd: float | None
    watts: float | None
    source: str
    label: str

    def as_dict(self) -> dict[str, Any]:
        return {"part": self.part, "kind": self.kind, "count": self.count, "price_usd": self.price_usd,
                "watts": self.watts, "source": self.source, "label": self.label}


@dataclass(frozen=True)
class Bom:
    """A bill of materials with its totals.

    ``capex_usd`` sums ``count x price_usd`` and ``power_kw`` sums ``count x watts / 1000``
    over the lines that have the figure; ``unpriced`` names every part missing either
    figure, as ``"<kind>:<part> (missing price_usd, watts)"``.
    """

    lines: tuple[BomLine, ...]
    capex_usd: float
    power_kw: float
    unpriced: tuple[str, ...]


def _parse(data: Mapping, where: str) -> dict[tuple[str, str], Part]:
    """Parts from a parsed TOML mapping; every fault raises a one-line BadInput naming it."""
    out: dict[tuple[str, str], Part] = {}
    for kind, table in data.items():
        if kind not in KINDS:
            raise BadInput(f"{where}: part kind {kind!r} is not one of {', '.join(KINDS)}")
        if not isinstance(table, Mapping):
            raise BadInput(f"{where}: [{kind}] must be a table of parts, got {table!r}")
        for name, e in table.items():
            at = f"{where}: [{kind}.{name!r}]"
            if not isinstance(e, Mapping):
                raise BadInput(f"{at} must be a table with {', '.join(_FIELDS)}")
            extra = sorted(set(e) - set(_FIELDS))
            if extra:
                raise BadInput(f"{at}: unknown key(s) {', '.join(extra)}; valid: {', '.join(_FIELDS)}")
            figures = {}
            for key in ("price_usd", "watts"):
                v = e.get(key)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                      or not math.isfinite(v) or v < 0):
                    raise BadInput(f"{at}: {key}={v!r} must be a finite number >= 0 (or left out if unknown)")
                figures[key] = None if v is None else float(v)
            source, label = e.get("source"), e.get("label")
            if not isinstance(source, str) or not source.strip():
                raise BadInput(f"{at}: source must be a non-empty string saying where the figures come from")
            if label not in LABELS:
                raise BadInput(f"{at}: label={label!r} must be one of {', '.join(LABELS)}")
            out[kind, str(name)] = Part(str(name), kind, figures["price_usd"], figures["watts"], source, label)
    return out


def _read(path: str | Path) -> dict:
    text = read_input_text(path, "a parts TOML file")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"parts file {str(path)!r} is not valid TOML: {exc}") from None


def load_parts(override: str | Path | Mapping | None = None) -> dict[tuple[str, str], Part]:
    """The part catalog (``parts.toml``), with ``override`` (a TOML path or a parsed mapping of the
    same schema) replacing whole entries part by part.  Keys are ``(kind, part)``.

    Raises
    ------
    BadInput
        One line naming the file, the entry and the valid choices when the override is unreadable
        or off the schema.
    """
    base = tomllib.loads(resources.files(__package__).joinpath("parts.toml").read_text())
    parts = _parse(base, "parts.toml")
    if override is not None:
        if isinstance(override, Mapping):
            parts.update(_parse(override, "parts override"))
        else:
            parts.update(_parse(_read(override), f"parts file {str(override)!r}"))
    return parts


def _port_count(e: dict) -> int:
    """Ports a bundle occupies at each end, rounded up: a partly used port still takes its cable."""
    per_port = e[PORT_GBPS] / e[LANE_GBPS]
    return math.ceil(e[LANES] / per_port - 1e-9) if per_port >= 1 else int(e[LANES])


def count_parts(G: nx.Graph) -> Counter:
    """``Counter`` of ``(kind, part)`` -> units in ``G`` (the rule is in the module docstring)."""
    c: Counter = Counter()
    for _, d in G.nodes(data=True):
        if d.get(KIND) == CHIP:
            gpu, _, nic = str(d[MODEL]).partition("+")
            c["chip", gpu] += 1
            if nic:
                c["nic", nic] += 1
        elif d.get(KIND) == SWITCH:
            c["switch", str(d[MODEL])] += asics_of(d)
    for _, _, e in G.edges(data=True):
        medium = e[MEDIUM]
        if medium == "pcb":
            continue
        ports = _port_count(e)
        rate = f"{e[PORT_GBPS]:g}g"
        if medium == "optical":
            c["optic", f"optic-{rate}"] += 2 * ports
        else:
            c["copper", f"copper-{rate}"] += ports
        if e.get("ocs") is not None:
            c["ocs", "ocs-port"] += 2 * ports
    return c


def bill_of_materials(G: nx.Graph, parts: Mapping | str | Path | None = None) -> Bom:
    """The bill of materials of ``G``: every counted part with its figures, and the totals.

    ``parts`` is a catalog from :func:`load_parts`, or an override (path or mapping) for it.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> bom = bill_of_materials(build("jalapeno-rack"))
    >>> [(line.part, line.count) for line in bom.lines if line.kind == "switch"]
    [('BCM78914', 6)]
    """
    # a loaded catalog (non-empty, every value a Part) is used as is; anything else is an override
    if not (isinstance(parts, Mapping) and parts and all(isinstance(v, Part) for v in parts.values())):
        parts = load_parts(parts)
    lines, unpriced = [], []
    capex = watts = 0.0
    order = {k: i for i, k in enumerate(KINDS)}
    for (kind, name), n in sorted(count_parts(G).items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        p = parts.get((kind, name))
        price = p.price_usd if p else None
        w = p.watts if p else None
        lines.append(BomLine(name, kind, int(n), price, w, p.source if p else "no entry in the parts catalog",
                             p.label if p else ""))
        missing = [k for k, v in (("price_usd", price), ("watts", w)) if v is None]
        if missing:
            unpriced.append(f"{kind}:{name} (missing {', '.join(missing)})")
        if price is not None:
            capex += n * price
        if w is not None:
            watts += n * w
    return Bom(tuple(lines), round(capex, 6), round(watts / 1000.0, 9), tuple(unpriced))
