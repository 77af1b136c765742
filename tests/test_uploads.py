"""Uploaded .zip checkpoints: every hostile archive is refused with a clear message, before or while unpacking."""

from __future__ import annotations

import zipfile

import pytest

from model import CheckpointError, load_checkpoint
from model.uploads import MAX_MEMBERS, extract_zip
from tests.browser_helpers import letters_checkpoint
from tests.zip_helpers import (bad_crc_zip, encrypted_zip, huge_declared_zip, many_members_zip, plain_zip,
                               ratio_bomb_zip, unknown_method_zip)

HOSTILE = {
    "crc.zip": (bad_crc_zip, "config.json in crc.zip is damaged (Bad CRC-32"),
    "locked.zip": (encrypted_zip, "config.json in locked.zip is encrypted"),
    "method.zip": (unknown_method_zip, "compressed with a method this server does not read (zip method 99)"),
    "bomb.zip": (ratio_bomb_zip, "model.safetensors in bomb.zip expands"),
    "huge.zip": (huge_declared_zip, "huge.zip would unpack to 3.0 GB; the limit is 1 GB"),
    "many.zip": (many_members_zip, f"many.zip holds 500 files; a checkpoint holds at most {MAX_MEMBERS}"),
    "junk.zip": (lambda: b"PK\x03\x04" + bytes(100), "junk.zip is not a readable .zip file"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_archives_are_refused_with_a_message(name, tmp_path):
    make, expected = HOSTILE[name]
    with pytest.raises(CheckpointError) as err:
        extract_zip(make(), name, tmp_path)
    assert expected in str(err.value)
    if name in ("locked.zip", "method.zip", "bomb.zip", "huge.zip", "many.zip"):  # refused before unpacking
        assert list(tmp_path.iterdir()) == []


def test_a_bomb_is_refused_from_its_directory_without_inflating(tmp_path, monkeypatch):
    bomb = ratio_bomb_zip()

    def no_inflating(*args, **kwargs):
        raise AssertionError("a member was opened")

    monkeypatch.setattr(zipfile.ZipFile, "open", no_inflating)
    with pytest.raises(CheckpointError, match="expands"):
        extract_zip(bomb, "bomb.zip", tmp_path)


def test_a_zipped_checkpoint_folder_unpacks_flat_and_loads(tmp_path):
    folder = letters_checkpoint(tmp_path / "made")
    files = {f"letters/{p.name}": p.read_bytes() for p in folder.iterdir()}
    out = tmp_path / "out"
    out.mkdir()
    extract_zip(plain_zip(files, zipfile.ZIP_DEFLATED), "letters.zip", out)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in folder.iterdir())
    model, tokenizer = load_checkpoint(out)
    assert model.config.max_len == 12 and len(tokenizer.source) > 8


def test_names_that_climb_out_are_written_inside(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    extract_zip(plain_zip({"../../escape.json": b"{}", "/abs/config.json": b"{}"}), "climb.zip", out)
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "escape.json"]
    assert not (tmp_path / "escape.json").exists()


def test_two_members_with_one_name_are_refused(tmp_path):
    with pytest.raises(CheckpointError, match="more than one config.json"):
        extract_zip(plain_zip({"a/config.json": b"{}", "b/config.json": b"{}"}), "two.zip", tmp_path)
