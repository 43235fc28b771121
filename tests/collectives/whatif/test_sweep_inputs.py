"""What a sweep, an atlas and a design search accept as input, and what they refuse in one line.

Issue 26, items 7 and 8: a notebook user passes a graph where the CLI passes a fabric name; a
results file (``--resume``) that is someone else's, a device or a FIFO, or a seed out of range
ends in a ``BadInput`` (one line), never a traceback or a read that does not end.
"""
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fabricsim.collectives.whatif import LocalRunner, atlas, sweep
from fabricsim.collectives.whatif.dask_runner import ResumableRunner
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput
from fabricsim.topo.inputs import read_records, trim_cut_line

KW = dict(collective="all-reduce", size_bytes=2**30, group_size=8, algorithm="ring")


def _sweep(fabric="jalapeno-rack", **kw):
    return sweep(fabric, None, "local-switch", **dict(KW, **kw))


@pytest.fixture(scope="module")
def by_name():
    return _sweep()


# --- a graph where the CLI takes a fabric ------------------------------------------------
def test_sweep_takes_a_graph_and_agrees_with_the_name(by_name):
    s = _sweep(build("jalapeno-rack"))
    assert s.fabric == "jalapeno-rack"
    assert s.scenarios == by_name.scenarios and s.summary == by_name.summary


def test_a_graph_reaches_worker_processes(by_name):
    s = _sweep(build("jalapeno-rack"), runner=LocalRunner(workers=2), fold=False)
    assert [r["slowdown"] for r in s.scenarios] == pytest.approx([r["slowdown"] for r in by_name.scenarios], rel=1e-12)


def test_a_modified_graph_is_priced_as_modified(by_name):
    G = build("jalapeno-rack")
    for _, _, d in G.edges(data=True):
        d["lanes"] *= 2                     # twice the lanes: twice the capacity, half the bandwidth time
        d["capacity_gbps"] *= 2
        d["port_gbps"] *= 2
    s = _sweep(G)
    assert s.summary["count"] == by_name.summary["count"]
    assert s.scenarios[0]["bandwidth_time_s"] == pytest.approx(by_name.scenarios[0]["bandwidth_time_s"] / 2, rel=1e-9)


def test_params_with_a_graph_are_refused():
    with pytest.raises(BadInput, match="not to a graph"):
        sweep(build("jalapeno-rack"), {"racks": 2}, "local-switch", **KW)


def test_atlas_takes_a_graph():
    a = atlas(build("jalapeno-rack"), None, collective="all-reduce", size_bytes=2**20, group_size=8,
              classes=["local-switch"])
    b = atlas("jalapeno-rack", None, collective="all-reduce", size_bytes=2**20, group_size=8,
              classes=["local-switch"])
    def rows(at):
        return [{k: v for k, v in row.items() if k != "seconds"} for row in at.as_dict()["classes"]]
    assert a.fabric == "jalapeno-rack" and rows(a) == rows(b)


@pytest.mark.parametrize("fabric", [3, None, ["jalapeno-rack"]])
def test_a_fabric_of_another_type_is_refused(fabric):
    with pytest.raises(BadInput, match="not a graph, a catalog name or a fabric file"):
        sweep(fabric, None, "local-switch", **KW)


@pytest.mark.parametrize("seed", [-1, -5, 1.5, True, 2**64, "3"])
def test_seed_out_of_range_is_refused(seed):
    with pytest.raises(BadInput, match="seed"):
        sweep("jalapeno-rack", None, "link", samples=3, seed=seed, **KW)


# --- results files ----------------------------------------------------------------------
def _stored_sweep(path):
    return _sweep(runner=ResumableRunner(LocalRunner(), path), fold=False)


def test_foreign_json_lines_are_refused(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text('{"a": 1}\n[1, 2]\n"x"\n')
    with pytest.raises(BadInput, match=r"r\.jsonl:1: not one of a sweep's results"):
        _stored_sweep(f)


def test_a_cut_last_line_is_dropped_and_the_file_stays_whole(tmp_path):
    f = tmp_path / "r.jsonl"
    first = _stored_sweep(f)
    whole = f.read_text()
    f.write_text(whole + '{"index": 3, "spe')              # a killed run
    again = _stored_sweep(f)
    assert again.scenarios == first.scenarios
    assert f.read_text() == whole                           # trimmed, nothing recomputed or appended twice
    assert all(json.loads(line) for line in f.read_text().splitlines())


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_special_files_are_refused_without_reading(tmp_path, special):
    if special == "fifo":
        special = tmp_path / "fifo"
        os.mkfifo(special)
    with pytest.raises(BadInput, match="not a regular file"):
        _stored_sweep(special)


def test_design_resume_refuses_foreign_lines(tmp_path):
    from fabricsim.collectives.design import design, space_from_dict
    from fabricsim.fabrics.registry import builder_params
    sp = space_from_dict({"builder": "rail-cluster", "set": {"nodes": 2}, "vary": {"nic_gbps": [200, 400]},
                          "workload": {"jobs": [{"collective": "all-to-all", "group_size": 16, "size": "64MiB",
                                                 "algorithm": "direct"}]},
                          "objectives": {"minimize": ["time_s", "capex_usd"]}}, builders=builder_params())
    f = tmp_path / "d.jsonl"
    f.write_text('{"fingerprint": 5}\n{"x": null}\n')
    with pytest.raises(BadInput, match="not one of a design search's results"):
        design(sp, build=build, results_file=f)
    with pytest.raises(BadInput, match="not a regular file"):
        design(sp, build=build, results_file="/dev/zero")


# --- a property: any bytes in a results file end in a result or a BadInput ---------------
lines = st.one_of(
    st.just('{"index": 0, "specs": ["local-switch:x"], "sweep": "f", "result": {}}'),
    st.dictionaries(st.sampled_from(["index", "specs", "sweep", "result", "x"]),
                    st.one_of(st.integers(-3, 10), st.text(max_size=5), st.lists(st.text(max_size=5), max_size=2),
                              st.none(), st.floats())).map(json.dumps),
    st.text(max_size=30))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.lists(lines, max_size=4).map("\n".join), cut=st.booleans(),
       raw=st.one_of(st.none(), st.binary(max_size=40)))
def test_any_results_file_ends_in_a_result_or_one_line(tmp_path_factory, body, cut, raw):
    f = tmp_path_factory.mktemp("resume") / "r.jsonl"
    f.write_bytes(raw if raw is not None else (body + ("" if cut else "\n")).encode())
    try:
        records = read_records(f, "a sweep's results", lambda o: (int(o["index"]), tuple(o["specs"]),
                                                                  str(o["sweep"]), o["result"]))
    except BadInput as exc:
        assert "\n" not in str(exc)
        return
    trim_cut_line(f)
    assert f.read_bytes() == b"" or f.read_bytes().endswith(b"\n")
    assert isinstance(records, list)
