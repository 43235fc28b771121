"""Chakra traces in: a TP+EP step written through the protobuf schema prices as the hand-written mix TOML."""
import json

import pytest
from click.testing import CliRunner

pytest.importorskip("google.protobuf")   # in the test extra (fabricsim[chakra])

from fabricsim.cli import main
from fabricsim.collectives.jobs.chakra import load_chakra, messages, read_trace, write_trace
from fabricsim.collectives.jobs.mix import load_jobs, mix
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput

MIB = 2**20
COMP, COLL, META = 4, 7, 1                    # NodeType (et_def.proto)
ALL_REDUCE, ALL_GATHER, ALL_TO_ALL, BROADCAST = 0, 2, 6, 5   # CollectiveCommType


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _node(id, name, type, deps=(), duration=0, **attrs):
    M = messages()
    A = M["AttributeProto"]
    attr = []
    for k, v in attrs.items():
        attr.append(A(name=k, string_val=v) if isinstance(v, str) else A(name=k, int64_val=v))
    return M["Node"](id=id, name=name, type=type, data_deps=list(deps), duration_micros=duration, attr=attr)


def _step(d, *, groups_file=True, expert_us=lambda r: 80 + 10 * r):
    """8 ranks, TP 2 x EP 4: attention, TP all-reduce, EP dispatch, experts, EP combine, TP all-gather."""
    for r in range(8):
        tp, ep = f"tp{r // 2}", f"ep{r % 2}"
        nodes = [_node(1, "attn", COMP, duration=50),
                 _node(9, "pg_init", META),
                 _node(2, "attn_ar", COLL, deps=[1, 9], comm_type=ALL_REDUCE, comm_size=4 * MIB, pg_name=tp),
                 _node(3, "dispatch", COLL, deps=[2], comm_type=ALL_TO_ALL, comm_size=2 * MIB, pg_name=ep),
                 _node(4, "experts", COMP, deps=[3], duration=expert_us(r)),
                 _node(5, "combine", COLL, deps=[4], comm_type=ALL_TO_ALL, comm_size=2 * MIB, pg_name=ep),
                 _node(6, "ag", COLL, deps=[5], comm_type=ALL_GATHER, comm_size=1 * MIB, pg_name=tp)]
        write_trace(d / f"step.{r}.et", nodes)
    if groups_file:
        groups = {f"tp{g}": [2 * g, 2 * g + 1] for g in range(4)} | {f"ep{e}": {"ranks": [e, e + 2, e + 4, e + 6]}
                                                                     for e in range(2)}   # both ASTRA-sim forms
        (d / "step.json").write_text(json.dumps(groups))
    return d


# the same step by hand: TP groups {0,1} {2,3} {4,5} {6,7}, EP groups {0,2,4,6} {1,3,5,7};
# all-gather S = the gathered buffer = 2 ranks x 1 MiB
HAND = "\n".join(
    [f'[[job]]\nname = "attn {r}"\ncollective = "delay"\nduration = "50us"\n' for r in range(8)]
    + [f'[[job]]\nname = "ar tp{g}"\ncollective = "all-reduce"\nsize = "4MiB"\ngroups = [[{2 * g}, {2 * g + 1}]]\n'
       f'after = ["attn {2 * g}", "attn {2 * g + 1}"]\n' for g in range(4)]
    + [f'[[job]]\nname = "dispatch ep{e}"\ncollective = "all-to-all"\nsize = "2MiB"\n'
       f'groups = [[{e}, {e + 2}, {e + 4}, {e + 6}]]\nafter = ["ar tp0", "ar tp1", "ar tp2", "ar tp3"]\n'
       for e in range(2)]
    + [f'[[job]]\nname = "experts {r}"\ncollective = "delay"\nduration = "{80 + 10 * r}us"\n'
       f'after = ["dispatch ep{r % 2}"]\n' for r in range(8)]
    + [f'[[job]]\nname = "combine ep{e}"\ncollective = "all-to-all"\nsize = "2MiB"\n'
       f'groups = [[{e}, {e + 2}, {e + 4}, {e + 6}]]\nafter = ["experts {e}", "experts {e + 2}", "experts {e + 4}", '
       f'"experts {e + 6}"]\n' for e in range(2)]
    + [f'[[job]]\nname = "ag tp{g}"\ncollective = "all-gather"\nsize = "2MiB"\ngroups = [[{2 * g}, {2 * g + 1}]]\n'
       f'after = ["combine ep0", "combine ep1"]\n' for g in range(4)])


