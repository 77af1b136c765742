"""ui/serving/long_lived.py: after a run that imported modules or loaded a model, the run's garbage is collected and what
is left frozen (Streamlit's gc.collect(2) after every run then skips it); otherwise nothing is done."""

from __future__ import annotations

import sys
import types

import pytest

from ui.serving import long_lived


@pytest.fixture
def calls(monkeypatch):
    """The gc calls freeze_long_lived makes, recorded instead of done (the test process is not frozen)."""
    seen = []
    monkeypatch.setattr(long_lived.gc, "collect", lambda *a: seen.append("collect") or 0)
    monkeypatch.setattr(long_lived.gc, "freeze", lambda: seen.append("freeze"))
    monkeypatch.setattr(long_lived, "_frozen_at", len(sys.modules))
    monkeypatch.setattr(long_lived, "_loaded", False)
    return seen


def test_nothing_new_nothing_frozen(calls):
    assert long_lived.freeze_long_lived() is False
    assert calls == []


def test_a_new_module_is_frozen_after_the_garbage_is_collected(calls, monkeypatch):
    monkeypatch.setitem(sys.modules, "long_lived_probe", types.ModuleType("long_lived_probe"))
    assert long_lived.freeze_long_lived() is True
    assert calls == ["collect", "freeze"]  # the run's cycles go first: frozen, they would stay
    assert long_lived.freeze_long_lived() is False  # once


def test_a_loaded_model_is_frozen(calls):
    long_lived.model_loaded()
    assert long_lived.freeze_long_lived() is True and calls == ["collect", "freeze"]
    assert long_lived.freeze_long_lived() is False


def test_the_server_freezes_at_the_end_of_a_run_and_apptest_never(calls, monkeypatch):
    from ui.serving import threads

    long_lived.model_loaded()
    monkeypatch.setattr(threads, "_started", False)  # AppTest (start_server_once does nothing there)
    threads.end_of_run()
    assert calls == []
    monkeypatch.setattr(threads, "_started", True)  # a served process
    monkeypatch.setenv(threads.GC_FREEZE_ENV, "0")  # the operator's (or a benchmark's) baseline: nothing frozen
    threads.end_of_run()
    assert calls == []
    monkeypatch.delenv(threads.GC_FREEZE_ENV)
    threads.end_of_run()
    assert calls == ["collect", "freeze"]


def test_every_run_of_the_app_ends_with_end_of_run(monkeypatch):
    """ui/shell/run_app.py calls end_of_run once per run, also for a run that stops early."""
    from harness.apptest import open_page
    from ui.shell import run_app

    ended = []
    monkeypatch.setattr(run_app, "end_of_run", lambda: ended.append(1))
    at = open_page("attention", model="demo:reverse", text="stressed")
    assert not at.exception and ended == [1]
    at = open_page("attention", model="demo:reverse", text="123")  # none of the demo's symbols: stops early
    assert at.error and ended == [1, 1]
