"""The project's module import graph, read with ast from every .py file (nothing is imported), and its rules.

Which files: model/, tasks/, viz/, pages/, ui/ and harness/ (once they exist), app.py, scripts/, benchmarks/,
i18n/, deploy/. Not tests/: tests import whatever they check.

What counts as an import, and how the graph is drawn:
- Every `import` and `from ... import` statement anywhere in a file: at the top, inside a function, under
  `if TYPE_CHECKING:`. An import deferred into a function still makes one module depend on the other;
  deferring it hides a cycle from Python at import time, not from the design.
- `import a.b.c` is an edge to the project module a.b.c. `from X import n` is an edge to the module X.n when
  X.n is a project module (so `from . import attention` imports the sibling module attention), unless X's
  own __init__ binds n (`from model import capture` is the function model/__init__ re-exports: an edge to
  model). Otherwise it is an edge to X (a package X means its __init__).
- Importing a.b.c makes Python run a/__init__ and a/b/__init__ first; that is not drawn as an edge. The child
  does not use its parent's names unless it imports them, and then it has an explicit edge of its own. So a
  package __init__ that re-exports its children (model/__init__ -> model.analysis.capture) is an ordinary edge,
  and it closes a cycle only when a child imports the package back (`from model import ...` inside model/),
  which is a real cycle: the child would see a half-initialised package.
- A second graph, what Python runs when it imports (test_no_cycle_when_python_imports), leaves out imports
  inside functions and under `if TYPE_CHECKING:`, and adds the edge to each package whose __init__ Python runs
  on the way to a module of another package (tasks.tasks imports model.text.tokenizer: model/__init__ runs).
- Relative imports are resolved against the file's own package; imports of anything outside the project
  (torch, streamlit, ...) are kept per module for the boundary rules but are not nodes of the graph.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["model", "tasks", "viz", "pack", "pages", "ui", "harness", "scripts", "benchmarks", "i18n", "deploy"]
FILES = ["app.py", "app_script.py"]

# model/ may import tasks/ in exactly these places (module -> the tasks module it reaches):
MODEL_TO_TASKS = {
    "model.train": {"tasks.train"},  # the 3-line shim that keeps `python -m model.train` working
    # model/__init__'s __getattr__: `from model import positional_experiment` (the README's import) loads
    # tasks.pe_experiment on first use; importing model alone never imports tasks (checked below)
    "model": {"tasks.pe_experiment"},
}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_files(root: Path, packages: list[str] = PACKAGES) -> dict[str, Path]:
    found = [root / f for f in FILES if (root / f).is_file()]
    for package in packages:
        if (root / package).is_dir():
            found += [p for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts]
    return {module_name(p, root): p for p in sorted(found)}


def bound_names(init: Path) -> set[str]:
    """Names a package __init__ binds at its top level (imports, defs, classes, assignments)."""
    names: set[str] = set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def run_at_import(body: list[ast.stmt]):
    """The statements Python runs when the module is imported: not function bodies, not `if TYPE_CHECKING:`."""
    for node in body:
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from run_at_import(node.orelse)
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            yield from run_at_import(
                [n for n in getattr(node, field, []) if isinstance(n, ast.stmt | ast.excepthandler)]
            )


def imports_of(name: str, path: Path, modules: dict[str, Path], at_import: bool = False) -> tuple[set[str], set[str]]:
    """(project modules this file imports, top-level names of everything it imports outside the project).
    at_import: only the imports run when the module is imported, and the packages whose __init__ Python runs
    on the way to a module outside the file's own package (what an import-time cycle is made of)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    inside: set[str] = set()
    outside: set[str] = set()

    def add(target: str) -> None:
        parts = target.split(".")
        for i in range(len(parts), 0, -1):  # the longest prefix that is a project module
            if ".".join(parts[:i]) in modules:
                inside.add(".".join(parts[:i]))
                return
        outside.add(parts[0])

    tree = ast.parse(path.read_text(), str(path))
    for node in run_at_import(tree.body) if at_import else ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            init = modules.get(source)
            own = bound_names(init) if init is not None and init.name == "__init__.py" else set()
            for alias in node.names:
                child = f"{source}.{alias.name}"
                add(child if child in modules and alias.name not in own else source)
    if at_import:
        parents = {".".join(t.split(".")[:i]) for t in inside for i in range(1, t.count(".") + 1)}
        inside |= {p for p in parents if p in modules and not in_package(name, p)}
    return inside, outside


