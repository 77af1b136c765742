"""Unpacking an uploaded .zip of a checkpoint folder, with every limit checked before anything is written.

    safe_extract(data: bytes, dest: str | Path, limits: ArchiveLimits = ArchiveLimits(), name: str = "the .zip") -> Path

The archive's directory is read first and refused as a whole (CheckpointError) for: more than
max_members files; a total uncompressed size above max_total_bytes or one file above max_member_bytes;
a compression ratio above max_ratio (a zip bomb), or above weights_max_ratio for a weights file (tensors
hardly compress); a config, vocabulary or tokenizer file above text_max_bytes (what its reader accepts); a
method other than stored or deflate; an encrypted member; a link. Files of no kind a checkpoint reader opens
(README.md, other frameworks' weights) are left packed (member_kind). Members are written flattened (only their file name, so nothing lands outside `dest`);
two members with the same name are refused. While unpacking, the bytes written are counted against the
sizes the directory declared and each CRC is checked; on any error the files written so far are removed.
Messages name the archive (`name`: what the person uploaded), the member's file name and the limit, never
the archive's contents. The app's uploads (pages/common.py) go through here.
"""

from __future__ import annotations

import io
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from i18n import M_

from .errors import CheckpointError
from .safe_io import JSON_MAX_BYTES, size_text

METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
CHUNK = 2**20


# What a checkpoint folder holds, by file kind (unpacked size bounded by what a checkpoint needs).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".pkl")  # tensors: they hardly compress
TEXT_SUFFIXES = (".json", ".txt", ".model", ".spm", ".vocab")  # configs, vocabularies, tokenizer models
# Anything else (README.md, .gitattributes, flax_model.msgpack, tf_model.h5 ...) is left packed: no reader uses it.


def member_kind(leaf: str) -> str | None:
    """ "weights", "text", or None for a file no checkpoint reader opens (it is not unpacked)."""
    lower = leaf.lower()
    if lower.endswith(WEIGHT_SUFFIXES):
        return "weights"
    if lower.endswith(TEXT_SUFFIXES):
        return "text"
    return None


@dataclass(frozen=True)
class ArchiveLimits:
    max_members: int = 64  # a checkpoint folder holds 3-10 files
    max_total_bytes: int = 2 * 2**30  # everything unpacked
    max_member_bytes: int = 2 * 2**30
    max_ratio: float = 200.0  # uncompressed / compressed, for members above ratio_floor_bytes
    ratio_floor_bytes: int = 2**20  # small files (JSON) may compress well without being bombs
    weights_max_ratio: float = 20.0  # float tensors compress 1.1-2x; zeros padded to gigabytes compress 1000x
    text_max_bytes: int = JSON_MAX_BYTES  # a config, vocabulary or tokenizer model: what the readers accept


def _method_name(method: int) -> str:
    known = {
        zipfile.ZIP_BZIP2: "bzip2",
        zipfile.ZIP_LZMA: "lzma",
        93: "zstandard",
        99: "AES encryption",
        9: "deflate64",
    }
    return known.get(method, f"method {method}")


def _member(leaf: str, name: str, problem):
    """ "LEAF in NAME PROBLEM" as one Message (PROBLEM: a Message)."""
    return M_("{leaf} in {name} {problem}", leaf=leaf, name=name, problem=problem)