def _timeline(r):
    return sorted((j.collective, j.start_s, j.finish_s) for j in r.jobs)


@pytest.mark.parametrize("groups_file", [True, False])
def test_tp_ep_step_prices_as_the_hand_written_mix(tmp_path, groups_file):
    G = build("mi355x")
    w = load_chakra(_step(tmp_path, groups_file=groups_file))
    assert len(w.jobs) == 28 and w.groups["ep1"] == [1, 3, 5, 7]
    assert any("8 METADATA_NODE" in n for n in w.notes)     # passed through, counted
    (tmp_path / "hand.toml").write_text(HAND)
    a, b = mix(G, list(w.jobs)), mix(G, load_jobs(tmp_path / "hand.toml", G))
    assert a.makespan_s == pytest.approx(b.makespan_s, rel=1e-12)
    assert [x[0] for x in _timeline(a)] == [x[0] for x in _timeline(b)]
    for x, y in zip(_timeline(a), _timeline(b)):
        assert x[1:] == pytest.approx(y[1:], rel=1e-12, abs=1e-15)
    # the compute delays count: the slowest expert (rank 7, 150 us) gates combine ep1
    assert a.makespan_s > 50e-6 + 150e-6


def test_durations_move_the_makespan(tmp_path):
    G = build("mi355x")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    fast = mix(G, list(load_chakra(_step(tmp_path / "a")).jobs))
    slow = mix(G, list(load_chakra(_step(tmp_path / "b", expert_us=lambda r: 500)).jobs))
    assert slow.makespan_s - fast.makespan_s == pytest.approx(500e-6 - 150e-6, rel=1e-6)


def test_cli_mix_chakra_and_import_chakra(tmp_path):
    _step(tmp_path)
    r = run("mix", "--chakra", str(tmp_path), "--fabric", "mi355x", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert len(out["jobs"]) == 28 and "chakra: trace rank r is chip rank r (8 ranks)" in r.stderr
    toml = tmp_path / "jobs.toml"
    r = run("import", "chakra", str(tmp_path), "-o", str(toml))
    assert r.exit_code == 0 and "12 collectives, 16 delays, 8 ranks, 6 process groups" in r.stderr
    r2 = run("mix", str(toml), "--fabric", "mi355x", "--json")
    assert json.loads(r2.stdout)["makespan_s"] == out["makespan_s"]
    assert run("mix", "--fabric", "mi355x").exit_code == 2      # neither SPEC nor --chakra


def test_trace_file_round_trips_through_the_schema(tmp_path):
    p = write_trace(tmp_path / "w.0.et", [_node(1, "x", COLL, comm_type=ALL_REDUCE, comm_size=5, pg_name="a")])
    meta, (n,) = read_trace(p)
    assert meta.version and n.name == "x" and n.type == COLL and [a.name for a in n.attr] == ["comm_type",
                                                                                              "comm_size", "pg_name"]


# --------------------------------------------------------------------------- malformed traces
def _two(d, n0, n1):
    write_trace(d / "t.0.et", n0)
    write_trace(d / "t.1.et", n1)
    return d


def _ar(id=1, size=MIB, ctype=ALL_REDUCE, deps=(), name="ar", **kw):
    return _node(id, name, COLL, deps=deps, comm_type=ctype, comm_size=size, **kw)


BAD = [
    (lambda d: _two(d, [_ar()], [_ar(size=2 * MIB)]), "t.1.et: node 1 ('ar'): comm_size 2097152 but rank 0"),
    (lambda d: _two(d, [_ar(ctype=BROADCAST)], [_ar(ctype=BROADCAST)]), "comm_type BROADCAST has no fabricsim"),
    (lambda d: _two(d, [_ar(deps=[7])], [_ar()]), "t.0.et: node 1 ('ar') depends on node 7"),
    (lambda d: _two(d, [_ar(), _ar()], [_ar()]), "t.0.et: node 1 ('ar') repeats an id"),
    (lambda d: _two(d, [_ar(), _ar(id=2)], [_ar()]), "t.1.et: has no collective #1 on process group 'world'"),
    (lambda d: _two(d, [_ar(size=0)], [_ar(size=0)]), "comm_size 0 must be >= 1 byte"),
    (lambda d: _two(d, [_ar(deps=[2]), _node(2, "c", COMP, deps=[1])], [_ar()]), "depends on itself"),
    (lambda d: (write_trace(d / "t.1.et", [_ar()]), d)[1], "no trace for rank 0"),
    (lambda d: ((d / "t.0.et").write_bytes(b"\x05ab"), write_trace(d / "t.1.et", [_ar()]), d)[2],
     "t.0.et: GlobalMetadata at byte 0: not a Chakra GlobalMetadata (its length prefix says 5 bytes but 2 remain)"),
    (lambda d: (_two(d, [_ar(pg_name="g")], [_ar(pg_name="g")]), (d / "g.json").write_text('{"g": [0, 5]}'), d)[2],
     "g.json: group 'g': rank 5 is not one of"),
]


@pytest.mark.parametrize("make, expected", BAD)
def test_bad_traces_one_line_exit_2(tmp_path, make, expected):
    d = make(tmp_path)
    with pytest.raises(BadInput) as exc:
        load_chakra(d)
    assert expected in str(exc.value) and "\n" not in str(exc.value)
    r = run("mix", "--chakra", str(d), "--fabric", "mi355x")
    assert r.exit_code == 2 and expected in r.stderr.strip().splitlines()[-1]


def test_not_a_directory(tmp_path):
    with pytest.raises(BadInput, match="not a directory of Chakra traces"):
        load_chakra(tmp_path / "none")
    with pytest.raises(BadInput, match="no Chakra traces"):
        load_chakra(tmp_path)


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=64), keep=st.integers(0, 200))
def test_property_damaged_trace_is_jobs_or_one_line(tmp_path, data, keep):
    """A trace file cut short and followed by arbitrary bytes: jobs, or one BadInput line naming the file."""
    d = tmp_path / "h"
    d.mkdir(exist_ok=True)
    _two(d, [_ar(pg_name="p")], [_ar(pg_name="p")])
    good = (d / "t.0.et").read_bytes()
    (d / "t.0.et").write_bytes(good[:keep] + data)
    try:
        w = load_chakra(d)
    except BadInput as exc:
        assert "\n" not in str(exc) and str(d) in str(exc)
    else:
        assert w.ranks == 2


