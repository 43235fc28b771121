"""Concurrent jobs in one max-min solve (issue 15 item 3)."""
import numpy as np
import pytest
import scipy.sparse as sp

from fabricsim.collectives import by_size, price
from fabricsim.collectives.jobs import Job, mix
from fabricsim.fabrics import build
from fabricsim.topo import routing, solver
from fabricsim.topo.errors import BadInput

S = 2.0**26


@pytest.fixture(scope="module")
def rack():
    return build("jalapeno-rack")


@pytest.mark.parametrize("reorder", [False, True])
def test_two_identical_all_to_alls_take_one_of_twice_the_size(rack, reorder):
    g = by_size(rack, 128)
    # reordering the members gives the same flows under another key: no lockstep merge
    g2 = [tuple(reversed(x)) for x in g] if reorder else g
    r = mix(rack, [Job("a", "all-to-all", g, S, algorithm="direct"), Job("b", "all-to-all", g2, S,
                                                                          algorithm="direct")])
    two = price(rack, "all-to-all", groups=g, size_bytes=2 * S, algorithm="direct")
    one = price(rack, "all-to-all", groups=g, size_bytes=S, algorithm="direct")
    bw = r.makespan_s - one.latency_s
    assert bw == pytest.approx(two.bandwidth_time_s, rel=0.01)
    assert r.makespan_s == pytest.approx(two.time_s, rel=1e-9)
    assert all(j.start_s == 0 for j in r.jobs)


def test_after_makes_the_makespan_the_sum(rack):
    g = by_size(rack, 128)
    jobs = [Job("a", "all-to-all", g, S), Job("b", "all-reduce", by_size(rack, 8), S, after=("a",)),
            Job("c", "all-to-all", g, S / 4, after=("b",))]
    r = mix(rack, jobs)
    solo = [price(rack, j.collective, groups=j.groups, size_bytes=j.size_bytes).time_s for j in jobs]
    assert r.makespan_s == pytest.approx(sum(solo), rel=1e-12)
    assert [j.start_s for j in r.jobs] == pytest.approx([0, solo[0], solo[0] + solo[1]], rel=1e-12)
    assert r.events == 0          # a chain never runs two jobs at once


@pytest.mark.parametrize("collective,size", [("all-to-all", S), ("all-reduce", S / 8)])
def test_disjoint_hardware_does_not_slow_jobs(collective, size):
    G = build("jalapeno-pod", racks=2)
    g = by_size(G, 128)           # one group per rack
    r = mix(G, [Job("rack0", collective, [g[0]], size), Job("rack1", "all-to-all", [g[1]], S / 2)])
    for j in r.jobs:
        assert j.time_s == pytest.approx(j.solo_s, rel=1e-9)
    assert r.makespan_s == pytest.approx(max(j.solo_s for j in r.jobs), rel=1e-9)


def test_one_step_jobs_share_links_as_one_simulation(rack):
    """Two one-step all-to-alls of different sizes on one rack: latency + the union's simulation."""
    g = by_size(rack, 32)[:2]
    a = Job("a", "all-to-all", [g[0]], S, algorithm="direct")
    b = Job("b", "all-to-all", [g[0], g[1]], S / 3, algorithm="direct")
    r = mix(rack, [a, b])
    ra = price(rack, "all-to-all", groups=a.groups, size_bytes=S, algorithm="direct")
    rb = price(rack, "all-to-all", groups=b.groups, size_bytes=S / 3, algorithm="direct")
    assert ra.latency_s == pytest.approx(rb.latency_s)
    src = np.concatenate([ra_ph_src(a.groups), ra_ph_src(b.groups)])
    dst = np.concatenate([ra_ph_src(a.groups, dst=True), ra_ph_src(b.groups, dst=True)])
    sizes = np.concatenate([np.full(len(ra_ph_src(a.groups)), S / 32), np.full(len(ra_ph_src(b.groups)), S / 3 / 32)])
    t = routing.link_table(rack)
    rt = routing.route(rack, src, dst, links=t)
    sim = solver.simulate(rt.flow_piece, rt.piece_link, t.capacity_Bps, sizes)
    na = len(ra_ph_src(a.groups))
    assert r.jobs[0].finish_s == pytest.approx(ra.latency_s + sim.finish_s[:na].max(), rel=1e-9)
    assert r.jobs[1].finish_s == pytest.approx(rb.latency_s + sim.finish_s[na:].max(), rel=1e-9)
    assert r.jobs[0].finish_s > ra.time_s * (1 + 1e-6)      # it was slowed


def ra_ph_src(groups, dst=False):
    out = []
    for grp in groups:
        for x in grp:
            for y in grp:
                if x != y:
                    out.append(y if dst else x)
    return np.asarray(out)


def test_concurrent_is_between_the_longest_and_the_sum(rack):
    jobs = [Job("a2a", "all-to-all", by_size(rack, 128), S),
            Job("ar", "all-reduce", by_size(rack, 8), S, algorithm="ring"),
            Job("ag", "all-gather", by_size(rack, 16), S / 2, algorithm="ring")]
    r = mix(rack, jobs)
    solos = [j.solo_s for j in r.jobs]
    assert max(solos) * (1 - 1e-9) <= r.makespan_s <= sum(solos) * (1 + 1e-9)
    assert all(j.time_s >= j.solo_s * (1 - 1e-9) for j in r.jobs)
    assert r.bottlenecks and r.bottlenecks[0]["utilization"] <= 1 + 1e-9
    d = r.as_dict()
    assert set(d) >= {"makespan_s", "jobs", "bottlenecks"} and d["jobs"][0]["name"] == "a2a"


def test_traffic_job(rack):
    g = by_size(rack, 16)[:1]
    T = np.full((16, 16), S / 16)
    T[3] *= 2
    r = mix(rack, [Job("v", "all-to-all", g, traffic=T, algorithm="direct")])
    p = price(rack, "all-to-all", groups=g, traffic=T, algorithm="direct")
    assert r.makespan_s == pytest.approx(p.time_s, rel=1e-12)
    assert r.jobs[0].bytes_total == pytest.approx(T.sum())


@pytest.mark.parametrize("jobs,match", [
    ([Job("a", "all-to-all", ((0, 1),), 1e6), Job("a", "all-to-all", ((2, 3),), 1e6)], "duplicate job name 'a'"),
    ([Job("a", "all-to-all", ((0, 1),), 1e6, after=("zz",))], "after 'zz' names no job"),
    ([Job("a", "all-to-all", ((0, 1),), 1e6, after=("b",)), Job("b", "all-to-all", ((0, 1),), 1e6, after=("a",))],
     "cycle: "),
    ([Job("a", "all-to-all", ((0, 1),))], "give a size or a traffic matrix"),
    ([Job("a", "all-to-all", ((0, 1),), 1e6, after=("a",))], "comes after itself"),
    ([Job("a", "all-to-all", ((0, 1),), 1e6, algorithm="ring")], "job 'a': unknown algorithm 'ring'"),
    ([], "no jobs"),
])
def test_bad_jobs(rack, jobs, match):
    with pytest.raises(BadInput, match=match):
        mix(rack, jobs)
