"""Devices and FIFOs given where a command reads a file: one line, at once (issue 26 item 8).

Before the fix, ``mix``, ``atlas --rates``, ``import nccl-topo`` and ``sweep --resume`` read a FIFO
or ``/dev/zero`` forever; ``design`` said "no such file".  Every input now goes through
:func:`fabricsim.topo.inputs.read_input_bytes`, which refuses anything but a regular file.
"""
import os

import pytest
from click.testing import CliRunner

from fabricsim.cli import main

PRICE = ["price", "all-reduce", "--fabric", "jalapeno-rack", "--size", "1MiB"]
CASES = {
    "groups": PRICE + ["--groups", "{}"],
    "traffic": ["price", "all-to-all", "--fabric", "jalapeno-rack", "--traffic", "{}"],
    "parts": ["audit", "jalapeno-rack", "--parts", "{}"],
    "rates": ["atlas", "jalapeno-rack", "--collective", "all-reduce", "--size", "1MiB", "--classes", "local-switch",
              "--availability", "--rates", "{}"],
    "mix": ["mix", "{}", "--fabric", "jalapeno-rack"],
    "design": ["design", "{}"],
    "nccl-topo": ["import", "nccl-topo", "{}", "-o", "out.json"],
    "calibrate": ["calibrate", "{}", "--fabric", "nvl72"],
    "calibration": PRICE + ["--calibration", "{}"],
    "sweep-resume": ["sweep", "all-reduce", "--fabric", "jalapeno-rack", "--class", "local-switch", "--size", "1MiB",
                     "--resume", "{}"],
}


@pytest.fixture(scope="module")
def fifo(tmp_path_factory):
    p = tmp_path_factory.mktemp("special") / "fifo"
    os.mkfifo(p)
    return str(p)


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_special_file_is_refused_in_one_line(case, special, fifo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = fifo if special == "fifo" else special
    res = CliRunner().invoke(main, [a.replace("{}", path) for a in CASES[case]])
    assert res.exit_code in (1, 2), res.output
    assert "Traceback" not in res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "not a regular file" in errors[0], res.output
