"""Issue 22: uploads within a disk budget, names never used as paths, refused uploads deleted at once, no private
path in any message (pages/uploads.py)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from model import CheckpointError, load_checkpoint, save_checkpoint
from tests.apptest_helpers import shown
from tests.conftest import make_tiny
from tests.i18n_helpers import matching, msgid
from ui.serving import uploads
from ui.serving.uploads import RefusedUpload, UploadStore, scrub, stored_name
from ui.shell.safe_text import md

TAKES = msgid("{name} would take {size} on this server, which keeps at most {limit} of uploads")


@pytest.fixture
def store(tmp_path, monkeypatch):
    s = UploadStore(budget=3 * 2**20, max_kept=8, root=tmp_path / "private")
    (tmp_path / "private").mkdir()
    monkeypatch.setattr(uploads, "STORE", s)
    return s


def zipped(folder) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p in folder.iterdir():
            z.write(p, f"ckpt/{p.name}")
    return buf.getvalue()


@pytest.mark.parametrize(
    "name, stored",
    [("..", "upload"), (".", "upload"), ("x" * 300 + ".pt", "upload.pt"), ("a\x00b.PTH", "upload.pth"),
     ("../../etc/passwd", "upload"), ("model.safetensors", "upload.safetensors"), ("evil.sh", "upload")],
)  # fmt: skip
def test_upload_names_are_never_paths(store, name, stored):
    assert stored_name(name) == stored
    path = store.path("d" * 16, name, b"not a checkpoint")
    assert path == store.root / ("d" * 16) / stored and path.read_bytes() == b"not a checkpoint"


def test_a_refused_upload_names_the_upload_and_never_the_servers_copy(store):
    name = "![w](http://127.0.0.1:9/warn.png)" + "y" * 300 + ".pt"
    path = store.path("e" * 16, name, b"\x80\x02not really a pickle")
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(path)
    shown = scrub(md(err.value.args[0]), str(path), name)
    assert str(store.root) not in shown and "e" * 16 not in shown and "upload.pt" not in shown
    assert "yyyy" in shown and "](http" not in shown  # the visitor's name, escaped


def test_the_disk_budget_holds_and_the_oldest_upload_goes_first(store):
    a = store.path("a" * 16, "a.pt", bytes(2**20))
    b = store.path("b" * 16, "b.pt", bytes(2**20))
    c = store.path("c" * 16, "c.pt", bytes(2**20 + 10))  # a + b + c > 3 MB: a, the least recently used, goes
    assert not a.exists() and b.exists() and c.exists()
    assert store.usage() <= store.budget
    with pytest.raises(CheckpointError, match=matching(TAKES, size="4.0 MB", limit="3.0 MB")):
        store.path("f" * 16, "big.pt", bytes(4 * 2**20))
    assert not (store.root / ("f" * 16)).exists() and b.exists()  # refused before a byte was written


def test_a_zip_is_measured_before_it_is_unpacked(store, tmp_path, char_tokenizer, monkeypatch):
    folder = save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "ckpt")
    small = UploadStore(budget=20_000, root=store.root)
    with pytest.raises(CheckpointError, match=matching(TAKES, name="ok.zip", limit="19.5 KB")):
        small.path("z" * 16, "ok.zip", zipped(folder))
    assert not (store.root / ("z" * 16)).exists()
    path = store.path("z" * 16, "ok.zip", zipped(folder))
    assert load_checkpoint(path)[0].config == load_checkpoint(folder)[0].config


def test_a_refused_upload_is_deleted_at_once_and_answered_again_without_unpacking(store, monkeypatch):
    before = store.usage()
    path = store.path("r" * 16, "notes.pt", bytes(2**20))
    assert store.usage() == before + 2**20
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(path)
    store.refuse("r" * 16, err.value)
    assert store.usage() == before and not path.parent.exists()  # disk back where it started
    monkeypatch.setattr(uploads, "_safe_extract", lambda *a, **k: pytest.fail("unpacked again"))
    with pytest.raises(RefusedUpload) as again:
        store.path("r" * 16, "notes.pt", bytes(2**20))
    assert str(again.value) == str(err.value) and again.value.local == str(path)
    store.refuse("s" * 16, err.value, remember=False)  # a refusal that depended on other choices: not kept
    assert "s" * 16 not in store._refused


@pytest.mark.parametrize(
    "config",
    [json.dumps({"d_model": 8}).encode("utf-16"), ("[" * 200 + "]" * 200).encode()],
    ids=["utf-16", "too deep"],
)
def test_a_bad_config_in_a_zip_names_the_upload_not_the_private_folder(store, tmp_path, char_tokenizer, config):
    folder = save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "ckpt")
    (folder / "config.json").write_bytes(config)
    path = store.path("c" * 16, "my model.zip", zipped(folder))
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(path)
    text = shown(scrub(md(err.value.args[0]), str(path), "my model.zip"))  # as the reader sees it
    assert text.startswith("my model.zip/config.json ")
    assert str(store.root) not in text and "c" * 16 not in text and str(tmp_path) not in text