def build_graph(root: Path, packages: list[str] = PACKAGES, at_import: bool = False):
    """(the module graph, per module the names it imports from outside the project)."""
    modules = project_files(root, packages)
    graph, outside = nx.DiGraph(), {}
    for name, path in modules.items():
        graph.add_node(name)
        inside, outside[name] = imports_of(name, path, modules, at_import)
        graph.add_edges_from((name, target) for target in inside if target != name)
    return graph, outside


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


def boundary_violations(graph, outside, package: str, banned: set[str], allowed=None) -> list[str]:
    """'module -> what' for every import from `package` of a banned package (project or not)."""
    allowed = allowed or {}
    found = []
    for module in sorted(m for m in graph if in_package(m, package)):
        for target in sorted(graph.successors(module)):
            if any(in_package(target, b) for b in banned) and target not in allowed.get(module, ()):
                found.append(f"{module} -> {target}")
        found += [f"{module} -> {lib}" for lib in sorted(outside[module] & banned)]
    return found


@pytest.fixture(scope="module")
def project():
    return build_graph(ROOT)


def test_the_graph_sees_the_project(project):
    """The walk finds the packages and draws the edges the rules are about (an empty graph would pass them all)."""
    graph, outside = project
    assert {"app", "model", "model.network.transformer", "tasks.train", "viz.attention_figs"} <= set(graph)
    assert graph.has_edge("model.network.transformer", "model.network.attention")  # from .attention import
    assert graph.has_edge("tasks.intervened", "tasks.evaluate")  # from .evaluate import
    assert graph.has_edge("tasks.train", "tasks.tasks") and graph.has_edge("model.train", "tasks.train")
    assert "torch" in outside["model.network.transformer"] and "plotly" in outside["viz.attention_figs"]


def test_no_import_cycle(project):
    graph, _ = project
    assert cycles(graph) == []


def test_no_cycle_when_python_imports():
    """What Python runs on import (top-level imports, plus each package __init__ it runs on the way to a module
    of another package) has no cycle either: e.g. model/__init__ importing tasks eagerly would close
    model -> tasks.pe_experiment -> model.decoding, which runs model/__init__ first."""
    graph, _ = build_graph(ROOT, at_import=True)
    assert cycles(graph) == []


def test_no_import_cycle_among_pages_and_ui(project):
    """pages/ holds page scripts only and ui/ what they share: no cycle among them (pages.common <-> pages.language
    was one)."""
    graph, _ = project
    assert [c for c in cycles(graph) if all(in_package(m, "pages") or in_package(m, "ui") for m in c)] == []


def test_model_imports_no_ui_and_no_task(project):
    """model/ is the library (torch only): no streamlit, plotly, viz, pages, ui or tasks, but for the two
    compatibility doors of MODEL_TO_TASKS."""
    graph, outside = project
    banned = {"streamlit", "plotly", "viz", "pages", "ui", "tasks"}
    assert boundary_violations(graph, outside, "model", banned, MODEL_TO_TASKS) == []


# model/'s rooms from the bottom up: each imports only rooms before it (the package's own __init__ re-exports, and
# its deferred doors, are not a room's import)
MODEL_ROOMS = ["env", "lazy", "text", "interventions", "network", "checkpoints", "decoding", "analysis", "train"]


def model_room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "model" and len(parts) > 1 and parts[1] in MODEL_ROOMS else None


def upward_imports(graph) -> list[str]:
    found = []
    for module in sorted(m for m in graph if model_room(m)):
        for target in sorted(graph.successors(module)):
            low, high = model_room(module), model_room(target)
            if high and MODEL_ROOMS.index(high) > MODEL_ROOMS.index(low):
                found.append(f"{module} -> {target}")
    return found


def test_model_has_no_upward_import(project):
    """Inside model/, a room imports only the rooms below it (text below interventions below the network, ...): the
    tokenizer does not read checkpoints, the interventions do not decode."""
    graph, _ = project
    assert set(MODEL_ROOMS) == {p.stem for p in (ROOT / "model").iterdir() if p.stem in MODEL_ROOMS}
    assert upward_imports(graph) == []


def test_an_upward_import_is_caught(tmp_path):
    tree = {
        "model/__init__.py": "",
        "model/text/__init__.py": "",
        "model/decoding/__init__.py": "",
        "model/text/t.py": "from ..decoding import core\n",
        "model/decoding/core.py": "from ..text import t\n",
    }
    graph, _ = build_graph(write(tmp_path, tree), ["model"])
    assert upward_imports(graph) == ["model.text.t -> model.decoding.core"]


