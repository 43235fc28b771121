"""Calibration files: format, lookup precedence, round trip, one-line errors."""
from __future__ import annotations

import pytest

from fabricsim.collectives.algorithms import ALGORITHMS
from fabricsim.collectives.cost import (PARAMS, PROTOCOLS, Calibration, calibration_from_dict,
                                        dumps_calibration, load_calibration)
from fabricsim.topo.errors import BadInput

FULL = """\
efficiency = 0.9
step_latency_us = 1.0
[all-reduce]
efficiency = 0.47
base_latency_us = 12.0
step_latency_us = 0.6
[all-reduce.nvls]
step_latency_us = 2.0
[all-reduce.nvls.simple]
efficiency = 0.5
[all-gather.ring.ll128]
base_latency_us = 3
"""


def _write(tmp_path, text, name="cal.toml"):
    p = tmp_path / name
    p.write_text(text) if isinstance(text, str) else p.write_bytes(text)
    return p


def test_flat_keys_as_today(tmp_path):
    cal = load_calibration(_write(tmp_path, "efficiency = 0.8\nstep_latency_us = 2\n"))
    assert dict(cal.flat) == {"efficiency": 0.8, "step_latency_us": 2.0}
    assert isinstance(cal.flat["step_latency_us"], float)
    assert not cal.sections
    assert cal.path == str(tmp_path / "cal.toml")
    for coll in ALGORITHMS:
        assert cal.lookup(coll, "ring", "simple") == {"efficiency": 0.8, "step_latency_us": 2.0}


def test_sections_are_read(tmp_path):
    cal = load_calibration(_write(tmp_path, FULL))
    assert set(cal.sections) == {"all-reduce", "all-reduce.nvls", "all-reduce.nvls.simple", "all-gather.ring.ll128"}
    assert dict(cal.sections["all-reduce"]) == {"efficiency": 0.47, "base_latency_us": 12.0, "step_latency_us": 0.6}


@pytest.mark.parametrize("collective, algorithm, protocol, expected", [
    ("all-reduce", "nvls", "simple", {"efficiency": 0.5, "step_latency_us": 2.0, "base_latency_us": 12.0}),
    ("all-reduce", "nvls", "ll", {"efficiency": 0.47, "step_latency_us": 2.0, "base_latency_us": 12.0}),
    ("all-reduce", "NVLS", "Simple", {"efficiency": 0.5, "step_latency_us": 2.0, "base_latency_us": 12.0}),
    ("all-reduce", "ring", "simple", {"efficiency": 0.47, "step_latency_us": 0.6, "base_latency_us": 12.0}),
    ("all-gather", "ring", "ll128", {"efficiency": 0.9, "step_latency_us": 1.0, "base_latency_us": 3.0}),
    ("all-gather", "ring", "ll", {"efficiency": 0.9, "step_latency_us": 1.0}),
    ("all-to-all", "direct", "ideal", {"efficiency": 0.9, "step_latency_us": 1.0}),
])
def test_lookup_most_specific_wins(tmp_path, collective, algorithm, protocol, expected):
    cal = load_calibration(_write(tmp_path, FULL))
    assert cal.lookup(collective, algorithm, protocol) == expected


def test_round_trip(tmp_path):
    cal = load_calibration(_write(tmp_path, FULL))
    text = dumps_calibration(cal, header="fit of a.log\nfabric nvl72")
    assert text.startswith("# fit of a.log\n# fabric nvl72\n")
    back = load_calibration(_write(tmp_path, text, "back.toml"))
    assert back.flat == cal.flat and back.sections == cal.sections
    assert dumps_calibration(back, header="fit of a.log\nfabric nvl72") == text


def test_round_trip_awkward_floats(tmp_path):
    cal = calibration_from_dict({"efficiency": 1, "all-to-all": {"step_latency_us": 1e-7,
                                                                "base_latency_us": 123456789.125}})
    back = load_calibration(_write(tmp_path, dumps_calibration(cal)))
    assert back.flat == cal.flat and back.sections == cal.sections
    assert back.sections["all-to-all"]["step_latency_us"] == 1e-7


def test_from_dict_and_equality():
    a = calibration_from_dict({"all-reduce": {"ring": {"efficiency": 0.5}}})
    b = Calibration(sections={"all-reduce.ring": {"efficiency": 0.5}})
    assert a == b and hash(a) == hash(b)
    with pytest.raises(TypeError):
        a.sections["x"] = {}


