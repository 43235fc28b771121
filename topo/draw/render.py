"""Links as drawn, utilization folded onto bundles, and the rendering of a scene into a Figure."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Mapping

import networkx as nx
import numpy as np
from matplotlib import colormaps
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Patch, Rectangle

from ..contract import CAPACITY_GBPS, LANES, LANE_GBPS, MEDIUM, ROLE, TIER
from ._common import (BOTTLENECK_COLOR, BOX_FACE, CHIP_COLOR, EXTRA_COLORS, LABEL_BOX, LEGEND_BAND, MEDIUM_COLORS,
                      MEDIUM_STYLES, ROLE_COLORS, SPAN_WORDS, TIER_COLORS, TITLE_BAND, _Elem, _Scene)

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
    from ..routing import link_table
    lt = link_table(G)
    util = np.asarray(link_utilization, dtype=float)
    if util.shape != (len(lt),):
        raise ValueError(f"link_utilization has shape {util.shape}; expected ({len(lt)},), one value per "
                         f"directed link of link_table(G)")
    load = util * lt.capacity_gbps
    by_name = {str(n): n for n in G}
    directed: dict = defaultdict(float)
    from ..contract import forwarding_graph
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
            title: str | None = None, dpi: float = 110, ax=None) -> Figure:
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
    own = ax is None                     # our own Figure, sized to the scene; else draw into the caller's Axes
    if own:
        fig = Figure(figsize=(fig_w, fig_h), dpi=dpi)
        ax = fig.add_axes((0, leg_h / fig_h, W / fig_w, H / fig_h))
    else:
        fig = ax.figure
    ax.set_xlim(0, W)
    ax.set_ylim(0, H)
    ax.set_aspect("equal")
    ax.axis("off")
    head = title or sc.title
    sub = [sc.subtitle] if sc.subtitle else []
    if own:
        fig.text(0.5 * W / fig_w, 1 - 0.12 / fig_h, head, ha="center", va="top", fontsize=13, weight="bold")
        fig.text(0.5 * W / fig_w, 1 - 0.45 / fig_h, "\n".join(sub + notes), ha="center", va="top", fontsize=9,
                 color="#333333", linespacing=1.35)
    else:
        ax.set_title("\n".join([head] + sub + notes), fontsize=9, linespacing=1.3)

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
        if own:
            fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=8, frameon=False,
                       bbox_to_anchor=(0.5 * W / fig_w, 0.0), columnspacing=1.4, handlelength=2.6)
        else:
            ax.legend(handles=handles, loc="upper center", ncol=ncol, fontsize=7, frameon=False,
                      bbox_to_anchor=(0.5, 0.0), columnspacing=1.4, handlelength=2.6)
    if cbar:
        from matplotlib.cm import ScalarMappable
        if own:
            cax = fig.add_axes((W / fig_w + 0.25 / fig_w, (leg_h + 0.3) / fig_h, 0.18 / fig_w, (H - 0.6) / fig_h))
            cb = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), cax=cax)
        else:
            cb = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, fraction=0.04)
        cb.set_label("link utilization over the bandwidth time (%)", fontsize=8)
        cb.set_ticks([0, 0.25, 0.5, 0.75, 1.0], labels=["0", "25", "50", "75", "100"])
        cb.ax.tick_params(labelsize=7)
    return fig
