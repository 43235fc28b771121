"""The torus layout: one 2D slice of the first two ring dimensions, wraparound links as stubs."""
from __future__ import annotations

import math
from typing import Iterable

import networkx as nx

from ..errors import BadInput
from ._common import _Elem, _Scene, _chip_nodes, _pick, _short

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
        raise BadInput(f"expand={expand!r}: a 2D torus is drawn whole; there is no slice to choose", param="expand")
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
        raise BadInput(f"expand={expand!r}: a torus expands one slice, given as an index along "
                         f"{rest[0]} or a tuple of ({', '.join(rest)})", param="expand")
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
