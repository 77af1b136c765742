"""AppTest helpers for the tests: they live in harness/apptest.py, which the benchmarks import too."""

from harness.apptest import *  # noqa: F403
