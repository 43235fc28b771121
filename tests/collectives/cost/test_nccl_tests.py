"""nccl-tests log parser: formats of several versions, run boundaries, settings, errors."""
import doctest
import math
from pathlib import Path

from repo_paths import DATA, ROOT
import pytest

from fabricsim.collectives.cost import NcclPoint, NcclRun, parse_log, parse_text
from fabricsim.collectives.cost import nccl_tests
from fabricsim.topo.errors import BadInput

DATA = DATA / "nccl"
VALIDATION = ROOT / "docs" / "validation" / "data"

HEADER = ("#       size         count      type   redop    root     time   algbw   busbw #wrong"
          "     time   algbw   busbw #wrong\n")


def log(*rows, pre="# Collective test starting: all_reduce_perf\n"):
    return pre + HEADER + "".join(r + "\n" for r in rows)


ROW = "     1048576        262144     float     sum      -1    100.0   10.49   18.35      0     98.0   10.70   18.72      0"


def test_doctests():
    result = doctest.testmod(nccl_tests, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_old_format_error_column_and_mpirun_noise():
    run, = parse_log(DATA / "v2_0_error_column.log")
    assert run.collective == "all-reduce"
    assert run.nranks == 8 and run.hosts == ("gpu-a",) and run.devices == ("Tesla V100-SXM2-16GB",)
    assert run.n_threads == 1 and run.n_gpus == 1 and run.min_bytes == 8 and run.max_bytes == 134217728
    assert run.iters == 20
    assert run.avg_busbw_GBps == pytest.approx(13.53) and run.out_of_bounds == 0
    sizes = [p.size_bytes for p in run.select()]
    assert sizes == [8 * 16 ** k for k in range(7)]                 # -b 8 -e 128M -f 16
    assert len(run.points) == 14 and run.skipped == ()
    assert all(p.redop == "sum" and p.dtype == "float" for p in run.points)
    big = run.select(in_place=True)[-1]
    assert (big.time_us, big.algbw_GBps, big.busbw_GBps, big.line) == (4980.0, 26.95, 47.16, 27)
    # the command line, the OpenFabrics banner and the help-message line are noise
    assert run.noise_lines == 5 and run.algorithm is None and run.protocol is None


def test_two_runs_crlf_na_and_validation_off():
    ag, a2a = parse_log(DATA / "v2_13_two_runs_crlf.log")
    assert (ag.collective, a2a.collective) == ("all-gather", "all-to-all")
    assert ag.tests_version == "2.13.8" and ag.nccl_version == "2.19.3+cuda12.3"
    assert ag.protocol == "LL128" and ag.algorithm is None
    assert ag.nranks == a2a.nranks == 4 and ag.devices == ("NVIDIA H100 80GB HBM3",)
    # -c 0: #wrong is N/A, the points stay
    assert len(ag.points) == 6 and ag.skipped == ()
    assert [p.redop for p in ag.points] == ["none"] * 6
    # alltoall in-place N/A: three points skipped, each reported with its line
    assert len(a2a.points) == 3 and not any(p.in_place for p in a2a.points)
    assert len(a2a.skipped) == 3
    assert all("in-place point" in s and "time/algbw/busbw N/A" in s for s in a2a.skipped)
    assert a2a.skipped[0].startswith(f"{DATA / 'v2_13_two_runs_crlf.log'}:{a2a.points[0].line}:")
    assert ag.last_line < a2a.first_line
    assert a2a.protocol == "LL128"                 # a setting holds until the file changes it


def test_srun_labels_nranks_algo_and_wrong():
    run, = parse_log(DATA / "srun_label_multinode.log")
    assert run.collective == "reduce-scatter" and run.algorithm == "Tree"
    assert run.nranks == 16 and run.hosts == ("node000", "node001")
    assert len(run.points) == 5
    assert run.skipped == (f"{DATA / 'srun_label_multinode.log'}:{run.points[2].line}: in-place point of "
                           "size 8388608 skipped: #wrong is 3 (failed validation)",)


@pytest.mark.parametrize("pre, algo, proto", [
    ("mpirun -np 2 -x NCCL_ALGO=Ring -x NCCL_PROTO=Simple ./all_reduce_perf -b 1M\n", "Ring", "Simple"),
    ("NCCL_ALGO=^NVLS\nNCCL_PROTO=LL\n# Collective test starting: all_reduce_perf\n", "^NVLS", "LL"),
    ("x:1:1 [0] NCCL INFO NCCL_ALGO set by environment to NVLSTree\n"
     "# Collective test starting: all_reduce_perf\n", "NVLSTree", None),
])
def test_algorithm_and_protocol(pre, algo, proto):
    run, = parse_text(log(ROW, pre=pre))
    assert (run.algorithm, run.protocol) == (algo, proto)


@pytest.mark.parametrize("pre, nranks", [
    ("mpirun -np 16 ./build/all_gather_perf -b 8 -e 1G -g 1\n", 16),
    ("mpirun -np 2 ./build/all_gather_perf -b 8 -e 1G -g 4\n", 8),
    ("srun --ntasks=72 /opt/nccl-tests/build/all_gather_perf_mpi -b 8 -e 8G\n", 72),
    ("x:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 32 cudaDev 0 - Init COMPLETE\n"
     "# Collective test starting: all_gather_perf\n", 32),
    ("#@ collective=all-gather nranks=72\n", 72),
    ("# Collective test starting: all_gather_perf\n", None),
])
def test_nranks_sources(pre, nranks):
    run, = parse_text(log(ROW, pre=pre))
    assert run.collective == "all-gather" and run.nranks == nranks


# an all-gather / all-to-all row (redop none, busbw = algbw x 7/8): the columns cannot tell which
ROW_NONE = "     1048576        262144     float    none      -1    100.0   10.49    9.18      0     98.0   10.70    9.36      0"


@pytest.mark.parametrize("hint", ["all-to-all", "alltoall", "alltoall_perf", "All_To_All"])
def test_collective_hint(hint):
    run, = parse_text(log(ROW_NONE, pre=""), collective=hint)
    assert run.collective == "all-to-all"
    assert "collective all-to-all as given" in run.notes[-1]


def test_old_all_gather_without_redop_or_check_columns():
    text = ("# Collective test starting: all_gather_perf\n"
            "#       size         count    type     time   algbw   busbw     time   algbw   busbw\n"
            "        4096           128   float    11.00    0.37    0.33    10.00    0.41    0.36\n")
    run, = parse_text(text)
    assert [(p.redop, p.time_us, p.in_place) for p in run.points] == [("", 11.0, False), ("", 10.0, True)]


def test_banner_order_is_followed():
    text = ("# Collective test starting: broadcast_perf\n#   in-place   out-of-place\n"
            "#  size  count  type  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
            "   4096   1024  float    0  5.0  0.82  0.82  0  6.0  0.68  0.68  0\n")
    run, = parse_text(text)
    assert run.collective == "broadcast"
    assert [(p.in_place, p.time_us) for p in run.points] == [(True, 5.0), (False, 6.0)]


def test_point_is_frozen():
    run, = parse_text(log(ROW))
    assert isinstance(run, NcclRun) and isinstance(run.points[0], NcclPoint)
    with pytest.raises(AttributeError):
        run.points[0].time_us = 1.0


@pytest.mark.parametrize("text, line, what", [
    (log(ROW.replace("100.0", "1O0.0")), 3, "bad time '1O0.0'"),
    (log(ROW, ROW.replace("   18.72", "")), 4, "data row has 12 fields, the column header on line 2 has 13"),
    (log(ROW.replace("262144", "26x144")), 3, "bad count '26x144'"),
    (log(ROW.replace("18.35", "-1.0")), 3, "bad busbw '-1.0'"),
    (log(ROW.replace("18.35", "inf")), 3, "bad busbw 'inf'"),
    (log(ROW.replace("      0     98.0", "     -2     98.0")), 3, "negative"),
    (log(), 2, "column header without data rows"),
    ("just some words\n\n", 3, "no nccl-tests data rows"),
    ("", 1, "no nccl-tests data rows"),
    (log(ROW_NONE, pre=""), 2, "cannot tell which collective this run measures: the log names no \\*_perf binary "
     "and its columns leave all-gather or all-to-all .*give --collective \\(collective=\\): one of all-reduce, "
     "all-gather, reduce-scatter, all-to-all$"),
    (log(ROW.replace("  -1 ", "   0 "), pre=""), 2, "its columns fit none of .*root 0 \\(a rooted collective"),
    (log(ROW, pre="# Collective test starting: allreduce2_perf\n"), 1, "unknown collective 'allreduce2_perf'"),
    (log(ROW, pre="#@ collective=all-reduce colour=blue\n"), 1, "unknown annotation 'colour'"),
    (ROW + "\n", 1, "data row before any"),
    (log(ROW).replace("#wrong     time", "#wrong     tiem"), 2, "unrecognised column group"),
    ("# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 8 minBytes 8\n"
     "# nThread 1 nGpus 8 minBytes 8\n" + HEADER + ROW, 1, "run has no data rows before the next run header on line 3"),
    ("a\x00b\n", 1, "binary data"),
])
def test_malformed_text(text, line, what):
    with pytest.raises(BadInput, match=rf"^<text>:{line}: .*{what}" if what != "negative"
                       else rf"^<text>:{line}: bad #wrong count"):
        parse_text(text)


def test_hint_conflicts_with_log():
    with pytest.raises(BadInput, match=r"^<text>:1: the log runs all_reduce_perf \(all-reduce\) but "
                                       r"collective='all-gather' was given"):
        parse_text(log(ROW), collective="all-gather")


def test_unknown_hint():
    with pytest.raises(BadInput, match=r"unknown collective 'allreduse' \(did you mean all-reduce"):
        parse_text(log(ROW), collective="allreduse")


def test_nranks_hint_conflicts_with_rank_lines():
    with pytest.raises(BadInput, match=r"has 8 ranks \(# Rank lines\) but nranks=4 was given"):
        parse_text(nccl_tests._EXAMPLE, nranks=4)


@pytest.mark.parametrize("content, line, what", [
    (b"# Collective test starting: all_reduce_perf\n\xff\xfe junk\n", 2, r"not UTF-8 text \(byte 0xff\)"),
    (b"\x7fELF\x02\x01\x01\x00\x00", 1, "binary data"),
])
def test_malformed_files(tmp_path, content, line, what):
    p = tmp_path / "bad.log"
    p.write_bytes(content)
    with pytest.raises(BadInput, match=rf"^{p}:{line}: {what}"):
        parse_log(p)


def test_directory_and_missing_file(tmp_path):
    with pytest.raises(BadInput, match=rf"^{tmp_path}: is a directory"):
        parse_log(tmp_path)
    with pytest.raises(BadInput, match=rf"^{tmp_path / 'none.log'}: cannot read"):
        parse_log(tmp_path / "none.log")


def test_utf8_bom_and_bare_cr(tmp_path):
    p = tmp_path / "bom.log"
    p.write_bytes(b"\xef\xbb\xbf" + log(ROW, ROW).replace("\n", "\r").encode())
    run, = parse_log(p)
    assert [pt.line for pt in run.points] == [3, 3, 4, 4]


def test_busbw_consistent_with_time_in_fixtures():
    """The fixtures obey nccl-tests' definitions: algbw = size / time, busbw = algbw x factor."""
    factor = {"all-reduce": lambda n: 2 * (n - 1) / n, "all-gather": lambda n: (n - 1) / n,
              "reduce-scatter": lambda n: (n - 1) / n, "all-to-all": lambda n: (n - 1) / n}
    given = {"pasted_table_no_binary.log": dict(collective="all-gather", nranks=8)}    # a bare table
    for path in sorted(DATA.glob("*.log")):
        for run in parse_log(path, **given.get(path.name, {})):
            for p in run.points:
                if p.size_bytes >= 32768:   # small rows print 0.00 or 0.01
                    assert p.algbw_GBps == pytest.approx(p.size_bytes / p.time_us / 1e3, rel=0.01, abs=0.01)
                    assert p.busbw_GBps == pytest.approx(p.algbw_GBps * factor[run.collective](run.nranks),
                                                         rel=0.01, abs=0.01)


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

_PIECES = st.sampled_from([ROW, HEADER, "# Collective test starting: all_reduce_perf", "N/A", "#", "# nThread 1 nGpus 8",
                           "#  Rank  0 Group  0 Pid 1 on h device 0 [0x0] G", "NCCL_ALGO=Ring", "nranks 99999999999",
                           "\r", "\n", " ", "8", "-1", "1e999", "9" * 5000, "\x00", "#@ nranks=x", "##", "[1,0]<stdout>:"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=30)), max_size=30), st.sampled_from([None, "all-gather"]))
