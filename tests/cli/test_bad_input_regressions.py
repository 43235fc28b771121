"""Regression tests for the fuzz findings of issue 16: every case is refused in one line.

Each test names the finding it pins.  ``refused`` checks the contract the CLI keeps for bad
input: exit 1 or 2, exactly one ``Error:`` line, no traceback, no exception escaping.
"""
import json
import time
import warnings

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.fabrics import build
from fabricsim.topo import builders
from fabricsim.topo.errors import TooLarge


def invoke(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def refused(*args, match: str = "", codes=(1, 2)):
    """Run the CLI; assert a clean one-line refusal whose message contains ``match``."""
    t0 = time.perf_counter()
    res = invoke(*args)
    out = res.output
    assert res.exit_code in codes, (res.exit_code, out[-500:], res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in out
    errors = [line for line in out.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, out
    assert match in errors[0], errors[0]
    assert time.perf_counter() - t0 < 30, "a refusal must not do the work first"
    return errors[0]


# --------------------------------------------------------------------------- size caps (hangs)
@pytest.mark.parametrize("fabric, sets, count", [
    ("jalapeno-pod", ["racks=2000"], "276,064 nodes"),
    ("jalapeno-pod", ["racks=99999999"], "nodes"),
    ("torus", ["dims=2000x2000"], "4,000,000 nodes and 8,000,000 links"),
    ("ironwood", ["dims=400x400x400"], "64,000,000 nodes"),
    ("jalapeno-rack", ["trays=99999999"], "799,999,998 nodes"),
    ("jalapeno-rack", ["chips_per_tray=99999999"], "1,599,999,990 nodes"),
    ("torus", ["dims=2x99999999999999999999"], "~10^20 nodes"),
])
def test_oversized_fabric_is_refused_with_its_estimate(fabric, sets, count):
    args = ["audit", fabric] + [x for s in sets for x in ("--set", s)]
    msg = refused(*args, match=count)
    assert "GiB" in msg and f"{builders.MAX_LINKS:,} links" in msg


def test_size_estimate_matches_the_built_graph():
    # the closed-form counts the cap uses are the real ones, at sizes that are built
    for name, kw, what in [("torus", {"dims": "4x4x2"}, "torus"), ("jalapeno-pod", {"racks": 2}, "pod"),
                           ("jalapeno-rack", {"trays": 3}, "rack"), ("boardfly", {"groups": 3}, "boardfly")]:
        G = build(name, **kw)
        old = builders.MAX_NODES, builders.MAX_LINKS
        try:
            builders.MAX_NODES, builders.MAX_LINKS = G.number_of_nodes() - 1, G.number_of_edges() - 1
            with pytest.raises(TooLarge, match=f"{G.number_of_nodes():,} nodes and {G.number_of_edges():,} links"):
                build(name, **kw)
            builders.MAX_NODES, builders.MAX_LINKS = G.number_of_nodes(), G.number_of_edges()
            assert build(name, **kw).number_of_edges() == G.number_of_edges()
        finally:
            builders.MAX_NODES, builders.MAX_LINKS = old


@pytest.mark.parametrize("builder, kw, count", [
    ("switched_domain", dict(chips=10**6, planes=18), "18,000,000 links"),
    ("leaf_spine", dict(leaves=10**4, chips_per_leaf=10**3, spines=4), "10,040,000 links"),
    ("full_mesh", dict(chips=10**5), "4,999,950,000 links"),
    ("dragonfly", dict(p=64, a=128, h=64), "nodes"),
])
def test_generic_builders_refuse_oversized_shapes(builder, kw, count):
    with pytest.raises(TooLarge, match=count):
        builders.BUILDERS[builder](**kw)


def test_toml_recipe_with_a_huge_torus_is_refused(tmp_path):
    p = tmp_path / "big.toml"
    p.write_text('builder = "torus"\n[params]\ndims = [4, 4]\n')
    refused("audit", p, "--set", "dims=100000x100000", match="10,000,000,000 nodes")
    p.write_text('builder = "torus"\n[params]\ndims = [100000, 100000]\n')
    refused("audit", p, match="10,000,000,000 nodes")


# --------------------------------------------------------------------------- link rates
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400", "0", "-5", "1e-300"])
@pytest.mark.parametrize("fabric", ["torus", "boardfly", "ironwood"])
def test_bad_link_rates_are_refused_at_parsing(fabric, value):
    refused("audit", fabric, "--set", f"link_GBps={value}", match="link_GBps")


def test_link_rate_message_gives_the_valid_range():
    msg = refused("audit", "torus", "--set", "link_GBps=1e-300", match="0.000125 .. 1.25e+06 GB/s")
    assert "finite" in msg


@pytest.mark.parametrize("kw", [dict(lane_gbps=float("inf")), dict(lane_gbps=float("nan")),
                                dict(link_gbps=1e-300), dict(latency_ns=float("inf")),
                                dict(latency_ns=float("nan")), dict(latency_ns=-1.0)])
def test_generic_torus_refuses_non_finite_figures(kw):
    with pytest.raises(ValueError, match="lane_gbps|link_gbps|latency_ns"):
        builders.torus((4, 4), **kw)


def test_toml_recipe_with_infinite_lane_rate_is_refused(tmp_path):
    p = tmp_path / "inf.toml"
    p.write_text('builder = "torus"\n[params]\ndims = [4, 4]\nlane_gbps = inf\n')
    refused("audit", p, match="lane_gbps")


# --------------------------------------------------------------------------- tracebacks 1-3
def test_a_5000_character_name_is_one_line():
    msg = refused("audit", "A" * 5000, match="unknown fabric")
    assert len(msg) < 400
    msg = refused("audit", "A" * 5000 + ".json", match="File name too long")
    assert len(msg) < 400


@pytest.mark.parametrize("placement, match", [("random:-1", "not an integer >= 0"), ("random:", "not an integer"),
                                              ("packed:", "takes no seed"), ("spread:3", "takes no seed"),
                                              ("random:x", "not an integer")])
def test_bad_placement_seeds_are_refused(placement, match):
    refused("price", "all-reduce", "--fabric", "jalapeno-rack", "--group-size", 8, "--size", "64MiB",
            "--placement", placement, match=match)


def test_random_seed_still_works():
    res = invoke("price", "all-reduce", "--fabric", "jalapeno-rack", "--group-size", 8, "--size", "1MiB",
                 "--placement", "random:7", "--bound-only")
    assert res.exit_code == 0, res.output


def test_huge_mesh_does_not_wrap_around_int64():
    refused("price", "all-to-all", "--fabric", "jalapeno-rack", "--size", "1MiB",
            "--mesh", "tp=8589934595,ep=8198552799480731008", "--over", "tp",
            match="covers 70,425,032,321,193,629,321,508,421,760 chips")


# --------------------------------------------------------------------------- fabric files (5, 6, 9)
def _nvl72_json(tmp_path, edit=None, name="f.json"):
    from fabricsim.fabrics.userfile import export_fabric
    p = export_fabric(build("nvl72"), tmp_path / name)
    if edit:
        data = json.loads(p.read_text())
        edit(data)
        p.write_text(json.dumps(data))   # json.dumps writes NaN / Infinity as Python's json reads them
    return p


@pytest.mark.parametrize("key, value", [("capacity_gbps", float("nan")), ("capacity_gbps", float("inf")),
                                        ("lane_gbps", float("inf")), ("port_gbps", float("inf")),
                                        ("latency_ns", float("nan")), ("latency_ns", float("inf"))])
def test_non_finite_edge_figures_in_json_are_refused(tmp_path, key, value):
    def edit(d):
        d["edges"][0][key] = value
    p = _nvl72_json(tmp_path, edit)
    for cmd in (["audit", p], ["price", "all-reduce", "--fabric", p, "--size", "1MiB"]):
        msg = refused(*cmd, match="contract violation")
        assert key in msg and "finite" in msg


def test_validate_and_audit_refuse_nan_capacities_in_the_library():
    from fabricsim.topo.auditing import audit
    from fabricsim.topo.contract import validate
    from fabricsim.topo.errors import BadInput
    G = build("jalapeno-rack")
    u, v = next(iter(G.edges))
    G.edges[u, v]["capacity_gbps"] = float("nan")
    assert any("finite" in x.problem for x in validate(G))
    with pytest.raises(BadInput, match="contract violation"):
        audit(G)


def test_duplicate_edge_in_json_is_refused(tmp_path):
    p = _nvl72_json(tmp_path, lambda d: d["edges"].append(dict(d["edges"][0])))
    refused("audit", p, match="repeats the edge")
    p = _nvl72_json(tmp_path, lambda d: d["edges"].append(dict(d["edges"][0], source=d["edges"][0]["target"],
                                                                target=d["edges"][0]["source"])), "g.json")
    refused("audit", p, match="repeats the edge")


def test_duplicate_node_in_json_is_refused(tmp_path):
    p = _nvl72_json(tmp_path, lambda d: d["nodes"].append(dict(d["nodes"][0])))
    refused("audit", p, match="repeats id")


def test_graph_attribute_that_is_a_list_is_refused(tmp_path):
    p = _nvl72_json(tmp_path, lambda d: d.__setitem__("graph", [1, 2]))
    refused("audit", p, match="'graph' must be an object")


@pytest.mark.parametrize("text", ['builder = ["torus"]\n[params]\ndims = [4, 4]\n',
                                  '[builder]\nname = "torus"\n[params]\ndims = [4, 4]\n',
                                  'builder = 3\n'])
def test_recipe_whose_builder_is_not_a_name_is_refused(tmp_path, text):
    p = tmp_path / "r.toml"
    p.write_text(text)
    refused("audit", p, match="is not a builder")


def test_deep_nesting_is_one_line(tmp_path):
    j = tmp_path / "deep.json"
    j.write_text("[" * 200_000)
    refused("audit", j, match="nested too deeply")
    t = tmp_path / "deep.toml"
    t.write_text("builder = 'torus'\n[params]\ndims = " + "[" * 200_000)
    refused("audit", t, match="deep.toml")
    g = tmp_path / "groups.json"
    g.write_text("[" * 200_000)
    refused("price", "all-reduce", "--fabric", "jalapeno-rack", "--size", "1MiB", "--groups", g,
            match="nested too deeply")


# --------------------------------------------------------------------------- non-UTF-8 files (7)
def test_non_utf8_groups_file_is_refused(tmp_path):
    g = tmp_path / "groups.json"
    g.write_bytes(b"[[0, 1]]\xff\xfe")
    refused("price", "all-reduce", "--fabric", "jalapeno-rack", "--size", "1MiB", "--groups", g,
            match="not UTF-8")


SWEEP = ["sweep", "all-reduce", "--fabric", "jalapeno-rack", "--class", "local-switch", "--size", "1MiB",
         "--group-size", "8", "--bound-only", "--samples", "1"]


def test_non_utf8_resume_file_is_refused(tmp_path):
    r = tmp_path / "res.jsonl"
    r.write_bytes(b"\xff\xfe\x00garbage\n")
    refused(*SWEEP, "--resume", r, match="not UTF-8")


def test_empty_resume_name_is_refused():
    refused(*SWEEP, "--resume", "", match="empty")


def test_resume_under_a_missing_directory_is_refused_and_not_created(tmp_path):
    r = tmp_path / "nope" / "deeper" / "res.jsonl"
    refused(*SWEEP, "--resume", r, match="does not exist")
    assert not (tmp_path / "nope").exists()


# --------------------------------------------------------------------------- output files (10)
@pytest.mark.parametrize("cmd", [["price", "all-reduce", "--fabric", "nvl72", "--size", "1MiB", "--bound-only"],
                                 ["compare", "all-reduce", "--fabrics", "nvl72", "--size", "1MiB", "--bound-only"],
                                 SWEEP])
@pytest.mark.parametrize("plot", ["x.txt", "", "noextension"])
def test_plot_names_without_a_picture_extension_are_refused(cmd, plot):
    msg = refused(*cmd, "--plot", plot, match="--plot")
    assert ".png, .svg, .pdf" in msg


@pytest.mark.parametrize("args", [["draw", "nvl72", "-o", "/proc/x.png"],
                                  ["export", "nvl72", "-o", "/proc/x.json"],
                                  ["export", "nvl72", "-o", "no_such_dir/../y.json"],
                                  ["export", "nvl72", "-o", "a" * 300 + ".json"],
                                  ["draw", "nvl72", "-o", "a" * 300 + ".png"]])
def test_unwritable_outputs_are_one_line(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    msg = refused(*args)
    assert "cannot write" in msg or "does not exist" in msg


def test_price_plot_to_an_unwritable_place_is_one_line():
    refused("price", "all-reduce", "--fabric", "nvl72", "--size", "1MiB", "--bound-only", "--plot",
            "/proc/x.png", match="cannot write")


@pytest.mark.parametrize("expand", ["", ",", "1,,2", "x"])
def test_draw_expand_that_names_nothing_is_refused(expand, tmp_path):
    refused("draw", "boardfly", "-o", tmp_path / "d.png", "--expand", expand, match="expand")


# --------------------------------------------------------------------------- accepted but wrong
PRICE = ["price", "all-reduce", "--fabric", "jalapeno-rack", "--size", "1MiB"]


def test_group_size_zero_is_refused_not_read_as_absent():
    refused(*PRICE, "--group-size", 0, match="group size 0")


def test_empty_mesh_is_refused():
    refused(*PRICE, "--mesh", "", "--over", "tp", match="empty mesh")


def test_over_without_mesh_is_refused():
    refused(*PRICE, "--over", "ep", match="--over DIM needs --mesh")
    refused(*SWEEP, "--over", "ep", match="--over DIM needs --mesh")


@pytest.mark.parametrize("value", ["nan", "inf", "1e400", "-1", "x"])
def test_step_latency_must_be_finite(value):
    refused(*PRICE, "--step-latency-us", value, match="--step-latency-us")


@pytest.mark.parametrize("value", ["5e-324", "0", "nan", "inf", "1.5", "-0.5"])
def test_efficiency_must_be_a_usable_fraction(value):
    refused(*PRICE, "--efficiency", value, match="--efficiency")


def _slow_lanes(lane_gbps):
    def edit(d):
        for e in d["edges"]:
            e["port_gbps"] = e["port_gbps"] / e["lane_gbps"] * lane_gbps     # same lanes per port
            e["lane_gbps"] = lane_gbps
            e["capacity_gbps"] = e["lanes"] * lane_gbps
    return edit


def test_absurd_lane_rate_in_a_file_is_refused(tmp_path):
    p = _nvl72_json(tmp_path, _slow_lanes(1e-300))
    refused("price", "all-reduce", "--fabric", p, "--size", "1GiB", match="outside 0.001 .. 1e+07 Gb/s")


def test_infinite_time_is_never_printed_as_a_result(tmp_path):
    # every figure at the edge of its range: the time overflows to inf and is refused, not printed
    # (and numpy's overflow warnings on the way stay off stderr: the one line is the answer)
    p = _nvl72_json(tmp_path, _slow_lanes(1e-3))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        msg = refused("price", "all-reduce", "--fabric", p, "--size", "1e308", "--efficiency", "1e-6",
                      "--bound-only", match="not a result")
    assert "time inf" not in msg
    assert [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)] == []


@pytest.mark.parametrize("size", ["64Gb", "1Mb", "8b", "2mib", "1e400", "0.5"])
def test_bit_units_and_absurd_sizes_are_refused(size):
    refused(*PRICE, "--size", size, match="--size")


def test_size_help_says_b_is_bytes_and_bits_are_refused():
    res = invoke("price", "--help")
    assert "lower-case b means bits" in " ".join(res.output.split())


def test_byte_units_still_parse():
    from fabricsim.cli import parse_size
    assert parse_size("64MiB") == 2 ** 26 and parse_size("1GB") == 1e9 and parse_size("2kB") == 2000


def test_resume_file_ending_in_a_multibyte_character(tmp_path):
    # found by tests/test_fuzz.py: the fresh-line check seeked into the middle of a UTF-8 character
    r = tmp_path / "res.jsonl"
    r.write_bytes("é".encode())
    res = invoke(*SWEEP, "--resume", r)
    assert res.exit_code == 0, res.output
    # a cut last line (here the whole file) is a killed run's partial record: it is trimmed, not kept
    lines = r.read_text(encoding="utf-8").splitlines()
    assert lines and all(json.loads(line) for line in lines)


def test_plot_into_a_missing_directory_is_refused(tmp_path):
    # found by tests/test_fuzz.py: matplotlib's ValueError escaped
    refused(*PRICE, "--bound-only", "--plot", tmp_path / "nope" / "x.png", match="does not exist")


@pytest.mark.parametrize("value", [[], {}, [1, 2]])
def test_unhashable_model_in_json_is_a_violation(tmp_path, value):
    # found by tests/test_fuzz.py: validate looked a list up in the device catalog (TypeError)
    p = _nvl72_json(tmp_path, lambda d: d["nodes"][0].__setitem__("model", value))
    refused("audit", p, match="is not in the device catalog")


# --------------------------------------------------------------------------- issue 26: the hidden-corpus hunt
@pytest.mark.parametrize("fabric", ["rail-cluster", "nvl72-cluster"])
@pytest.mark.parametrize("ratio", ["1e308", "1.7976931348623157e308", "5e-324"])
def test_extreme_spine_oversubscription_is_refused_not_overflowed(fabric, ratio):
    # was: OverflowError (ports * 1e308 -> inf; per / 5e-324 -> inf rounded) as a traceback
    refused("audit", fabric, "--set", f"spine_oversubscription={ratio}", match="spine_oversubscription")


@pytest.mark.parametrize("ratio, count", [("1e-300", "~10^"), ("1e-6", "250,000 nodes")])
def test_tiny_spine_oversubscription_is_refused_by_the_size_of_its_spine_tier(ratio, count):
    # was: a silent hang (2e300 up ports per leaf: the spine count search and build never ended)
    msg = refused("audit", "rail-cluster", "--set", f"spine_oversubscription={ratio}", match="spine tier")
    assert count in msg and "cap is" in msg and "~~" not in msg


def test_a_valid_undersubscribed_spine_still_builds():
    G = build("rail-cluster", spine_oversubscription=0.5)
    assert sum(1 for n in G if str(n).startswith("spine")) > 0


def test_a_large_build_is_announced_before_it_starts(monkeypatch):
    # was: `price --fabric torus --set dims=1000x1000` built for 17+ s without a word on stderr
    monkeypatch.setattr(builders, "ANNOUNCE_ELEMENTS", 10)
    res = invoke("audit", "torus", "--set", "dims=4x4", "--no-bisection", "--no-hops")
    assert "building a 4x4 torus: 16 nodes and 32 links ..." in res.output, res.output
    said = []
    with builders.building(said.append):
        build("torus", dims="4x4")
    assert said == ["building a 4x4 torus: 16 nodes and 32 links ..."]
    build("torus", dims="4x4")          # outside `building`: the library stays quiet
    assert len(said) == 1


RESUME_SWEEP = ["sweep", "all-reduce", "--fabric", "jalapeno-rack", "--class", "local-switch", "--size", "1MiB",
                "--group-size", 8, "--bound-only"]


@pytest.fixture(scope="module")
def sweep_record(tmp_path_factory):
    """One valid results record of RESUME_SWEEP (its single orbit representative)."""
    path = tmp_path_factory.mktemp("resume") / "ok.jsonl"
    res = invoke(*RESUME_SWEEP, "--resume", path)
    assert res.exit_code == 0, res.output
    return json.loads(path.read_text().splitlines()[0])


@pytest.mark.parametrize("damage, match", [
    (lambda r: r.update(result=None), "is NoneType, not a scenario's result"),
    (lambda r: r.update(result=[1]), "is list"),
    (lambda r: r.update(result={}), "another scenario"),
    (lambda r: r["result"].update(time_s=None), "time_s=None"),
    (lambda r: r["result"].update(bandwidth_time_s="x"), "bandwidth_time_s=x"),
    (lambda r: r["result"].update(time_s=-1), "time_s=-1"),
    (lambda r: r["result"].update(failed=5), "another scenario"),
    (lambda r: r["result"].update(method="x"), "method=x"),
    (lambda r: r["result"].update(partial="no"), "partial=no"),
    (lambda r: r.update(specs=[[1]]), "not one of a sweep's results"),
])
def test_damaged_sweep_resume_record_is_refused(tmp_path, sweep_record, damage, match):
    # was: TypeError / KeyError tracebacks (a stored result was used as it was read back)
    rec = json.loads(json.dumps(sweep_record))
    damage(rec)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    msg = refused(*RESUME_SWEEP, "--resume", path, match=match)
    assert "--resume" in msg, msg        # was: "Invalid value for options"


def test_intact_sweep_resume_record_is_reused(tmp_path, sweep_record):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(sweep_record) + "\n")
    res = invoke(*RESUME_SWEEP, "--resume", path, "--json")
    assert res.exit_code == 0, res.output
    assert path.read_text().count("\n") == 1       # nothing recomputed: the stored result was used


def test_too_many_n2_scenarios_are_refused_before_the_placement_is_priced(monkeypatch):
    # was: `sweep --fabric tpu8t-virgo --class link --n 2` priced the intact fabric's placement (16 s) and
    # listed the domains twice before refusing C(546560, 2) scenarios: 20 s without a word
    from fabricsim.collectives import runs
    from fabricsim.collectives.whatif import sweeps
    monkeypatch.setattr(sweeps, "MAX_SCENARIOS", 10)

    def priced(*a, **k):
        raise AssertionError("the placement was priced before the scenario count was checked")
    monkeypatch.setattr(runs, "_auto_chosen", priced)
    refused(*RESUME_SWEEP, "--n", 2, match="15 scenarios (C(6, 2)) is more than 10")
    res = invoke(*RESUME_SWEEP, "--n", 2, "--samples", 3, "--placement", "packed")   # sampled: still runs
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("seed", [-3, -(10**20), 2**63])
def test_atlas_monte_carlo_seed_out_of_range_is_refused(seed):
    # was: ValueError "expected non-negative integer" from numpy's SeedSequence, as a traceback, after the atlas ran
    refused("atlas", "jalapeno-rack", "--collective", "all-reduce", "--size", "1MiB", "--group-size", 8,
            "--bound-only", "--workers", 1, "--classes", "rack", "--availability", "--samples", 10, "--seed", seed,
            match="--seed")


def test_availability_refuses_a_negative_seed_in_the_library():
    from fabricsim.collectives.whatif.atlas import Rates, atlas, availability
    from fabricsim.topo.errors import BadInput
    a = atlas("jalapeno-rack", None, collective="all-reduce", size_bytes=2**20, group_size=8, algorithm="ring",
              classes=["local-switch"])
    with pytest.raises(BadInput, match="seed -1 must be an integer from 0") as exc:
        availability(a, Rates({"local-switch": (0.5, 24.0, "toy")}), samples=10, seed=-1)
    assert exc.value.param == "seed"


def test_a_long_moe_routing_says_how_far_it_is(monkeypatch):
    # was: --moe experts=1048576,top_k=1048575,tokens=4096 (2**32 draws, inside the cap) sampled for minutes in silence
    from fabricsim.collectives.traffic import moe
    monkeypatch.setattr(moe, "_SAY_EVERY_S", -1.0)      # say at every chunk
    said = []
    spec = moe.MoESpec.parse("experts=8,top_k=2,tokens=16,hidden=64")
    t = moe.moe_traffic(spec, 8, progress=said.append)
    assert said and all(m.startswith("moe: routed ") and "of 16 tokens" in m for m in said), said
    assert (t.matrix == moe.moe_traffic(spec, 8).matrix).all()     # the same routing, said or not
    res = invoke("price", "all-to-all", "--fabric", "jalapeno-rack", "--group-size", 8, "--bound-only",
                 "--moe", "experts=8,top_k=2,tokens=16,hidden=64")
    assert res.exit_code == 0 and "moe: routed 0 of 16 tokens" in res.output, res.output


def test_a_sweep_of_a_large_fabric_says_each_step_before_its_first_scenario(monkeypatch):
    # was: `sweep all-to-all --fabric tpu8t-virgo --class link --n 3 --samples 3` was silent for 50 s (domains
    # listed twice, the placement and the intact fabric priced, the scenarios folded) before its first bar
    monkeypatch.setattr(builders, "ANNOUNCE_ELEMENTS", 10)
    res = invoke(*RESUME_SWEEP)
    assert res.exit_code == 0, res.output
    for step in ("sweep: counting the local-switch domains of", "sweep: 6 domains; choosing the placement",
                 "sweep: listing the local-switch domains", "sweep: 6 scenarios; pricing the intact fabric",
                 "sweep: folding 6 scenarios"):
        assert step in res.output, (step, res.output)
    monkeypatch.setattr(builders, "ANNOUNCE_ELEMENTS", 10**9)         # a small fabric: no such lines
    assert "sweep: counting" not in invoke(*RESUME_SWEEP).output


def test_a_long_chain_of_mix_jobs_is_ordered_in_linear_time(tmp_path):
    # was: a 3,000-job `after` chain spent minutes in the topological sort (every wave re-checked every job
    # against a fresh set of the done ones: cubic), silently
    import importlib
    from types import SimpleNamespace
    mix = importlib.import_module("fabricsim.collectives.jobs.mix")
    chain = [SimpleNamespace(name=f"j{i}", after=[f"j{i - 1}"] if i else []) for i in range(3_000)]
    t0 = time.perf_counter()
    assert mix._order(chain[::-1]) == list(range(3_000))[::-1]
    assert time.perf_counter() - t0 < 1.0
    # waves in file order: c and a are ready first, b after a, d after b and c
    jobs = [SimpleNamespace(name=n, after=a) for n, a in
            [("d", ["b", "c"]), ("c", []), ("b", ["a"]), ("a", [])]]
    assert [jobs[i].name for i in mix._order(jobs)] == ["c", "a", "b", "d"]
    jobs.append(SimpleNamespace(name="e", after=["f"]))
    jobs.append(SimpleNamespace(name="f", after=["e"]))
    with pytest.raises(Exception, match="cycle: .*e -> f|cycle: .*f -> e"):
        mix._order(jobs)


@pytest.mark.parametrize("vary", ["{start = 1, stop = 10, step = 5e-324}", "{start = 1, stop = 1e308, step = 1e-300}",
                                  "{start = -1e308, stop = 1e308, step = 1}"])
def test_design_range_whose_count_overflows_is_refused(tmp_path, vary):
    # was: OverflowError (int(inf)) in design/space.py as a traceback
    space = tmp_path / "s.toml"
    space.write_text(f'builder = "rail-cluster"\n[vary]\nnic_gbps = {vary}\n[workload]\n'
                     'jobs = [{collective = "all-to-all", group_size = 16, size = "1MiB"}]\n')
    refused("design", space, match="more values than a float can count")


@pytest.mark.parametrize("cmd", [["design", "examples/design/rail_cluster.toml"], RESUME_SWEEP])
def test_more_local_workers_than_the_machine_can_run_are_refused(cmd):
    # was: design --workers 100000 forked 100,000 processes at once (2,000 took 25 s to start 2 designs)
    from fabricsim.collectives.whatif.sweeps import LocalRunner, max_local_workers
    from fabricsim.topo.errors import BadInput
    from repo_paths import ROOT
    args = [str(ROOT / a) if str(a).startswith("examples/") else a for a in cmd]
    refused(*args, "--workers", 100_000, match="--workers")
    assert LocalRunner(max_local_workers()).workers == max_local_workers()
    with pytest.raises(BadInput, match="local processes"):
        LocalRunner(max_local_workers() + 1)


@pytest.mark.parametrize("args", [["export", "nvl72", "-o", ".json"], ["export", "nvl72", "-o", ".YML"],
                                  ["draw", "nvl72", "-o", ".png"]])
def test_an_output_name_that_is_only_an_extension_is_refused(args, tmp_path, monkeypatch):
    # was: `export nvl72 -o .json` -> StopIteration traceback (Path('.json').suffix is '': a dotfile, no extension)
    monkeypatch.chdir(tmp_path)
    refused(*args, match="use a file name ending in")
    assert not list(tmp_path.iterdir())


def test_a_large_export_says_what_it_writes_first(tmp_path, monkeypatch):
    # was: `export tpu8t-virgo -o x.graphml` wrote for 25+ s with nothing on stderr
    monkeypatch.setattr(builders, "ANNOUNCE_ELEMENTS", 10)
    res = invoke("export", "nvl72", "-o", tmp_path / "x.graphml")
    assert res.exit_code == 0 and "writing 90 nodes and 1,296 links as graphml ..." in res.output, res.output


def test_a_monte_carlo_past_its_cap_is_refused_before_the_atlas(monkeypatch):
    # was: --availability --samples 10000000000 ran the atlas, then ran out of memory ("try --bound-only")
    from fabricsim.collectives import runs
    monkeypatch.setattr(runs, "atlas_job", lambda *a, **k: pytest.fail("the atlas ran before --samples was checked"))
    refused("atlas", "jalapeno-rack", "--collective", "all-reduce", "--size", "1MiB", "--group-size", 8,
            "--bound-only", "--availability", "--samples", 10**10, match="to 1,000,000")


def test_a_long_monte_carlo_says_how_far_it_is(monkeypatch):
    import importlib
    A = importlib.import_module("fabricsim.collectives.whatif.atlas")      # the module, not its atlas()
    a = A.atlas("jalapeno-rack", None, collective="all-reduce", size_bytes=2**20, group_size=8, algorithm="ring",
                classes=["local-switch"])
    rates = A.Rates({"local-switch": (0.5, 24.0, "toy")})
    t = iter([0.0] + [10.0 * k for k in range(1, 100)])
    monkeypatch.setattr(A.time, "monotonic", lambda: next(t))      # 10 s per year drawn
    said = []
    v = A.availability(a, rates, samples=3, seed=1, progress=said.append)
    assert [m.split(",")[0] for m in said] == [f"availability: {y} of 3 years drawn" for y in range(3)], said
    assert v.as_dict() == A.availability(a, rates, samples=3, seed=1).as_dict()


def test_serve_on_a_large_fabric_says_its_search_first(monkeypatch):
    # was: serve --model kimi-k2 --fabric tpu8t-virgo --concurrency 1: 25 s silent before its only line
    monkeypatch.setattr(builders, "ANNOUNCE_ELEMENTS", 10)
    res = invoke("serve", "--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--concurrency", 1)
    assert res.exit_code == 0, res.output
    assert "concurrency level(s) on 134 nodes and" in res.output, res.output


def test_whatif_on_a_large_fabric_says_its_steps(monkeypatch):
    # was: whatif all-to-all --fabric tpu8t-virgo --fail plane:0: 30 s with nothing on stderr
    monkeypatch.setattr(builders, "ANNOUNCE_ELEMENTS", 10)
    res = invoke("whatif", "all-reduce", "--fabric", "jalapeno-rack", "--size", "1MiB", "--group-size", 8,
                 "--fail", "local-switch:r00/lsw0", "--bound-only")
    assert res.exit_code == 0, res.output
    assert "whatif: choosing the placement on the intact fabric ..." in res.output
    assert "whatif: pricing the intact fabric and with 1 failure spec(s) applied ..." in res.output
