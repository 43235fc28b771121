"""topo.graphcache: routing's products cached while a graph is pinned give the same answers."""
import networkx as nx
import numpy as np
import pytest

from fabricsim.collectives import by_size, price
from fabricsim.collectives.serve import serve
from fabricsim.fabrics import build
from fabricsim.topo import routing
from fabricsim.topo.graphcache import is_pinned, pinned, stats


def _report(r):
    return (r.time_s, r.algorithm, r.protocol, r.bound_s, r.latency_s, tuple(np.asarray(r.group_time_s).tolist()))


@pytest.mark.parametrize("fabric,collective,n", [("jalapeno-rack", "all-reduce", 8), ("nvl72", "all-to-all", 8),
                                                  ("jalapeno-pod", "all-reduce", 16)])
def test_cached_price_equals_uncached(fabric, collective, n):
    G = build(fabric)
    groups = by_size(G, n)
    plain = [_report(price(G, collective, groups=groups, size_bytes=s)) for s in (2**14, 2**20, 2**14)]
    with pinned(G):
        cached = [_report(price(G, collective, groups=groups, size_bytes=s)) for s in (2**14, 2**20, 2**14)]
        assert stats(G)["hits"] > 0          # the second and third prices reuse the first's routes
    assert cached == plain


def test_cached_serve_equals_uncached():
    """serve pins its graph; the same sweep priced with routing rebuilt per price agrees exactly."""
    G = build("jalapeno-rack")
    kw = dict(mesh="tp=8,ep=16", concurrency=16)
    a = serve(G, "deepseek-r1", **kw)
    import fabricsim.topo.graphcache as gc
    real = gc.pinned

    class _NoPin:                            # a pinned() that caches nothing
        def __init__(self, G):
            pass

        def __enter__(self):
            return None

        def __exit__(self, *exc):
            return False

    import fabricsim.collectives.serve.sweep as sw
    sw.pinned = _NoPin
    try:
        b = serve(G, "deepseek-r1", **kw)
    finally:
        sw.pinned = real
    assert a.as_dict() == b.as_dict()
    assert a.points[0].decode.as_dict() == b.points[0].decode.as_dict()


def test_unpinned_builds_every_time_and_block_ends_the_cache():
    G = build("jalapeno-rack")
    assert routing.link_table(G) is not routing.link_table(G)
    with pinned(G):
        with pinned(G):                      # blocks nest
            t = routing.link_table(G)
        assert routing.link_table(G) is t and is_pinned(G)
    assert not is_pinned(G) and routing.link_table(G) is not t


def test_routes_cached_per_pairs_and_split():
    G = build("jalapeno-rack")
    with pinned(G):
        a = routing.route(G, [0, 5], [1, 9])
        assert routing.route(G, np.array([0, 5]), np.array([1, 9])) is a
        assert routing.route(G, [0, 5], [1, 10]) is not a
        assert routing.route(G, [0, 5], [1, 9], split="capacity") is not a


def test_a_degraded_copy_is_another_graph():
    """A failure applied to a copy changes the answer inside the intact graph's block."""
    from fabricsim.topo.failures import apply_failures
    G = build("jalapeno-rack")
    H, _ = apply_failures(G, ["node:r00/lsw0"])
    groups = by_size(G, 8)
    with pinned(G), pinned(H):
        g = price(G, "all-reduce", groups=groups, size_bytes=2**24).time_s
        h = price(H, "all-reduce", groups=groups, size_bytes=2**24).time_s
    assert h > g
    assert h == price(H, "all-reduce", groups=groups, size_bytes=2**24).time_s


def test_editing_the_graph_inside_a_block_is_refused():
    G = build("jalapeno-rack")
    with pytest.raises(RuntimeError, match="inside a pinned"):      # and again when the block ends
        with pinned(G):
            routing.link_table(G)
            G.remove_node(next(n for n, d in G.nodes(data=True) if d.get("kind") == "switch"))
            with pytest.raises(RuntimeError, match="inside a pinned"):
                routing.link_table(G)


def test_an_edge_removed_inside_a_block_is_refused_when_it_ends():
    G = build("jalapeno-rack")
    with pytest.raises(RuntimeError, match="inside a pinned"):
        with pinned(G):
            routing.link_table(G)
            G.remove_edge(*next(iter(G.edges)))
    assert not is_pinned(G)
