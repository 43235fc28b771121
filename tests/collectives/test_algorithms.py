import numpy as np
import pytest

from fabricsim.collectives import algorithms_for, phases, view_of
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput


def _bytes_sent(plist):
    """Total bytes each rank sends over the whole collective (steps x size)."""
    out = {}
    for p in plist:
        for s, b in zip(p.src, p.size_bytes):
            out[int(s)] = out.get(int(s), 0.0) + b * p.repeat
    return out


@pytest.fixture(scope="module")
def rack_view():
    return view_of(build("jalapeno-rack"))


@pytest.mark.parametrize("algo", ["ring", "direct", "halving-doubling"])
@pytest.mark.parametrize("n", [2, 4, 8])
def test_all_reduce_sends_2_n_minus_1_over_n_of_S(rack_view, algo, n):
    S = 1024.0 * n
    groups = [tuple(range(n))]
    sent = _bytes_sent(phases("all-reduce", algo, groups, S, rack_view))
    assert all(v == pytest.approx(2 * (n - 1) / n * S) for v in sent.values())


@pytest.mark.parametrize("coll", ["all-gather", "reduce-scatter"])
@pytest.mark.parametrize("algo", ["ring", "direct", "halving-doubling"])
def test_gather_scatter_send_n_minus_1_over_n(rack_view, coll, algo):
    n, S = 8, 8.0 * 1024
    sent = _bytes_sent(phases(coll, algo, [tuple(range(n))], S, rack_view))
    assert all(v == pytest.approx((n - 1) / n * S) for v in sent.values())


@pytest.mark.parametrize("algo", ["direct", "pairwise"])
def test_all_to_all_sends_S_over_n_to_each_peer(rack_view, algo):
    n, S = 8, 8.0 * 4096
    plist = phases("all-to-all", algo, [tuple(range(n)), tuple(range(8, 16))], S, rack_view)
    pairs = {(int(s), int(d)): b for p in plist for s, d, b in zip(p.src, p.dst, p.size_bytes)}
    assert len(pairs) == 2 * n * (n - 1)
    assert all(b == pytest.approx(S / n) for b in pairs.values())


def test_hierarchical_all_to_all_moves_each_byte_once_across_racks():
    G = build("jalapeno-pod", racks=2)
    v = view_of(G)
    n, S = 256, 256.0 * 100
    p1, p2 = phases("all-to-all", "hierarchical", [tuple(range(n))], S, v)
    rack = v.domain
    assert (rack[p1.src] == rack[p1.dst]).all()                    # first inside racks
    assert (rack[p2.src] != rack[p2.dst]).all()                    # then across
    assert ((p2.src % 128) == (p2.dst % 128)).all()                # between chips at the same position
    cross = (p2.size_bytes).sum()
    assert cross == pytest.approx(n * S * 128 / 256)               # half of every rank's data leaves its rack


def test_hierarchical_all_reduce_phases():
    v = view_of(build("jalapeno-pod", racks=2))
    S = 2.0 ** 20
    intra, inter = phases("all-reduce", "hierarchical", [tuple(range(256))], S, v)
    assert intra.repeat == 2 * 127 and intra.size_bytes[0] == pytest.approx(S / 128)
    assert inter.repeat == 2 * 1 and inter.size_bytes[0] == pytest.approx(S / 256)


def test_halving_doubling_needs_power_of_two(rack_view):
    with pytest.raises(BadInput, match="power-of-two"):
        phases("all-reduce", "halving-doubling", [tuple(range(6))], 1.0, rack_view)


def test_unknown_algorithm_and_collective(rack_view):
    with pytest.raises(BadInput, match="choose one of: auto, ring"):
        phases("all-reduce", "btree", [(0, 1)], 1.0, rack_view)
    with pytest.raises(BadInput, match="did you mean all-reduce"):
        phases("allreduce", "ring", [(0, 1)], 1.0, rack_view)


def test_auto_candidates_depend_on_the_fabric(rack_view):
    assert "nvls" not in algorithms_for("all-reduce", [tuple(range(8))], rack_view)
    assert "hierarchical" not in algorithms_for("all-reduce", [tuple(range(8))], rack_view)
    assert "torus-rings" not in algorithms_for("all-reduce", [tuple(range(8))], rack_view)
    pod = view_of(build("jalapeno-pod", racks=2))
    assert "hierarchical" in algorithms_for("all-to-all", [tuple(range(256))], pod)


@pytest.mark.parametrize("collective,algorithm", [("all-to-all", "direct"), ("all-to-all", "pairwise"),
                                                  ("all-to-all", "hierarchical"), ("all-reduce", "ring"),
                                                  ("all-reduce", "halving-doubling")])
def test_phase_structure_matches_its_flow_list(collective, algorithm):
    """Counts taken from a phase's structure equal those of its explicit flows."""
    from fabricsim.collectives import by_size, phases, view_of
    G = build("jalapeno-pod", racks=2)
    view = view_of(G)
    tried = 0
    for placement in ("packed", "spread", "random:5"):
        groups = by_size(G, 32, placement)
        try:
            plist = phases(collective, algorithm, groups, 2**20, view)
        except BadInput:
            continue                                    # hierarchical needs groups spread over racks
        tried += 1
        for p in plist:
            assert p.n_flows == len(p.src) == len(p.dst) == len(p.size_bytes) == len(p.group)
            assert p.messages_per_rank() == np.bincount(p.src).max()
            across = (view.domain[p.src] != view.domain[p.dst])
            assert p.bytes_across(view.domain) == pytest.approx(float(p.size_bytes[across].sum()))
            assert set(map(tuple, np.stack([p.src, p.dst], 1).tolist())) <= {
                (a, b) for g in groups for a in g for b in g}
    assert tried
