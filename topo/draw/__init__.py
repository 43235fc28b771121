"""Drawings of fabric graphs, with the layout chosen from the graph's structure.

Public names
------------
fabric_figure(G, *, expand=None, ...) -> matplotlib.figure.Figure
    The drawing as a Figure (for notebooks and for callers that add to it).
draw_fabric(G, path=None, *, expand=None, ax=None, ...) -> matplotlib.figure.Figure
    ``fabric_figure``, written to ``path`` when one is given (``.png``, ``.svg``, ``.pdf`` ...).
utilization_figure(G, link_utilization, *, ...) -> matplotlib.figure.Figure
draw_utilization(G, link_utilization, path=None, *, ax=None, ...) -> matplotlib.figure.Figure
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

Modules
-------
``figures`` the public functions; ``layered``, ``torus``, ``boardfly``, ``generic`` one layout each (a
scene: what is drawn where); ``render`` links as drawn, utilization per bundle, a scene into a Figure;
``_common`` units, colours and the scene's classes.
"""
from .figures import draw_fabric, draw_utilization, fabric_figure, utilization_figure
from ._common import layout_kind
from .render import bundle_utilization

__all__ = ["fabric_figure", "draw_fabric", "utilization_figure", "draw_utilization", "layout_kind",
           "bundle_utilization"]
