"""The sweep on a Dask cluster (loopback only) and resuming a sweep from its results file."""
import functools
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fabricsim.collectives.whatif.dask_runner import ClusterError, DaskRunner, ResumableRunner, sweep_runner
from fabricsim.collectives.whatif import LocalRunner, sweep
from fabricsim.topo.errors import BadInput

# 20 seeded triples of failed links on the rack: 3 distinct slowdowns, ties ranked by spec text.
# split="equal": the rack's default is adaptive (Tomahawk 6 Cognitive Routing, topo/routing/switching.py),
# under which every triple costs the same x1.2 (one distinct slowdown, nothing to rank)
KW = dict(n=3, samples=20, seed=1, collective="all-to-all", size_bytes=2**30, group_size=32, algorithm="direct",
          split="equal")


def _sweep(runner, failure_class="link", **kw):
    return sweep("jalapeno-rack", None, failure_class, runner=runner, **dict(KW, **kw))


@pytest.fixture(scope="module")
def reference():
    return _sweep(LocalRunner())


# --- no Dask needed ----------------------------------------------------------------------
def test_import_does_not_load_dask():
    code = ("import sys, fabricsim.collectives.whatif, fabricsim.collectives.whatif.dask_runner as d; "
            "d.sweep_runner(2); print(any(m.split('.')[0] in ('dask', 'distributed') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_dask_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)     # import distributed -> ImportError
    with pytest.raises(BadInput, match=r"pip install 'fabricsim\[dask\]'"):
        DaskRunner("tcp://127.0.0.1:8786").connect()


class _Stop(Exception):
    pass


class _StopAfter:
    """A runner that is interrupted after k scenario results (a Ctrl-C, a lost node)."""

    def __init__(self, inner, k):
        self.inner, self.k = inner, k

    def map(self, fn, tasks):
        got = 0
        for res in self.inner.map(fn, tasks):
            yield res
            got += "baseline" not in res
            if got == self.k:
                raise _Stop


class _Recorder:
    def __init__(self, inner):
        self.inner, self.seen = inner, []

    def map(self, fn, tasks):
        self.seen = [t.index for t in tasks]
        return self.inner.map(fn, tasks)


def _stored(path):
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def test_resume_after_interrupt(tmp_path, reference):
    path = tmp_path / "sweep.jsonl"
    with pytest.raises(_Stop):
        _sweep(ResumableRunner(_StopAfter(LocalRunner(), 4), path))
    first = _stored(path)
    assert len(first) == 4 and all("baseline" not in r["result"] for r in first)
    with open(path, "a") as fh:
        fh.write('{"index": 7, "specs": ["loc')            # a line cut short by a kill
    rec = _Recorder(LocalRunner())
    runner = ResumableRunner(rec, path)
    again = _sweep(runner)
    assert again.scenarios == reference.scenarios and again.summary == reference.summary
    done = {r["index"] for r in first}
    assert runner.reused == 4 and not done & set(rec.seen)          # the first 4 were not recomputed
    assert sorted(rec.seen) == sorted({-1} | set(range(len(reference.scenarios))) - done)
    assert len(_stored(path)) == len(reference.scenarios)           # the cut line is skipped, then whole ones
    # a third run computes nothing but the baseline and changes nothing
    rec = _Recorder(LocalRunner())
    assert _sweep(ResumableRunner(rec, path)).scenarios == reference.scenarios and rec.seen == [-1]


def test_resume_file_of_another_sweep_is_refused(tmp_path):
    path = tmp_path / "sweep.jsonl"
    _sweep(ResumableRunner(LocalRunner(), path), samples=4)
    with pytest.raises(BadInput, match="different sweep"):
        _sweep(ResumableRunner(LocalRunner(), path), samples=4, size_bytes=2**20)


def test_results_file_round_trips_exactly(tmp_path, reference):
    path = tmp_path / "sweep.jsonl"
    _sweep(ResumableRunner(LocalRunner(), path))
    rec = _Recorder(LocalRunner())
    s = _sweep(ResumableRunner(rec, path))
    assert rec.seen == [-1] and s.scenarios == reference.scenarios
    assert s.as_dict() == reference.as_dict()


# --- on a local Dask cluster ---------------------------------------------------------------
def _cluster(**kw):
    distributed = pytest.importorskip("distributed")
    # everything on loopback, no fixed port (8787) to clash with another cluster
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                    dashboard_address="127.0.0.1:0", **kw)


@pytest.fixture(scope="module")
def cluster():
    import dask
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):   # a task that kills its worker fails
        c = _cluster()                                                   # (read when the scheduler starts)
    with c:
        yield c


