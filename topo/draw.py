"""Drawings of fabric graphs, with the layout chosen from the graph's structure.

Public names
------------
fabric_figure(G, *, expand=None, ...) -> matplotlib.figure.Figure
    The drawing as a Figure (for notebooks and for callers that add to it).
draw_fabric(G, path, *, expand=None, ...) -> pathlib.Path
    ``fabric_figure`` saved to ``path`` (``.png``, ``.svg``, ``.pdf`` ...).
utilization_figure(G, link_utilization, *, ...) -> matplotlib.figure.Figure
draw_utilization(G, link_utilization, path, *, ...) -> pathlib.Path
    The same drawing with every link coloured by its utilization and the
    bottlenecks marked.
layout_kind(G) -> str
    Which layout a graph gets: ``"torus"``, ``"boardfly"``, ``"layered"``, ``"generic"``.
bundle_utilization(G, link_utilization) -> dict
    Per-direction link utilization (aligned with :func:`~fabricsim.topo.routing.link_table`)
    folded onto the physical bundles of ``G``.

Layouts (read from the graph contract, never from the fabric's name)
--------------------------------------------------------------------
``torus`` (graph ``dims``, chips with ``x``, ``y`` ...)
    One 2D slice of the first two ring dimensions, wraparound links drawn as
    stubs leaving opposite edges, 4x4 cube frames where chips carry ``cube``; a
    strip beside it shows where the slice sits among the others.
``boardfly`` (no switches, chips with ``group`` and ``board``)
    One group expanded (its boards on a circle, each board's chips in a ring),
    the other groups collapsed to boxes on an outer circle, the expanded group's
    optical links drawn to them.
``layered`` (switches present)
    Tiers as layers: switches that reach higher tiers above the chips, switches
    that face only chips below them (when both kinds exist, as in a Jalapeño
    rack's global and local trays), switches outside any rack on top, grouped by
    ``rail`` or ``plane``.  Chips are drawn in their ``tray`` boxes; one rack (or
    dragonfly ``group``) is expanded and the others are collapsed to boxes.
``generic``
    Chips on a circle (the first 64 by rank when there are more).

Notes
-----
Links are drawn one line per *bundle between drawn elements*: the 8 chips of a
tray share one line to each switch, a collapsed rack one line to each rail.
Colour is the link's tier (or its medium when the fabric has a single tier),
line style its medium.  Everything is drawn with :class:`matplotlib.figure.Figure`
directly, so no pyplot state and no interactive backend is touched.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import networkx as nx
import numpy as np
from matplotlib import colormaps
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Patch, Rectangle

from .contract import CAPACITY_GBPS, CHIP, KIND, LANE_GBPS, LANES, MEDIUM, RANK, ROLE, SWITCH, TIER

__all__ = ["fabric_figure", "draw_fabric", "utilization_figure", "draw_utilization", "layout_kind",
           "bundle_utilization"]

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
    from .audit import tier_levels
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
        raise ValueError(f"expand={fmt(bad[0])} is not a {what} of this fabric; choose one of: {shown}"
                         + (" (or 'all')" if allow_all else ""))
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


# ---------------------------------------------------------------------------------------
# Layered (switched) layout
# ---------------------------------------------------------------------------------------
def _switch_row(sc: _Scene, G: nx.Graph, nodes: list, x0: float, x1: float, y: float, *,
                group_by: str | None, label_below: bool, size: float = 0.16, cluster_label: str = "",
                make_clusters: bool = False) -> None:
    """Place a row of switches over [x0, x1] at ``y``, framed in clusters of ``group_by``."""
    if not nodes:
        return
    clusters: dict = defaultdict(list)
    for s in nodes:
        clusters[G.nodes[s].get(group_by) if group_by else None].append(s)
    keys = sorted(clusters, key=lambda k: (k is None, k if k is not None else 0))
    framed = group_by is not None and len(keys) > 1 and max(len(v) for v in clusters.values()) > 1
    gap = 0.18 if framed else 0.0
    n = len(nodes)
    span = x1 - x0 - gap * (len(keys) - 1)
    pitch = min(span / n, 1.2)
    total = pitch * n + gap * (len(keys) - 1)
    x = x0 + (x1 - x0 - total) / 2
    # name each switch only where its name fits between its neighbours (~0.055 in per 6-pt character, I)
    label_each = n <= 20 and pitch >= 0.055 * max(len(_short(s)) for s in nodes) + 0.08
    for k in keys:
        members = sorted(clusters[k], key=str)
        cx0 = x
        for s in members:
            cx = x + pitch / 2
            sc.elems[s] = _Elem(s, cx, y, "switch", role=str(G.nodes[s].get(ROLE, "")),
                                w=min(size, pitch * 0.8), h=size, label=_short(s) if label_each else "",
                                label_below=label_below)
            sc.rep[s] = s
            x += pitch
        if framed:
            w = x - cx0
            label = f"{cluster_label or group_by} {k}"
            # with every switch named, the cluster's name goes on the far side of the frame
            side = ("above" if label_below else "below") if label_each and not make_clusters else \
                ("below" if label_below else "above")
            sc.frames.append((cx0 - 0.04, y - size / 2 - 0.07, w + 0.08, size + 0.14, label, side))
            if make_clusters:
                ckey = ("cluster", group_by, k)
                sc.elems[ckey] = _Elem(ckey, cx0 + w / 2, y, "cluster", w=w + 0.08, h=size + 0.14)
                for s in members:
                    sc.cluster_of[s] = ckey
        x += gap


def _layered(G: nx.Graph, expand, focus: Iterable) -> _Scene:
    chip_nodes = _chip_nodes(G)
    sw_nodes = _switch_nodes(G)
    level = _levels(G)
    dom = _domain_attr(G, chip_nodes)
    domains = sorted({G.nodes[c][dom] for c in chip_nodes}) if dom else [None]
    multi = len(domains) > 1
    focus_domains = [G.nodes[f].get(dom) for f in focus if f in G] if dom else []
    if not multi and expand not in (None, "all") and [expand] != domains:
        raise ValueError(f"expand={expand!r}: {G.graph.get('name', 'this fabric')} is a single "
                         f"{dom or 'domain'}, drawn whole; there is nothing to expand")
    shown = _pick(domains, expand, dom or "domain", focus_domains, allow_all=True) if multi else domains
    collapsed = [d for d in domains if d not in shown]

    def sw_domain(s):
        d = G.nodes[s]
        if dom and dom in d and (multi or level[s] == 1):
            return d[dom]
        if not multi and level[s] == 1:
            return domains[0]
        return "top"

    in_dom: dict = defaultdict(list)
    top = []
    for s in sw_nodes:
        k = sw_domain(s)
        (top if k == "top" else in_dom[k]).append(s)

    def has_up(s):
        return any(G.nodes[m].get(KIND) == SWITCH and (level[m] > level[s] or sw_domain(m) != sw_domain(s))
                   for m in G[s])

    # geometry, bottom up, in inches: switches that reach higher tiers above the chips,
    # switches that face only chips below them when a rack has both kinds
    W = 14.0
    shown_sw = [s for d in shown for s in in_dom[d]]
    split_rows = any(has_up(s) for s in shown_sw) and any(not has_up(s) for s in shown_sw)
    y_down = 0.45 if split_rows else None
    y_chip = (y_down + 1.6) if split_rows else 0.6
    y_up = y_chip + 1.7
    y_top = y_up + 1.9 if top else None
    H = (y_top if top else y_up) + 0.55
    name = G.graph.get("name", "fabric")
    sc = _Scene(W, H, f"{name}: {len(chip_nodes):,} chips, {len(sw_nodes):,} switches", "")
    if multi:
        sc.subtitle = (f"{dom} {', '.join(map(str, shown))} expanded, {_count(len(collapsed), 'other ' + dom)} "
                       f"collapsed to boxes" if collapsed else f"all {len(domains)} {dom}s expanded")

    # horizontal regions: expanded domains share the left part, collapsed boxes the right
    x_left = LEFT_MARGIN
    frac = 0.58 if collapsed else 1.0
    x_split = x_left + (W - x_left - 0.2) * frac
    width = (x_split - x_left) / len(shown)
    regions = [(d, x_left + i * width + (0.15 if i else 0), x_left + (i + 1) * width - 0.15)
               for i, d in enumerate(shown)]

    role_rows: dict = defaultdict(int)
    for d, x0, x1 in regions:
        members = [c for c in chip_nodes if (G.nodes[c].get(dom) if dom else None) == d]
        _chip_row(sc, G, members, x0, x1, y_chip)
        sws = sorted(in_dom[d], key=lambda s: (G.nodes[s].get("switch_tray", 0), str(s)))
        up = [s for s in sws if has_up(s)] if split_rows else sws
        down = [s for s in sws if not has_up(s)] if split_rows else []
        tray_tag = "switch_tray" if sws and all("switch_tray" in G.nodes[s] for s in sws) else None
        _switch_row(sc, G, up, x0, x1, y_up, group_by=tray_tag, label_below=False, cluster_label="switch tray")
        _switch_row(sc, G, down, x0, x1, y_down or 0.0, group_by=tray_tag, label_below=True,
                    cluster_label="switch tray")
        for row, side in ((up, "up"), (down, "down")):
            if row:
                role_rows[(side, G.nodes[row[0]].get(ROLE, "switch"))] = len(row)
                _planes(sc, G, row, members)
        if multi:
            lo = (y_down if split_rows else y_chip) - 0.32
            hi = y_up + 0.55
            sc.frames.append((x0 - 0.08, lo, x1 - x0 + 0.16, hi - lo, f"{dom} {d} (expanded)", "corner"))

    # collapsed domains: boxes in rows at chip level
    if collapsed:
        n = len(collapsed)
        rows = 1 if n <= 6 else 2 if n <= 20 else 3
        cols = math.ceil(n / rows)
        x0, x1 = x_split + 0.25, W - 0.15
        bw = (x1 - x0) / cols
        for i, d in enumerate(collapsed):
            r, c = divmod(i, cols)
            cy = y_chip + (rows - 1) * 0.33 - r * 0.66
            key = ("box", d)
            members = [m for m in chip_nodes if G.nodes[m].get(dom) == d]
            sc.elems[key] = _Elem(key, x0 + bw * (c + 0.5), cy, "box", w=min(bw * 0.84, 1.3), h=0.46,
                                  label=f"{_dom_abbrev(dom)}{d}", members=len(members))
            sc.collapsed.add(key)
            for m in members + in_dom[d]:
                sc.rep[m] = key
        roles = Counter(G.nodes[s].get(ROLE, "switch") for s in in_dom[collapsed[0]])
        inside = " + ".join(f"{v} {k}" for k, v in sorted(roles.items()))
        n_chip = sc.elems[("box", collapsed[0])].members
        sc.collapsed_label = f"collapsed {dom}: {n_chip:,} chips" + (f", {inside} switches" if inside else "")
        sc.texts.append(((x0 + x1) / 2, y_chip - (rows - 1) * 0.33 - 0.36,
                         f"{_count(len(collapsed), dom)} collapsed", dict(ha="center", va="top", fontsize=8,
                                                                     style="italic")))

    # top tier: across the whole width, clustered by rail or plane
    if top:
        top = sorted(top, key=lambda s: (G.nodes[s].get("rail", 0), G.nodes[s].get("plane", 0),
                                         G.nodes[s].get("column", 0), str(s)))
        tag = next((t for t in ("rail", "plane", "group") if all(t in G.nodes[s] for s in top)
                    and len({G.nodes[s][t] for s in top}) > 1), None)
        _switch_row(sc, G, top, x_left, W - 0.15, y_top, group_by=tag, label_below=False,
                    size=0.14, make_clusters=tag is not None)
        if tag and any(sc.cluster_of.get(s) for s in top):
            sc.notes.append(f"a line to a {tag} stands for one bundle to each of its switches")
        roles = Counter(G.nodes[s].get(ROLE, "switch") for s in top)
        label = " + ".join(f"{v} {k}" for k, v in roles.items()) + " switches"
        if tag:
            label += f"\n({len({G.nodes[s][tag] for s in top})} {tag}s)"
        sc.row_labels.append((y_top, label))

    # row labels (left margin)
    for (side, role), n in sorted(role_rows.items()):
        sc.row_labels.append((y_up if side == "up" else y_down,
                              _count(n, f"{role} switch").replace("switchs", "switches")
                              + (f"\nper {dom}" if multi else "")))
    trays = {G.nodes[c].get("tray") for c in chip_nodes if "tray" in G.nodes[c]}
    per_dom = len(chip_nodes) // len(domains)
    chip_label = f"{per_dom:,} chips" + (f" per {dom}" if multi else "")
    if trays:
        chip_label += f"\n({len(trays)} trays x {per_dom // max(1, len(trays))})"
    sc.row_labels.append((y_chip, chip_label))
    return sc


def _planes(sc: _Scene, G: nx.Graph, row: list, members: list) -> None:
    """A row of switches every chip reaches alike: draw the first one's links, fade the rest."""
    if len(row) < 3 or not members:
        return
    chip_set = set(members)
    first = None
    for s in row:
        nb = {m for m in G[s] if G.nodes[m].get(KIND) == CHIP}
        lanes = {G.edges[s, m].get(LANES) for m in nb}
        if nb != chip_set or len(lanes) != 1:
            return
        first = first or lanes
        if lanes != first:
            return
    sc.faint.update(row[1:])
    bundle = _bundle_text(G, [(members[0], row[0])])
    role = G.nodes[row[0]].get(ROLE, "")
    sc.plane_notes.append(f"every chip has one {bundle} bundle to each of the {len(row)} {role} switches "
                    f"({len(row)} planes): {_short(row[0])}'s links drawn, the other {len(row) - 1} planes faint")


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _dom_abbrev(dom: str | None) -> str:
    return {"rack": "r", "group": "g"}.get(dom or "", "")


