"""Atlas N-2 within shared domains: pairs that share an OCS or a rack, folded, each worst = its whatif."""
import pytest

from fabricsim.collectives import price
from fabricsim.collectives.whatif.atlas import atlas, shared_pair_classes
from fabricsim.collectives.whatif.scenario import whatif
from fabricsim.collectives.whatif.sweeps import shared_pairs, sweep
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput
from fabricsim.topo.failures import domains


def test_shared_pairs_are_exactly_the_pairs_with_a_common_tag():
    G = build("jalapeno-pod", racks=2)
    links = domains(G, ["link"])["link"]
    pairs = shared_pairs(G, links, "ocs")
    ocs = [G.edges[d.edges[0]].get("ocs") for d in links]
    want = {(i, j) for i in range(len(links)) for j in range(i + 1, len(links))
            if ocs[i] is not None and ocs[i] == ocs[j]}
    assert set(pairs) == want and len(pairs) > 0
    sw = domains(G, ["leaf-switch"])["leaf-switch"]
    assert len(shared_pairs(G, sw, "rack")) == 2 * 6        # 4 leaves per rack: C(4, 2) per rack
    with pytest.raises(BadInput, match="shared tag"):
        shared_pairs(G, sw, "colour")


def test_n2_rows_fold_and_their_worst_equals_whatif():
    a = atlas("jalapeno-pod", {"racks": 2}, collective="all-to-all", size_bytes=2**30,
              classes=["link", "leaf-switch", "rail-switch"], n2_shared=True)
    rows = {c.failure_class: c for c in a.classes}
    assert set(rows) >= {"link x2 same ocs", "leaf-switch x2 same rack"}
    assert "rail-switch x2 same rack" not in rows                 # rail switches sit in no rack
    G = build("jalapeno-pod", racks=2)
    base = price(G, "all-to-all", groups=[tuple(range(256))], size_bytes=2**30, algorithm="direct")
    for label in ("link x2 same ocs", "leaf-switch x2 same rack"):
        c = rows[label]
        assert c.orbits < c.scenarios                               # folded
        specs = c.worst.split(" + ")
        w = whatif(G, specs, "all-to-all", groups=[tuple(range(256))], size_bytes=2**30, algorithm="direct")
        assert c.worst_slowdown == pytest.approx(w.slowdown, rel=1e-9)
        assert w.baseline.time_s == pytest.approx(base.time_s, rel=1e-12)
        # a pair costs at least its worse single failure
        single = rows[label.split(" x2")[0]]
        assert c.slowdown_max >= single.slowdown_min - 1e-12


def test_shared_needs_pairs():
    with pytest.raises(BadInput, match="n=2"):
        sweep("jalapeno-pod", {"racks": 2}, "link", n=1, shared="ocs", collective="all-to-all", size_bytes=2**20)
    # one rack: its six local switches pair up by rack; its links have no OCS or harness
    assert shared_pair_classes(build("jalapeno-rack"), ["link", "local-switch"]) == [("local-switch", "rack")]
