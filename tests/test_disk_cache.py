"""Issue 30, part 4: results that depend only on a checkpoint are computed once per machine, kept on disk under
the checkpoint's content digest."""

from __future__ import annotations

import shutil

import pytest

from ui.serving import disk_cache


def test_a_result_is_computed_once_and_found_by_content(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV_DIR, str(tmp_path / "cache"))
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights-1")
    (folder / "config.json").write_text("{}")
    calls = []

    def compute():
        calls.append(1)
        return {"exact_match": 0.5, "n": len(calls)}

    first = disk_cache.on_disk(folder, "exact_match", (200,), compute)
    assert disk_cache.stored(folder, "exact_match", (200,))
    again = disk_cache.on_disk(folder, "exact_match", (200,), compute)
    assert first == again == {"exact_match": 0.5, "n": 1} and len(calls) == 1
    assert not disk_cache.stored(folder, "exact_match", (100,))  # other parameters: another result

    copy = tmp_path / "elsewhere"
    shutil.copytree(folder, copy)  # the same bytes in another folder (another process, another machine)
    assert disk_cache.on_disk(copy, "exact_match", (200,), compute) == first and len(calls) == 1

    (folder / "model.safetensors").write_bytes(b"weights-2")  # changed in place: a new digest, computed again
    assert disk_cache.on_disk(folder, "exact_match", (200,), compute)["n"] == 2


def test_the_cache_folder_is_private(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV_DIR, str(tmp_path / "private"))
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "a").write_text("x")
    disk_cache.on_disk(folder, "v", (), lambda: 1)
    assert (tmp_path / "private").stat().st_mode & 0o077 == 0


def test_only_shipped_demos_are_kept(monkeypatch):
    calls = []
    value = disk_cache.checkpoint_cached("upload:abc", "v", (), lambda: calls.append(1) or 7)
    assert value == 7 and disk_cache.demo_folder("upload:abc") is None and disk_cache.demo_folder("path:/x") is None
    assert disk_cache.demo_folder("demo:reverse|heads=2") is None  # a model with heads changed is not the demo


def test_a_shipped_result_is_read_only_for_the_files_it_was_computed_from(tmp_path):
    import json

    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights")
    key = disk_cache.shipped_key("exact_match", (200,))
    (folder / disk_cache.SHIPPED).write_text(json.dumps({
        "version": disk_cache.VERSION, "digest": disk_cache.folder_digest(folder), "results": {key: {"v": 1}},
    }))  # fmt: skip
    assert disk_cache.shipped(folder, "exact_match", (200,)) == {"v": 1}
    assert disk_cache.shipped(folder, "exact_match", (100,)) is None
    (folder / "model.safetensors").write_bytes(b"retrained")
    assert disk_cache.shipped(folder, "exact_match", (200,)) is None


def test_every_shipped_demo_ships_its_exact_match():
    """scripts/precompute.py ran on the demos as they are: each demo with a task reads its six-kinds score at once."""
    from model.checkpoints.demos import list_demos
    from tasks.intervened import match_from_json

    # the encoder-decoder demos: the six kinds side by side and the interventions' verdicts compare those
    demos = [
        d for d in list_demos() if d.card.get("task") and d.card.get("shape", "encoder-decoder") == "encoder-decoder"
    ]
    assert demos
    for demo in demos:
        value = disk_cache.shipped(demo.path, "exact_match", (200,))
        assert value is not None, f"{demo.name}: run scripts/precompute.py"
        result = match_from_json(value)
        assert result.examples == 200 and 0.0 <= result.exact_match <= 1.0


def test_every_shipped_demo_ships_its_verdicts_of_changed_positions(monkeypatch):
    """ "Positions at inference" opens on each kind's default change: its verdict (exact match on 200 fresh examples
    with the change) is read from the demo's results.json, never computed for a visitor; a shift past max_len for
    the longer examples is the one case left to the page's own message."""
    from model.checkpoints.demos import list_demos
    from tasks.intervened import match_params
    from ui.serving import caches, workers
    from ui.views.positional_interventions import default_changes

    monkeypatch.setattr(workers, "run_limited", lambda *a, **k: pytest.fail("computed for a visitor"))
    demos = [
        d for d in list_demos() if d.card.get("task") and d.card.get("shape", "encoder-decoder") == "encoder-decoder"
    ]
    reverse = next(d for d in demos if d.name == "reverse")
    for demo in demos:
        for changes in default_changes():
            if disk_cache.shipped(demo.path, "exact_match", match_params(200, changes)) is None:
                assert changes.describe().get("positional") == "shifted", (demo.name, changes.describe())
    caches.MATCHES.clear()
    for changes in default_changes():
        result = caches.demo_exact_match("demo:reverse", None, None, reverse.card, changes, 200)
        assert result.examples == 200 and result.interventions == changes.describe()
