"""One registry per extension point (issue 23): the pages, the intervention kinds, the decoding strategies and the
checkpoint formats are each listed once, in their registry, and everything else reads them from there.

Each test derives the list from its registry and compares it with what is on disk: a module that implements the
extension point but is not registered fails, and so does a registry entry without its module, or a name twice.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from model.network.position_kinds.registry import MODULES as POSITIONAL_KINDS

ROOT = Path(__file__).resolve().parents[1]


def top_level_names(path: Path) -> set[str]:
    """Names a module defines at its top level (assignments, functions, classes)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))  # a, b = ... too
    return names


def modules_defining(folder: Path, *names: str) -> set[str]:
    return {p.stem for p in folder.glob("*.py") if set(names) <= top_level_names(p)}


def test_every_page_script_is_in_the_page_registry_once():
    from ui.shell.navigation import PAGES

    files = [file for file, _title, _icon in PAGES.values()]
    assert len(files) == len(set(files)) and len({t for _f, t, _i in PAGES.values()}) == len(PAGES)
    assert set(files) == {p.name for p in (ROOT / "pages").glob("*.py")}  # pages/ holds page scripts, all listed


def test_every_intervention_kind_module_is_registered_once():
    from model.interventions import INTERVENTION_KINDS
    from model.interventions.registry import MODULES, REGISTRY

    assert len(MODULES) == len(set(MODULES)) == len(INTERVENTION_KINDS)  # one kind a module, names distinct
    assert set(MODULES) == modules_defining(ROOT / "model" / "interventions", *REGISTRY.provides.library)
    for name, kind in INTERVENTION_KINDS.items():
        assert kind.name == name and kind.__module__.rsplit(".", 1)[-1] in MODULES


def test_every_strategy_module_is_registered_once_and_the_decoding_page_reads_the_registry():
    from model.decoding import STRATEGIES
    from model.decoding.strategies import MODULES, REGISTRY
    from ui.views.decoding_strategy import MENU, VIEWS

    assert len(MODULES) == len(set(MODULES)) == len(STRATEGIES)
    assert set(MODULES) == modules_defining(ROOT / "model" / "decoding", *REGISTRY.provides.library)
    assert MENU == {m.LINK: m for m in STRATEGIES.values() if m.LINK}
    assert {"greedy", "beam", "sample"} <= set(MENU)  # the links written before the registry still read the same
    # each strategy in the menu has its app half, the module it names (APP), with a view; every view is one's
    assert set(REGISTRY.apps()) == {m.NAME for m in MENU.values()}
    on_disk = {p.stem for p in (ROOT / "ui" / "views" / "decoding_views").glob("*.py") if p.stem != "__init__"}
    assert {f"ui.views.decoding_views.{stem}" for stem in on_disk} == {m.__name__ for m in VIEWS.values()}
    assert all(callable(VIEWS[link].view) for link in MENU)
    # nothing on the page or in ui/ names a strategy: the titles and settings are written once, in the strategy modules
    for path in [ROOT / "pages" / "decoding.py", *(ROOT / "ui").rglob("*.py")]:
        source = path.read_text()
        for module in STRATEGIES.values():
            assert f'N_("{module.TITLE}")' not in source, path
            assert f'"{module.NAME}"' not in source, (path, module.NAME)


def test_every_checkpoint_format_module_is_registered_once():
    from model.checkpoints.formats import FORMATS, REGISTRY
    from model.checkpoints.formats.registry import FORMAT_REGISTRY

    names = [fmt.NAME for fmt in REGISTRY]
    assert len(names) == len(set(names)) == len(FORMATS)
    found = modules_defining(ROOT / "model" / "checkpoints" / "formats", *FORMAT_REGISTRY.provides.library)
    assert {fmt.__name__.rsplit(".", 1)[-1] for fmt in REGISTRY} == found


def test_every_attribution_method_module_is_registered_once_and_the_page_reads_the_registry():
    from model.analysis.attribution import METHODS
    from model.analysis.attribution_methods.registry import METHODS as REGISTRY
    from model.analysis.attribution_methods.registry import MODULES
    from model.analysis.attribution_methods.registry import REGISTRY as METHOD_REGISTRY

    assert len(MODULES) == len(set(MODULES)) == len(REGISTRY) and tuple(REGISTRY) == METHODS
    found = modules_defining(ROOT / "model" / "analysis" / "attribution_methods", *METHOD_REGISTRY.provides.library)
    assert set(MODULES) == found
    for name, module in REGISTRY.items():
        assert module.NAME == name and module.__name__.rsplit(".", 1)[-1] in MODULES
    # titles, explanations and setting names are written once, in the method modules: not in the page or ui/
    for path in [ROOT / "pages" / "attribution.py", *(ROOT / "ui").rglob("*.py")]:
        source = path.read_text()
        for module in REGISTRY.values():
            assert f'N_("{module.TITLE}")' not in source, path
            assert f'"{module.NAME}"' not in source, (path, module.NAME)