def _chip_row(sc: _Scene, G: nx.Graph, members: list, x0: float, x1: float, y: float) -> None:
    """Chips in tray boxes in one row; links attach to the tray box (or the chip when few)."""
    if not members:
        return
    if all("tray" in G.nodes[c] for c in members):
        trays: dict = defaultdict(list)
        for c in members:
            trays[G.nodes[c]["tray"]].append(c)
        groups = [trays[t] for t in sorted(trays)]
        labels = [str(t) for t in sorted(trays)]
    elif len(members) <= 24:
        groups, labels = [[c] for c in members], [None] * len(members)
    else:
        per = 8
        groups = [members[i:i + per] for i in range(0, len(members), per)]
        labels = [f"{G.nodes[g[0]].get(RANK)}-" for g in groups]
    n = len(groups)
    slot = (x1 - x0) / n
    if all(len(g) == 1 for g in groups):
        for c, cx in zip([g[0] for g in groups], _spread(n, x0, x1)):
            sc.elems[c] = _Elem(c, cx, y, "chip", label=(str(c) if len(str(c)) <= 10 else _short(c))
                                if n <= 24 else "")
            sc.rep[c] = c
        return
    bw = slot * 0.86
    k = max(len(g) for g in groups)
    cols, rows, pitch = _grid_dims(k, bw, 0.9)
    bh = rows * pitch + 0.1
    sc.chip_size = max(4.0, min(20.0, (pitch * 72 * 0.55) ** 2))
    label_all = n <= 24
    for i, (g, lab) in enumerate(zip(groups, labels)):
        cx = x0 + slot * (i + 0.5)
        key = ("tray", str(g[0]))
        sc.elems[key] = _Elem(key, cx, y, "tray", w=bw, h=bh,
                              label=(lab if label_all or i in (0, n - 1) else ""))
        for j, c in enumerate(sorted(g, key=lambda c: G.nodes[c].get(RANK, 0))):
            r, q = divmod(j, cols)
            dx = (q - (cols - 1) / 2) * pitch
            dy = ((rows - 1) / 2 - r) * pitch
            sc.dots.append((cx + dx, y + dy, c))
            sc.rep[c] = key


