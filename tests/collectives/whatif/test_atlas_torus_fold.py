"""The atlas on Ironwood folds links, lanes and OCSes by the unit translations (links differ only in
medium, which no price reads): every scenario's slowdown equals its own whatif (drawn scenarios)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fabricsim.collectives.whatif import atlas, whatif
from fabricsim.collectives.whatif.orbits import fabric_symmetry, scenario_orbits
from fabricsim.collectives.whatif.sweeps import _fabric
from fabricsim.fabrics import build
from fabricsim.topo.failures import domains

GiB = 2 ** 30
SMALL = {"dims": "4x4x8"}          # 128 chips: two cubes along z


def test_unit_translations_fold_links_lanes_and_ocs_to_one_orbit_per_axis():
    G = build("ironwood", dims=(8, 8, 8))
    sym = fabric_symmetry(G, [list(range(512))], "direct")
    names = [g.name for g in sym.generators]
    assert sum(n.startswith("translation by 1 along") for n in names) == 3
    assert sum(n.startswith("translation by 4 along") for n in names) == 3     # cubes still fold
    got = {}
    for c in ("link", "lanes", "ocs", "cube", "tray"):
        d = domains(G, [c])[c]
        got[c] = len(scenario_orbits(sym, d, [(i,) for i in range(len(d))]).reps)
    assert got == {"link": 3, "lanes": 3, "ocs": 3, "cube": 1, "tray": 1}


def test_medium_still_refuses_a_unit_translation_where_it_is_not_the_only_difference():
    # a plain torus verifies the unit translation outright: nothing is added beside it
    G = build("torus", dims=(4, 4, 4))
    names = [g.name for g in fabric_symmetry(G, [list(range(64))], "direct").generators]
    assert not any("medium" in n for n in names)
    # a link of another capacity on the Ironwood: the unit translation along its axis is refused
    H = build("ironwood", dims=(4, 4, 8))
    u, v = next((u, v) for u, v, d in H.edges(data=True) if d.get("axis") == "z")
    H.edges[u, v]["capacity_gbps"] = H.edges[u, v]["capacity_gbps"] / 2
    names = [g.name for g in fabric_symmetry(H, [list(range(128))], "direct").generators]
    assert "translation by 1 along z (links differ only in medium, which no price reads)" not in names


@pytest.fixture(scope="module")
def small():
    return atlas("ironwood", SMALL, collective="all-to-all", size_bytes=GiB, classes=["link", "ocs", "lanes"],
                 algorithm="direct")


@pytest.mark.parametrize("cls", ["link", "ocs", "lanes"])
def test_drawn_scenarios_equal_their_whatif(small, cls):
    c = small.get(cls)
    assert c.skipped is None and c.orbits == 3
    G = _fabric("ironwood", json.dumps(SMALL, sort_keys=True))
    ids = [f"{cls}:{d.id}" for d in domains(G, [cls])[cls]]
    rng = np.random.default_rng(7)
    # copper and optical members alike (an OCS link is the 4th of each ring of 4 along its axis)
    for i in sorted(set(rng.choice(len(ids), 4, replace=False).tolist()) | {ids.index(c.worst)}):
        w = whatif(G, [ids[i]], "all-to-all", groups=[list(range(128))], size_bytes=GiB, algorithm=small.algorithm,
                   protocol=small.protocol)
        assert w.slowdown == pytest.approx(c.slowdowns[i], rel=1e-9), ids[i]


def test_the_class_estimate_counts_local_workers():
    from fabricsim.collectives.whatif.atlas import _ClassBounds, _local_workers, _OverBound
    from fabricsim.collectives.whatif.sweeps import LocalRunner
    assert _local_workers(LocalRunner(2)) == 2 and _local_workers(object()) == 1
    import time
    for workers, over in ((1, True), (2, False)):
        b = _ClassBounds(512, 100.0, time.monotonic() - 40.0, 1.0, workers=workers)
        b.plan(3, 3)
        # one orbit of three done after 40 s: one worker needs ~120 s, two ~80 s (the second already runs)
        if over:
            with pytest.raises(_OverBound, match=r"estimated 120 s"):
                b(1, 3, {"orbit": 0, "time_s": 1.0})
        else:
            b(1, 3, {"orbit": 0, "time_s": 1.0})
