"""price on a degraded torus through the stabilizer fold: exact against per-flow, named by method."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives import price
from fabricsim.fabrics import build
from fabricsim.topo.failures import apply_failures


def _both(dims, specs, group, algorithm="direct", size=2**20):
    H = apply_failures(build("torus", dims=dims), specs)[0]
    ranks = sorted(d["rank"] for _, d in H.nodes(data=True) if d.get("kind") == "chip")
    n = int(np.prod([int(k) for k in dims.split("x")]))
    groups = np.arange(n).reshape(-1, group).tolist()
    a = price(H, "all-to-all", groups=groups, size_bytes=size, algorithm=algorithm)
    b = price(H, "all-to-all", groups=groups, size_bytes=size, algorithm=algorithm, symmetry=False)
    assert len(ranks) <= n
    return a, b


def _same(a, b):
    assert a.time_s == pytest.approx(b.time_s, rel=1e-9)
    assert a.bandwidth_time_s == pytest.approx(b.bandwidth_time_s, rel=1e-9)
    scale = float(np.max(b.link_bytes))
    assert np.allclose(a.link_bytes, b.link_bytes, rtol=1e-9, atol=1e-9 * scale)
    assert a.group_time_s == pytest.approx(b.group_time_s, rel=1e-9)
    assert b.method["path"] == "per-flow"


@pytest.mark.parametrize("dims,specs,group", [
    ("4x4x4", ["link:c00.00.00--c01.00.00"], 64),
    ("4x4x4", ["link:c03.02.01--c00.02.01"], 16),                   # a wrap-around link, x-y planes... of 16
    ("4x4x8", ["link:c01.02.03--c01.02.04"], 128),
    ("4x4x8", ["link:c01.02.03--c01.02.04", "link:c01.02.04--c01.02.05"], 128),   # two failed links
    ("4x4x4", ["link:c00.00.00--c01.00.00", "link:c00.00.00--c03.00.00"], 64),
    ("4x4x8", ["lanes:c00.00.00--c00.01.00=1"], 128),               # a degraded-capacity link
])
def test_degraded_torus_prices_on_the_stabilizer_exactly(dims, specs, group):
    a, b = _both(dims, specs, group)
    _same(a, b)
    m = a.method
    assert m["path"] == "stabilizer", m
    assert 0 < m["quotient_size"] < m["flows"] == b.method["flows"]
    assert [x["method"] for x in m["refused"]] == ["translations"]
    assert "failed or extra link" in m["refused"][0]["reason"] or "differ in capacity" in m["refused"][0]["reason"]


@pytest.mark.parametrize("specs", [["link:c00.00.00--c01.00.00"],
                                   ["link:c02.03.04--c02.03.05", "link:c05.03.04--c05.03.05"]])
def test_degraded_8x8x8_prices_on_the_stabilizer_exactly(specs):
    a, b = _both("8x8x8", specs, 512)
    _same(a, b)
    assert a.method["path"] == "stabilizer"
    assert a.method["quotient_size"] <= 512 * 511 // 4


def test_a_failed_chip_is_refused_with_its_reason():
    a, b = _both("4x4x4", ["node:c01.01.01"], 16)
    _same(a, b)
    got = {x["method"]: x["reason"] for x in a.method["refused"]}
    assert a.method["path"] == "per-flow"
    assert "a chip failed" in got["stabilizer"] and "a chip failed" in got["translations"]


def test_an_ordered_pattern_is_refused_with_its_reason():
    a, b = _both("4x4x4", ["link:c00.00.00--c01.00.00"], 16, algorithm="pairwise")
    _same(a, b)
    got = {x["method"]: x["reason"] for x in a.method["refused"]}
    assert a.method["path"] == "per-flow" and "ordered pattern" in got["stabilizer"]


def test_bound_only_keeps_the_intact_classes_correction():
    H = apply_failures(build("torus", dims="4x4x4"), ["link:c00.00.00--c01.00.00"])[0]
    r = price(H, "all-to-all", groups=[list(range(64))], size_bytes=2**20, algorithm="direct", bound_only=True,
              reference=build("torus", dims="4x4x4"))
    s = price(H, "all-to-all", groups=[list(range(64))], size_bytes=2**20, algorithm="direct")
    assert r.method["path"] == "bound" and r.bound_s == pytest.approx(s.bound_s, rel=1e-9)


def test_explain_and_json_name_the_stabilizer():
    args = ["price", "all-to-all", "--fabric", "torus", "--set", "dims=4x4x4", "--fail", "link:c00.00.00--c01.00.00",
            "--size", "1MiB", "--algorithm", "direct"]
    res = CliRunner().invoke(main, args + ["--explain"])
    if res.exit_code == 2 and "--fail" in res.output:      # price has no --fail: use whatif
        args[0] = "whatif"
        res = CliRunner().invoke(main, args + ["--explain"])
    assert res.exit_code == 0, res.output
    assert "stabilizer" in res.output
    js = json.loads(CliRunner().invoke(main, args + ["--json"]).output)
    method = js["method"]["degraded"] if "degraded" in js["method"] else js["method"]
    assert method["path"] == "stabilizer" and method["quotient_size"] == 782


def test_torus_link_sweep_representatives_price_on_the_stabilizer():
    from fabricsim.collectives.whatif import sweep, whatif
    s = sweep("torus", {"dims": "4x4x6"}, "link", collective="all-to-all", size_bytes=2**30, algorithm="direct")
    reps = s.method["representatives"]
    assert len(reps) == 3 and {r["method"]["path"] for r in reps} == {"stabilizer"}
    G = build("torus", dims="4x4x6")
    by_orbit = {sc["orbit"]: sc for sc in s.scenarios}
    for r in reps:
        # a scenario of the orbit (not its representative) equals whatif flow by flow
        sc = next(x for x in s.scenarios if x["orbit"] == r["orbit"] and x["failed"] != r["failed"])
        w = whatif(G, sc["failed"], "all-to-all", groups=[list(range(96))], size_bytes=2**30, algorithm="direct",
                   symmetry=False)
        assert w.degraded.method["path"] == "per-flow"
        assert sc["time_s"] == pytest.approx(w.degraded.time_s, rel=1e-9) == by_orbit[r["orbit"]]["time_s"]


@pytest.mark.parametrize("dims,per_axis", [
    ((4, 6, 5), [[(1, 0), (-1, 1)], [(1, 0), (-1, 4)], [(1, 0), (-1, 0)]]),      # reflections through a link
    ((4, 4, 6), [[(1, 0), (1, 2), (-1, 0), (-1, 2)], [(1, 0)], [(1, 0), (1, 3), (-1, 1), (-1, 4)]]),
])
def test_product_orbits_equal_enumerating_every_flow(dims, per_axis):
    import itertools
    from fabricsim.topo.routing.torus import _product_orbits
    N = int(np.prod(dims))
    coords = np.stack(np.unravel_index(np.arange(N), dims), axis=1)
    i, j = np.nonzero(~np.eye(N, dtype=bool))
    canon = np.full(len(i), np.iinfo(np.int64).max)
    for maps in itertools.product(*per_axis):
        c = coords.copy()
        for a, (sgn, off) in enumerate(maps):
            c[:, a] = (sgn * c[:, a] + off) % dims[a]
        perm = np.ravel_multi_index(tuple(c.T), dims)
        np.minimum(canon, perm[i] * N + perm[j], out=canon)
    reps, mult = np.unique(canon, return_counts=True)
    s, d, m = _product_orbits(dims, per_axis)
    assert m.sum() == N * (N - 1) and len(s) == len(reps)
    # the same orbits with the same sizes (representatives may differ: compare each class's orbit label)
    label = dict(zip((s * N + d).tolist(), m.tolist()))
    assert sorted(label.values()) == sorted(mult.tolist())
    orbit_of = dict(zip((i * N + j).tolist(), canon.tolist()))
    assert len({orbit_of[x] for x in label}) == len(reps)


@pytest.mark.parametrize("spec", ["link:c03.01.02--c04.01.02",      # leaves a cube: through an OCS (optical)
                                  "link:c01.01.02--c01.02.02"])     # inside a cube (copper)
def test_ironwood_cubes_fold_exactly_with_their_ocs_links(spec):
    G = build("ironwood", dims=(8, 4, 8))
    H = apply_failures(G, [spec])[0]
    groups = [list(range(256))]
    a = price(H, "all-to-all", groups=groups, size_bytes=2**20, algorithm="direct")
    b = price(H, "all-to-all", groups=groups, size_bytes=2**20, algorithm="direct", symmetry=False)
    _same(a, b)
    assert a.method["path"] == "stabilizer" and 0 < a.method["quotient_size"] < a.method["flows"]
