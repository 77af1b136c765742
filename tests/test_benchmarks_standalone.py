"""benchmarks/ stand on their own: no module there imports tests/ (what they share lives in harness/).

The first check reads every benchmark's source (an import inside a function counts too); the second runs each
benchmark's `--help` with tests/ made unimportable, so a benchmark that reached tests/ while starting up fails.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted((ROOT / "benchmarks").glob("*.py"))
SCRIPTS = [p for p in BENCHMARKS if p.name.startswith("bench_")]


def imports_of_tests(source: str) -> list[str]:
    """The modules of tests/ that `source` imports, wherever in the file the import is written."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [n for n in names if n == "tests" or n.startswith("tests.")]
    return sorted(found)


def test_the_check_sees_every_way_of_importing_tests():
    source = "import os\ndef f():\n    from tests.browser_helpers import AppServer\nimport tests.stream_client as s\n"
    assert imports_of_tests(source) == [
        "tests.browser_helpers",
        "tests.browser_helpers.AppServer",
        "tests.stream_client",
    ]
    assert imports_of_tests("from tests import conftest\n") == ["tests", "tests.conftest"]
    assert imports_of_tests("from harness.browser import AppServer\nimport testsuite\nfrom . import common\n") == []


def test_no_benchmark_imports_tests():
    assert len(SCRIPTS) >= 17, [p.name for p in BENCHMARKS]
    offenders = {p.name: imports_of_tests(p.read_text()) for p in BENCHMARKS}
    assert {name: found for name, found in offenders.items() if found} == {}


# Runs each benchmark as `python -m benchmarks.NAME --help` would, in one process (torch, streamlit and playwright
# are imported once), with a finder that refuses every tests.* import; prints one JSON record per benchmark.
_RUN_HELP = """
import contextlib, io, json, runpy, sys

class NoTests:
    def find_spec(self, name, path=None, target=None):
        if name == "tests" or name.startswith("tests."):
            raise ImportError(f"benchmarks may not import {name}")
        return None

sys.meta_path.insert(0, NoTests())
results = {}
for name in sys.argv[1:]:
    out, err = io.StringIO(), io.StringIO()
    sys.argv = [f"benchmarks/{name}.py", "--help"]
    code = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module(f"benchmarks.{name}", run_name="__main__", alter_sys=True)
        except SystemExit as e:
            code = e.code
        except BaseException as e:
            code = f"{type(e).__name__}: {e}"
    results[name] = {"code": code, "out": out.getvalue(), "err": err.getvalue()[-2000:]}
tests_loaded = sorted(m for m in sys.modules if m == "tests" or m.startswith("tests."))
print(json.dumps({"results": results, "tests_loaded": tests_loaded}))
"""


def test_every_benchmark_help_runs_without_tests():
    names = [p.stem for p in SCRIPTS]
    done = subprocess.run(
        [sys.executable, "-c", _RUN_HELP, *names], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["tests_loaded"] == []
    for name in names:
        result = report["results"][name]
        assert result["code"] == 0, (name, result)
        assert result["out"].startswith("usage:"), (name, result["out"][:300])
        assert "--help" in result["out"], name
