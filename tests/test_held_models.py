"""ui/serving/held_models.py: a visitor's folder or upload is loaded once while sessions show it and released, with the
results cached under its model key, when no connected session does (issue 30: the server's memory comes back)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from ui.serving import held_models
from ui.serving.bounded_cache import BoundedCache


class Model:
    """Stands for a loaded (model, tokenizer); weakly referable, so the test sees when it is freed."""


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(held_models, "_HELD", {})
    monkeypatch.setattr(held_models, "_SLOTS", {})
    monkeypatch.setattr(held_models, "_LOADING", {})
    monkeypatch.setattr(held_models, "_start_sweeper", lambda: None)  # the test sweeps by hand
    monkeypatch.setattr(held_models, "_give_back_memory", gc.collect)  # the test process keeps its frozen objects
    connected: set[str] = set()
    monkeypatch.setattr(held_models, "_connected", lambda: connected.__contains__)
    return connected


def as_session(monkeypatch, session: str) -> None:
    monkeypatch.setattr(held_models, "_session_id", lambda: session)


def test_shared_while_shown_released_with_its_results_when_nobody_is_connected(fresh, monkeypatch):
    loads = []

    def load():
        loads.append(1)
        return Model()

    results = BoundedCache("results", max_entries=8, max_bytes=2**20)
    results.put(("path:/srv/wide", "abc", None), np.zeros(10))
    results.put((("path:/srv/wide", "x"), "nested"), np.zeros(10))
    results.put(("demo:reverse", "abc", None), np.zeros(10))
    fresh.update({"s1", "s2"})
    as_session(monkeypatch, "s1")
    first = held_models.hold("k", "path:/srv/wide", "model", load)
    as_session(monkeypatch, "s2")
    assert held_models.hold("k", "path:/srv/wide", "model", load) is first
    assert len(loads) == 1
    alive = weakref.ref(first)
    del first
    fresh.discard("s1")
    assert held_models.sweep() == []  # s2 still shows it
    fresh.discard("s2")
    assert held_models.sweep() == ["path:/srv/wide"]
    assert held_models.held_count() == 0
    gc.collect()
    assert alive() is None
    assert ("demo:reverse", "abc", None) in results and len(results) == 1  # the demo's result stays
    assert results.bytes == 80


def test_choosing_another_model_lets_go_of_the_one_shown_before(fresh, monkeypatch):
    fresh.add("s1")
    as_session(monkeypatch, "s1")
    held_models.hold("a", "path:a", "model", Model)
    held_models.hold("b", "upload:b", "compare_model", Model)  # another picker of the same session
    held_models.hold("c", "path:c", "model", Model)  # the sidebar now shows c: a is nobody's
    assert set(held_models._HELD) == {"b", "c"}
    held_models.let_go("compare_model")  # the second picker chose a demo
    assert set(held_models._HELD) == {"c"}


def test_outside_a_served_process_the_most_recent_few_are_kept(fresh, monkeypatch):
    monkeypatch.setattr(held_models, "_connected", lambda: None)  # AppTest: no runtime, no connections to ask
    as_session(monkeypatch, "s1")
    held_models.hold("a", "path:a", "model", Model)
    assert held_models.sweep() == [] and held_models.held_count() == 1
    for k in range(held_models.UNWATCHED + 2):
        held_models.hold(f"k{k}", f"path:{k}", "model", Model)
    held_models.hold("k2", "path:2", "model", Model)  # shown again: the most recent
    assert list(held_models._HELD) == [f"k{k}" for k in (3, 4, 5, 6, 7, 8, 9, 2)]


def test_a_released_model_is_freed_though_the_pages_globals_outlive_the_run(tmp_path, char_tokenizer, monkeypatch):
    """A page's globals (`session = require_session()`, kept alive by its widgets' functions in the session's state)
    and the session's state do not hold the model: once no connected session shows the folder, it is freed."""
    from model import save_checkpoint
    from tests.apptest_helpers import open_page
    from tests.conftest import make_tiny

    folder = save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "visitor")
    monkeypatch.setattr(held_models, "_HELD", {})
    monkeypatch.setattr(held_models, "_SLOTS", {})
    monkeypatch.setattr(held_models, "_give_back_memory", gc.collect)
    at = open_page("attention", f"path:{folder}", text="abc")
    assert not at.exception and at.get("plotly_chart")  # the page drew with the held model
    ((model, tokenizer),) = [loaded for loaded, _key in held_models._HELD.values()]
    alive = weakref.ref(model), weakref.ref(tokenizer)
    del model, tokenizer
    assert held_models.sweep(connected=lambda session: False) == [f"path:{folder}"]  # the tab was closed
    gc.collect()
    assert [r() for r in alive] == [None, None]
