"""The library as a notebook user imports it (issue 26 item 7): functions, not modules; plots return Figures."""
from __future__ import annotations

import subprocess
import sys
import types

import pytest
from matplotlib.figure import Figure

ALL_MODULES = """
import importlib, pkgutil, fabricsim
for m in pkgutil.walk_packages(fabricsim.__path__, "fabricsim."):
    if m.name.split(".")[1] in ("topo", "collectives", "fabrics", "cli") and "dask" not in m.name:
        importlib.import_module(m.name)
"""


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_functions_not_modules_fresh_and_after_every_import():
    """``from fabricsim.topo import audit`` is the function in a fresh interpreter and after every module is
    imported (it was the module once anything imported topo.audit: ``TypeError: 'module' object is not
    callable``); and no name a package's __all__ exports is a same-named submodule. One subprocess: ~1.5 s CPU."""
    out = _run("from fabricsim.topo import audit; print(type(audit).__name__)\n" + ALL_MODULES + """
import sys, types
import fabricsim.topo as T
from fabricsim.topo import audit as a2
print(type(T.audit).__name__, type(a2).__name__)
bad = []
for name, mod in list(sys.modules.items()):
    if name.startswith("fabricsim") and hasattr(mod, "__path__"):
        for n in getattr(mod, "__all__", ()):
            if f"{name}.{n}" in sys.modules and isinstance(getattr(mod, n), types.ModuleType) \\
                    and n not in ("devices", "topo", "collectives", "fabrics"):
                bad.append(f"{name}.{n}")
print(" ".join(sorted(bad)) or "none")
""")
    assert out.split() == ["function", "function", "function", "none"]


def test_import_fabricsim_exposes_the_subpackages():
    out = _run("import fabricsim; print(*(type(getattr(fabricsim, n)).__name__ "
               "for n in ('topo', 'collectives', 'fabrics')))")
    assert out.split() == ["module"] * 3


# ---------------------------------------------------------------------------------------- plots
@pytest.fixture(scope="module")
def rack_report():
    from fabricsim.collectives import by_size, price
    from fabricsim.fabrics import build
    G = build("jalapeno-rack")
    return G, price(G, "all-reduce", groups=by_size(G, 8), size_bytes=2 ** 24, algorithm="ring")


def _plots(G, r):
    from fabricsim.collectives.plots import plot_compare, plot_price, plot_sweep
    from fabricsim.topo.draw import draw_fabric
    return {"plot_price": lambda **kw: plot_price(r, G=G, **kw),
            "plot_compare": lambda **kw: plot_compare([r, r], **kw),
            "plot_sweep": lambda **kw: plot_sweep([1.0, 1.2, 1.2, 2.0], **kw),
            "draw_fabric": lambda **kw: draw_fabric(G, **kw)}


@pytest.mark.parametrize("name", ["plot_price", "plot_compare", "plot_sweep", "draw_fabric"])
def test_plots_return_a_figure_and_write_only_with_a_path(name, rack_report, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fig = _plots(*rack_report)[name]()
    assert isinstance(fig, Figure) and fig.axes
    assert list(tmp_path.iterdir()) == []                   # no path: nothing written
    out = tmp_path / "x.svg"
    assert isinstance(_plots(*rack_report)[name](path=out), Figure) and out.stat().st_size > 0


@pytest.mark.parametrize("name", ["plot_price", "plot_compare", "plot_sweep", "draw_fabric"])
def test_plots_draw_into_the_callers_axes(name, rack_report):
    fig = Figure()
    ax = fig.add_subplot(1, 2, 1)
    assert _plots(*rack_report)[name](ax=ax) is fig
    assert ax.has_data() or ax.patches or ax.collections or ax.texts


@pytest.mark.parametrize("name", ["plot_price", "plot_compare", "plot_sweep"])
def test_two_panel_plots_take_a_pair_of_axes(name, rack_report):
    fig = Figure()
    axes = fig.subplots(1, 2)
    assert _plots(*rack_report)[name](ax=axes) is fig
    assert all(a.has_data() or a.patches or a.texts for a in axes)
    with pytest.raises(ValueError, match="pair of Axes"):
        _plots(*rack_report)[name](ax=[axes[0]] * 3)


def test_plot_step_returns_a_figure_and_takes_ax(tmp_path):
    from fabricsim.collectives.jobs.step import plot_step, step
    from fabricsim.fabrics import build
    r = step(build("jalapeno-rack"), "gpt-oss-120b", mesh="tp=8,ep=16", batch=128)
    fig = plot_step([r])
    assert isinstance(fig, Figure) and fig.axes[0].patches
    own = Figure()
    ax = own.add_subplot()
    assert plot_step([r], tmp_path / "s.png", ax=ax) is own and (tmp_path / "s.png").stat().st_size > 0