# ---------------------------------------------------------------------------------------
# Torus layout
# ---------------------------------------------------------------------------------------
def _torus(G: nx.Graph, expand, focus: Iterable) -> _Scene:
    chip_nodes = _chip_nodes(G)
    axes = [a for a in ("x", "y", "z", "w") if a in G.nodes[chip_nodes[0]]]
    dims = [max(G.nodes[c][a] for c in chip_nodes) + 1 for a in axes]
    if "dims" in G.graph:
        try:
            dims = [int(p) for p in str(G.graph["dims"]).split("x")]
        except ValueError:
            pass
    name = G.graph.get("name", "torus")
    dims_s = "x".join(map(str, dims))
    if len(axes) == 1:
        return _ring_scene(G, chip_nodes, f"{name}: ring of {dims[0]} chips")
    if len(axes) == 2 and expand is not None:
        raise ValueError(f"expand={expand!r}: a 2D torus is drawn whole; there is no slice to choose")
    a0, a1 = axes[0], axes[1]
    rest = axes[2:]
    # the slices: every combination of the other coordinates; expand picks one by its
    # index along the third axis (an int) or a tuple of the other coordinates
    def where(c):
        return tuple(G.nodes[c][a] for a in rest)

    slices = sorted({where(c) for c in chip_nodes})
    focus_slices = [where(f) for f in focus if f in G]
    want = expand
    if isinstance(expand, int) and not isinstance(expand, bool):
        want = (expand,) + (0,) * (len(rest) - 1)   # an index along the third ring
    if want is not None and not isinstance(want, tuple):
        raise ValueError(f"expand={expand!r}: a torus expands one slice, given as an index along "
                         f"{rest[0]} or a tuple of ({', '.join(rest)})")
    chosen = _pick(slices, None if want is None else [want], "slice (" + ", ".join(rest) + ")",
                   focus_slices)[0]
    members = [c for c in chip_nodes if where(c) == chosen]
    rows, cols = dims[0], dims[1]
    pitch = min(0.55, 9.5 / max(cols, 1), 6.5 / max(rows, 1))
    strip = 2.6 if rest else 0.0
    stub = min(0.3, pitch * 0.55)
    x0, y0 = 0.8 + stub, 0.65 + stub
    W = max(7.5, x0 + (cols - 1) * pitch + stub + 0.3 + strip)
    H = y0 + (rows - 1) * pitch + stub + (0.55 if rest else 0.3)
    sc = _Scene(W, H, f"{name}: {dims_s} torus, {len(chip_nodes):,} chips", "")
    sc.stub, sc.pitch = stub, pitch
    sc.strong_alpha = 0.85
    sc.chip_size = max(6.0, min(40.0, (pitch * 72 * 0.32) ** 2))
    where = ", ".join(f"{a} = {v}" for a, v in zip(rest, chosen))
    sc.subtitle = (f"the {a0}-{a1} slice at {where} ({rows} x {cols} chips); "
                   f"links leaving the slice along {', '.join(rest)} are not drawn") if rest else ""
    for c in members:
        d = G.nodes[c]
        x = x0 + d[a1] * pitch
        y = y0 + (rows - 1 - d[a0]) * pitch
        sc.elems[c] = _Elem(c, x, y, "chip")
        sc.rep[c] = c
    # axis ticks
    step = 1 if cols <= 16 else 2 if cols <= 32 else 4
    for j in range(0, cols, step):
        sc.texts.append((x0 + j * pitch, y0 - sc.stub - 0.12, str(j), dict(ha="center", va="top", fontsize=7)))
    step = 1 if rows <= 16 else 2 if rows <= 32 else 4
    for i in range(0, rows, step):
        sc.texts.append((x0 - sc.stub - 0.1, y0 + (rows - 1 - i) * pitch, str(i),
                         dict(ha="right", va="center", fontsize=7)))
    sc.texts.append((x0 + (cols - 1) * pitch / 2, y0 - sc.stub - 0.36, f"{a1} →",
                     dict(ha="center", va="top", fontsize=9)))
    sc.texts.append((x0 - sc.stub - 0.45, y0 + (rows - 1) * pitch / 2, f"← {a0}",
                     dict(ha="center", va="center", fontsize=9, rotation=90)))
    # cube frames where chips carry their cube (Ironwood: 4x4x4 cubes joined by OCS)
    if all("cube" in G.nodes[c] for c in members):
        cube = str(G.graph.get("cube", "4x4x4")).split("x")
        cr, cc = int(cube[0]), int(cube[1])
        for i in range(0, rows, cr):
            for j in range(0, cols, cc):
                c0 = next(c for c in members if G.nodes[c][a0] == i and G.nodes[c][a1] == j)
                sc.frames.append((x0 + j * pitch - pitch * 0.42, y0 + (rows - i - cr) * pitch - pitch * 0.42,
                                  (cc - 1) * pitch + pitch * 0.84, (cr - 1) * pitch + pitch * 0.84,
                                  f"cube {G.nodes[c0]['cube']}" if rows * cols <= 400 else "", "inside"))
        sc.notes.append(f"frames: {'x'.join(cube)} cubes (one rack each); links leaving a cube pass an "
                        f"optical circuit switch")
    # the strip: where this slice sits among the others
    if rest:
        n_sl = len(slices)
        sx0 = x0 + (cols - 1) * pitch + stub + 0.45
        show = slices if n_sl <= 24 else slices[:24]
        bh = min(0.26, (H - 1.5) / len(show))
        top_y = y0 + (rows - 1) * pitch
        for k, s in enumerate(show):
            yy = top_y - k * bh
            is_it = s == chosen
            sc.frames.append((sx0, yy - bh * 0.4, 0.5, bh * 0.8, "", "strip-on" if is_it else "strip"))
            if k in (0, len(show) - 1) or is_it:
                sc.texts.append((sx0 + 0.6, yy, ", ".join(f"{a}={v}" for a, v in zip(rest, s))
                                 + ("  (drawn)" if is_it else ""),
                                 dict(ha="left", va="center", fontsize=7,
                                      weight="bold" if is_it else "normal")))
        more = f" (first 24 of {n_sl})" if n_sl > 24 else ""
        sc.texts.append((sx0, top_y + 0.3, f"{n_sl} slices{more}", dict(ha="left", va="bottom", fontsize=8)))
        sc.texts.append((sx0, top_y - len(show) * bh - 0.05,
                         f"each chip also links\nto its {', '.join(rest)} ± 1\nneighbours (with wrap)",
                         dict(ha="left", va="top", fontsize=7, style="italic")))
    return sc