def check_archive(archive: zipfile.ZipFile, limits: ArchiveLimits, name: str = "the .zip") -> list[zipfile.ZipInfo]:
    """The file members to unpack, after checking the whole directory against `limits`."""
    members = [m for m in archive.infolist() if not m.is_dir()]
    if not members:
        raise CheckpointError(M_("{name} holds no files", name=name))
    if len(members) > limits.max_members:
        raise CheckpointError(
            M_(
                "{name} holds {n} files; a checkpoint holds at most {max}",
                name=name,
                n=len(members),
                max=limits.max_members,
            )
        )
    total = 0
    seen: set[str] = set()
    kept = []
    for m in members:
        leaf = PurePosixPath(m.filename.replace("\\", "/")).name
        if m.flag_bits & 0x1:
            raise CheckpointError(_member(leaf, name, M_("is encrypted; upload an archive without a password")))
        if m.compress_type not in METHODS:
            raise CheckpointError(
                _member(
                    leaf,
                    name,
                    M_(
                        "is compressed with {method}, which this server does not read; use stored or deflate",
                        method=_method_name(m.compress_type),
                    ),
                )
            )
        if stat.S_ISLNK(m.external_attr >> 16):
            raise CheckpointError(_member(leaf, name, M_("is a link; only plain files are unpacked")))
        if not leaf or leaf in (".", ".."):
            raise CheckpointError(M_("{name} has a member without a file name", name=name))
        if leaf in seen:
            raise CheckpointError(
                M_(
                    "{name} holds more than one {leaf} (folders are flattened): zip one checkpoint folder",
                    name=name,
                    leaf=leaf,
                )
            )
        seen.add(leaf)
        if m.file_size > limits.max_member_bytes:
            raise CheckpointError(
                _member(
                    leaf,
                    name,
                    M_(
                        "unpacks to {size}, above the limit of {limit}",
                        size=size_text(m.file_size),
                        limit=size_text(limits.max_member_bytes),
                    ),
                )
            )
        kind = member_kind(leaf)
        if kind is None:
            continue  # no reader opens it: left packed, counted nowhere
        if kind == "text" and m.file_size > limits.text_max_bytes:
            raise CheckpointError(
                _member(
                    leaf,
                    name,
                    M_(
                        "unpacks to {size}, above the limit of {limit} for this kind of file",
                        size=size_text(m.file_size),
                        limit=size_text(limits.text_max_bytes),
                    ),
                )
            )
        ratio_limit = limits.weights_max_ratio if kind == "weights" else limits.max_ratio
        if m.file_size > limits.ratio_floor_bytes and m.file_size > ratio_limit * max(m.compress_size, 1):
            raise CheckpointError(
                _member(
                    leaf,
                    name,
                    M_(
                        "expands {ratio} times, above the limit of {limit} (a checkpoint's weights hardly compress)",
                        ratio=f"{m.file_size / max(m.compress_size, 1):.0f}",
                        limit=f"{ratio_limit:.0f}",
                    ),
                )
            )
        total += m.file_size
        kept.append(m)
    if total > limits.max_total_bytes:
        raise CheckpointError(
            M_(
                "{name} would unpack to {size}, above the limit of {limit}",
                name=name,
                size=size_text(total),
                limit=size_text(limits.max_total_bytes),
            )
        )
    if not kept:
        raise CheckpointError(M_("{name} holds no file of a checkpoint (weights, config or vocabulary)", name=name))
    return kept


def unpacked_size(data: bytes, limits: ArchiveLimits = ArchiveLimits(), name: str = "the .zip") -> int:
    """The bytes safe_extract would write for this .zip, after check_archive (nothing is written)."""
    with _open(data, name) as archive:
        return sum(m.file_size for m in check_archive(archive, limits, name))


def _open(data: bytes, name: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError):
        raise CheckpointError(M_("{name} is not a readable .zip file", name=name)) from None


def safe_extract(
    data: bytes, dest: str | Path, limits: ArchiveLimits = ArchiveLimits(), name: str = "the .zip"
) -> Path:
    """Unpack the .zip `data` into the existing folder `dest` (flattened), after check_archive; returns dest."""
    dest = Path(dest)
    archive = _open(data, name)
    written: list[Path] = []
    with archive:
        members = check_archive(archive, limits, name)
        try:
            for m in members:
                leaf = PurePosixPath(m.filename.replace("\\", "/")).name
                target = dest / leaf
                count = 0
                with archive.open(m) as src, open(target, "xb") as out:
                    written.append(target)
                    while chunk := src.read(CHUNK):
                        count += len(chunk)
                        if count > m.file_size:
                            raise CheckpointError(_member(leaf, name, M_("is larger than its directory says")))
                        out.write(chunk)
                if count != m.file_size:
                    raise CheckpointError(_member(leaf, name, M_("is shorter than its directory says")))
        except CheckpointError:
            _remove(written)
            raise
        except (
            zipfile.BadZipFile,
            zlib.error,
            EOFError,
            OSError,
            ValueError,
            NotImplementedError,
            RuntimeError,
        ) as err:
            _remove(written)
            what = (
                M_("fails its CRC check; the upload was not unpacked")
                if "CRC" in str(err)
                else M_("is damaged; the upload was not unpacked")
            )
            raise CheckpointError(_member(leaf, name, what)) from None
    return dest


def _remove(paths: list[Path]) -> None:
    for p in paths:
        p.unlink(missing_ok=True)
