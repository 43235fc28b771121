"""The generic layout: chips on a circle."""
from __future__ import annotations

from typing import Iterable

import networkx as nx

from ._common import GENERIC_MAX_CHIPS, _Scene, _chip_nodes
from .torus import _ring_scene

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