def _ring_scene(G: nx.Graph, chip_nodes: list, title: str) -> _Scene:
    n = len(chip_nodes)
    R = min(3.0, 0.6 + n * 0.08)
    sc = _Scene(2 * R + 2.0, 2 * R + 1.4, title, "")
    sc.chip_size = 30.0
    for i, c in enumerate(chip_nodes):
        t = 2 * math.pi * i / n
        sc.elems[c] = _Elem(c, R + 1.0 + R * math.sin(t), R + 0.7 + R * math.cos(t), "chip",
                            label=_short(c) if n <= 32 else "")
        sc.rep[c] = c
    return sc


# ---------------------------------------------------------------------------------------
# Boardfly layout
# ---------------------------------------------------------------------------------------
def _boardfly(G: nx.Graph, expand, focus: Iterable) -> _Scene:
    chip_nodes = _chip_nodes(G)
    groups = sorted({G.nodes[c]["group"] for c in chip_nodes})
    focus_groups = [G.nodes[f]["group"] for f in focus if f in G and "group" in G.nodes[f]]
    shown = _pick(groups, expand, "group", focus_groups)[0]
    others = [g for g in groups if g != shown]
    members = [c for c in chip_nodes if G.nodes[c]["group"] == shown]
    boards: dict = defaultdict(list)
    for c in members:
        boards[G.nodes[c]["board"]].append(c)
    b_keys = sorted(boards)
    n_b = len(b_keys)
    R_out = 3.55 if others else 0.0
    R_in = 1.55 if n_b > 1 else 0.0
    r_board = 0.3
    W = 2 * (R_out or (R_in + 1.0)) + 1.6
    H = W - 0.2
    cx, cy = W / 2, H / 2
    name = G.graph.get("name", "fabric")
    n_groups = len(groups)
    sc = _Scene(W, H, f"{name}: {len(chip_nodes):,} chips in {n_groups} groups of {n_b} boards", "")
    sc.subtitle = (f"group {shown} expanded (boards of {len(boards[b_keys[0]])} chips in a ring); "
                   f"{len(others)} groups collapsed on the outer circle")
    sc.chip_size = 22.0
    sc.between_collapsed = False
    for i, b in enumerate(b_keys):
        t = 2 * math.pi * i / n_b
        bx, by = cx + R_in * math.sin(t), cy + R_in * math.cos(t)
        chips_b = sorted(boards[b], key=lambda c: G.nodes[c][RANK])
        k = len(chips_b)
        for j, c in enumerate(chips_b):
            # the ring turned so chip 0 faces out, the others toward the group's centre
            tt = t + 2 * math.pi * j / k
            sc.elems[c] = _Elem(c, bx + r_board * math.sin(tt), by + r_board * math.cos(tt), "chip")
            sc.rep[c] = c
        sc.frames.append((bx, by, r_board + 0.13, 0.0, "", "ring"))
        lx, ly = cx + (R_in + r_board + 0.42) * math.sin(t), cy + (R_in + r_board + 0.42) * math.cos(t)
        sc.texts.append((lx, ly, f"board {b}", dict(ha="center", va="center", fontsize=7)))
    # put each collapsed group beside the chips that link to it, so optical lines run outward
    ang: dict = defaultdict(list)
    for c in members:
        for m in G[c]:
            g = G.nodes[m].get("group")
            if g is not None and g != shown:
                e = sc.elems[c]
                ang[g].append(complex(e.x - cx, e.y - cy))
    def bearing(g):
        if not ang[g]:
            return 7.0
        v = sum(ang[g])
        v = v if abs(v) > 0.3 * len(ang[g]) * abs(ang[g][0]) else ang[g][0]
        return math.atan2(v.real, v.imag) % (2 * math.pi)
    others.sort(key=lambda g: (bearing(g), g))
    for i, g in enumerate(others):
        t = 2 * math.pi * (i + 0.5) / len(others)
        key = ("box", g)
        sc.elems[key] = _Elem(key, cx + R_out * math.sin(t), cy + R_out * math.cos(t), "box", w=0.5, h=0.3,
                              label=f"g{g}", members=0)
        sc.collapsed.add(key)
    for c in chip_nodes:
        g = G.nodes[c]["group"]
        if g != shown:
            sc.rep[c] = ("box", g)
            sc.elems[("box", g)].members += 1
    sc.collapsed_label = f"collapsed group ({len(members)} chips)"
    if others:
        n_pair = sum(1 for u, v in G.edges() if {G.nodes[u]["group"], G.nodes[v]["group"]} == {others[0], others[1]}) \
            if len(others) > 1 else 0
        sc.notes.append(f"the collapsed groups are joined to each other the same way ({n_pair} optical link(s) "
                        f"per pair of groups, not drawn)")
    return sc


