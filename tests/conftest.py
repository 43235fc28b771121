import os

from hypothesis import settings

os.environ.setdefault("MPLBACKEND", "Agg")

# CI draws the same hypothesis examples on every run (a red run reproduces; the examples that found bugs
# are pinned as regression tests). `FABRICSIM_HYPOTHESIS=explore pytest` draws fresh ones to hunt for more.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("FABRICSIM_HYPOTHESIS", "ci"))
