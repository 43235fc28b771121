"""Pricing against closed forms: every expected figure is derived from device and fabric parameters."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from fabricsim.cli import main, parse_size
from fabricsim.collectives import busbw_factor, by_mesh, by_size, parse_mesh
from fabricsim.collectives import price as _price


def price(*args, **kwargs):
    """These are closed forms of the bandwidth model: protocol effects off (protocol="ideal")
    unless a test asks for another protocol."""
    kwargs.setdefault("protocol", "ideal")
    return _price(*args, **kwargs)
from fabricsim.fabrics import FABRICS, build
from fabricsim.topo import routing, solver
from fabricsim.topo.errors import BadInput

GBps = 1e9
S = float(2 ** 28)


def chip_GBps(G, tier):
    """A chip's bandwidth on a tier, per direction, from its links."""
    c = next(n for n, d in G.nodes(data=True) if d["kind"] == "chip")
    return sum(G.edges[c, m]["capacity_gbps"] for m in G[c] if G.edges[c, m]["tier"] == tier) / 8


@pytest.mark.parametrize("generation", ["gb200", "gb300", "vera-rubin"])
def test_nvl72_72_rank_ring(generation):
    G = build("nvl72", generation=generation)
    B = chip_GBps(G, "nvlink") * GBps                # 900 GB/s (GB200/GB300), 1,800 GB/s (Vera Rubin)
    r = price(G, "all-reduce", groups=by_size(G, 72), size_bytes=S, algorithm="ring")
    assert r.bandwidth_time_s == pytest.approx(2 * 71 / 72 * S / B, rel=1e-9)
    assert r.busbw_GBps == pytest.approx(S / r.time_s / GBps * 2 * 71 / 72)


@pytest.mark.parametrize("tp", [2, 4, 8, 16])
def test_jalapeno_rack_tp_rings_run_at_600_GBps_per_chip(tp):
    G = build("jalapeno-rack")
    B = chip_GBps(G, "local") * GBps
    assert B == 600 * GBps
    r = price(G, "all-reduce", groups=by_size(G, tp), size_bytes=S, algorithm="ring")
    assert r.groups == 128 // tp
    assert r.bandwidth_time_s == pytest.approx(2 * (tp - 1) / tp * S / B, rel=1e-9)
    assert r.phases[0].repeat == 2 * (tp - 1) and r.phases[0].events == 1


@pytest.mark.parametrize("racks", [2, 4])
def test_pod_all_to_all_paced_by_global_lanes(racks):
    G = build("jalapeno-pod", racks=racks)
    n = 128 * racks
    r = price(G, "all-to-all", groups=by_size(G, n), size_bytes=S, algorithm="direct")
    glob = chip_GBps(G, "global") * GBps                               # 200 GB/s
    assert r.bandwidth_time_s == pytest.approx((n - 128) / n * S / glob, rel=1e-9)
    assert r.phases[0].events == 2                                     # local flows finish first
    assert r.bottlenecks[0]["tier"] == "global"


@pytest.mark.slow
def test_full_pod_2048_all_to_all():
    G = build("jalapeno-pod")
    r = price(G, "all-to-all", groups=by_size(G, 2048), size_bytes=2 ** 30, algorithm="direct")
    assert r.bandwidth_time_s == pytest.approx(1920 / 2048 * 2 ** 30 / (200 * GBps), rel=1e-9)


def test_256_across_two_racks_is_about_1_5x_a_rack():
    G = build("jalapeno-pod", racks=2)
    one = price(G, "all-to-all", groups=by_size(G, 128), size_bytes=S, algorithm="direct")
    two = price(G, "all-to-all", groups=by_size(G, 256), size_bytes=S, algorithm="direct")
    assert one.bandwidth_time_s == pytest.approx(127 / 128 * S / (600 * GBps), rel=1e-9)
    assert two.bandwidth_time_s == pytest.approx(128 / 256 * S / (200 * GBps), rel=1e-9)
    ratio = two.bandwidth_time_s / one.bandwidth_time_s
    assert ratio == pytest.approx(1.5 * 128 / 127, rel=1e-9)          # 3:1 split, half the data crosses


