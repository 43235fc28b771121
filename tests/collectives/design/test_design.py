"""fabricsim design: the Pareto front, exact pruning, constraints, parts, bad input."""
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives.design import design, pareto_mask, space_from_dict
from fabricsim.fabrics import build
from fabricsim.fabrics.registry import builder_params
from fabricsim.topo.errors import BadInput

BUILDERS = builder_params()


def _brute_front(values, senses):
    v = np.asarray(values, float) * np.array([1 if s == "minimize" else -1 for s in senses])
    return [not any(np.all(v[j] <= v[i]) and np.any(v[j] < v[i]) for j in range(len(v))) for i in range(len(v))]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("k", [2, 3])
def test_pareto_mask_equals_pairwise_definition(seed, k):
    rng = np.random.default_rng(seed)
    vals = rng.integers(0, 6, size=(150, k)).astype(float)     # small integers: many ties
    senses = ["minimize", "maximize", "minimize"][:k]
    assert pareto_mask(vals, senses, block=37).tolist() == _brute_front(vals, senses)


def _space(**over):
    data = {"builder": "rail-cluster", "set": {"nodes": 2},
            "vary": {"nic_gbps": [100, 200, 400, 800], "spine_oversubscription": [1, 2], "gpu": ["h100", "b200"]},
            "workload": {"jobs": [{"collective": "all-to-all", "group_size": 16, "size": "64MiB",
                                  "algorithm": "direct"}]},
            "objectives": {"minimize": ["time_s", "capex_usd"]}}
    data.update(over)
    return space_from_dict(data, builders=BUILDERS)


@pytest.mark.parametrize("objectives", [{"minimize": ["time_s", "capex_usd"]},
                                        {"minimize": ["time_s", "power_kw"]},
                                        {"minimize": ["time_s"], "maximize": ["chips"]}])
def test_pruned_search_front_equals_brute_force(objectives):
    sp = _space(objectives=objectives)
    fast, brute = design(sp, build=build, wave=4), design(sp, build=build, prune=False)
    assert fast.pareto == brute.pareto
    for i in fast.pareto:
        assert fast.points[i].objectives == brute.points[i].objectives
    # every pruned design really is dominated by the brute-force front
    for p, q in zip(fast.points, brute.points):
        if p.status == "pruned":
            assert q.status == "ok" and p.bound_time_s <= q.objectives["time_s"] * (1 + 1e-12)


def test_objectives_come_from_the_bom_and_the_solver():
    from fabricsim.collectives import price
    from fabricsim.topo.parts import bill_of_materials
    sp = _space(vary={"nic_gbps": [200, 400]})
    r = design(sp, build=build, prune=False)
    for p in r.points:
        G = build("rail-cluster", nodes=2, nic_gbps=p.params["nic_gbps"])
        assert p.objectives["capex_usd"] == bill_of_materials(G).capex_usd
        t = price(G, "all-to-all", groups=[tuple(range(16))], size_bytes=64 * 2**20, algorithm="direct").time_s
        assert p.objectives["time_s"] == pytest.approx(t, rel=1e-9)
    # twice the NIC rate: cross-node all-to-all faster, more expensive optics
    a, b = r.points
    assert b.objectives["time_s"] < a.objectives["time_s"] and b.objectives["capex_usd"] > a.objectives["capex_usd"]


def test_a_part_price_changes_the_front():
    base = design(_space(), build=build)
    # optics nearly free: the fastest NIC is no longer more expensive, the front collapses
    cheap = {"optic": {f"optic-{g}g": {"price_usd": 1.0, "watts": 1.0, "source": "test", "label": "I"}
                       for g in (100, 200, 400, 800)}}
    r = design(_space(parts=cheap), build=build)
    assert [base.points[i].params for i in base.pareto] != [r.points[i].params for i in r.pareto]
    assert len(r.pareto) < len(base.pareto)


def test_constraints_prune_and_say_why():
    r = design(_space(constraints={"capex_usd_max": 770_000}), build=build)
    pruned = [p for p in r.points if p.status == "pruned" and p.reason.startswith("capex_usd_max")]
    assert pruned and all(p.objectives["capex_usd"] > 770_000 for p in pruned)
    assert all(r.points[i].objectives["capex_usd"] <= 770_000 for i in r.pareto)
    r = design(_space(constraints={"time_s_max": 2e-3}), build=build, prune=False)
    out = [p for p in r.points if p.reason.startswith("time_s_max")]
    assert out and len(out) < len(r.points)
    for p in out:   # refused by its bound before the solve (pruned), or priced and too slow (infeasible)
        assert (p.status, p.objectives.get("time_s", p.bound_time_s) > 2e-3) in (("pruned", True), ("infeasible", True))


def test_a_design_the_builder_refuses_is_reported_not_dropped():
    r = design(_space(vary={"spine_oversubscription": [1, 4]}), build=build)
    refused = [p for p in r.points if p.status == "refused"]
    assert len(refused) == 1 and "spine_oversubscription" in refused[0].reason
    assert len(r.points) == 2