def test_importing_model_never_imports_tasks():
    """The lazy door stays lazy: `import model` (and its re-exported names) runs without importing tasks/."""
    import subprocess
    import sys

    code = "import sys, model; from model import capture, load_checkpoint; print(any(m == 'tasks' or m.startswith('tasks.') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# what scripts and notebooks import from `model` (its __init__ before the packages): it stays, whatever moves
SCRIPTED_NAMES = """TransformerConfig build_model sinusoidal_encoding capture greedy_decode beam_search sample head_importance
attribute positional_experiment Capture Trace BeamTrace save_checkpoint load_checkpoint Attribution CheckpointError
HeadImportance PositionalExperiment PRESETS Step Tokenizer Transformer Vocab record""".split()


def test_what_scripts_import_from_model_and_run_stays():
    """Every name of the README's `from model import ...` imports from model and is in model.__all__, and the two
    documented commands still start (`python -m model.train`, `python -m scripts.lecture_pack`)."""
    import subprocess
    import sys

    import model

    assert set(SCRIPTED_NAMES) <= set(model.__all__) and set(model.__all__) <= set(dir(model))
    code = f"from model import {', '.join(SCRIPTED_NAMES)}; print(positional_experiment.__module__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "tasks.pe_experiment"
    for command in (["model.train", "--help"], ["scripts.lecture_pack", "--help"]):
        run = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True)
        assert run.returncode == 0 and f"python -m {command[0]}" in run.stdout, run.stderr


# viz/ may import model/ in exactly this place: the notebook's show(model, tokenizer, text) runs the capture, inside
# the function (importing viz.notebook never imports torch: checked below)
VIZ_TO_MODEL = {"viz.notebook": {"model"}}


def test_viz_imports_no_torch_streamlit_or_model(project):
    """viz/ takes numpy and returns plotly figures: no torch, streamlit, model, tasks, pages or ui, but for the one
    door of VIZ_TO_MODEL."""
    graph, outside = project
    banned = {"torch", "streamlit", "model", "tasks", "pages", "ui"}
    assert boundary_violations(graph, outside, "viz", banned, VIZ_TO_MODEL) == []


def test_the_pack_imports_no_app(project):
    """pack/ (the lecture pack: records and exported network from model/, its page from viz/) serves the app's page
    and the command line alike: no streamlit, ui or pages; and neither model/ nor viz/ imports it."""
    graph, outside = project
    assert {"pack.records", "pack.export", "pack.page", "pack.live"} <= set(graph)
    assert boundary_violations(graph, outside, "pack", {"streamlit", "ui", "pages"}) == []
    for lower in ("model", "viz"):
        assert boundary_violations(graph, outside, lower, {"pack"}) == []