def test_garbage_raises_only_badinput(pieces, hint):
    text = "".join(pieces)
    try:
        runs = parse_text(text, collective=hint)
    except BadInput as e:
        assert "\n" not in str(e) and str(e).startswith("<text>")
    else:
        assert runs and all(r.points or r.skipped for r in runs)
        assert all(math.isfinite(p.time_us) for r in runs for p in r.points)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_bytes_raise_only_badinput(tmp_path_factory, data):
    p = tmp_path_factory.mktemp("g") / "g.log"
    p.write_bytes(data)
    try:
        parse_log(p, collective="all-reduce")
    except BadInput as e:
        assert "\n" not in str(e)


@pytest.mark.parametrize("line", ["# nThread " + "9" * 5001 + " nGpus 1 minBytes 1",
                                  "# Rank " + "1" * 5001 + " Group 0 Pid 1 on h device 0 [0x01] X",
                                  "# Out of bounds values : " + "7" * 5001 + " OK"])
def test_huge_header_numbers_are_badinput_not_valueerror(line):
    """Found by hypothesis: a 5,001-digit header number hit Python's int() digit limit (ValueError)."""
    with pytest.raises(BadInput):
        parse_text(line + "\n")


# ---------------------------------------------------------------- logs that name no *_perf binary
def test_pre_2_13_log_without_binary_is_inferred_from_redop_and_bus_factor():
    """nccl-tests before 2.13 print no 'Collective test starting' line; this one has no command line either."""
    run, = parse_log(DATA / "v2_10_no_binary_reduce_scatter.log")
    assert run.collective == "reduce-scatter" and run.nranks == 8
    note = run.notes[-1]
    assert "inferred from the columns" in note and "redop sum" in note and "busbw/algbw 0.875 for n=8" in note