# ---------------------------------------------------------------------------------------
# Generic layout
# ---------------------------------------------------------------------------------------
def _generic(G: nx.Graph, expand, focus: Iterable) -> _Scene:
    chip_nodes = _chip_nodes(G) or list(G)
    shown = chip_nodes[:GENERIC_MAX_CHIPS]
    name = G.graph.get("name", "fabric")
    sc = _ring_scene(G, shown, f"{name}: {len(chip_nodes):,} chips")
    if len(shown) < len(chip_nodes):
        sc.subtitle = f"the first {len(shown)} chips by rank and the links among them"
    return sc


_LAYOUTS = {"layered": _layered, "torus": _torus, "boardfly": _boardfly, "generic": _generic}


# ---------------------------------------------------------------------------------------
# Drawn links
# ---------------------------------------------------------------------------------------
@dataclass
class _DrawnEdge:
    a: Any
    b: Any
    tier: str
    medium: str
    members: list          # physical bundles (u, v) it stands for
    capacity_gbps: float
    wrap: bool = False


def _drawn_edges(G: nx.Graph, sc: _Scene) -> tuple[list, dict]:
    """Bundles between drawn elements, and the bundles hidden inside each collapsed box."""
    agg: dict = {}
    inside: dict = defaultdict(list)
    order = {k: i for i, k in enumerate(sc.elems)}
    for u, v, d in G.edges(data=True):
        a, b = sc.rep.get(u), sc.rep.get(v)
        if a is None or b is None:
            continue
        if a == b:
            if a in sc.collapsed:
                inside[a].append((u, v))
            continue
        # a clustered row (a rail's switches) takes one line per element and cluster
        a, b = sc.cluster_of.get(u, a), sc.cluster_of.get(v, b)
        if a == b:
            continue
        if a in sc.collapsed and b in sc.collapsed and not sc.between_collapsed:
            continue
        if order.get(a, 0) > order.get(b, 0):
            a, b = b, a
        # a ring of 2 is one doubled bundle between grid neighbours: drawn straight
        wrap = bool(d.get("wrap")) and sc.stub > 0 and math.dist(
            (sc.elems[a].x, sc.elems[a].y), (sc.elems[b].x, sc.elems[b].y)) > sc.pitch * 1.01
        key = (a, b, str(d.get(TIER, "?")), str(d.get(MEDIUM, "?")), wrap)
        e = agg.get(key)
        if e is None:
            e = agg[key] = _DrawnEdge(a, b, key[2], key[3], [], 0.0, wrap)
        e.members.append((u, v))
        e.capacity_gbps += float(d.get(CAPACITY_GBPS, d.get(LANES, 1) * d.get(LANE_GBPS, 1)))
    return list(agg.values()), inside


def _is_faint(sc: _Scene, e: "_DrawnEdge") -> bool:
    """Links of a faded plane (to its chips only) and the aggregated links of collapsed boxes."""
    for s, o in ((e.a, e.b), (e.b, e.a)):
        if s in sc.collapsed and sc.elems[o].kind != "chip":
            return True
    for s, o in ((e.a, e.b), (e.b, e.a)):
        if s in sc.faint and sc.elems[o].kind in ("chip", "tray"):
            return True
    return False


def _anchor(e: _Elem, toward: tuple[float, float]) -> tuple[float, float]:
    """Where a line from ``e`` toward a point leaves ``e``'s box (its centre for a point)."""
    if e.w <= 0 or e.h <= 0:
        return e.x, e.y
    dx, dy = toward[0] - e.x, toward[1] - e.y
    if dx == 0 and dy == 0:
        return e.x, e.y
    t = min(e.w / 2 / abs(dx) if dx else math.inf, e.h / 2 / abs(dy) if dy else math.inf)
    t = min(t, 1.0)
    return e.x + dx * t, e.y + dy * t


def _segments(sc: _Scene, e: _DrawnEdge) -> list:
    A, B = sc.elems[e.a], sc.elems[e.b]
    if e.wrap:
        # a wraparound link leaves each end away from the other end: two stubs
        dx, dy = B.x - A.x, B.y - A.y
        n = math.hypot(dx, dy) or 1.0
        ux, uy = dx / n, dy / n
        return [[(A.x, A.y), (A.x - ux * sc.stub, A.y - uy * sc.stub)],
                [(B.x, B.y), (B.x + ux * sc.stub, B.y + uy * sc.stub)]]
    if A.kind == B.kind == "switch" and abs(A.y - B.y) < 1e-9:
        # switches in one row (a dragonfly group's mesh): an arc above the row, higher
        # for farther pairs, so the links do not lie on top of each other
        d = abs(B.x - A.x)
        t = np.linspace(0.0, 1.0, 17)
        ys = A.y + A.h / 2 + min(0.36, 0.1 + 0.06 * d) * 4 * t * (1 - t)
        return [list(zip(A.x + (B.x - A.x) * t, ys))]
    return [[_anchor(A, (B.x, B.y)), _anchor(B, (A.x, A.y))]]


def _style_key(G: nx.Graph, edges: list) -> str:
    tiers = {e.tier for e in edges}
    media = {e.medium for e in edges}
    return "medium" if len(tiers) == 1 and len(media) > 1 else "tier"


def _color_for(value: str, table: dict, extra: dict) -> str:
    if value in table:
        return table[value]
    if value not in extra:
        extra[value] = EXTRA_COLORS[len(extra) % len(EXTRA_COLORS)]
    return extra[value]


def _bundle_text(G: nx.Graph, members: list) -> str:
    lanes, rate = Counter((G.edges[u, v].get(LANES), G.edges[u, v].get(LANE_GBPS)) for u, v in members) \
        .most_common(1)[0][0]
    return f"{lanes} x {float(rate):g}G"