def test_the_notebook_door_stays_inside_its_function():
    """viz.notebook imports model/ only inside show(): importing it (and the figure export) loads no torch and no
    model package."""
    import subprocess
    import sys

    graph, _ = build_graph(ROOT, at_import=True)
    assert not [t for t in graph.successors("viz.notebook") if in_package(t, "model")]
    code = (
        "import sys, viz.notebook, viz.figure_export; print(sorted(m for m in ('torch', 'model') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_nothing_imports_a_page(project):
    """Page scripts are only run by Streamlit: no module (app.py, benchmarks, another page) imports one."""
    graph, _ = project
    assert [f"{a} -> {b}" for a, b in sorted(graph.edges) if in_package(b, "pages")] == []


# -- the rules themselves, on small made-up projects: each catches what it is for -----------------------


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_package_reexporting_its_children_is_no_cycle_until_a_child_imports_it_back(tmp_path):
    tree = {"model/__init__.py": "from .a import f\n", "model/a.py": "from . import b\n", "model/b.py": ""}
    graph, _ = build_graph(write(tmp_path, tree))
    assert graph.has_edge("model", "model.a") and graph.has_edge("model.a", "model.b") and cycles(graph) == []
    write(tmp_path, {"model/b.py": "def g():\n    from model import f  # deferred: still a dependency\n"})
    assert cycles(build_graph(tmp_path)[0]) == [["model", "model.a", "model.b"]]


def test_a_name_the_package_binds_is_the_package_not_the_module(tmp_path):
    tree = {"lib/__init__.py": "from .probe import probe\n", "lib/probe.py": "", "app.py": ""}
    write(tmp_path, {**tree, "viz/f.py": "from lib import probe\n"})
    assert set(build_graph(tmp_path, ["lib", "viz"])[0].successors("viz.f")) == {"lib"}
    write(tmp_path, {"lib/__init__.py": ""})  # now `probe` can only be the module
    assert set(build_graph(tmp_path, ["lib", "viz"])[0].successors("viz.f")) == {"lib.probe"}


def test_the_boundary_rules_catch_a_forbidden_import(tmp_path):
    tree = {
        "model/__init__.py": "",
        "model/train.py": "from tasks.train import main\n",
        "model/net.py": "import torch\n",
        "tasks/__init__.py": "",
        "tasks/train.py": "from model import net\n",
        "viz/figs.py": "import plotly\n",
        "pages/page.py": "import streamlit\n",
    }
    graph, outside = build_graph(write(tmp_path, tree))
    allowed = {"model.train": {"tasks.train"}}
    assert boundary_violations(graph, outside, "model", {"streamlit", "tasks"}, allowed) == []
    assert boundary_violations(graph, outside, "viz", {"torch", "model"}) == []
    write(tmp_path, {"model/net.py": "import torch\nimport streamlit\nfrom tasks import train\n"})
    write(tmp_path, {"viz/figs.py": "import plotly\ndef f():\n    import torch\n    from model.net import x\n"})
    graph, outside = build_graph(tmp_path)
    assert boundary_violations(graph, outside, "model", {"streamlit", "tasks"}, allowed) == [
        "model.net -> tasks.train",
        "model.net -> streamlit",
    ]
    assert boundary_violations(graph, outside, "viz", {"torch", "model"}) == [
        "viz.figs -> model.net",
        "viz.figs -> torch",
    ]


def test_at_import_a_deferred_door_is_no_cycle_and_an_eager_one_is(tmp_path):
    lazy = "def __getattr__(name):\n    from tasks import exp\n    return exp\n"
    tree = {
        "model/__init__.py": lazy,
        "model/net.py": "",
        "tasks/__init__.py": "",
        "tasks/exp.py": "from model.net import x\n",
    }
    graph, _ = build_graph(write(tmp_path, tree), ["model", "tasks"], at_import=True)
    assert graph.has_edge("tasks.exp", "model") and not graph.has_edge("model", "tasks.exp") and cycles(graph) == []
    write(tmp_path, {"model/__init__.py": "from tasks import exp\n"})
    assert cycles(build_graph(tmp_path, ["model", "tasks"], at_import=True)[0]) == [["model", "tasks.exp"]]
    assert cycles(build_graph(tmp_path, ["model", "tasks"])[0]) == []  # the plain graph draws no parent edge


def test_no_library_package_imports_its_children_when_imported():
    """model/lazy.py: a package __init__ of the library imports none of its own modules at import time (its names
    load on first use), so two threads importing different parts of it at once cannot deadlock."""
    offenders = []
    for init in sorted((ROOT / "model").rglob("__init__.py")):
        if init.parent.name == "formats":  # the formats registry's own functions live in its __init__: below
            continue
        for node in ast.parse(init.read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.level >= 1 and node.module != "lazy" and node.level == 1:
                offenders.append(f"{init.relative_to(ROOT)}: from .{node.module or ''} import ...")
            if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module not in ("lazy",):
                offenders.append(f"{init.relative_to(ROOT)}: from ..{node.module} import ...")
    assert offenders == []


def test_threads_importing_different_parts_of_the_library_at_once_do_not_deadlock():
    """A cold server's first sessions import different parts of the library first, in threads at once (a page of
    decoding, one of positions, the app itself): each of eight threads imports its own module, released together."""
    import subprocess
    import sys

    script = """
import importlib, sys, threading
names = ["model", "model.analysis.export", "model.network.positional", "model.decoding.beam",
         "model.analysis.attribution", "model.interventions.value", "model.checkpoints.loading", "tasks.intervened"]
start, errors = threading.Barrier(len(names)), []
def run(name):
    start.wait()
    try:
        importlib.import_module(name)
    except Exception as e:
        errors.append(f"{name}: {e!r}")
threads = [threading.Thread(target=run, args=(n,)) for n in names]
[t.start() for t in threads]
[t.join(120) for t in threads]
from model import capture, greedy_decode, load_checkpoint  # every name still there
print(errors)
"""
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