def test_every_positional_kind_module_is_registered_once_with_its_app_half():
    from model.network.config import POSITIONAL_KINDS
    from model.network.position_kinds.registry import MODULES, REGISTRY, kinds
    from ui.views import positional_views

    assert len(MODULES) == len(set(MODULES)) == len(kinds()) and tuple(kinds()) == POSITIONAL_KINDS == MODULES
    found = modules_defining(ROOT / "model" / "network" / "position_kinds", *REGISTRY.provides.library)
    assert set(MODULES) == found
    app = {p.stem for p in (ROOT / "ui" / "views" / "positional_views").glob("*.py") if p.stem != "__init__"}
    assert {f"ui.views.positional_views.{stem}" for stem in app} == {
        m.__name__ for m in positional_views.MODULES.values()
    }
    assert tuple(positional_views.MODULES) == MODULES  # each kind's app half, the module its APP names
    for name in MODULES:
        assert callable(positional_views.of(name).mine) and callable(positional_views.of(name).similarity)
    # the pages name no kind: their titles, descriptions and views come from the registry
    for page in ("positional.py", "model.py", "inside.py"):
        source = (ROOT / "pages" / page).read_text()
        for name, k in kinds().items():
            assert f'"{name}"' not in source, (page, name)
            assert f'N_("{k.TITLE}")' not in source and f'N_("{k.DESCRIPTION}")' not in source, (page, name)


@pytest.mark.parametrize("name", POSITIONAL_KINDS)
def test_each_positional_kind_builds_the_module_the_model_uses(name, char_tokenizer):
    """The factory is the kind's own make(): a model of each kind holds the module it returns, on both sides."""
    from model.network.position_kinds.registry import kind
    from tests.conftest import make_tiny

    model = make_tiny(char_tokenizer, positional=name)
    made = kind(name).make(model.config, True)
    assert type(model.src_pe) is type(made) and type(model.tgt_pe) is type(kind(name).make(model.config, False))


def test_the_positional_page_reads_and_writes_each_position_kind_in_its_own_url_form():
    from model.interventions import INTERVENTION_KINDS
    from ui.views import positional_interventions as page

    kinds = [k for k in INTERVENTION_KINDS.values() if k.slot == "positions"]
    assert set(page.KINDS) == {k.positional for k in kinds} and set(page.CHANGES) == {"none", *page.KINDS}
    declared = set(page.URL.keys)
    for k in kinds:  # every key a kind's link form uses is declared by the page (read, checked, reset with it)
        assert set(k.url_keys(page.PREFIX)) <= declared, k
        assert k.title and k.what  # its words on the page come from the kind
    source = (ROOT / "ui" / "views" / "positional_interventions.py").read_text()
    for k in kinds:
        assert f'N_("{k.title}")' not in source and f'"{k.positional}"' not in source, k.positional


@pytest.fixture
def scratch_package(tmp_path, monkeypatch):
    """A package of two entries written on the spot: `one` complete, `two` without its compute, `app_one` its
    app half with a view."""
    package = tmp_path / "scratch_point"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text('NAME = "one"\nAPP = "scratch_point.app_one"\ndef compute(): return 1\n')
    (package / "two.py").write_text('NAME = "two"\n')
    (package / "app_one.py").write_text("def view(): return 'one'\n")
    (package / "twin.py").write_text('NAME = "one"\ndef compute(): return 2\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "scratch_point"
    for name in [m for m in sys.modules if m.startswith("scratch_point")]:
        del sys.modules[name]


def test_the_registry_helper_loads_on_first_use_checks_what_entries_provide_and_finds_the_app_half(scratch_package):
    from model.registry import Provides, Registry

    registry = Registry(scratch_package, ("one",), Provides(("NAME", "compute"), app=("view",)))
    assert f"{scratch_package}.one" not in sys.modules and len(registry) == 1  # nothing imported yet
    assert list(registry) == ["one"] and registry.lookup("one").compute() == 1
    assert registry.app("one").view() == "one" and list(registry.apps()) == ["one"]
    with pytest.raises(TypeError, match="two lacks compute"):
        dict(Registry(scratch_package, ("one", "two"), Provides(("NAME", "compute"))))
    with pytest.raises(TypeError, match="app_one .* lacks draw"):
        Registry(scratch_package, ("one",), Provides(("NAME",), app=("draw",))).app("one")
    with pytest.raises(ValueError, match="both named 'one'"):
        dict(Registry(scratch_package, ("one", "twin"), Provides(("NAME",))))
    without_app = Registry(scratch_package, ("twin",), Provides(("NAME",)))
    assert without_app.app("one") is None and without_app.apps() == {}


def test_two_registries_loaded_at_once_in_two_threads_do_not_wait_for_each_other(tmp_path, monkeypatch):
    """A cold server's page scripts run in threads at once, each importing a different part of the library: one
    thread loading a registry must not hold up another loading another (functools.cached_property in Python 3.11
    holds one lock for every instance while it computes: a deadlock against the import locks). Thread 1 loads A,
    whose module's import waits until B is loaded; B, loaded in thread 2, must not wait for A."""
    import threading

    from model.registry import Provides, Registry

    package = tmp_path / "parallel_point"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "events.py").write_text("import threading\nstarted, loaded = threading.Event(), threading.Event()\n")
    (package / "slow.py").write_text(
        'from parallel_point import events\nNAME = "slow"\nevents.started.set()\nevents.loaded.wait(20)\n'
    )
    (package / "quick.py").write_text('NAME = "quick"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        from parallel_point import events

        a = Registry("parallel_point", ("slow",), Provides(("NAME",)))
        b = Registry("parallel_point", ("quick",), Provides(("NAME",)))
        first = threading.Thread(target=lambda: list(a), daemon=True)
        second = threading.Thread(target=lambda: list(b), daemon=True)
        first.start()
        assert events.started.wait(20)  # thread 1 is inside A's load
        second.start()
        second.join(10)
        loaded_b_meanwhile = not second.is_alive()
        events.loaded.set()  # A's module finishes its import either way
        first.join(20)
        assert loaded_b_meanwhile and list(b) == ["quick"] and list(a) == ["slow"]
    finally:
        for name in [m for m in sys.modules if m.startswith("parallel_point")]:
            del sys.modules[name]
