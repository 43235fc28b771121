"""An independent reference for chip-to-chip hop counts, shared by the builder and catalog tests.

Deliberately not the audit's code: plain BFS over an adjacency in which only nodes
with ``forwards=True`` have out-links, so a chip can end a path but never relay one.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path


def hop_matrix(G: nx.Graph, sources) -> tuple[np.ndarray, list]:
    """Hops (links traversed) from each source to every node; a source leaves through its own links."""
    nodes = list(G)
    index = {n: i for i, n in enumerate(nodes)}
    rows, cols = [], []
    for u, v in G.edges():
        for a, b in ((u, v), (v, u)):
            if G.nodes[a]["forwards"]:
                rows.append(index[a]); cols.append(index[b])
    A = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(nodes),) * 2)
    nbrs = sorted({index[m] for s in sources for m in G[s]})
    D = shortest_path(A, directed=True, unweighted=True, indices=nbrs)
    pos = {k: i for i, k in enumerate(nbrs)}
    out = np.empty((len(sources), len(nodes)))
    for r, s in enumerate(sources):
        out[r] = 1 + D[[pos[index[m]] for m in G[s]]].min(axis=0)
        out[r, index[s]] = 0
    return out, nodes


def chip_ids(G: nx.Graph) -> list:
    return [n for n, d in G.nodes(data=True) if d["kind"] == "chip"]


def chip_diameter(G: nx.Graph, sources=None) -> int:
    D, nodes = hop_matrix(G, chip_ids(G) if sources is None else sources)
    cols = [i for i, n in enumerate(nodes) if G.nodes[n]["kind"] == "chip"]
    return int(D[:, cols].max())
