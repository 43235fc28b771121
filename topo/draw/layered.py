"""The layered layout (switches present): tiers as layers, one rack or group expanded."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Iterable

import networkx as nx

from ..errors import BadInput
from ..contract import CHIP, KIND, LANES, RANK, ROLE, SWITCH
from ._common import (LEFT_MARGIN, _Elem, _Scene, _chip_nodes, _domain_attr, _grid_dims, _levels, _pick, _short,
                      _spread, _switch_nodes)
from .render import _bundle_text

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
        raise BadInput(f"expand={expand!r}: {G.graph.get('name', 'this fabric')} is a single "
                         f"{dom or 'domain'}, drawn whole; there is nothing to expand", param="expand")
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
