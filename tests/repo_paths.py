"""Where the tests find the repository's files, wherever a test module sits under tests/."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]     # the repository
TESTS = ROOT / "tests"
DATA = TESTS / "data"                           # measured logs and tables the tests read (each cites its source)
EXAMPLES = ROOT / "examples"