def test_hierarchical_all_to_all_moves_the_same_cross_rack_bytes_in_fewer_messages():
    G = build("jalapeno-pod", racks=2, leaf="static")
    groups = by_size(G, 256)
    flat = price(G, "all-to-all", groups=groups, size_bytes=S, algorithm="direct")
    hier = price(G, "all-to-all", groups=groups, size_bytes=S, algorithm="hierarchical")
    # rail-only: the flat all-to-all relays 7 of 8 cross-rack pairs; the rail-aligned one none
    assert any("relay" in n for n in flat.notes)
    assert not any("relay" in n for n in hier.notes)
    assert any("0.5 x S across racks" in n for n in flat.notes)
    assert any("0.5 x S across racks" in n for n in hier.notes)
    # its cross-rack phase alone is paced by the global side: 128 x S/256 over 200 GB/s
    cross = next(p for p in hier.phases if "across" in p.name)
    assert cross.step_bandwidth_s == pytest.approx(128 * S / 256 / (200 * GBps), rel=1e-9)
    # fewer, larger messages: hierarchical wins small sizes, direct wins large ones
    small = 2.0 ** 16
    assert price(G, "all-to-all", groups=groups, size_bytes=small).algorithm == "hierarchical"
    assert price(G, "all-to-all", groups=groups, size_bytes=2.0 ** 30).algorithm == "direct"


def test_nvls_halves_the_bytes_on_nvl72():
    G = build("nvl72")
    g = by_size(G, 72)
    nvls = price(G, "all-reduce", groups=g, size_bytes=S, algorithm="nvls")
    assert nvls.bandwidth_time_s == pytest.approx(S / (900 * GBps), rel=1e-9)
    assert price(G, "all-reduce", groups=g, size_bytes=S).algorithm == "nvls"
    with pytest.raises(BadInput, match="reduce in the network"):
        price(build("jalapeno-rack"), "all-reduce", groups=[tuple(range(8))], size_bytes=S, algorithm="nvls")


@pytest.mark.parametrize("dims", [(4, 4, 4), (2, 4, 6), (8, 1, 4)])
def test_torus_rings_bound_by_per_dimension_rings(dims):
    G = build("torus", dims="x".join(map(str, dims)))
    n = int(np.prod(dims))
    link = G.graph.get("link_GBps") or 100.0   # raw ICI rate (the 90 usable is the family's efficiency)
    r = price(G, "all-reduce", groups=by_size(G, n), size_bytes=S, algorithm="torus-rings")
    # per dimension k: 2(k-1) steps of data/k split over both directions of a ring
    data, want = S, 0.0
    for k in dims:
        if k < 2:
            continue
        # a ring of 2 sends both halves to the one neighbour over its doubled bundle: same time
        want += 2 * (k - 1) * (data / k / 2) / (link * GBps)
        data /= k
    assert r.bandwidth_time_s == pytest.approx(want, rel=1e-9)


def test_mesh_placement_ep_across_racks():
    G = build("jalapeno-pod", racks=2)
    groups = by_mesh(G, parse_mesh("tp=8,ep=32"), "ep")
    assert len(groups) == 8 and all(len(g) == 32 for g in groups)
    r = price(G, "all-to-all", groups=groups, size_bytes=S, algorithm="direct")
    assert r.groups == 8 and not r.partial


def test_busbw_conventions():
    assert busbw_factor("all-reduce", 8) == 2 * 7 / 8
    for c in ("all-gather", "reduce-scatter", "all-to-all"):
        assert busbw_factor(c, 8) == 7 / 8


def test_deterministic_bit_for_bit():
    G = build("jalapeno-pod", racks=2)
    a = price(G, "all-to-all", groups=by_size(G, 64, "random:1"), size_bytes=S, algorithm="direct")
    b = price(G, "all-to-all", groups=by_size(G, 64, "random:1"), size_bytes=S, algorithm="direct")
    assert a.as_dict() == b.as_dict() and a.group_time_s == b.group_time_s


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "tpu8t-virgo" else n
                                  for n in sorted(FABRICS)])
def test_maxmin_certificate_holds_for_an_all_to_all_on_every_fabric(name):
    G = build(name) if name != "ironwood" else build(name, dims="8x8x8")
    ranks = np.array(sorted(d["rank"] for _, d in G.nodes(data=True) if d["kind"] == "chip"))
    members = np.random.default_rng(0).choice(ranks, size=min(48, len(ranks)), replace=False)
    i, j = np.nonzero(~np.eye(len(members), dtype=bool))
    rt = routing.route(G, members[i], members[j])
    assert rt.reachable.all()
    cap = rt.links.capacity_Bps
    sizes = np.full(len(i), 1e6)   # equal sizes: events come from rate levels, not from each flow
    rates = solver.maxmin_rates(rt.flow_piece, rt.piece_link, cap).rate_Bps
    assert solver.check_maxmin(rt.flow_piece, rt.piece_link, cap, rates) == []
    res = solver.simulate(rt.flow_piece, rt.piece_link, cap, sizes)
    assert res.time_s >= res.bound_s * (1 - 1e-12)


@pytest.mark.parametrize("text, value", [("64MiB", 2 ** 26), ("1GiB", 2 ** 30), ("1.5GB", 1.5e9),
                                         ("512KB", 512e3), ("100", 100.0), ("2 KiB", 2048.0)])