@pytest.mark.parametrize("row, nranks, want", [
    (ROW, 8, "all-reduce"),            # sum, 18.35 / 10.49 = 1.75 = 2(n-1)/n
    (ROW, None, "all-reduce"),         # without n: a ratio above 1 is only all-reduce's
    (ROW.replace("18.35", " 9.18").replace("18.72", " 9.36"), 8, "reduce-scatter"),      # sum, (n-1)/n
    (ROW.replace("18.35", " 9.18").replace("18.72", " 9.36"), None, "reduce-scatter"),
])
def test_collective_inferred_from_columns(row, nranks, want):
    run, = parse_text(log(row, pre=""), nranks=nranks)
    assert run.collective == want


def test_bus_factor_must_match_the_rank_count():
    # sum + busbw/algbw 1.75 fits all-reduce at n=8, but not at n=4 (1.5) nor reduce-scatter (0.75)
    with pytest.raises(BadInput, match=r"its columns fit none of .*busbw/algbw 1.75 for n=4"):
        parse_text(log(ROW, pre=""), nranks=4)


def test_pasted_table_needs_the_collective():
    with pytest.raises(BadInput, match=r"pasted_table_no_binary.log:3: .*leave all-gather or all-to-all.*--collective"):
        parse_log(DATA / "pasted_table_no_binary.log")
    run, = parse_log(DATA / "pasted_table_no_binary.log", collective="all-gather")
    assert run.collective == "all-gather" and len(run.points) == 8


