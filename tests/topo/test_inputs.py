"""One reader for every user input file (topo/inputs.py): each failure is one line naming the file."""
from __future__ import annotations

import os

import pytest

from fabricsim.collectives import from_file
from fabricsim.collectives.cost.calibration import load_calibration
from fabricsim.collectives.cost.nccl_tests import parse_log
from fabricsim.collectives.jobs.models import load_model
from fabricsim.collectives.traffic import load_matrix
from fabricsim.topo import inputs
from fabricsim.topo.errors import BadInput
from fabricsim.topo.parts import load_parts

READERS = {"calibration": load_calibration, "nccl-tests log": parse_log, "model": load_model,
           "parts": load_parts, "matrix": lambda p: load_matrix(p, 4), "groups": lambda p: from_file(None, p)}


@pytest.mark.parametrize("reader", [r for r in READERS if r != "model"])   # a model is a name unless *.toml
def test_special_files_are_refused_in_one_line(reader):
    """/dev/zero never ends: it was read until memory ran out (or hung) before this reader."""
    with pytest.raises(BadInput, match=r"^/dev/zero: not a regular file \(a device, pipe or socket\); expected "):
        READERS[reader]("/dev/zero")


@pytest.mark.parametrize("reader", READERS)
def test_a_fifo_is_refused_without_blocking(reader, tmp_path):
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match="not a regular file"):
        READERS[reader](fifo)


@pytest.mark.parametrize("reader", READERS)
def test_missing_files_and_directories_name_the_file(reader, tmp_path):
    with pytest.raises(BadInput, match=rf"^{tmp_path / 'none.toml'}: (cannot read \(No such file or directory\)|no such file)"):
        READERS[reader](tmp_path / "none.toml")
    if reader not in ("matrix", "model"):        # a directory is a matrix per group; a model is a name or *.toml
        with pytest.raises(BadInput, match=rf"^{tmp_path}: is a directory; expected "):
            READERS[reader](tmp_path)


def test_oversized_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    p = tmp_path / "big.toml"
    p.write_text("efficiency = 0.9\n" * 10)
    monkeypatch.setattr(inputs, "MAX_INPUT_BYTES", 100)
    with pytest.raises(BadInput, match=r"170 bytes, more than the 100 an input file may have"):
        load_calibration(p)


def test_utf8_error_names_line_and_byte(tmp_path):
    p = tmp_path / "m.toml"
    p.write_bytes(b"layers = 4\nname = \"\xe9\"\n")
    with pytest.raises(BadInput, match=r"m.toml:2: not UTF-8 text \(byte 0xe9\); expected a model TOML file"):
        load_model(p)
