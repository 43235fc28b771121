"""What each catalog fabric's switches do with multipath traffic, with the source of the claim.

The split a price uses when none is given (``split=None``, the CLI's default) is the one
that models the fabric's hardware (issue 24 item 1): :func:`default_split`.  A fabric
file may declare its own in its graph attributes (``switching = "static" | "weighted"
| "adaptive"``); a catalog fabric's is this table's; anything else is ``static``
(``equal``).  ``behaviour``: ``static`` (per-flow ECMP hashing: ``equal``), ``weighted``
(weighted ECMP: ``capacity``) or ``adaptive`` (load-aware per-packet or per-flowlet path
choice: ``adaptive``).  Labels as elsewhere: F found (a published figure or statement),
D derived, I inferred.

Public names
------------
Switching, SWITCHING, SPLIT_OF, switching_of, default_split
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

__all__ = ["Switching", "SWITCHING", "switching_of", "default_split", "SPLIT_OF"]

# behaviour -> the split that models it
SPLIT_OF = {"static": "equal", "weighted": "capacity", "adaptive": "adaptive"}


@dataclass(frozen=True)
class Switching:
    """A fabric's declared multipath behaviour.

    Attributes
    ----------
    behaviour : str
        ``static``, ``weighted`` or ``adaptive``.
    label : str
        F, D or I.
    source : str
    """

    behaviour: str
    label: str
    source: str

    @property
    def split(self) -> str:
        """The ``split`` that models the behaviour."""
        return SPLIT_OF[self.behaviour]


_TH6 = Switching("adaptive", "F", "Broadcom Tomahawk 6 (BCM78914) launch, June 2025: 'adaptive routing features for "
                                  "scale-up and scale-out'; Cognitive Routing 2.0 reroutes around congestion and "
                                  "failures in hardware (Network World / Edgecore 'What the heck is cognitive "
                                  "routing', 2025)")
_STATIC_I = "no published adaptive-routing claim for this interconnect found; per-flow hashing assumed (I)"

# Catalog fabric -> its switches' behaviour.  Fabrics without switches (tori, meshes) route
# by their policy (dimension order, direct links): listed as static.
SWITCHING: dict[str, Switching] = {
    "jalapeno-pod": _TH6,
    "jalapeno-rack": _TH6,
    "nvl72-cluster": Switching("adaptive", "I", "NVIDIA Quantum InfiniBand switches support adaptive routing "
                                                "(SHIELD / AR, Quantum-2 and X800 data sheets); whether a given "
                                                "deployment enables it is not published (I)"),
    "rail-cluster": Switching("adaptive", "I", "as nvl72-cluster: Quantum InfiniBand / Spectrum-X Ethernet leaves "
                                               "with adaptive routing available (I)"),
    "tpu8t-virgo": Switching("static", "I", _STATIC_I),
    "maia200": Switching("static", "I", _STATIC_I),
    "nvl72": Switching("static", "I", "NVLink switch trays: a GPU's traffic spreads evenly over its links to "
                                      "every switch chip (I)"),
    "helios": Switching("static", "I", _STATIC_I),
    "hgx-a100": Switching("static", "I", "NVSwitch: even spread over a GPU's NVLinks (I)"),
    "hgx-h100": Switching("static", "I", "NVSwitch: even spread over a GPU's NVLinks (I)"),
    "hgx-b200": Switching("static", "I", "NVSwitch: even spread over a GPU's NVLinks (I)"),
    "hgx-b300": Switching("static", "I", "NVSwitch: even spread over a GPU's NVLinks (I)"),
    "instinct-node": Switching("static", "I", _STATIC_I),
    "mi355x": Switching("static", "I", "full mesh, one direct link per pair (no choice to make)"),
    "torus": Switching("static", "I", "TPU-class ICI: dimension-order routing (the dor policy) (I)"),
    "ironwood": Switching("static", "I", "TPU ICI: dimension-order routing (the dor policy) (I)"),
    "tpu8t": Switching("static", "I", "TPU ICI: dimension-order routing (the dor policy) (I)"),
    "boardfly": Switching("static", "I", _STATIC_I),
    "groq-lpx": Switching("static", "I", _STATIC_I),
}


def switching_of(G_or_name) -> Switching | None:
    """The declared behaviour of a fabric, or None (nothing declared: static).

    A graph's own ``G.graph['switching']`` (a fabric file's declaration) comes first, then
    the catalog entry of its ``G.graph['name']`` (or of the name given).

    Raises
    ------
    BadInput
        A declared behaviour that is not one of ``static``, ``weighted``, ``adaptive``.

    Examples
    --------
    >>> switching_of("jalapeno-pod").split
    'adaptive'
    >>> switching_of("ironwood").behaviour
    'static'
    """
    if isinstance(G_or_name, nx.Graph):
        declared = G_or_name.graph.get("switching")
        name = G_or_name.graph.get("name")
        if declared is not None:
            if declared not in SPLIT_OF:
                from ..errors import BadInput
                raise BadInput(f"fabric {name or '?'}: switching = {declared!r}; choose one of: "
                               f"{', '.join(SPLIT_OF)}")
            return Switching(str(declared), "F", f"declared in the fabric file ({name or 'unnamed'})")
    else:
        name = G_or_name
    return SWITCHING.get(name)


def default_split(G: nx.Graph) -> tuple[str, str]:
    """``(split, why)``: the split a price on ``G`` takes when none is given.

    Examples
    --------
    >>> import networkx as nx
    >>> default_split(nx.Graph(name="my-fabric"))
    ('equal', 'fabric default (nothing declared: static ECMP hashing)')
    >>> G = nx.Graph(name="my-fabric", switching="adaptive")
    >>> default_split(G)
    ('adaptive', 'fabric default (adaptive, F: declared in the fabric file (my-fabric))')
    """
    sw = switching_of(G)
    if sw is None:
        return "equal", "fabric default (nothing declared: static ECMP hashing)"
    return sw.split, f"fabric default ({sw.behaviour}, {sw.label}: {sw.source})"
