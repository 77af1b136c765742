"""model.archive.safe_extract: a .zip upload is checked as a whole before anything is written."""

import io
import stat
import tempfile
import zipfile
from pathlib import Path

import pytest

from model import CheckpointError, load_checkpoint, save_checkpoint
from model.checkpoints.archive import ArchiveLimits, safe_extract, unpacked_size
from tests.conftest import make_tiny
from tests.zip_helpers import (
    bad_crc_zip,
    encrypted_zip,
    huge_declared_zip,
    many_members_zip,
    ratio_bomb_zip,
    unknown_method_zip,
)


def zip_bytes(files: dict, method=zipfile.ZIP_DEFLATED, tweak=None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = method
            if tweak:
                tweak(info)
            z.writestr(info, data)
    return buf.getvalue()


def test_a_zipped_checkpoint_folder_is_unpacked_flat_and_loads(tmp_path, char_tokenizer):
    folder = save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "ckpt")
    data = zip_bytes({f"ckpt/{p.name}": p.read_bytes() for p in folder.iterdir()})
    (tmp_path / "out").mkdir()
    out = safe_extract(data, tmp_path / "out")
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in folder.iterdir())
    model, _ = load_checkpoint(out)
    assert model.config == load_checkpoint(folder)[0].config


def refused(tmp_path, data: bytes, message: str, limits: ArchiveLimits | None = None) -> None:
    dest = Path(tempfile.mkdtemp(dir=tmp_path))
    with pytest.raises(CheckpointError, match=message):
        safe_extract(data, dest, limits or ArchiveLimits())
    assert list(dest.iterdir()) == []  # nothing written, or everything written removed


def test_a_zip_bomb_is_refused_before_unpacking(tmp_path):
    refused(
        tmp_path,
        zip_bytes({"model.safetensors": bytes(20 * 2**20)}),
        r"model\.safetensors in the \.zip expands \d+ times, above the limit of 20 ",
    )
    refused(tmp_path, zip_bytes({"config.json": bytes(20 * 2**20)}), r"config\.json .* above the limit of 200")