def test_bad_address_fails_fast():
    pytest.importorskip("distributed")
    t0 = time.monotonic()
    with pytest.raises(BadInput, match=r"tcp://127\.0\.0\.1:1") as exc:
        _sweep(DaskRunner("tcp://127.0.0.1:1", timeout_s=3))
    assert time.monotonic() - t0 < 10 and "\n" not in str(exc.value)
    with pytest.raises(BadInput, match="bad Dask scheduler address"):
        sweep_runner(scheduler="tcp://127.0.0.1")                     # no port: refused at once


def test_dask_equals_local(cluster, reference):
    runner = sweep_runner(scheduler=cluster.scheduler_address)
    try:
        seen = []
        s = _sweep(runner, progress=lambda done, total, res: seen.append((done, total)))
    finally:
        runner.close()
    assert s.scenarios == reference.scenarios and s.summary == reference.summary
    assert s.as_dict() == reference.as_dict()
    assert [d for d, _ in seen] == list(range(1, len(reference.scenarios) + 1))
    assert len(reference.scenarios) == 20 and reference.summary["distinct"] == 3
    # N-1 with the baseline resolved locally (auto), and a runner that connects per map
    n1 = dict(n=1, samples=None, collective="all-reduce", group_size=8, algorithm="auto")
    assert (_sweep(DaskRunner(cluster.scheduler_address), "local-switch", **n1).as_dict()
            == _sweep(LocalRunner(), "local-switch", **n1).as_dict())


def test_dask_resume(cluster, tmp_path, reference):
    path = tmp_path / "sweep.jsonl"
    with pytest.raises(_Stop):
        _sweep(ResumableRunner(_StopAfter(DaskRunner(cluster.scheduler_address), 5), path))
    assert len(_stored(path)) == 5
    with sweep_runner(scheduler=cluster.scheduler_address, results_file=path) as runner:
        assert _sweep(runner).as_dict() == reference.as_dict() and runner.reused == 5
        assert runner.inner._client is not None       # connected by sweep_runner, kept until closed
    assert runner.inner._client is None


def _always_die(fn, task):
    if task.index == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return fn(task)


def test_task_that_kills_its_workers_is_one_line_error(cluster, tmp_path):
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    path = tmp_path / "sweep.jsonl"
    with pytest.raises(ClusterError, match=r"lost the sweep after \d+/21 task\(s\): KilledWorker") as exc:
        _sweep(ResumableRunner(_Wrapped(DaskRunner(cluster.scheduler_address), _always_die), path))
    assert "\n" not in str(exc.value) and cluster.scheduler_address in str(exc.value)


KILL_INDEX = 3


def _die_once(fn, marker, task):
    """Worker side: a short delay so work is in flight, and the first try of one task
    SIGKILLs its own worker process (the scheduler must re-run what that worker held)."""
    time.sleep(0.2)
    if task.index == KILL_INDEX:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)
    return fn(task)


class _Wrapped:
    def __init__(self, inner, wrap):
        self.inner, self.wrap = inner, wrap

    def map(self, fn, tasks):
        return self.inner.map(functools.partial(self.wrap, fn), tasks)


@pytest.mark.slow
def test_worker_killed_mid_sweep(tmp_path, reference):
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])     # workers need not import this file
    marker = str(tmp_path / "killed")
    with _cluster() as c:
        runner = DaskRunner(c.scheduler_address)
        with runner:
            before = set(runner.connect().run(os.getpid).values())
            s = _sweep(_Wrapped(runner, _KillWrap(marker)))
            assert os.path.exists(marker)
            killed = int(open(marker).read())
            assert killed in before
            after = set(runner.connect().run(os.getpid).values())
    assert killed not in after
    assert s.scenarios == reference.scenarios and s.as_dict() == reference.as_dict()


class _KillWrap:
    def __init__(self, marker):
        self.marker = marker

    def __call__(self, fn, task):
        return _die_once(fn, self.marker, task)


def test_dask_sweep_folds_and_drives_the_progress_bar(cluster):
    import io

    from fabricsim.collectives.whatif.text import SweepProgress
    out = io.StringIO()
    bar = SweepProgress(out, tty=True, after_s=0.0)
    kw = dict(collective="all-to-all", size_bytes=2**30, algorithm="direct")
    s = sweep("torus", {"dims": "4x4x4"}, "link", runner=DaskRunner(cluster.scheduler_address), progress=bar, **kw)
    local = sweep("torus", {"dims": "4x4x4"}, "link", **kw)
    assert s.as_dict() == local.as_dict() and s.summary["orbits"] == 3
    assert (bar.scenarios, bar.orbits, bar.solved) == (192, 3, 3)
    assert "192/192 scenarios, 3/3 orbits solved" in bar.last and out.getvalue().endswith("\n")
