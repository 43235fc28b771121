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
    r = mix(rack, [a, b], protocol="ideal")      # the closed form: latency, then the union's simulation
    ra = price(rack, "all-to-all", groups=a.groups, size_bytes=S, algorithm="direct", protocol="ideal")
    rb = price(rack, "all-to-all", groups=b.groups, size_bytes=S / 3, algorithm="direct", protocol="ideal")
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
    # overlapping groups: refused as price --groups refuses them (placement.check_groups)
    ([Job("a", "all-reduce", ((0, 1), (1, 2)), 1e6)], r"job 'a': chip rank 1 appears twice \(groups 0 and 1\)"),
    ([Job("a", "all-reduce", ((0, 1, 1),), 1e6)], "job 'a': group 0 lists chip rank 1 twice"),
])
def test_bad_jobs(rack, jobs, match):
    with pytest.raises(BadInput, match=match):
        mix(rack, jobs)


# ----------------------------------------------------------------------------- a reference event loop
def _maxmin_dense(A, cap):
    """Progressive filling on a dense flows x links share matrix (independent of topo.solver)."""
    F = A.shape[0]
    rate, frozen, residual = np.zeros(F), np.zeros(F, bool), cap.astype(float).copy()
    while not frozen.all():
        aw = A[~frozen].sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            lev = np.where(aw > 0, residual / aw, np.inf)
        t = lev.min()
        rate[~frozen] += t
        residual -= aw * t
        sat = lev <= t * (1 + 1e-9)
        frozen |= (A[:, sat] > 0).any(axis=1)
    return rate


def _reference(G, jobs):
    """Each job's finish by a plain event loop over explicit routes (steps: latency, then flows)."""
    from fabricsim.collectives import phases as phases_of, view_of
    t = routing.link_table(G)
    cap = np.asarray(t.capacity_Bps, float)
    plan = {}
    for j in jobs:
        rep = price(G, j.collective, groups=j.groups, size_bytes=j.size_bytes, algorithm=j.algorithm,
                    protocol="ideal")
        steps = []
        for ph, pr in zip(phases_of(j.collective, rep.algorithm, j.groups, j.size_bytes, view_of(G)), rep.phases):
            rt = routing.route(G, ph.src, ph.dst, links=t)
            A = (sp.csr_array(rt.flow_piece) @ sp.csr_array(rt.piece_link)).toarray()
            steps += [(pr.step_latency_s, A, ph.size_bytes.copy())] * ph.repeat
        plan[j.name] = steps
    fin, state, now = {}, {}, 0.0
    while len(fin) < len(jobs):
        for j in jobs:     # start ready jobs
            if j.name not in state and j.name not in fin and all(a in fin for a in j.after):
                state[j.name] = [0, now + plan[j.name][0][0], None]
        changed = True
        while changed:
            changed = False
            for name, st in list(state.items()):
                if st[2] is None and st[1] <= now * (1 + 1e-12):
                    st[2] = plan[name][st[0]][2].copy()
                    changed = True
                if st[2] is not None and not (st[2] > 0).any():
                    st[0] += 1
                    changed = True
                    if st[0] == len(plan[name]):
                        fin[name] = now
                        del state[name]
                        for j in jobs:
                            if j.name not in state and j.name not in fin and all(a in fin for a in j.after):
                                state[j.name] = [0, now + plan[j.name][0][0], None]
                    else:
                        st[1], st[2] = now + plan[name][st[0]][0], None
        if not state:
            break
        moving = [n for n, st in state.items() if st[2] is not None]
        t_next = min((st[1] for st in state.values() if st[2] is None), default=np.inf)
        if moving:
            rows = [(n, i) for n in moving for i in np.flatnonzero(state[n][2] > 0)]
            A = np.stack([plan[n][state[n][0]][1][i] for n, i in rows])
            r = _maxmin_dense(A, cap)
            left = np.array([state[n][2][i] for n, i in rows])
            t_next = min(t_next, now + (left / r).min())
            dt = t_next - now
            for (n, i), ri, li in zip(rows, r, left):
                state[n][2][i] = 0.0 if li / ri <= dt * (1 + 1e-9) else li - ri * dt
        now = t_next
    return fin


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mix_matches_a_plain_reference_loop(rack, seed):
    rng = np.random.default_rng(seed)
    g8 = by_size(rack, 8)
    jobs = [Job("a2a", "all-to-all", [g8[0]], float(rng.uniform(1, 4)) * 2**20, algorithm="direct"),
            Job("ring", "all-reduce", [g8[0][:4]], float(rng.uniform(1, 4)) * 2**20, algorithm="ring"),
            Job("ag", "all-gather", [g8[0][2:6]], float(rng.uniform(1, 4)) * 2**20, algorithm="ring",
                after=("a2a",)),
            Job("pw", "all-to-all", [g8[0][:4]], float(rng.uniform(1, 4)) * 2**20, algorithm="pairwise",
                after=("ring",))]
    ref = _reference(rack, jobs)
    r = mix(rack, jobs, protocol="ideal")        # the reference loop's model: steps in series at line rate
    for j in r.jobs:
        assert j.finish_s == pytest.approx(ref[j.name], rel=1e-9), j.name
    assert r.events > 0 and any(j.time_s > j.solo_s * (1 + 1e-6) for j in r.jobs)   # they did contend


@pytest.mark.parametrize("eff", [1.0, 0.47])
def test_efficiency_applies_alone_and_together(rack, eff):
    g = by_size(rack, 128)
    solo = price(rack, "all-to-all", groups=g, size_bytes=S, algorithm="direct", efficiency=eff)
    two = price(rack, "all-to-all", groups=g, size_bytes=2 * S, algorithm="direct", efficiency=eff)
    g2 = [tuple(reversed(x)) for x in g]
    r = mix(rack, [Job("a", "all-to-all", g, S, algorithm="direct"), Job("b", "all-to-all", g2, S,
                                                                          algorithm="direct")], efficiency=eff)
    assert r.makespan_s == pytest.approx(two.time_s, rel=1e-9)
    assert r.jobs[0].solo_s == pytest.approx(solo.time_s, rel=1e-12)
    # GB/s is the link's raw line rate in mix as in price (one meaning per column)
    p = price(rack, "all-to-all", groups=g, size_bytes=S, algorithm="direct", efficiency=eff)
    assert r.bottlenecks[0]["capacity_GBps"] == p.bottlenecks[0]["capacity_GBps"] == pytest.approx(100)


def test_in_network_all_reduces_share_the_switch_links():
    G = build("nvl72")
    g = by_size(G, 72)
    g2 = [tuple(reversed(x)) for x in g]         # no lockstep: two sets of in-network flows
    r = mix(G, [Job("a", "all-reduce", g, S, algorithm="nvls"), Job("b", "all-reduce", g2, S, algorithm="nvls")])
    two = price(G, "all-reduce", groups=g, size_bytes=2 * S, algorithm="nvls")
    assert r.makespan_s == pytest.approx(two.time_s, rel=1e-9) and r.events == 1


def test_a_step_too_large_to_share_says_so(rack):
    from fabricsim.topo.errors import TooLarge
    g = by_size(rack, 128)
    jobs = [Job("a", "all-to-all", g, S), Job("b", "all-to-all", [tuple(reversed(x)) for x in g], S)]
    with pytest.raises(TooLarge, match="job 'a': its step 'direct all-to-all' has 16,256 flows"):
        mix(rack, jobs, memory_limit_bytes=4 * 10**6)   # enough for the symmetry classes alone
