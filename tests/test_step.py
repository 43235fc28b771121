"""fabricsim step: the layer jobs a mesh implies (bytes by closed form) and the step priced through mix."""
from __future__ import annotations

import pytest

from fabricsim.collectives import by_mesh
from fabricsim.collectives.jobs.models import load_model, model_from_dict
from fabricsim.collectives.jobs.step import layer_jobs, mesh_groups, step_tokens
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput

R1 = load_model("deepseek-r1")


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
    assert d.bytes_total == 1024 * 8 * 7168 and c.bytes_total == 2 * d.bytes_total   # fp8, then bf16
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
    assert jobs["dispatch"].bytes_total == 1024 * 8 * 7168           # every token once, whatever the mesh
    dense = _jobs(rack, "dense", {"tp": 8, "ep": 16}, 1024)
    assert list(dense) == ["attn-allreduce", "mlp-allreduce"] and dense["mlp-allreduce"].after == ("attn-allreduce",)


def test_no_shared_expert_no_shared_allreduce(rack):
    oss = load_model("gpt-oss-120b")
    names = [j.name for j in layer_jobs(rack, oss, "moe", mesh={"tp": 8, "ep": 16}, tokens=256)]
    assert names == ["attn-allreduce", "dispatch", "combine", "moe-allgather"]


def test_dtypes_scale_bytes(rack):
    jobs = _jobs(rack, "moe", {"ep": 128}, 1024, dispatch_dtype="bf16", combine_dtype="fp32")
    assert jobs["dispatch"].bytes_total == 1024 * 8 * 7168 * 2 and jobs["combine"].bytes_total == 1024 * 8 * 7168 * 4


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