@pytest.mark.parametrize("data, match", [
    ({"builder": "jalapeno_pod"}, "jalapeno-pod"),
    ({"vary": {"nic_gbs": [1]}}, "nic_gbps"),
    ({"objectives": {"minimize": ["latency"]}}, "time_s"),
    ({"constraints": {"capex_max": 1}}, "capex_usd_max"),
    ({"vary": {"nic_gbps": []}}, "non-empty"),
    ({"vary": {"nic_gbps": {"start": 1, "stop": 0}}}, "stop >= start"),
    ({"workload": {}}, "jobs"),
    ({"colour": 1}, "unknown key"),
])
def test_bad_spaces_are_one_line_errors(data, match):
    with pytest.raises(BadInput, match=match) as exc:
        _space(**data)
    assert "\n" not in str(exc.value)


def test_ranges_expand():
    sp = _space(vary={"nic_gbps": {"start": 100, "stop": 400, "step": 100}})
    assert sp.vary["nic_gbps"] == (100, 200, 300, 400) and sp.size == 4


def test_cli_json_and_fabric_files(tmp_path):
    spec = tmp_path / "space.toml"
    spec.write_text('builder = "rail-cluster"\n[set]\nnodes = 2\n[vary]\nnic_gbps = [200, 400]\n'
                    '[workload]\njobs = [{collective = "all-reduce", group_size = 16, size = "16MiB"}]\n')
    out = tmp_path / "front"
    res = CliRunner().invoke(main, ["design", str(spec), "--json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert {"builder", "evaluated", "pruned", "pareto", "all"} <= set(doc)
    assert doc["builder"] == "rail-cluster" and len(doc["all"]) == 2
    assert all(math.isfinite(p["objectives"]["time_s"]) for p in doc["pareto"])
    assert len(list(out.glob("*.json"))) == len(doc["pareto"])
    bad = tmp_path / "bad.toml"
    bad.write_text('builder = "rail-cluster"\n[vary]\nnic_gbs = [1]\n[workload]\njobs = [{collective = "all-reduce"}]\n')
    res = CliRunner().invoke(main, ["design", str(bad)])
    assert res.exit_code == 1 and "nic_gbps" in res.output.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.parametrize("seed, objectives", [
    (1, {"minimize": ["time_s", "power_kw", "capex_usd"]}),
    (2, {"minimize": ["time_s", "network_capex_usd"], "maximize": ["chips"]})])
def test_two_hundred_designs_front_equals_brute_force(seed, objectives):
    # (the fast tests above cover three more objective sets on a 16-design space)
    rng = np.random.default_rng(seed)
    nic = sorted(rng.choice(np.arange(100, 1650, 50), size=10, replace=False).tolist())
    sp = _space(set={}, vary={"nodes": [2, 4], "nic_gbps": nic, "spine_oversubscription": [1, 2],
                              "gpu": ["h100", "b200", "mi300x"], "sharp": [False, True]},
                objectives=objectives)
    assert sp.size == 240
    fast, brute = design(sp, build=build), design(sp, build=build, prune=False)
    assert fast.pareto == brute.pareto
    if "chips" not in objectives.get("maximize", ()):   # more chips is never dominated by fewer: nothing to prune
        assert fast.pruned > 0


def test_dask_local_cluster_gives_the_same_front():
    pytest.importorskip("dask.distributed")
    from dask.distributed import LocalCluster
    from fabricsim.collectives.whatif.dask_runner import sweep_runner
    sp = _space(vary={"nic_gbps": [200, 400, 800], "spine_oversubscription": [1, 2]})
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        runner = sweep_runner(1, cluster.scheduler_address)
        try:
            r = design(sp, build=build, runner=runner)
        finally:
            runner.close()
    local = design(sp, build=build)
    assert r.pareto == local.pareto
    assert [p.objectives for p in r.points] == [p.objectives for p in local.points]


def test_rail_only_cluster_has_no_spine_and_relays_through_nvlink():
    from fabricsim.topo.parts import bill_of_materials
    from fabricsim.topo.routing import route
    ro, sp = build("rail-cluster", nodes=2, rail_only=True), build("rail-cluster", nodes=2)
    assert not any(d.get("role") == "spine" for _, d in ro.nodes(data=True))
    assert sum(ln.count for ln in bill_of_materials(ro).lines if ln.kind == "switch") < \
        sum(ln.count for ln in bill_of_materials(sp).lines if ln.kind == "switch")
    # GPU 0 of node 0 to GPU 3 of node 1: no rail joins them, so the route relays in node 0
    r = route(ro, [0], [11])
    assert r.relay_rank is not None and int(r.relay_rank[0]) == 3
    with pytest.raises(BadInput, match="rail_only"):
        build("rail-cluster", rail_only=True, spine_oversubscription=2)


def test_rail_only_prices_rail_aligned_all_reduce_as_the_spine_does():
    from fabricsim.collectives import price
    groups = [tuple(range(r, 32, 8)) for r in range(8)]       # one GPU per node, each group on one rail
    a, b = (price(build("rail-cluster", nodes=4, rail_only=ro), "all-reduce", groups=groups,
                  size_bytes=2**28, algorithm="ring") for ro in (False, True))
    assert b.time_s == pytest.approx(a.time_s, rel=1e-9)


@pytest.mark.parametrize("nodes, nic, over", [(2, 400, 1), (4, 200, 2), (4, 800, 1)])
def test_cut_bound_is_the_closed_form_and_never_above_the_price(nodes, nic, over):
    from fabricsim.collectives import price
    from fabricsim.collectives.design.search import _cut_bound_s
    from fabricsim.collectives.jobs.mix import jobs_from_dict
    G = build("rail-cluster", nodes=nodes, nic_gbps=nic, spine_oversubscription=over)
    n, S = 8 * nodes, 2.0**26
    job = jobs_from_dict({"job": [{"name": "a", "collective": "all-to-all", "group_size": n, "size": S}]}, G)[0]
    # each node sends 8 ranks x (n - 8) peers x S/n out through its 8 NICs of nic Gb/s
    closed = 8 * (n - 8) * S / n / (8 * nic * 1e9 / 8)
    assert _cut_bound_s(G, job) == pytest.approx(closed, rel=1e-12)
    assert _cut_bound_s(G, job) <= price(G, "all-to-all", groups=job.groups, size_bytes=S,
                                         algorithm="direct").time_s


def test_nsga2_finds_front_designs_and_is_reproducible():
    pytest.importorskip("optuna")
    sp = _space(vary={"nic_gbps": [100, 200, 400, 800], "spine_oversubscription": [1, 2], "gpu": ["h100", "b200"]})
    exact = design(sp, build=build, search="exhaustive")
    a = design(sp, build=build, search="nsga2", evaluations=10, seed=3, wave=5)
    b = design(sp, build=build, search="nsga2", evaluations=10, seed=3, wave=5)
    assert a.method == "nsga2 (seed 3)" and 10 <= len(a.points) < sp.size
    assert [p.params for p in a.points] == [p.params for p in b.points]          # seeded: the same designs
    senses = ["minimize", "minimize"]
    # every design it reports on its front is priced exactly as the exhaustive search prices it,
    # and none of them is beaten by a design of the exhaustive front it also evaluated
    by_key = {sp.key(p.params): p for p in exact.points}
    for p in a.front():
        assert p.objectives == by_key[sp.key(p.params)].objectives
    assert "best found, not proven" in " ".join(a.notes)
    # as many evaluations as designs: it looks at them all (exhaustive)
    assert design(sp, build=build, search="nsga2", evaluations=sp.size).method == "exhaustive"


def test_budget_stops_and_says_so():
    sp = _space()
    r = design(sp, build=build, search="exhaustive", budget_s=1e-9, wave=4)
    assert not r.complete and len(r.points) < sp.size and "budget" in r.notes[0]
    assert r.as_dict()["complete"] is False


def test_resume_takes_designs_from_the_file_and_refuses_another_space(tmp_path):
    f = tmp_path / "design.jsonl"
    sp = _space(vary={"nic_gbps": [200, 400], "spine_oversubscription": [1, 2]})
    first = design(sp, build=build, results_file=f)
    assert len(f.read_text().splitlines()) == 4
    again = design(sp, build=build, results_file=f)
    assert [p.objectives for p in again.points] == [p.objectives for p in first.points]
    assert again.pareto == first.pareto and "4 design(s) taken from the results file" in again.notes[0]
    f.write_text(f.read_text() + '{"space": "cut sh')             # a killed run's last line is ignored
    assert design(sp, build=build, results_file=f).pareto == first.pareto
    other = _space(vary={"nic_gbps": [200, 400]}, objectives={"minimize": ["time_s", "power_kw"]})
    with pytest.raises(BadInput, match="another design space"):
        design(other, build=build, results_file=f)


def test_nsga2_on_a_dask_local_cluster_gives_the_local_front():
    pytest.importorskip("optuna")
    pytest.importorskip("dask.distributed")
    from dask.distributed import LocalCluster
    from fabricsim.collectives.whatif.dask_runner import sweep_runner
    sp = _space(vary={"nic_gbps": [100, 200, 400, 800], "spine_oversubscription": [1, 2], "gpu": ["h100", "b200"]})
    local = design(sp, build=build, search="nsga2", evaluations=8, seed=5, wave=4)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        runner = sweep_runner(1, cluster.scheduler_address)
        try:
            r = design(sp, build=build, runner=runner, search="nsga2", evaluations=8, seed=5, wave=4)
        finally:
            runner.close()
    assert [p.params for p in r.points] == [p.params for p in local.points]
    assert r.pareto == local.pareto and [p.objectives for p in r.front()] == [p.objectives for p in local.front()]
