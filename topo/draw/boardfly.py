"""The Boardfly layout: one group's boards on a circle, the other groups collapsed around it."""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable

import networkx as nx

from ..contract import RANK
from ._common import _Elem, _Scene, _chip_nodes, _pick

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
