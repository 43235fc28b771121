"""A per-graph cache of what routing derives from a fabric graph, valid while the graph is pinned.

Pricing a collective rebuilds, from the graph, its link table, then routes and symmetry folds
of the phase's pairs; a caller that prices hundreds of collectives on one graph it does not
change (``fabricsim serve``'s concurrency x mesh search: the same TP / EP groups at many token
counts) pays that again on every :func:`~fabricsim.collectives.price` call.  :func:`pinned`
marks a graph unchanged for a block; inside it :func:`memo` keeps what routing derives from
the graph (``link_table``, ``route``, ``fold``), keyed by the call's own inputs, and outside
any block it builds every time (no cache, no staleness).

Invalidation: the cache belongs to the block, not to the graph: it is dropped when the
outermost block for that graph ends.  A degraded copy (``apply_failures``) is another graph
object with its own block.  A graph edited in place inside its block breaks the block's promise:
a node added or removed raises at the next lookup (the node count is checked on every lookup,
O(1)), an edge added or removed raises when the outermost block ends (counting edges costs a
pass over the nodes, too much per lookup); an edge attribute edited in place is not detected
(checking it would cost what the link table costs to build) -- pin only where nothing edits the
graph.

Examples
--------
>>> from fabricsim.fabrics import build
>>> from fabricsim.topo.routing import link_table
>>> G = build("jalapeno-rack")
>>> link_table(G) is link_table(G)          # not pinned: built each time
False
>>> with pinned(G):
...     link_table(G) is link_table(G)
True
"""
from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import Any, Callable, Hashable, Iterator

import networkx as nx

__all__ = ["pinned", "memo", "is_pinned", "stats"]


class _Entry:
    __slots__ = ("depth", "size", "store", "hits", "misses")

    def __init__(self, nodes: int, edges: int):
        self.depth, self.size, self.store, self.hits, self.misses = 0, (nodes, edges), {}, 0, 0


_PINNED: "weakref.WeakKeyDictionary[nx.Graph, _Entry]" = weakref.WeakKeyDictionary()


def _changed(G: nx.Graph, e: _Entry, edges: bool) -> str | None:
    now = (len(G), G.number_of_edges() if edges else e.size[1])
    if now == e.size:
        return None
    return (f"graph {G.graph.get('name', '?')!r} changed ({e.size[0]:,} nodes / {e.size[1]:,} edges -> "
            f"{now[0]:,} / {now[1]:,}) inside a pinned() block; degrade a copy "
            f"(topo.failures.apply_failures) instead")


@contextmanager
def pinned(G: nx.Graph) -> Iterator[nx.Graph]:
    """Promise ``G`` is not edited inside the block: routing's products are cached for it until the
    outermost block for ``G`` ends (blocks nest).  Yields ``G``."""
    e = _PINNED.get(G)
    if e is None:
        e = _PINNED[G] = _Entry(len(G), G.number_of_edges())
    e.depth += 1
    try:
        yield G
    finally:
        e.depth -= 1
        if e.depth == 0:
            _PINNED.pop(G, None)
            why = _changed(G, e, edges=True)
            if why:
                raise RuntimeError(why)


def is_pinned(G: nx.Graph) -> bool:
    """Whether ``G`` is inside a :func:`pinned` block."""
    return G in _PINNED


def memo(G: nx.Graph, key: Hashable, build: Callable[[], Any]) -> Any:
    """``build()``'s value for ``key`` on ``G``: cached while ``G`` is pinned, built every time otherwise."""
    e = _PINNED.get(G)
    if e is None:
        return build()
    why = len(G) != e.size[0] and _changed(G, e, edges=False)
    if why:
        raise RuntimeError(why)
    try:
        v = e.store[key]
        e.hits += 1
        return v
    except KeyError:
        e.misses += 1
        v = e.store[key] = build()
        return v


def stats(G: nx.Graph) -> dict[str, int]:
    """``{"entries", "hits", "misses"}`` of ``G``'s cache (zeros when it is not pinned)."""
    e = _PINNED.get(G)
    return {"entries": len(e.store), "hits": e.hits, "misses": e.misses} if e else \
        {"entries": 0, "hits": 0, "misses": 0}
