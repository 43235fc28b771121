import json

import pytest

from fabricsim.collectives import by_mesh, by_size, from_file, parse_mesh
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput


@pytest.fixture(scope="module")
def pod():
    return build("jalapeno-pod", racks=2)


@pytest.mark.parametrize("size", [2, 8, 128, 256])
def test_packed_groups_are_consecutive_and_cover_every_chip(pod, size):
    groups = by_size(pod, size)
    assert len(groups) == 256 // size
    assert sorted(r for g in groups for r in g) == list(range(256))
    assert all(list(g) == list(range(g[0], g[0] + size)) for g in groups)


def test_spread_groups_cross_racks(pod):
    groups = by_size(pod, 2, "spread")
    racks = [{pod.nodes[f"r{r // 128:02d}/xpu{r % 128:03d}"]["rack"] for r in g} for g in groups]
    assert all(len(s) == 2 for s in racks)


def test_random_is_seeded_and_deterministic(pod):
    a = by_size(pod, 8, "random:3")
    assert a == by_size(pod, 8, "random:3")
    assert a != by_size(pod, 8, "random:4")
    assert sorted(r for g in a for r in g) == list(range(256))


def test_mesh_tp_is_innermost():
    G = build("jalapeno-rack")
    mesh = parse_mesh("dp=2,tp=8,ep=8")          # order given does not matter: tp is innermost
    tp = by_mesh(G, mesh, "tp")
    assert tp[0] == tuple(range(8)) and len(tp) == 16
    ep = by_mesh(G, mesh, "ep")
    assert ep[0] == tuple(range(0, 64, 8)) and len(ep) == 16
    dp = by_mesh(G, mesh, "dp")
    assert dp[0] == (0, 64)
    for groups in (tp, ep, dp):
        assert sorted(r for g in groups for r in g) == list(range(128))


@pytest.mark.parametrize("call, match", [
    (lambda G: by_size(G, 3), "does not divide"),
    (lambda G: by_size(G, 1), "at least 2"),
    (lambda G: by_size(G, 8, "scattered"), "unknown placement"),
    (lambda G: by_size(G, 8, "random:x"), "not an integer"),
    (lambda G: by_mesh(G, parse_mesh("tp=8,ep=8"), "tp"), "covers 64 chips"),
    (lambda G: by_mesh(G, parse_mesh("tp=8,ep=16"), "pp"), "not a mesh dimension"),
    (lambda G: parse_mesh("tp=8;ep=16"), "not name=integer"),
])
def test_bad_placements_name_the_problem(call, match):
    with pytest.raises(BadInput, match=match):
        call(build("jalapeno-rack"))


def test_groups_file_accepts_ranks_and_ids(tmp_path):
    G = build("jalapeno-rack")
    f = tmp_path / "g.json"
    f.write_text(json.dumps([[0, 1, 2, 3], ["r00/xpu004", "r00/xpu005", 6, 7]]))
    assert from_file(G, f) == ((0, 1, 2, 3), (4, 5, 6, 7))


@pytest.mark.parametrize("content, match", [
    ([[0, 1], [1, 2]], "appears twice"),
    ([[0, 1], [2, 999]], "does not exist"),
    ([[0, "r00/xpu01"]], "unknown chip"),
    ([[0]], "at least 2"),
    ({"a": 1}, "expected a JSON list"),
])
def test_groups_file_errors(tmp_path, content, match):
    f = tmp_path / "g.json"
    f.write_text(json.dumps(content))
    with pytest.raises(BadInput, match=match):
        from_file(build("jalapeno-rack"), f)


def test_groups_file_not_json(tmp_path):
    f = tmp_path / "g.json"
    f.write_text("[[0, 1],\n oops]")
    with pytest.raises(BadInput, match="line 2"):
        from_file(build("jalapeno-rack"), f)


def test_count_keeps_the_first_groups_without_divisibility():
    G = build("nvl72")
    assert by_size(G, 64, count=1) == (tuple(range(64)),)
    with pytest.raises(BadInput, match="at most 1"):
        by_size(G, 64, count=2)
    with pytest.raises(BadInput, match="does not divide"):
        by_size(G, 64)