def pattern_bytes(n: int, period: int) -> bytes:
    """n bytes of a repeating random block: deflate finds the repeats only within its 32 KB window."""
    import random

    block = random.Random(period).randbytes(period)
    return (block * (n // period + 1))[:n]


def test_weights_that_expand_tenfold_more_than_tensors_do_are_refused(tmp_path):
    """Issue 22: a 23.5 MB zip whose one member expanded 130x (under the 200x rule) wrote 1.9 GB per upload.
    Tensors compress 1.1-2x: a weights file beyond 20x is refused from the directory, before anything is written."""
    data = zip_bytes({"model.safetensors": pattern_bytes(24 * 2**20, 16384)})  # about 134x, as found
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        ratio = z.infolist()[0].file_size / z.infolist()[0].compress_size
    assert 20 < ratio < 200  # the old rule let it through
    refused(tmp_path, data, r"model\.safetensors in the \.zip expands \d+ times, above the limit of 20 ")


def test_files_no_reader_opens_are_left_packed_and_text_files_are_bounded(tmp_path, char_tokenizer):
    folder = save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "ckpt")
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    data = zip_bytes({**files, "README.md": b"# hi", "flax_model.msgpack": bytes(2**20)})
    (tmp_path / "out").mkdir()
    out = safe_extract(data, tmp_path / "out")
    assert sorted(p.name for p in out.iterdir()) == sorted(files)
    assert unpacked_size(data) == sum(len(b) for b in files.values())
    small = ArchiveLimits(text_max_bytes=100)
    refused(tmp_path, zip_bytes({"vocab.json": b"[" + b'"a",' * 100 + b'"b"]'}), "above the limit of 100 bytes", small)
    refused(tmp_path, zip_bytes({"notes.md": b"x"}), "holds no file of a checkpoint")


def test_sizes_and_member_counts_are_bounded(tmp_path):
    files = {f"f{i}.json": b"{}" for i in range(65)}
    refused(tmp_path, zip_bytes(files), r"the \.zip holds 65 files; a checkpoint holds at most 64")
    big = {"a.bin": b"x" * 3000, "b.bin": b"y" * 3000}
    refused(
        tmp_path,
        zip_bytes(big, zipfile.ZIP_STORED),
        r"the \.zip would unpack to 5\.9 KB, above the limit of 5\.0 KB",
        ArchiveLimits(max_total_bytes=5 * 1024),
    )


@pytest.mark.parametrize("method, name", [(zipfile.ZIP_BZIP2, "bzip2"), (zipfile.ZIP_LZMA, "lzma")])
def test_unsupported_compression_is_named(tmp_path, method, name):
    refused(
        tmp_path,
        zip_bytes({"config.json": b"{}"}, method),
        rf"config\.json in the \.zip is compressed with {name}, which this server does not read; use stored or deflate",
    )


def test_an_encrypted_member_is_refused(tmp_path):
    """zipfile cannot write encrypted members: set the "encrypted" flag in both headers by hand."""
    data = bytearray(zip_bytes({"config.json": b"{}"}))
    for magic, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.index(magic) + flag_at
        data[at] |= 0x1
    refused(tmp_path, bytes(data), r"config\.json in the \.zip is encrypted")


def test_a_bad_crc_is_refused_and_nothing_is_left(tmp_path):
    payload = b"0123456789abcdef" * 64
    data = zip_bytes({"good.json": b"[1, 2]", "weights.bin": payload}, zipfile.ZIP_STORED)
    at = data.index(payload) + 100
    damaged = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
    refused(tmp_path, damaged, r"weights\.bin in the \.zip fails its CRC check; the upload was not unpacked")


def test_links_duplicates_and_non_zips_are_refused(tmp_path):
    def symlink(info):
        info.external_attr = (stat.S_IFLNK | 0o777) << 16

    refused(tmp_path, zip_bytes({"config.json": b"/etc/passwd"}, tweak=symlink), r"config\.json in the \.zip is a link")
    refused(
        tmp_path,
        zip_bytes({"a/config.json": b"{}", "b/config.json": b"{}"}),
        r"more than one config\.json \(folders are flattened\)",
    )
    refused(tmp_path, b"PK\x03\x04 not really a zip", r"the \.zip is not a readable \.zip file")
    dest = tmp_path / "flat"
    dest.mkdir()
    safe_extract(zip_bytes({"../../escape.json": b"{}"}), dest)
    assert [p.name for p in dest.iterdir()] == ["escape.json"] and not (tmp_path.parent / "escape.json").exists()


# Hostile archives as uploads name them: the archive's name in every message (the app passes the upload's name).
HOSTILE = {
    "crc.zip": (bad_crc_zip, "config.json in crc.zip fails its CRC check"),
    "locked.zip": (encrypted_zip, "config.json in locked.zip is encrypted"),
    "method.zip": (
        unknown_method_zip,
        "config.json in method.zip is compressed with AES encryption, which this server does not read",
    ),
    "bomb.zip": (ratio_bomb_zip, "model.safetensors in bomb.zip expands"),
    "huge.zip": (huge_declared_zip, "model.safetensors in huge.zip unpacks to 3.0 GB, above the limit of 2.0 GB"),
    "many.zip": (many_members_zip, "many.zip holds 500 files; a checkpoint holds at most 64"),
    "junk.zip": (lambda: b"PK\x03\x04" + bytes(100), "junk.zip is not a readable .zip file"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_uploads_are_refused_by_name_and_nothing_is_left(name, tmp_path):
    make, expected = HOSTILE[name]
    with pytest.raises(CheckpointError) as err:
        safe_extract(make(), tmp_path, name=name)
    assert expected in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_a_bomb_is_refused_from_its_directory_without_inflating(tmp_path, monkeypatch):
    bomb = ratio_bomb_zip()

    def no_inflating(*args, **kwargs):
        raise AssertionError("a member was opened")

    monkeypatch.setattr(zipfile.ZipFile, "open", no_inflating)
    with pytest.raises(CheckpointError, match="expands"):
        safe_extract(bomb, tmp_path, name="bomb.zip")
