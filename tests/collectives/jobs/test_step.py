"""fabricsim step: the layer jobs a mesh implies (bytes by closed form) and the step priced through mix."""
from __future__ import annotations

from math import comb

import pytest

from fabricsim.collectives import by_mesh
from fabricsim.collectives.jobs.models import load_model, model_from_dict
from fabricsim.collectives.jobs.step import layer_jobs, mesh_groups, step_tokens
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput

R1 = load_model("deepseek-r1")


def _rank_copies(tokens, experts, top_k, ep):
    """Expected (token, rank) copies of a uniform router, one per destination rank (DeepEP-style dedup):
    each of the ep ranks holds experts/ep experts and is reached with probability 1 - C(E - E/ep, k) / C(E, k)."""
    return tokens * ep * (1 - comb(experts - experts // ep, top_k) / comb(experts, top_k))


@pytest.fixture(scope="module")
def rack():
    return build("jalapeno-rack")


def _jobs(G, kind, mesh, tokens, **kw):
    return {j.name: j for j in layer_jobs(G, R1, kind, mesh=mesh, tokens=tokens, **kw)}


@pytest.mark.parametrize("phase, batch, seq, tokens", [("decode", 1024, None, 1024), ("decode", 7, 1, 7),
                                                       ("prefill", 4, 4096, 16384)])
def test_tokens(phase, batch, seq, tokens):
    assert step_tokens(phase, batch, seq) == tokens


@pytest.mark.parametrize("args, match", [(("train", 1, None), "unknown phase 'train'"),
                                         (("decode", 0, None), "batch 0 must be a positive integer"),
                                         (("decode", 8, 128), "seq 128 applies to prefill"),
                                         (("prefill", 8, None), "prefill needs --seq"),
                                         (("prefill", 8, 1.5), "seq 1.5 must be a positive integer")])
def test_bad_tokens(args, match):
    with pytest.raises(BadInput, match=match):
        step_tokens(*args)


@pytest.mark.parametrize("mesh", [{"ep": 128}, {"tp": 8, "ep": 16}, {"tp": 4, "ep": 8, "dp": 4}])
@pytest.mark.parametrize("over", ["tp", "ep", "dp"])
def test_mesh_groups_equal_by_mesh_on_a_full_mesh(rack, mesh, over):
    if over not in mesh:
        return
    assert mesh_groups(rack, mesh, over) == by_mesh(rack, mesh, over)


def test_mesh_groups_smaller_mesh_uses_the_first_ranks(rack):
    groups = mesh_groups(rack, {"tp": 4, "ep": 16}, "ep")
    assert len(groups) == 4 and {r for g in groups for r in g} == set(range(64))
    assert groups[1] == tuple(range(1, 64, 4))
    with pytest.raises(BadInput, match="needs 256 chips but 'jalapeno-rack' has 128"):
        mesh_groups(rack, {"ep": 256}, "ep")


def test_pure_ep_decode_layer(rack):
    """ep=128, tp=1: a MoE layer is dispatch then combine, a dense layer needs nothing."""
    assert _jobs(rack, "dense", {"ep": 128}, 1024) == {}
    jobs = _jobs(rack, "moe", {"ep": 128}, 1024)
    assert list(jobs) == ["dispatch", "combine"]
    d, c = jobs["dispatch"], jobs["combine"]
    assert d.bytes_total == pytest.approx(_rank_copies(1024, 256, 8, 128) * 7168, rel=1e-12)
    assert c.bytes_total == 2 * d.bytes_total   # fp8, then bf16
    assert c.after == ("dispatch",) and d.after == ()
    assert d.traffic.shape == (128, 128) and d.traffic.sum() == d.bytes_total      # shared expert: no traffic
    # balanced routing, 2 experts per rank: 1/128 of the copies stay on their chip
    assert d.bytes_network == pytest.approx(d.bytes_total * 127 / 128)
    assert (c.traffic == d.traffic.T * 2).all()


def test_tp_ep_layer(rack):
    """tp=8 x ep=16: attention all-reduce, then dispatch/combine beside the shared expert's all-reduce."""
    jobs = _jobs(rack, "moe", {"tp": 8, "ep": 16}, 1024)
    assert list(jobs) == ["attn-allreduce", "dispatch", "combine", "moe-allgather", "shared-allreduce"]
    a = jobs["attn-allreduce"]
    assert (a.n_groups, a.group_size) == (16, 8)
    assert a.size_bytes == 1024 / 16 * 7168 * 2          # a TP group's tokens x hidden x bf16
    assert jobs["dispatch"].after == ("attn-allreduce",) and jobs["shared-allreduce"].after == ("attn-allreduce",)
    assert jobs["moe-allgather"].after == ("combine",)
    assert (jobs["dispatch"].n_groups, jobs["dispatch"].group_size) == (8, 16)
    # every token once per rank its experts are on; the mesh sets the ranks (16 experts each here)
    assert jobs["dispatch"].bytes_total == pytest.approx(_rank_copies(1024, 256, 8, 16) * 7168, rel=1e-12)
    dense = _jobs(rack, "dense", {"tp": 8, "ep": 16}, 1024)
    assert list(dense) == ["attn-allreduce", "mlp-allreduce"] and dense["mlp-allreduce"].after == ("attn-allreduce",)


def test_no_shared_expert_no_shared_allreduce(rack):
    oss = load_model("gpt-oss-120b")
    names = [j.name for j in layer_jobs(rack, oss, "moe", mesh={"tp": 8, "ep": 16}, tokens=256)]
    assert names == ["attn-allreduce", "dispatch", "combine", "moe-allgather"]


def test_dtypes_scale_bytes(rack):
    jobs = _jobs(rack, "moe", {"ep": 128}, 1024, dispatch_dtype="bf16", combine_dtype="fp32")
    copies = _rank_copies(1024, 256, 8, 128) * 7168
    assert jobs["dispatch"].bytes_total == pytest.approx(copies * 2, rel=1e-12)
    assert jobs["combine"].bytes_total == pytest.approx(copies * 4, rel=1e-12)


def test_tokens_must_split_over_groups(rack):
    with pytest.raises(BadInput, match=r"1,000 tokens do not split evenly over the 16 TP groups"):
        _jobs(rack, "moe", {"tp": 8, "ep": 16}, 1000)
    with pytest.raises(BadInput, match=r"100 tokens do not split evenly over the 8 EP groups"):
        _jobs(rack, "moe", {"ep": 16, "dp": 8}, 100)


def test_experts_without_ep_reduce_like_a_dense_mlp(rack):
    names = [j.name for j in layer_jobs(rack, R1, "moe", mesh={"tp": 8, "dp": 16}, tokens=1024)]
    assert names == ["attn-allreduce", "mlp-allreduce"]
    tiny = model_from_dict({"layers": 2, "hidden": 64, "heads": 8})
    assert layer_jobs(rack, tiny, "dense", mesh={"dp": 128}, tokens=128) == []


# ----------------------------------------------------------------------------- the step priced through mix
from fabricsim.collectives import price                                  # noqa: E402
from fabricsim.collectives.jobs import Job, mix                          # noqa: E402
from fabricsim.collectives.jobs.step import step                         # noqa: E402


@pytest.fixture(scope="module")
def r1_rack(rack):
    return step(rack, "deepseek-r1", mesh="ep=128", phase="decode", batch=1024)


def test_done_when_deepseek_decode_on_the_rack(r1_rack):
    """58 MoE layers each with a dispatch and a combine; fp8 dispatch bytes, bf16 combine twice that."""
    moe = [layer for layer in r1_rack.layers if layer.kind == "moe"]
    assert len(r1_rack.layers) == 61 and len(moe) == 58
    assert [layer.index for layer in moe] == list(range(3, 61))
    assert all([c.name for c in layer.collectives] == ["dispatch", "combine"] for layer in moe)
    d = sum(c.bytes_total for layer in moe for c in layer.collectives if c.name == "dispatch")
    c = sum(c.bytes_total for layer in moe for c in layer.collectives if c.name == "combine")
    assert d == pytest.approx(58 * _rank_copies(1024, 256, 8, 128) * 7168, rel=1e-12) and c == 2 * d
    j = r1_rack.as_dict()
    assert {"model", "phase", "time_s", "tokens_per_s_comm_bound", "layers"} <= set(j)
    assert (j["model"], j["phase"]) == ("deepseek-r1", "decode")
    assert set(j["layers"][3]) >= {"index", "kind", "collectives"} and j["layers"][3]["kind"] == "moe"
    assert set(j["layers"][3]["collectives"][0]) >= {"name", "collective", "bytes_total", "time_s"}
    assert j["layers"][0] == {**j["layers"][0], "kind": "dense", "collectives": []}


def test_chained_layer_is_the_sum_of_its_prices(rack, r1_rack):
    """dispatch then combine, nothing beside them: the layer costs exactly their two prices."""
    jobs = _jobs(rack, "moe", {"ep": 128}, 1024)
    solo = [price(rack, "all-to-all", groups=jobs[n].groups, traffic=jobs[n].traffic).time_s
            for n in ("dispatch", "combine")]
    layer = r1_rack.layers[3]
    assert layer.comm_s == pytest.approx(sum(solo), rel=1e-12)
    assert [c.time_s for c in layer.collectives] == pytest.approx(solo, rel=1e-12)
    assert r1_rack.time_s == pytest.approx(58 * sum(solo), rel=1e-12) and r1_rack.compute_s == 0
    assert r1_rack.tokens_per_s_comm_bound == pytest.approx(1024 / r1_rack.time_s)
    assert r1_rack.time_per_token_s == pytest.approx(r1_rack.time_s / 1024)


def test_identical_layers_priced_once_is_exact(rack):
    """Two MoE layers chained in one mix take exactly twice one layer: the layer barrier makes it exact."""
    mesh = {"tp": 8, "ep": 16}
    one = layer_jobs(rack, R1, "moe", mesh=mesh, tokens=1024)
    last = [j.name for j in one if j.name in ("moe-allgather", "shared-allreduce")]

    def jobs(tag, after=()):
        return [Job(name=f"{j.name}{tag}", collective=j.collective, groups=j.groups, size_bytes=j.size_bytes,
                    traffic=j.traffic, after=tuple(f"{a}{tag}" for a in j.after) or after) for j in one]

    single = mix(rack, jobs("@0")).makespan_s
    double = mix(rack, jobs("@0") + jobs("@1", after=tuple(f"{n}@0" for n in last))).makespan_s
    assert double == pytest.approx(2 * single, rel=1e-9)
    r = step(rack, R1, mesh=mesh, batch=1024)
    assert r.layers[5].comm_s == pytest.approx(single, rel=1e-12)
    assert r.comm_s == pytest.approx(3 * r.layers[0].comm_s + 58 * single, rel=1e-12)


def test_shared_expert_all_reduce_overlaps_dispatch_and_combine(rack):
    r = step(rack, R1, mesh="tp=8,ep=16", batch=1024)
    cols = {c.name: c for c in r.layers[10].collectives}
    sh, d, c = cols["shared-allreduce"], cols["dispatch"], cols["combine"]
    assert sh.start_s == d.start_s == cols["attn-allreduce"].finish_s       # both start after attention
    assert sh.finish_s > d.start_s                                          # they overlap
    serial = sum(x.time_s for x in cols.values())
    assert r.layers[10].comm_s < serial
    assert r.layers[10].comm_s == pytest.approx(max(x.finish_s for x in cols.values()))
    # the attribution splits the overlap: it adds up to the makespan exactly
    assert sum(x.attributed_s for x in cols.values()) == pytest.approx(r.layers[10].comm_s, rel=1e-12)
    by = r.by_collective()
    assert by["dispatch"]["count"] == 58 and by["attn-allreduce"]["count"] == 61
    assert sum(v["attributed_s"] for v in by.values()) == pytest.approx(r.comm_s, rel=1e-12)


def test_compute_adds_in_series(rack, r1_rack):
    r = step(rack, R1, mesh="ep=128", batch=1024, compute_us=50.0)
    assert r.comm_s == pytest.approx(r1_rack.comm_s, rel=1e-12)
    assert r.compute_s == pytest.approx(61 * 50e-6) and r.time_s == pytest.approx(r.comm_s + 61 * 50e-6)
    assert r.tokens_per_s_comm_bound == pytest.approx(r1_rack.tokens_per_s_comm_bound)
    assert r.as_dict()["tokens_per_s"] == pytest.approx(1024 / r.time_s)


def test_prefill_moves_seq_times_the_bytes(rack):
    r = step(rack, "gpt-oss-120b", mesh="ep=128", phase="prefill", batch=2, seq=256)
    assert r.tokens == 512 and all(layer.kind == "moe" for layer in r.layers) and len(r.layers) == 36
    d = [c for c in r.layers[0].collectives if c.name == "dispatch"][0]
    assert d.bytes_total == 512 * 4 * 2880
    small = step(rack, "gpt-oss-120b", mesh="ep=128", phase="prefill", batch=2, seq=128)
    assert r.comm_s > small.comm_s


def test_a_hot_expert_router_is_slower(rack, r1_rack):
    hot = step(rack, R1, mesh="ep=128", batch=1024, skew="zipf:1.2")
    assert hot.comm_s > r1_rack.comm_s
    moe = [c for c in hot.layers[3].collectives if c.name == "dispatch"][0]
    # hot experts, fewer distinct ranks per token: at most one copy per (token, expert)
    assert moe.bytes_total < 1024 * 8 * 7168


def test_more_bandwidth_is_faster(rack):
    slow = step(build("jalapeno-rack"), R1, mesh="ep=128", batch=8192, efficiency=0.5)
    fast = step(rack, R1, mesh="ep=128", batch=8192)
    assert slow.comm_s > fast.comm_s


def test_smaller_mesh_notes_idle_chips(rack):
    r = step(rack, R1, mesh="ep=64", batch=512)
    assert r.chips == 64 and any("uses 64 of 128 chips" in n for n in r.notes)


@pytest.mark.parametrize("kw, match", [
    ({"mesh": "ep=128,pp=1"}, r"mesh dimension 'pp' is not modelled by step"),
    ({"mesh": "tp=3"}, r"tp=3 must divide deepseek-r1's 128 attention heads"),
    ({"mesh": "ep=512"}, r"ep=512 exceeds deepseek-r1's 256 routed experts"),
    ({"mesh": "ep=256"}, r"needs 256 chips but 'jalapeno-rack' has 128"),
    ({"mesh": "ep=128", "compute_us": -1.0}, r"compute -1.0 us per layer"),
    ({"mesh": "ep=128", "dispatch_dtype": "int4"}, r"dispatch dtype 'int4'; choose one of: fp8"),
    ({"mesh": "ep=128", "skew": "zipf:0"}, r"zipf:A needs a finite exponent"),
    ({"mesh": "ep=128", "skew": "uniform", "seed": -1}, r"seed -1 must be an integer >= 0"),
    ({"mesh": "ep=128", "compute_us": float("nan")}, r"compute nan us per layer"),
    ({"mesh": "ep=16,dp=8", "batch": 100}, r"100 tokens do not split evenly over the 8 EP groups"),
    ({"mesh": "ep=128", "phase": "prefill"}, r"prefill needs --seq"),
])
def test_bad_step_input(rack, kw, match):
    kw = {"batch": 1024, **kw}
    with pytest.raises(BadInput, match=match):
        step(rack, R1, **kw)
