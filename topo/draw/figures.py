"""The public drawing functions: pick the layout from the graph's structure, render, save."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import networkx as nx
from matplotlib.figure import Figure

from ..errors import BadInput
from ._common import _Scene, layout_kind
from .boardfly import _boardfly
from .generic import _generic
from .layered import _layered
from .render import _busiest_nodes, _render, bundle_utilization
from .torus import _torus

_LAYOUTS = {"layered": _layered, "torus": _torus, "boardfly": _boardfly, "generic": _generic}


def _parse_expand(expand):
    """Command-line spellings: ``"3"`` -> 3, ``"1,2"`` -> (1, 2), ``"all"`` stays."""
    if not isinstance(expand, str) or expand == "all":
        return expand
    parts = [p.strip() for p in expand.split(",")]
    try:
        vals = tuple(int(p) for p in parts)   # '' and '1,,2' fail here: no index to expand
    except ValueError:
        raise BadInput(f"expand={expand!r}: give a rack, group or slice number (e.g. 3), numbers joined by "
                         f"commas for a torus slice (e.g. 1,2), or 'all'", param="expand") from None
    return vals[0] if len(vals) == 1 else vals


def _scene(G: nx.Graph, expand, focus=()) -> _Scene:
    if G.number_of_nodes() == 0:
        raise BadInput("cannot draw an empty graph", param="fabric")
    return _LAYOUTS[layout_kind(G)](G, _parse_expand(expand), focus)


def fabric_figure(G: nx.Graph, *, expand=None, title: str | None = None, dpi: float = 110, ax=None) -> Figure:
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
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes (its Figure is returned) instead of a new Figure sized to the drawing.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> fig = fabric_figure(build("nvl72"))
    >>> round(fig.get_figwidth())
    14
    """
    sc = _scene(G, expand)
    return _render(G, sc, title=title, dpi=dpi, ax=ax)


def _save(fig: Figure, path) -> Figure:
    """Write ``fig`` to ``path`` when one is given (format from the suffix); return ``fig``."""
    if path is None:
        return fig
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise ValueError(f"cannot save to {str(p)!r}: directory {str(p.parent)!r} does not exist")
    fig.savefig(p, dpi=fig.dpi, facecolor="white")
    return fig


def draw_fabric(G: nx.Graph, path=None, *, expand=None, title: str | None = None, dpi: float = 110,
                ax=None) -> Figure:
    """Draw ``G`` (see :func:`fabric_figure`); write it to ``path`` if one is given; return the Figure.

    Parameters
    ----------
    G : networkx.Graph
    path : str or Path, optional
        The format follows the suffix (``.png``, ``.svg``, ``.pdf``); nothing is written without it.
    expand, title, dpi
        As :func:`fabric_figure`.
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes; the returned Figure is its Figure.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import tempfile, os
    >>> from fabricsim.fabrics import build
    >>> out = os.path.join(tempfile.mkdtemp(), "rack.svg")
    >>> fig = draw_fabric(build("jalapeno-rack"), out)
    >>> type(fig).__name__, os.path.getsize(out) > 0
    ('Figure', True)
    """
    return _save(fabric_figure(G, expand=expand, title=title, dpi=dpi, ax=ax), path)


def utilization_figure(G: nx.Graph, link_utilization, *, expand=None, bottlenecks=None,
                       title: str | None = None, dpi: float = 110, ax=None) -> Figure:
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
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes instead of a new Figure.

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
    return _render(G, sc, util=util, marked=marked, title=head, dpi=dpi, ax=ax)


def draw_utilization(G: nx.Graph, link_utilization, path=None, *, expand=None, bottlenecks=None,
                     title: str | None = None, dpi: float = 110, ax=None) -> Figure:
    """:func:`utilization_figure`, written to ``path`` if one is given; return the Figure."""
    return _save(utilization_figure(G, link_utilization, expand=expand, bottlenecks=bottlenecks,
                                    title=title, dpi=dpi, ax=ax), path)