# ---------------------------------------------------------------------------------------
# Utilization
# ---------------------------------------------------------------------------------------
def bundle_utilization(G: nx.Graph, link_utilization) -> dict:
    """Fold per-direction link utilization onto the physical bundles of ``G``.

    Parameters
    ----------
    G : networkx.Graph
    link_utilization : array_like of float, shape (L,), or mapping
        Utilization (0..1) of each directed link of
        :func:`fabricsim.topo.routing.link_table` ``(G)`` in its order; or a mapping
        ``{(u, v): utilization}`` over physical bundles (either direction).

    Returns
    -------
    dict
        ``frozenset({u, v}) -> utilization`` of the busier direction.  A patched
        circuit's load (``leaf=static``) is charged to both physical links it crosses.
    """
    if isinstance(link_utilization, Mapping):
        out: dict = {}
        for (u, v), x in link_utilization.items():
            k = frozenset((u, v))
            out[k] = max(out.get(k, 0.0), float(x))
        return out
    from .routing import link_table
    lt = link_table(G)
    util = np.asarray(link_utilization, dtype=float)
    if util.shape != (len(lt),):
        raise ValueError(f"link_utilization has shape {util.shape}; expected ({len(lt)},), one value per "
                         f"directed link of link_table(G)")
    load = util * lt.capacity_gbps
    by_name = {str(n): n for n in G}
    directed: dict = defaultdict(float)
    from .contract import forwarding_graph
    H = forwarding_graph(G)
    for l in np.flatnonzero(load > 0):
        a, b = lt.nodes[lt.src[l]], lt.nodes[lt.dst[l]]
        via = H.edges[a, b].get("via") if H is not G else None
        if via is not None and by_name.get(via) in G:
            p = by_name[via]
            directed[(a, p)] += load[l]
            directed[(p, b)] += load[l]
        else:
            directed[(a, b)] += load[l]
    out = {}
    for (a, b), x in directed.items():
        if not G.has_edge(a, b):
            continue
        cap = float(G.edges[a, b][CAPACITY_GBPS])
        k = frozenset((a, b))
        out[k] = max(out.get(k, 0.0), x / cap if cap > 0 else 0.0)
    return out


def _busiest_nodes(util: dict) -> list:
    if not util:
        return []
    top = max(util.values())
    return [n for k, v in sorted(util.items(), key=lambda kv: -kv[1]) if v >= top * (1 - 1e-6) for n in k]