def test_sizes(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("args, words", [
    (["--group-size", "3"], ["does not divide", "128 chips"]),
    (["--mesh", "tp=8,ep=8", "--over", "ep"], ["covers 64 chips"]),
    (["--group-size", "8", "--algorithm", "btree"], ["unknown algorithm 'btree'", "ring"]),
    (["--group-size", "8", "--size", "-1MiB"], ["must be positive"]),
    (["--group-size", "8", "--size", "lots"], ["not a size"]),
    (["--group-size", "8", "--placement", "scattered"], ["unknown placement"]),
    (["--group-size", "8", "--efficiency", "1.5"], ["efficiency"]),
])
def test_price_cli_bad_input_is_one_line(args, words):
    base = ["price", "all-reduce", "--fabric", "jalapeno-rack", "--size", "64MiB"]
    res = CliRunner().invoke(main, base + args)
    assert res.exit_code == 2, res.output
    err = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert len(err) == 1 and "Traceback" not in res.output
    for w in words:
        assert w in err[0]


def test_price_cli_json_matches_library_and_has_the_schema():
    res = CliRunner().invoke(main, ["price", "all-reduce", "--fabric", "jalapeno-rack", "--group-size", "8",
                                    "--size", "64MiB", "--algorithm", "ring", "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    G = build("jalapeno-rack")
    # the CLI's default step model is the library's: protocol auto
    want = price(G, "all-reduce", groups=by_size(G, 8), size_bytes=2 ** 26, algorithm="ring",
                 protocol="auto").as_dict()
    assert got == json.loads(json.dumps(want))
    for key in ("collective", "algorithm", "fabric", "group_size", "groups", "size_bytes", "time_s",
                "bandwidth_time_s", "latency_s", "bound_s", "algbw_GBps", "busbw_GBps", "phases",
                "bottlenecks", "unreachable_pairs", "broken_groups", "protocol", "method"):
        assert key in got


def test_calibration_file(tmp_path):
    f = tmp_path / "cal.toml"
    f.write_text("efficiency = 0.5\nstep_latency_us = 0\n")
    args = ["price", "all-reduce", "--fabric", "jalapeno-rack", "--group-size", "8", "--size", "64MiB",
            "--algorithm", "ring", "--protocol", "ideal", "--json"]
    full = json.loads(CliRunner().invoke(main, args).output)
    half = json.loads(CliRunner().invoke(main, args + ["--calibration", str(f)]).output)
    assert half["bandwidth_time_s"] == pytest.approx(2 * full["bandwidth_time_s"], rel=1e-9)
    f.write_text("efficency = 0.5\n")
    res = CliRunner().invoke(main, args + ["--calibration", str(f)])
    assert res.exit_code == 2 and "efficency" in res.output


def test_compare_runs_the_same_work_on_each_fabric():
    res = CliRunner().invoke(main, ["compare", "all-reduce", "--fabrics", "jalapeno-rack,nvl72",
                                    "--group-size", "8", "--size", "64MiB", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output.split("\n", 0)[0] if False else res.stdout)
    assert [r["fabric"] for r in rows] == ["jalapeno-rack", "nvl72"]
    assert all(r["group_size"] == 8 for r in rows)


def test_memory_guard_refuses_before_routing_and_names_the_bound():
    from fabricsim.topo.errors import TooLarge
    G = build("jalapeno-rack")
    with pytest.raises(TooLarge, match="--bound-only"):
        price(G, "all-to-all", groups=by_size(G, 128), size_bytes=S, memory_limit_bytes=4 * 10 ** 6, symmetry=False)
    with pytest.raises(TooLarge, match="even the link-load bound"):
        price(G, "all-to-all", groups=by_size(G, 128), size_bytes=S, bound_only=True, memory_limit_bytes=10 ** 5,
              symmetry=False)
    # solved as classes of interchangeable chips, the same all-to-all fits (one class is routed)
    r = price(G, "all-to-all", groups=by_size(G, 128), size_bytes=S, memory_limit_bytes=4 * 10 ** 6)
    assert r.phases[0].flows == 128 * 127


def test_cross_rack_note_only_where_a_chip_has_a_slower_tier():
    # issue 26 rough edge: the note named "the slower tier" on uniform tori of cubes too
    iw = build("ironwood", dims=(8, 8, 8))
    r = price(iw, "all-to-all", groups=by_size(iw, 512), size_bytes=2**26)
    assert not any("across racks" in n for n in r.notes)
    pod = build("jalapeno-pod", racks=2)
    r = price(pod, "all-to-all", groups=by_size(pod, 256), size_bytes=2**26)
    note, = [n for n in r.notes if "across racks" in n]
    assert "global tier has 200 GB/s against 600 GB/s on its local tier" in note