def test_every_name_is_accepted():
    data = {c: {a: {p: {"efficiency": 1.0} for p in PROTOCOLS} for a in algos} for c, algos in ALGORITHMS.items()}
    cal = calibration_from_dict(data)
    assert len(cal.sections) == sum(len(a) for a in ALGORITHMS.values()) * len(PROTOCOLS)


def test_params_table():
    assert PARAMS["efficiency"] == (0.0, 1.0, False)
    assert PARAMS["step_latency_us"][0] == 0.0 and PARAMS["step_latency_us"][2]
    assert set(PARAMS) == {"efficiency", "base_latency_us", "step_latency_us"}


@pytest.mark.parametrize("text, words", [
    ("efficency = 0.9\n", ["unknown key 'efficency'", "did you mean efficiency", "valid: efficiency"]),
    ("[all-reduse]\nefficiency = 0.9\n", ["unknown collective 'all-reduse'", "all-reduce"]),
    ("[all-reduce.nvlz]\nefficiency = 0.9\n", ["all-reduce: unknown algorithm 'nvlz'", "nvls"]),
    ("[all-gather.nvls]\nefficiency = 0.9\n", ["all-gather: unknown algorithm 'nvls'", "ring"]),
    ("[all-reduce.ring.fast]\nefficiency = 0.9\n", ["unknown protocol 'fast'", "ll, ll128, simple, ideal"]),
    ("[all-reduce.ring.simple.x]\nefficiency = 0.9\n", ["all-reduce.ring.simple: unknown key 'x'"]),
    ("[all-reduce]\nspeed = 2\n", ["all-reduce: unknown key 'speed'"]),
    ("all-reduce = 0.5\n", ["all-reduce must be a table"]),
    ("efficiency = true\n", ["efficiency = True is not a number", "0 < efficiency <= 1"]),
    ('efficiency = "0.9"\n', ["efficiency = '0.9' is not a number"]),
    ("efficiency = [0.9]\n", ["efficiency = list is not a number"]),
    ("efficiency = nan\n", ["efficiency = nan is not finite"]),
    ("step_latency_us = inf\n", ["step_latency_us = inf is not finite", "0 <= step_latency_us"]),
    ("[all-reduce]\nefficiency = 1.5\n", ["all-reduce.efficiency = 1.5 is out of range", "0 < efficiency <= 1"]),
    ("efficiency = 0\n", ["efficiency = 0 is out of range"]),
    ("efficiency = -0.5\n", ["out of range"]),
    ("[all-reduce.nvls]\nbase_latency_us = -1\n", ["all-reduce.nvls.base_latency_us = -1 is out of range",
                                                    "0 <= base_latency_us"]),
    ("efficiency = \n", ["bad TOML", "line 1"]),
    ("[all-reduce]\n[all-reduce]\n", ["bad TOML"]),
    ("[" + ".".join(["all-reduce"] + ["a"] * 199) + "]\nefficiency = 1\n", ["all-reduce: unknown "]),
    ("x = " + "{a = " * 200 + "1" + "}" * 200 + "\n", ["top level: unknown collective 'x'"]),
])
def test_bad_file_is_one_line(tmp_path, text, words):
    p = _write(tmp_path, text)
    with pytest.raises(BadInput) as exc:
        load_calibration(p)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{p}:")
    for w in words:
        assert w in msg, msg


def test_deep_inline_tables_beyond_recursion_are_one_line(tmp_path):
    p = _write(tmp_path, "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n")
    with pytest.raises(BadInput, match=r"cal.toml: bad TOML") as exc:
        load_calibration(p)
    assert "\n" not in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(BadInput, match=r"nope.toml: cannot read \(No such file or directory\); expected a calibration TOML file$"):
        load_calibration(tmp_path / "nope.toml")


def test_directory(tmp_path):
    with pytest.raises(BadInput, match=r"is a directory; expected a calibration TOML file"):
        load_calibration(tmp_path)


def test_not_utf8(tmp_path):
    p = _write(tmp_path, b"efficiency = 0.9\n# caf\xe9\n")
    with pytest.raises(BadInput, match=r"cal.toml:2: not UTF-8 text \(byte 0xe9\)"):
        load_calibration(p)


def test_from_dict_names_its_path():
    with pytest.raises(BadInput, match=r"^mine: efficiency = 2 is out of range"):
        calibration_from_dict({"efficiency": 2}, path="mine")
    with pytest.raises(BadInput, match=r"^<dict>: expected a table"):
        calibration_from_dict([1, 2])