# ---------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------
def _render(G: nx.Graph, sc: _Scene, *, util: dict | None = None, marked: set | None = None,
            title: str | None = None, dpi: float = 110) -> Figure:
    edges, inside = _drawn_edges(G, sc)
    color_by = _style_key(G, edges)
    extra: dict = {}
    leg_h = LEGEND_BAND
    W, H = sc.width, sc.height
    cbar = util is not None
    fig_w = W + (1.1 if cbar else 0.0)
    notes = list(sc.notes) + (list(sc.plane_notes) if util is None else [])
    inferred = str(G.graph.get("inferred", ""))
    if inferred:
        notes.append("inferred: " + (inferred if len(inferred) <= 110 else inferred[:107] + "..."))
    fig_h = H + leg_h + TITLE_BAND + 0.16 * len(notes)
    fig = Figure(figsize=(fig_w, fig_h), dpi=dpi)
    ax = fig.add_axes((0, leg_h / fig_h, W / fig_w, H / fig_h))
    ax.set_xlim(0, W)
    ax.set_ylim(0, H)
    ax.set_aspect("equal")
    ax.axis("off")
    head = title or sc.title
    fig.text(0.5 * W / fig_w, 1 - 0.12 / fig_h, head, ha="center", va="top", fontsize=13, weight="bold")
    sub = [sc.subtitle] if sc.subtitle else []
    fig.text(0.5 * W / fig_w, 1 - 0.45 / fig_h, "\n".join(sub + notes), ha="center", va="top", fontsize=9,
             color="#333333", linespacing=1.35)

    # frames (trays of switches, rails, cubes, boards, the slice strip, the expanded rack)
    for x0, y0, w, h, label, side in sc.frames:
        if side == "corner":
            ax.add_patch(Rectangle((x0, y0), w, h, facecolor="none", edgecolor="#4c78a8", lw=1.0,
                                   ls=(0, (5, 3)), zorder=0.4))
            ax.text(x0 + 0.06, y0 + h - 0.05, label, ha="left", va="top", fontsize=8, style="italic",
                    color="#4c78a8", zorder=4)
            continue
        if side == "ring":
            ax.add_patch(Circle((x0, y0), w, facecolor="#f4f4f4", edgecolor="#9a9a9a", lw=0.7, zorder=0.5))
            continue
        if side in ("strip", "strip-on"):
            ax.add_patch(Rectangle((x0, y0), w, h, facecolor="#4c78a8" if side == "strip-on" else "#dde3ea",
                                   edgecolor="#888888", lw=0.5, zorder=0))
            continue
        face = "#f7f7f7" if side in ("board",) else "none"
        ax.add_patch(Rectangle((x0, y0), w, h, facecolor=face, edgecolor="#9a9a9a", lw=0.7,
                               ls="-" if side != "inside" else (0, (3, 2)), zorder=0.5))
        if side == "corner":
            continue
        if label:
            if side == "inside":
                ax.text(x0 + 0.04, y0 + h - 0.03, label, ha="left", va="top", fontsize=6, color="#666666",
                        zorder=0.6)
            else:
                ty = y0 - 0.03 if side == "below" else y0 + h + 0.03
                ax.text(x0 + w / 2, ty, label, ha="center", va="top" if side == "below" else "bottom",
                        fontsize=7, color="#333333", bbox=LABEL_BOX, zorder=4)

    # links: width by the capacity of one bundle, faint for the repeated planes and for
    # the aggregated lines of collapsed boxes
    full = [e for e in edges if not _is_faint(sc, e)]
    alpha = sc.strong_alpha or min(0.9, max(0.3, 6.0 / math.sqrt(max(1, len(full)))))
    per_bundle = [e.capacity_gbps / len(e.members) for e in edges] or [1.0]
    cmax = max(per_bundle)
    norm = Normalize(0.0, 1.0)
    cmap = colormaps["viridis"]
    legend_links: dict = {}
    marked_lines = []
    hot_edges = [e for e in edges if marked and any(frozenset(m) in marked for m in e.members)] \
        if util is not None else []
    hot_boxes = {k for k, ms in inside.items() if marked and any(frozenset(m) in marked for m in ms)}
    # many lines tied at the top (an all-to-all saturating a whole tier): the colour says
    # it; outlining them all would only hide the drawing
    outline = 0 < len(hot_edges) + len(hot_boxes) <= 24
    by_style: dict = defaultdict(list)
    for e, cap in zip(edges, per_bundle):
        ls = MEDIUM_STYLES.get(e.medium, "-")
        faint = _is_faint(sc, e)
        lw = 0.7 if faint else 0.8 + 1.0 * math.sqrt(cap / cmax)
        if util is None:
            key = e.medium if color_by == "medium" else e.tier
            color = _color_for(key, MEDIUM_COLORS if color_by == "medium" else TIER_COLORS, extra)
            label = e.medium if color_by == "medium" else f"{e.tier} tier, {e.medium}"
            span = G.edges[e.members[0]].get("span")
            if span and color_by == "medium":
                label = f"{e.medium}, {SPAN_WORDS.get(span, span)}"
            legend_links.setdefault((label, ls), (color, _bundle_text(G, e.members)))
            a = (0.3 if e.a in sc.collapsed or e.b in sc.collapsed else 0.08) if faint else alpha
        else:
            u_max = max((util.get(frozenset(m), 0.0) for m in e.members), default=0.0)
            color = cmap(norm(min(u_max, 1.0))) if u_max > 0 else "#cccccc"
            if outline and e in hot_edges:
                marked_lines.extend(_segments(sc, e))
            legend_links.setdefault((f"{e.medium} link", ls), ("#555555", ""))
            a = 0.9
            if faint and (e.a in sc.collapsed or e.b in sc.collapsed):
                lw = 0.8
        for seg in _segments(sc, e):
            by_style[(color, ls, round(lw, 2), a)].append(seg)
    from matplotlib.collections import LineCollection
    if marked_lines:
        ax.add_collection(LineCollection(marked_lines, colors=BOTTLENECK_COLOR, linewidths=4.5, alpha=0.5,
                                         zorder=1.0, capstyle="round"))
    for (color, ls, lw, a), segs in sorted(by_style.items(), key=lambda kv: kv[0][3]):
        ax.add_collection(LineCollection(segs, colors=[color], linestyles=[ls], linewidths=lw, alpha=a,
                                         zorder=1.2))
    if sc.stub:
        # arrowheads at the stub tips: the link continues at the opposite edge
        for e in edges:
            if e.wrap and (util is not None or not _is_faint(sc, e)):
                for (x0, y0), (x1, y1) in _segments(sc, e):
                    ang = math.degrees(math.atan2(y1 - y0, x1 - x0))
                    ax.plot([x1], [y1], marker=(3, 0, ang - 90), markersize=4.5, color="#555555", zorder=1.3,
                            ls="")

    # trays and collapsed boxes
    for e in sc.elems.values():
        if e.kind == "tray":
            ax.add_patch(Rectangle((e.x - e.w / 2, e.y - e.h / 2), e.w, e.h, facecolor="white",
                                   edgecolor="#777777", lw=0.7, zorder=2))
            if e.label:
                ax.text(e.x, e.y - e.h / 2 - 0.03, e.label, ha="center", va="top", fontsize=6, color="#555555",
                        zorder=4, bbox=LABEL_BOX)
        elif e.kind == "box":
            face = BOX_FACE
            text = e.label
            if util is not None:
                inner = max((util.get(frozenset(m), 0.0) for m in inside.get(e.key, [])), default=0.0)
                face = cmap(norm(min(inner, 1.0))) if inner > 0 else BOX_FACE
                text += f"\n{inner:.0%}"
                hatch = "////" if outline and e.key in hot_boxes else None
            else:
                hatch = None
            ax.add_patch(Rectangle((e.x - e.w / 2, e.y - e.h / 2), e.w, e.h, facecolor=face,
                                   edgecolor=BOTTLENECK_COLOR if hatch else "#555555", lw=0.9, zorder=2,
                                   hatch=hatch))
            dark = util is not None and face != BOX_FACE and norm(inner) < 0.55
            ax.text(e.x, e.y, text, ha="center", va="center", fontsize=7 if e.w > 0.45 else 6, zorder=4,
                    color="white" if dark else "black", linespacing=1.1)

    # chips
    pts = [(x, y) for x, y, _ in sc.dots] + [(e.x, e.y) for e in sc.elems.values() if e.kind == "chip"]
    if pts:
        P = np.array(pts)
        ax.scatter(P[:, 0], P[:, 1], s=sc.chip_size, c=CHIP_COLOR, marker="o", linewidths=0, zorder=3)
    for e in sc.elems.values():
        if e.kind == "chip" and e.label:
            ax.text(e.x, e.y - 0.12, e.label, ha="center", va="top", fontsize=6, zorder=4)

    # switches
    roles_seen: dict = {}
    for e in sc.elems.values():
        if e.kind != "switch":
            continue
        color = _color_for(e.role, ROLE_COLORS, extra)
        roles_seen[e.role] = color
        patch = bool(G.nodes[e.key].get("patch")) if e.key in G else False
        ax.add_patch(Rectangle((e.x - e.w / 2, e.y - e.h / 2), e.w, e.h, facecolor=color, edgecolor="black",
                               lw=0.6, zorder=3, hatch="xxx" if patch else None))
        if e.label:
            below = -1 if e.label_below else 1
            ax.text(e.x, e.y + below * (e.h / 2 + 0.04), e.label, ha="center",
                    va="top" if e.label_below else "bottom", fontsize=6.5, zorder=4, bbox=LABEL_BOX)

    # row labels and free text
    for y, text in sc.row_labels:
        ax.text(0.12, y, text, ha="left", va="center", fontsize=8, color="#222222")
    for x, y, text, kw in sc.texts:
        ax.text(x, y, text, zorder=4, **kw)

    # legend: nodes, then links
    handles = []
    if pts:
        handles.append(Line2D([], [], ls="", marker="o", color=CHIP_COLOR, markersize=5, label="chip"))
    for role, color in roles_seen.items():
        patched = any(G.nodes[n].get("patch") for n in G if G.nodes[n].get(ROLE) == role)
        handles.append(Patch(facecolor=color, edgecolor="black", hatch="xxx" if patched else None,
                             label=f"{role} switch" + (" (static patch)" if patched else "")))
    if sc.collapsed:
        handles.append(Patch(facecolor=BOX_FACE, edgecolor="#555555", label=sc.collapsed_label))
    for (label, ls), (color, bundle) in legend_links.items():
        handles.append(Line2D([], [], color=color, ls=ls, lw=2, label=label + (f" ({bundle})" if bundle else "")))
    if sc.stub:
        handles.append(Line2D([0, 1], [0, 0], color="#555555", lw=1.5, marker=">", markevery=[1], markersize=5,
                              label="wraparound link (continues at the opposite edge)"))
    if util is not None and marked:
        top = max(util.get(k, 0.0) for k in marked)
        if outline:
            handles.append(Line2D([], [], color=BOTTLENECK_COLOR, lw=4, alpha=0.55,
                                  label=f"bottleneck: {len(marked):,} bundle(s) at {top:.0%}"))
        else:
            handles.append(Line2D([], [], color=cmap(norm(min(top, 1.0))), lw=3,
                                  label=f"bottleneck: {len(marked):,} bundles tied at {top:.0%} "
                                        f"(every line in this colour)"))
    if handles:
        ncol = max(1, min(len(handles), int(fig_w // 3.4), 4))
        fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5 * W / fig_w, 0.0), columnspacing=1.4, handlelength=2.6)
    if cbar:
        cax = fig.add_axes((W / fig_w + 0.25 / fig_w, (leg_h + 0.3) / fig_h, 0.18 / fig_w, (H - 0.6) / fig_h))
        from matplotlib.cm import ScalarMappable
        cb = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), cax=cax)
        cb.set_label("link utilization over the bandwidth time (%)", fontsize=8)
        cb.set_ticks([0, 0.25, 0.5, 0.75, 1.0], labels=["0", "25", "50", "75", "100"])
        cb.ax.tick_params(labelsize=7)
    return fig


