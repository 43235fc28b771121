"""All-to-all-v: per-flow bytes on the existing all-to-all algorithms (issue 15, core only)."""
import numpy as np
import pytest

from fabricsim.collectives import by_size, price
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput

S = 2.0**26


@pytest.mark.parametrize("alg,n", [("direct", 128), ("pairwise", 16)])
def test_uniform_matrix_prices_as_uniform_all_to_all(alg, n):
    G = build("jalapeno-rack")
    g = by_size(G, n)
    r0 = price(G, "all-to-all", groups=g, size_bytes=S, algorithm=alg)
    r1 = price(G, "all-to-all", groups=g, traffic=np.full((n, n), S / n), algorithm=alg)
    assert r1.time_s == pytest.approx(r0.time_s, rel=1e-9)
    assert r1.size_bytes == pytest.approx(S, rel=1e-12)


def test_uniform_matrix_hierarchical_across_racks():
    G = build("jalapeno-pod", racks=2)
    g = by_size(G, 256)
    r0 = price(G, "all-to-all", groups=g, size_bytes=S, algorithm="hierarchical")
    r1 = price(G, "all-to-all", groups=g, traffic=np.full((256, 256), S / 256), algorithm="hierarchical")
    assert r1.time_s == pytest.approx(r0.time_s, rel=1e-9)


def test_doubling_one_row_doubles_direct_bandwidth_time():
    G = build("jalapeno-rack")
    g = by_size(G, 128)
    T = np.full((128, 128), S / 128)
    r0 = price(G, "all-to-all", groups=g, traffic=T, algorithm="direct")
    T[5] *= 2          # rank 5's uplinks carry twice the bytes; max-min gives it no more rate
    r2 = price(G, "all-to-all", groups=g, traffic=T, algorithm="direct")
    assert r2.bandwidth_time_s == pytest.approx(2 * r0.bandwidth_time_s, rel=1e-9)


def test_traffic_shape_and_collective_are_checked():
    G = build("jalapeno-rack")
    g = by_size(G, 8)
    with pytest.raises(BadInput, match="8 x 8"):
        price(G, "all-to-all", groups=g, traffic=np.ones((4, 4)), algorithm="direct")
    with pytest.raises(BadInput, match="all-to-all only"):
        price(G, "all-reduce", groups=g, traffic=np.ones((8, 8)))