def test_hint_contradicting_the_columns():
    with pytest.raises(BadInput, match=r"^<text>:2: collective='all-gather' was given \(--collective\) but the "
                                       r"columns say otherwise \(redop sum.*: all-reduce\)$"):
        parse_text(log(ROW, pre=""), collective="all-gather")


def test_hint_conflicting_with_the_binary_names_the_option():
    with pytest.raises(BadInput, match=r"collective='all-gather' was given \(--collective\); leave it out or give "
                                       r"all-reduce$"):
        parse_text(log(ROW), collective="all-gather")


def test_zero_time_is_skipped_not_a_point():
    run, = parse_text(log(ROW, ROW.replace("1048576", "2097152").replace("100.0", "  0.0")))
    assert len(run.points) == 3
    assert run.skipped == ("<text>:4: out-of-place point of size 2097152 skipped: time 0 (below the printed "
                           "resolution: not a measurement)",)


def test_tuning_lines_give_the_algorithm_per_size():
    text = ("x:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..15}\n"
            + log(ROW, pre="# Collective test starting: all_reduce_perf\n")
            + "x:1:1 [0] NCCL INFO AllReduce: 1073741824 Bytes -> Algo 4 proto 2 time 5000.000000\n"
            + "x:1:1 [0] NCCL INFO AllGather: 1073741824 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}\n"
            + ROW.replace("1048576", "1073741824") + "\n")
    run, = parse_text(text)
    # the first line comes before the run header (a warm-up call): it goes to the run; AllGather is not this run's
    assert run.tuning == ((1048576, "RING", "LL128", 1), (1073741824, "NVLS", "SIMPLE", 5))
