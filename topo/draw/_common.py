"""Shared pieces of every layout: units, colours, the scene (what is drawn where) and its helpers."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import networkx as nx

from ..errors import BadInput
from ..contract import CHIP, KIND, RANK, SWITCH

# Drawing units are inches: the axes span the figure's drawing area one data unit per
# inch, so marker sizes (points) and fonts keep their size whatever the fabric.
LEFT_MARGIN = 1.55          # room for the row labels of the layered layout
LEGEND_BAND = 0.95          # inches under the drawing for the legend
TITLE_BAND = 0.75           # inches above it for the title and subtitle
GENERIC_MAX_CHIPS = 64

TIER_COLORS = {"local": "#1f77b4", "global": "#ff7f0e", "nvlink": "#2ca02c", "ualink": "#9467bd",
               "ici": "#1f77b4", "leaf": "#1f77b4", "spine": "#d62728", "terminal": "#7f7f7f",
               "mesh": "#8c564b"}
MEDIUM_COLORS = {"pcb": "#2ca02c", "copper": "#1f77b4", "optical": "#ff7f0e"}
MEDIUM_STYLES = {"copper": "-", "pcb": ":", "optical": (0, (4, 2))}
ROLE_COLORS = {"local": "#4c78a8", "leaf": "#f58518", "rail": "#e45756", "nvlink": "#54a24b",
               "ualink": "#b279a2", "spine": "#e45756", "router": "#72b7b2"}
EXTRA_COLORS = ("#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f")
SPAN_WORDS = {"board": "ring on a board", "group": "between boards of a group",
              "global": "between groups"}
CHIP_COLOR = "#444444"
BOX_FACE = "#eef1f5"
BOTTLENECK_COLOR = "#d62728"
LABEL_BOX = dict(facecolor="white", edgecolor="none", pad=0.4, alpha=0.85)   # keeps a label readable over lines


# ---------------------------------------------------------------------------------------
# Scene: what is drawn where, independent of colouring
# ---------------------------------------------------------------------------------------
@dataclass
class _Elem:
    """A drawn element that links attach to: a chip, a switch, a tray or a collapsed box."""

    key: Any
    x: float
    y: float
    kind: str                 # "chip" | "switch" | "tray" | "box" | "cluster"
    role: str = ""
    w: float = 0.0            # extent of a box-like element (centred on x, y)
    h: float = 0.0
    label: str = ""
    members: int = 0          # chips a collapsed box stands for
    label_below: bool = False  # a switch of a bottom row: its name under it, away from its links


@dataclass
class _Scene:
    width: float
    height: float
    title: str
    subtitle: str
    elems: dict = field(default_factory=dict)       # key -> _Elem
    rep: dict = field(default_factory=dict)         # graph node -> element key its links attach to
    cluster_of: dict = field(default_factory=dict)  # node -> cluster key, used from collapsed boxes
    collapsed: set = field(default_factory=set)     # keys of collapsed boxes
    dots: list = field(default_factory=list)        # (x, y, node): chips drawn inside trays
    frames: list = field(default_factory=list)      # (x0, y0, w, h, label, label_side)
    row_labels: list = field(default_factory=list)  # (y, text)
    texts: list = field(default_factory=list)       # (x, y, text, kwargs)
    notes: list = field(default_factory=list)       # lines under the title
    plane_notes: list = field(default_factory=list)  # lines under the title of a plain drawing only
    between_collapsed: bool = True                  # draw links between two collapsed boxes
    stub: float = 0.0                               # > 0: draw wraparound links as stubs this long
    pitch: float = 0.0                              # grid spacing of a torus slice
    faint: set = field(default_factory=set)         # elements whose links are drawn faint (planes)
    collapsed_label: str = "collapsed"              # legend text of a collapsed box
    strong_alpha: float = 0.0                       # > 0: fixed alpha for the drawn links
    chip_size: float = 16.0                         # scatter size of a chip dot, pt^2


def _short(node) -> str:
    s = str(node)
    return s.rsplit("/", 1)[-1]


def _levels(G: nx.Graph) -> dict:
    """Chips 0; a switch 1 + the lowest level among its neighbours (the audit's tiers)."""
    from ..auditing import tier_levels
    return tier_levels(G)


def _chip_nodes(G: nx.Graph) -> list:
    return sorted((n for n, d in G.nodes(data=True) if d.get(KIND) == CHIP),
                  key=lambda n: G.nodes[n].get(RANK, 0))


def _switch_nodes(G: nx.Graph) -> list:
    return [n for n, d in G.nodes(data=True) if d.get(KIND) == SWITCH]


def layout_kind(G: nx.Graph) -> str:
    """The layout :func:`fabric_figure` uses for ``G``.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> [layout_kind(build(n)) for n in ("nvl72", "torus", "boardfly")]
    ['layered', 'torus', 'boardfly']
    """
    chip_nodes = _chip_nodes(G)
    if not chip_nodes:
        return "generic"
    if _switch_nodes(G):
        return "layered"
    first = G.nodes[chip_nodes[0]]
    if "dims" in G.graph and "x" in first:
        return "torus"
    if all("group" in G.nodes[c] and "board" in G.nodes[c] for c in chip_nodes):
        return "boardfly"
    return "generic"


def _domain_attr(G: nx.Graph, chip_nodes: list) -> str | None:
    """The tag that splits chips into scale-up domains: ``rack``, else ``group``."""
    for tag in ("rack", "group"):
        if chip_nodes and all(tag in G.nodes[c] for c in chip_nodes):
            return tag
    return None


def _pick(choices: list, expand, what: str, focus: Iterable = (), *, allow_all: bool = False) -> list:
    """The domains to expand: ``expand`` (one value, several, or "all"), else the focus's, else the first."""
    if expand is None:
        for f in focus:
            if f in choices:
                return [f]
        return choices[:1]
    if isinstance(expand, str) and expand == "all" and allow_all:
        return list(choices)
    wanted = list(expand) if isinstance(expand, (list, tuple, set, frozenset, range)) else [expand]
    bad = [w for w in wanted if w not in choices]
    if bad:
        def fmt(c):
            return str(c[0]) if isinstance(c, tuple) and len(c) == 1 else str(c)
        shown = ", ".join(map(fmt, choices[:12])) + (" ..." if len(choices) > 12 else "")
        raise BadInput(f"expand={fmt(bad[0])} is not a {what} of this fabric; choose one of: {shown}"
                         + (" (or 'all')" if allow_all else ""), param="expand")
    return [c for c in choices if c in wanted]


def _spread(n: int, x0: float, x1: float) -> list[float]:
    """``n`` centres evenly over [x0, x1]."""
    if n <= 0:
        return []
    step = (x1 - x0) / n
    return [x0 + step * (i + 0.5) for i in range(n)]


def _grid_dims(k: int, w: float, h_max: float, pitch_min: float = 0.085) -> tuple[int, int, float]:
    """Columns, rows and pitch to fit ``k`` dots in a box ``w`` wide (rows as few as fit)."""
    for rows in range(1, k + 1):
        cols = math.ceil(k / rows)
        pitch = min(w / (cols + 0.4), 0.16)
        if pitch >= pitch_min or rows * pitch_min > h_max:
            return cols, rows, max(pitch, 0.04)
    return k, 1, 0.04