def _parse_expand(expand):
    """Command-line spellings: ``"3"`` -> 3, ``"1,2"`` -> (1, 2), ``"all"`` stays."""
    if not isinstance(expand, str) or expand == "all":
        return expand
    parts = [p.strip() for p in expand.split(",")]
    try:
        vals = tuple(int(p) for p in parts)   # '' and '1,,2' fail here: no index to expand
    except ValueError:
        raise ValueError(f"expand={expand!r}: give a rack, group or slice number (e.g. 3), numbers joined by "
                         f"commas for a torus slice (e.g. 1,2), or 'all'") from None
    return vals[0] if len(vals) == 1 else vals


def _scene(G: nx.Graph, expand, focus=()) -> _Scene:
    if G.number_of_nodes() == 0:
        raise ValueError("cannot draw an empty graph")
    return _LAYOUTS[layout_kind(G)](G, _parse_expand(expand), focus)


def fabric_figure(G: nx.Graph, *, expand=None, title: str | None = None, dpi: float = 110) -> Figure:
    """Draw ``G`` at a level that stays readable; return the Figure.

    Parameters
    ----------
    G : networkx.Graph
        A fabric graph (catalog, user file or a degraded copy).
    expand : int, tuple, list, str or "all", optional
        What to draw in full: a rack (or dragonfly/Boardfly group) value for layered
        and Boardfly fabrics, a slice index along the third ring dimension (or a tuple
        of the remaining coordinates) for a torus.  The first by default.  Strings
        as a command line gives them are read too: ``"3"``, ``"1,2"``, ``"all"``.
    title : str, optional
        Replaces the generated title.
    dpi : float
        Resolution of raster output.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> fig = fabric_figure(build("nvl72"))
    >>> round(fig.get_figwidth())
    14
    """
    sc = _scene(G, expand)
    return _render(G, sc, title=title, dpi=dpi)


def _save(fig: Figure, path) -> Path:
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise ValueError(f"cannot save to {str(p)!r}: directory {str(p.parent)!r} does not exist")
    fig.savefig(p, dpi=fig.dpi, facecolor="white")
    return p


def draw_fabric(G: nx.Graph, path, *, expand=None, title: str | None = None, dpi: float = 110) -> Path:
    """Draw ``G`` (see :func:`fabric_figure`) and save it to ``path``; return the path.

    The format follows the suffix (``.png``, ``.svg``, ``.pdf``).

    Examples
    --------
    >>> import tempfile, os
    >>> from fabricsim.fabrics import build
    >>> out = draw_fabric(build("jalapeno-rack"), os.path.join(tempfile.mkdtemp(), "rack.svg"))
    >>> out.suffix, out.stat().st_size > 0
    ('.svg', True)
    """
    return _save(fabric_figure(G, expand=expand, title=title, dpi=dpi), path)


def utilization_figure(G: nx.Graph, link_utilization, *, expand=None, bottlenecks=None,
                       title: str | None = None, dpi: float = 110) -> Figure:
    """The drawing of ``G`` with links coloured by utilization and the bottlenecks marked.

    Parameters
    ----------
    G : networkx.Graph
    link_utilization : array_like or mapping
        As :func:`bundle_utilization` takes it: one value per directed link of
        ``link_table(G)`` (0..1), or ``{(u, v): utilization}``.
    expand : optional
        As :func:`fabric_figure`; by default the rack, group or slice holding the
        busiest link.
    bottlenecks : iterable, optional
        Links to mark: ``(u, v)`` pairs or ``"u -> v"`` strings (as in
        ``CostReport.bottlenecks``).  By default every bundle at the top utilization.

    Notes
    -----
    A line standing for several bundles (a tray's links to a switch, a collapsed
    rack's links to a rail) shows the busiest of them; a collapsed box is filled
    with the busiest utilization inside it.
    """
    util = bundle_utilization(G, link_utilization)
    if bottlenecks is None:
        top = max(util.values(), default=0.0)
        marked = {k for k, v in util.items() if top > 0 and v >= top * (1 - 1e-6)}
    else:
        by_name = {str(n): n for n in G}
        marked = set()
        for b in bottlenecks:
            if isinstance(b, Mapping):
                b = b.get("link", "")
            if isinstance(b, str):
                u, _, v = b.partition(" -> ")
                u, v = by_name.get(u.strip()), by_name.get(v.strip())
            else:
                u, v = b
            if u is not None and v is not None and G.has_edge(u, v):
                marked.add(frozenset((u, v)))
    ranked = sorted(marked, key=lambda k: (-util.get(k, 0.0), min(map(str, k))))
    focus = [n for k in ranked for n in sorted(k, key=str)] or _busiest_nodes(util)
    sc = _scene(G, expand, focus)
    top = max(util.values(), default=0.0)
    name = G.graph.get("name", "fabric")
    head = title or f"{name}: link utilization (busiest {top:.0%})"
    return _render(G, sc, util=util, marked=marked, title=head, dpi=dpi)


def draw_utilization(G: nx.Graph, link_utilization, path, *, expand=None, bottlenecks=None,
                     title: str | None = None, dpi: float = 110) -> Path:
    """Save :func:`utilization_figure` to ``path``; return the path."""
    return _save(utilization_figure(G, link_utilization, expand=expand, bottlenecks=bottlenecks,
                                    title=title, dpi=dpi), path)