@pytest.mark.parametrize("table, expected", [
    ('duration = "5 parsecs"', "duration '5 parsecs' is not a time"),
    ('size = "1MiB"', "unknown key 'size' for a delay"),
    ("", "a delay needs duration"),
])
def test_delay_table_errors(tmp_path, table, expected):
    p = tmp_path / "d.toml"
    p.write_text(f'[[job]]\nname = "w"\ncollective = "delay"\n{table}\n')
    with pytest.raises(BadInput, match=expected):
        load_jobs(p, build("mi355x"))


def test_delay_alone_and_beside_a_collective_takes_its_duration(tmp_path):
    G = build("mi355x")
    p = tmp_path / "d.toml"
    p.write_text('[[job]]\nname = "w"\ncollective = "delay"\nduration = "2ms"\n'
                 '[[job]]\nname = "ar"\ncollective = "all-reduce"\nsize = "1MiB"\ngroup_size = 4\n')
    r = mix(G, load_jobs(p, G))
    w = next(j for j in r.jobs if j.name == "w")
    assert (w.start_s, w.finish_s) == (0.0, pytest.approx(2e-3)) and r.makespan_s == pytest.approx(2e-3)


def test_a_long_chain_of_untimed_nodes_passes_its_dependency_through(tmp_path):
    """5,000 compute nodes without durations between two collectives: the second comes after the first."""
    chain = [_node(i, f"op{i}", COMP, deps=[i - 1]) for i in range(2, 5002)]
    nodes = [_ar(1, name="first")] + chain + [_ar(5002, deps=[5001], name="second")]
    _two(tmp_path, nodes, nodes)
    w = load_chakra(tmp_path)
    assert [(j.name, j.after) for j in w.jobs] == [("world#0 first", ()), ("world#1 second", ("world#0 first",))]
    assert any("10,000 COMP_NODE without a duration" in n for n in w.notes)
