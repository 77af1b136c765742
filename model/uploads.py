"""Unpacking an uploaded .zip checkpoint safely: every limit is checked from the archive's directory first.

    extract_zip(data, name, folder) -> folder     (CheckpointError with a clear message otherwise)

Checked before anything is unpacked: at most MAX_MEMBERS files, a total declared size of at most
MAX_TOTAL_BYTES, no member that expands more than MAX_RATIO times (beyond a small size), only stored or
deflated members, no encrypted member. While unpacking, each member is streamed to disk and cut at its
declared size (zipfile does that), and a bad CRC becomes a CheckpointError. Members are flattened into
`folder` (their folder names dropped), so nothing is written outside it.
"""

from __future__ import annotations

import io
import shutil
import zipfile
import zlib
from pathlib import Path

from .checkpoint import CheckpointError

MAX_MEMBERS = 64
MAX_TOTAL_BYTES = 2**30  # a base-size checkpoint in float32 is about 250 MB
MAX_RATIO = 100  # a deflated float tensor shrinks little; text may shrink 10x; a bomb shrinks 1000x
RATIO_FROM_BYTES = 2**20  # members smaller than this may have any ratio
METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}


def check_archive(archive: zipfile.ZipFile, name: str) -> list[zipfile.ZipInfo]:
    """The members to unpack (files only), after every limit was checked on the archive's directory."""
    members = [m for m in archive.infolist() if not m.is_dir() and Path(m.filename).name]
    if len(members) > MAX_MEMBERS:
        raise CheckpointError(f"{name} holds {len(members)} files; a checkpoint holds at most {MAX_MEMBERS}")
    total = sum(m.file_size for m in members)
    if total > MAX_TOTAL_BYTES:
        raise CheckpointError(f"{name} would unpack to {total / 2**30:.1f} GB; the limit is {MAX_TOTAL_BYTES / 2**30:.0f} GB")
    for m in members:
        leaf = Path(m.filename).name
        if m.flag_bits & 0x1:
            raise CheckpointError(f"{leaf} in {name} is encrypted; upload an archive without a password")
        if m.compress_type not in METHODS:
            raise CheckpointError(f"{leaf} in {name} is compressed with a method this server does not read "
                                  f"(zip method {m.compress_type}); use {' or '.join(METHODS.values())}")
        if m.file_size > RATIO_FROM_BYTES and m.file_size > MAX_RATIO * max(m.compress_size, 1):
            raise CheckpointError(f"{leaf} in {name} expands {m.file_size // max(m.compress_size, 1)} times; "
                                  f"the limit is {MAX_RATIO} times")
    leaves = [Path(m.filename).name for m in members]
    twice = sorted({leaf for leaf in leaves if leaves.count(leaf) > 1})
    if twice:
        raise CheckpointError(f"{name} holds more than one {', '.join(twice[:3])}; zip one checkpoint folder")
    return members


def extract_zip(data: bytes, name: str, folder: Path) -> Path:
    """Unpack a zip upload (bytes) flat into `folder` after check_archive; returns `folder`."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as err:
        raise CheckpointError(f"{name} is not a readable .zip file ({err})") from err
    with archive:
        for member in check_archive(archive, name):
            leaf = Path(member.filename).name
            try:
                with archive.open(member) as source, open(folder / leaf, "wb") as target:
                    shutil.copyfileobj(source, target, 2**20)
            except zipfile.BadZipFile as err:  # a bad CRC, a damaged header
                raise CheckpointError(f"{leaf} in {name} is damaged ({err})") from err
            except (NotImplementedError, RuntimeError, OSError, EOFError, ValueError, zlib.error) as err:
                raise CheckpointError(f"{leaf} in {name} could not be unpacked ({type(err).__name__})") from err
    return folder
