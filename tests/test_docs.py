"""The documentation: the mkdocs site builds offline with warnings as errors, its benchmark tables are the
benchmarks' own output, and the READMEs stay short, in step with each other, and point at things that exist."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import common
from scripts import docs_families, docs_tables

ROOT = Path(__file__).resolve().parents[1]
READMES = [ROOT / "README.md", ROOT / "README.zh.md"]
# what a built page would load from elsewhere (a link the reader may follow is fine; a fetch is not)
REMOTE_LOAD = re.compile(
    r"""<(?:script|img|iframe)[^>]*\ssrc=["']https?://|<link[^>]*\shref=["']https?://[^"']*["'][^>]*>|"""
    r"""@import\s+(?:url\()?["']?https?://|url\(["']?https?://""",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {
        **os.environ,
        "NO_MKDOCS_2_WARNING": "1",
        "no_proxy": "*",
        "http_proxy": "http://0.0.0.0:9",
        "https_proxy": "http://0.0.0.0:9",
    }  # any fetch fails at once
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "WARNING" not in run.stderr, run.stderr[-3000:]
    return out


def test_the_site_builds_strict_and_loads_nothing_from_elsewhere(site):
    pages = sorted(site.rglob("*.html"))
    assert (site / "index.html").is_file() and len(pages) > 10
    loads = {str(p.relative_to(site)): REMOTE_LOAD.findall(p.read_text(encoding="utf-8")) for p in pages}
    css = {str(p.relative_to(site)): REMOTE_LOAD.findall(p.read_text(encoding="utf-8")) for p in site.rglob("*.css")}
    assert {k: v for k, v in {**loads, **css}.items() if v} == {}


def test_the_remote_load_check_sees_a_web_font_and_a_script():
    assert REMOTE_LOAD.search('<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">')
    assert REMOTE_LOAD.search('<script src="https://cdn.example/x.js"></script>')
    assert not REMOTE_LOAD.search('<a href="https://arxiv.org/abs/1706.03762">paper</a>')


def test_the_api_pages_come_from_the_docstrings(site):
    from model.analysis import capture as capture_module

    html = (site / "api" / "analysis" / "index.html").read_text(encoding="utf-8")
    assert "model.analysis.capture.capture" in html
    first_line = capture_module.Capture.__doc__.strip().splitlines()[0]
    assert first_line.split(":")[0] in html


def test_the_families_pages_hold_a_row_per_registered_family_in_both_languages(site):
    """The hook of mkdocs.yml puts the registry's families in place of the marker: the built pages hold each
    family's NAME and TITLE (its Chinese title on the Chinese page) and no marker."""
    from i18n import _, language_scope

    english = (site / "families" / "index.html").read_text(encoding="utf-8")
    chinese = (site / "zh" / "families" / "index.html").read_text(encoding="utf-8")
    assert docs_families.families() and "families-table" not in english + chinese
    for fmt in docs_families.families():
        assert f"<code>{fmt.NAME}</code>" in english and f"<code>{fmt.NAME}</code>" in chinese
        assert fmt.TITLE in english, fmt.NAME
        with language_scope("zh"):
            assert _(fmt.TITLE) in chinese and _(fmt.TITLE) != fmt.TITLE, fmt.NAME


def test_the_benchmark_results_page_is_what_the_results_files_give():
    assert (ROOT / "docs" / "benchmark-results.md").read_text(encoding="utf-8") == docs_tables.render()
    assert docs_tables.main(["--check"]) == 0


def test_a_results_file_renders_with_its_date_load_and_rows(tmp_path):
    record = {
        "script": "bench_inside",
        "command": "python -m benchmarks.bench_inside --repeats 2",
        "date": "2026-01-02 03:04 UTC",
        "load_start": [1.5, 1.0, 0.5],
        "load_end": [2.25, 1.0, 0.5],
        "cpus": 2,
        "tables": [{"title": None, "headers": ["call", "ms"], "rows": [["a|b", "15.5"]]}],
    }
    (tmp_path / "bench_inside.json").write_text(json.dumps(record))
    text = docs_tables.render(tmp_path)
    assert "## `bench_inside`" in text
    assert "2026-01-02 03:04 UTC" in text and "1.50 / 1.00 / 0.50" in text and "2.25 / 1.00 / 0.50" in text
    assert "| a\\|b | 15.5 |" in text  # a pipe in a cell does not split it
    assert "`python -m benchmarks.bench_inside --repeats 2`" in text
    assert docs_tables.summary("bench_inside").startswith("Server-side time")


def test_a_benchmark_writes_its_tables_with_date_and_load(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/x/benchmarks/bench_demo.py", "--n", "3"])
    monkeypatch.setattr(common, "_TABLES", [])
    common.table(["a", "b"], [[1, 2.5]], title="first")
    path = common.write_results(tmp_path)
    data = json.loads(path.read_text())
    assert path.name == "bench_demo.json"
    assert data["command"] == "python -m benchmarks.bench_demo --n 3"
    assert data["tables"] == [{"title": "first", "headers": ["a", "b"], "rows": [["1", "2.5"]]}]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", data["date"]) and data["cpus"] == os.cpu_count()
    assert len(data["load_start"]) == 3 and len(data["load_end"]) == 3


def test_nothing_is_written_without_tables_or_outside_a_benchmark(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "_TABLES", [])
    monkeypatch.setattr(sys, "argv", ["/x/benchmarks/bench_demo.py", "--help"])
    assert common.write_results(tmp_path) is None  # --help prints no table
    monkeypatch.setattr(common, "_TABLES", [{"title": None, "headers": ["a"], "rows": []}])
    monkeypatch.setattr(sys, "argv", ["/x/pytest"])
    assert common.write_results(tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_the_readme_is_short_and_starts_with_the_two_commands():
    text = READMES[0].read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    first = text.index("scripts/setup.sh && .venv/bin/streamlit run app.py")
    assert first < text.index("## The pages")
    assert "scripts/setup.sh --dev && .venv/bin/python -m pytest -q" in text
    # CI runs the README's test command
    assert ".venv/bin/python -m pytest -q" in (ROOT / ".ci" / "run").read_text()
    assert "present=1" in text and "lecture_pack" in text


def test_the_chinese_readme_has_the_same_sections_and_commands():
    en, zh = (p.read_text(encoding="utf-8") for p in READMES)
    heading = re.compile(r"^## ", re.MULTILINE)
    assert len(heading.findall(zh)) == len(heading.findall(en))
    code = re.compile(r"```(?:bash|python)\n(.*?)```", re.DOTALL)
    assert len(code.findall(zh)) == len(code.findall(en))
    for command in ("scripts/setup.sh && .venv/bin/streamlit run app.py", "present=1", "scripts.lecture_pack"):
        assert command in zh


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.name)
def test_every_link_and_module_a_readme_names_exists(readme):
    text = readme.read_text(encoding="utf-8")
    links = [t for t in re.findall(r"\]\(([^)#]+)", text) if not t.startswith("http")]
    assert links and [t for t in links if not (ROOT / t).exists()] == []
    modules = set(re.findall(r"python -m ([\w.]+)", text)) - {"pytest"}
    assert modules and [m for m in modules if not _module_exists(m)] == []


def _module_exists(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()
