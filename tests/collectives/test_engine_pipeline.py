"""The typed engine pipeline: plan -> solve -> cost, the same prices as price()."""
from __future__ import annotations

import pytest

from fabricsim.collectives import by_size, price
from fabricsim.collectives.engine import PhasePlan, PriceOptions, SolvedPhases, cost, plan, solve
from fabricsim.fabrics import build

GiB = 2 ** 30


@pytest.mark.parametrize("fabric, params, n", [("nvl72", {}, 8), ("rail-cluster", {"gpu": "h100"}, 16),
                                               ("torus", {"dims": "4x4x4"}, 64)])
def test_plan_solve_cost_is_price(fabric, params, n):
    G = build(fabric, **params)
    groups = by_size(G, n)[:1]
    p = plan(G, "all-reduce", groups, PriceOptions(size_bytes=GiB))
    assert isinstance(p, PhasePlan) and p.group_size == n and p.live == tuple(groups)
    assert p.candidates and "ring" in p.candidates
    for a in p.candidates:
        s = solve(p, a)
        assert isinstance(s, SolvedPhases)
        for proto in p.model.protocols(a):
            t = cost(p, s, a, proto)
            r = price(G, "all-reduce", groups=groups, size_bytes=GiB, algorithm=a, protocol=proto)
            assert t.time_s == pytest.approx(r.time_s, rel=1e-12)
            # the report's parts rebuild the time; the per-call latency is part of the latency
            assert r.time_s == pytest.approx(r.bandwidth_time_s + r.latency_s, rel=1e-12)
            assert 0 <= r.base_latency_s <= r.latency_s


def test_one_solve_serves_every_protocol():
    G = build("nvl72")
    p = plan(G, "all-reduce", by_size(G, 8)[:1], PriceOptions(size_bytes=2 ** 20))
    s = solve(p, "ring")
    times = {proto: cost(p, s, "ring", proto).time_s for proto in ("ll", "ll128", "simple")}
    assert len(set(times.values())) == 3
    best = price(G, "all-reduce", groups=by_size(G, 8)[:1], size_bytes=2 ** 20, algorithm="ring")
    assert best.time_s == pytest.approx(min(times.values()), rel=1e-12)


def test_auto_candidates_follow_the_family():
    """NCCL's families let auto pick only what NCCL runs for reductions; all-to-all is p2p."""
    G = build("hgx-h100")
    p = plan(G, "all-reduce", by_size(G, 8), PriceOptions(size_bytes=GiB))
    assert "direct" not in p.candidates and {"ring", "nvls"} <= set(p.candidates)
    q = plan(G, "all-to-all", by_size(G, 8), PriceOptions(size_bytes=GiB))
    assert "direct" in q.candidates
    ideal = plan(G, "all-reduce", by_size(G, 8), PriceOptions(size_bytes=GiB, protocol="ideal"))
    assert "direct" in ideal.candidates          # the ideal model keeps every algorithm (closed forms)


def test_the_report_names_the_channels_nccl_opens_for_the_size():
    """enqueue.cc: a call of B bytes runs on the most channels c with B >= c x threads x threshold."""
    G = build("hgx-h100")
    g = by_size(G, 8)
    small = price(G, "all-reduce", groups=g, size_bytes=128 * 1024, algorithm="ring", protocol="ll")
    assert small.channels == (128 * 1024) // (512 * 8 * 8) == 4         # ring LL: 8 B/thread x 8 ranks
    simple = price(G, "all-reduce", groups=g, size_bytes=128 * 1024, algorithm="ring", protocol="simple")
    assert simple.channels == (128 * 1024) // (512 * 64) == 4
    assert price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm="ring", protocol="simple").channels == 16
    assert price(G, "all-reduce", groups=g, size_bytes=128 * 1024, algorithm="nvls").channels == 16
    assert price(G, "all-reduce", groups=g, size_bytes=GiB, protocol="ideal").channels is None
    # fewer channels, slower transfer: the same bytes at 4/16 of the rate
    full = price(G, "all-reduce", groups=g, size_bytes=128 * 1024, algorithm="ring", protocol="simple",
                 efficiency=None)
    assert full.as_dict()["channels"] == 4


def test_a_rank_the_intact_fabric_lacks_is_an_error_not_a_partial_price():
    """On an intact fabric every rank 0..N-1 exists: 999 on a 128-chip rack is a typo (issue 26: was nan)."""
    from fabricsim.topo.errors import BadInput
    G = build("jalapeno-rack")
    with pytest.raises(BadInput, match=r"group rank 999 is not a chip of jalapeno-rack: ranks are 0\.\.127"):
        price(G, "all-reduce", groups=[[0, 1, 999]], size_bytes=2 ** 20)
    # a degraded copy keeps the partial price: its missing ranks are failures
    from fabricsim.topo.failures import apply_failures
    H, _ = apply_failures(G, ["chip:r00/xpu005"])
    r = price(H, "all-reduce", groups=[[4, 5, 6, 7], [8, 9, 10, 11]], size_bytes=2 ** 20)
    assert r.partial and r.broken_groups["count"] == 1
