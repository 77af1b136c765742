"""Reading files that a visitor may have pointed at or uploaded: regular files only, bounded in size,
JSON bounded in nesting depth.

- `regular_file(path)`: stat (never open) the path and refuse a FIFO, a device, a socket or anything
  under /proc, /sys or /dev at once: opening a FIFO for reading blocks, and /proc entries report size 0.
- `read_bytes(path, max_bytes)`: the contents of a regular file, refused before reading when larger.
  The file is opened non-blocking and checked again with fstat, so a path swapped for a FIFO between
  the two checks cannot hang the reader either.
- `read_json(path)` / `parse_json(text, origin)`: JSON with at most JSON_MAX_BYTES and JSON_MAX_DEPTH
  levels of nesting (the parser's own recursion guard and a walk of the result: a deeply nested file is a clear CheckpointError,
  never a RecursionError). Messages name the file and the limit, never the file's contents.
- Bounded by what a file may hold, before it is parsed: a file named in SMALL_JSON (config.json,
  generation_config.json, tokenizer_config.json, ...: a few KB) is read only up to SMALL_JSON_MAX_BYTES, and
  `check_shape` counts the values and the nesting of every JSON file from its bytes (bytes.count and one numpy
  pass, no Python object per value) before json.loads builds them: a config of 21 million `{}` is refused
  from its size, one of 300,000 within the size from its count.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np

from i18n import M_

from .errors import CheckpointError

JSON_MAX_BYTES = 64 * 2**20  # a 64k-token tokenizer.json is a few MB
JSON_MAX_DEPTH = 64  # this project's JSON files nest 4 levels; Hugging Face configs about 5
SMALL_JSON_MAX_BYTES = 2**20  # a Hugging Face config.json is 1-5 KB; tokenizer_config.json with a chat template ~50 KB
SMALL_JSON_MAX_VALUES = 65536  # Llama 3's tokenizer_config.json (256 added tokens, 7 fields each) holds ~3,000 values
SMALL_JSON = frozenset(
    ("config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json",
     "preprocessor_config.json", "adapter_config.json", "card.json")
)  # fmt: skip
INDEX_JSON_MAX_BYTES = 8 * 2**20  # model.safetensors.index.json: one line per tensor (MAX_TENSORS of them)
SPECIAL_ROOTS = ("/proc", "/sys", "/dev")


def _special_root(path: Path) -> bool:
    try:
        resolved = str(path.resolve())
    except (OSError, RuntimeError):
        return True
    return any(resolved == root or resolved.startswith(root + "/") for root in SPECIAL_ROOTS)


def size_text(n: float) -> str:
    """1536 -> "1.5 KB", 5e6 -> "4.8 MB": sizes in messages."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _UNREADABLE(path: Path):  # noqa: N802  (a message, named like one)
    return M_("{name} cannot be read (no such file, or no permission)", name=path.name)


def _NOT_REGULAR(path: Path):  # noqa: N802
    return M_(
        "{name} is not a regular file (a pipe, device or system entry); only plain files are read", name=path.name
    )


def regular_file(path: str | Path) -> os.stat_result:
    """stat() of a regular file (symlinks followed); CheckpointError for anything else, without opening it."""
    path = Path(path)
    try:
        info = os.stat(path)
    except OSError:
        raise CheckpointError(_UNREADABLE(path)) from None
    if not stat.S_ISREG(info.st_mode) or _special_root(path):
        raise CheckpointError(_NOT_REGULAR(path))
    return info


def read_bytes(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most max_bytes (refused before reading when larger)."""
    path = Path(path)
    info = regular_file(path)
    if info.st_size > max_bytes:
        raise CheckpointError(
            M_(
                "{name} is {size}, above the limit of {limit} for this kind of file",
                name=path.name,
                size=size_text(info.st_size),
                limit=size_text(max_bytes),
            )
        )
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        raise CheckpointError(_UNREADABLE(path)) from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CheckpointError(_NOT_REGULAR(path))
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise CheckpointError(
            M_("{name} grew above the limit of {limit} while being read", name=path.name, limit=size_text(max_bytes))
        )
    return data


def json_depth(obj: Any, limit: int) -> int:
    """Nesting depth of parsed JSON (a scalar is 0, [] is 1), walked without recursion, counting only past `limit`."""
    deepest = 0
    todo = [(obj, 1)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, (list, dict)):
            deepest = max(deepest, depth)
            if deepest > limit:
                break
            todo.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _too_deep(origin: str, max_depth: int):
    return M_(
        "{origin} nests deeper than {max} levels; this is not a file this app writes or reads",
        origin=origin,
        max=max_depth,
    )


def parse_json(text: str, origin: str, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """json.loads with the nesting depth checked first; CheckpointError naming `origin` when refused."""
    too_deep = CheckpointError(_too_deep(origin, max_depth))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise CheckpointError(
            M_(
                "{origin} is not valid JSON (line {line}, column {column}: {problem})",
                origin=origin,
                line=err.lineno,
                column=err.colno,
                problem=err.msg,
            )
        ) from None
    except RecursionError:  # the C parser stops itself near the interpreter's recursion limit
        raise too_deep from None
    if json_depth(data, max_depth) > max_depth:
        raise too_deep
    return data


def _structure(data: bytes, marks: bytes) -> np.ndarray:
    """The bytes of `marks` that lie outside JSON strings, in order: numpy passes over the bytes, no Python object
    per value. A quote is a string's end unless an odd run of backslashes comes right before it."""
    a = np.frombuffer(data, np.uint8)
    quotes = np.flatnonzero(a == 0x22)
    slashes = np.flatnonzero(a == 0x5C)
    if slashes.size:  # runs of consecutive backslashes; a quote right after a run of odd length is escaped
        breaks = np.flatnonzero(np.diff(slashes) != 1)
        starts, ends = slashes[np.r_[0, breaks + 1]], slashes[np.r_[breaks, slashes.size - 1]]
        quotes = quotes[~np.isin(quotes, ends[(ends - starts) % 2 == 0] + 1)]
    found = np.zeros(a.shape, bool)
    for mark in marks:
        found |= a == mark
    where = np.flatnonzero(found)
    del found
    return a[where[np.searchsorted(quotes, where) % 2 == 0]]  # an even number of quotes before: outside


def _shape(data: bytes) -> tuple[int, int]:
    """(values, deepest nesting) of JSON bytes, counted outside strings (_structure): one value per comma and per
    container, plus the root (an upper bound: exact when no container is empty)."""
    marks = _structure(data, b",[{]}")
    opens = (marks == 0x5B) | (marks == 0x7B)
    values = int(np.count_nonzero(marks == 0x2C) + np.count_nonzero(opens)) + 1
    steps = np.where(opens, 1, np.where(marks == 0x2C, 0, -1)).astype(np.int32)
    return values, int(steps.cumsum().max()) if steps.size else 0


def check_shape(data: bytes, origin: str, max_values: int | None, max_depth: int = JSON_MAX_DEPTH) -> int:
    """Refuse JSON bytes holding more than max_values values (None: any number) or nesting deeper than max_depth,
    counted from the bytes before anything is parsed; the count of values otherwise (an upper bound: exact when no
    container is empty)."""
    values, depth = _shape(data)
    if depth > max_depth:
        raise CheckpointError(_too_deep(origin, max_depth))
    if max_values is not None and values > max_values:
        raise CheckpointError(
            M_(
                "{origin} holds about {n} JSON values, more than the {max} a file of this kind holds; it was not "
                "parsed",
                origin=origin,
                n=values,
                max=max_values,
            )
        )
    return values


def check_shape_members(data: bytes) -> int:
    """The number of object members (key: value pairs) in JSON bytes: the colons outside strings."""
    return int(_structure(data, b":").size)


def limits_for(name: str) -> tuple[int, int | None]:
    """(most bytes, most values) of a JSON file by its name: what a file of that name may hold."""
    if name in SMALL_JSON:
        return SMALL_JSON_MAX_BYTES, SMALL_JSON_MAX_VALUES
    if name.endswith(".index.json"):
        return INDEX_JSON_MAX_BYTES, 4 * MAX_TENSORS + 64
    return JSON_MAX_BYTES, None


def read_json(
    path: str | Path,
    max_bytes: int | None = None,
    max_depth: int = JSON_MAX_DEPTH,
    origin: str | None = None,
    max_values: int | None = None,
) -> Any:
    """Parse a JSON file: a regular file, at most max_bytes, at most max_values values, nested at most max_depth
    levels, UTF-8. Without max_bytes / max_values, the limits of its name (limits_for); the values and the nesting
    are counted from the bytes before json.loads (check_shape)."""
    path = Path(path)
    origin = origin or path.name
    named_bytes, named_values = limits_for(path.name)
    max_bytes = named_bytes if max_bytes is None else max_bytes
    max_values = named_values if max_values is None else max_values
    data = read_bytes(path, max_bytes)
    check_shape(data, origin, max_values, max_depth)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CheckpointError(M_("{origin} is not UTF-8 text", origin=origin)) from None
    return parse_json(text, origin, max_depth)


# A checkpoint's tensor count: this project's base model has 190, Hugging Face's largest encoder-decoders a
# few thousand. A file of a million one-element tensors (7 MB zipped) took 50 s and 1.6 GB to read.
MAX_TENSORS = 16384
SAFETENSORS_MAX_HEADER = 8 * 2**20  # the JSON header naming every tensor: about 100 bytes each


def _too_many(name: str, n: int):
    return M_(
        "{name} holds {n} tensors, more than the {max} a checkpoint of this app's size holds",
        name=name,
        n=n,
        max=MAX_TENSORS,
    )


def check_safetensors_header(path: str | Path) -> None:
    """Refuse a safetensors file whose header is too long or names too many tensors, reading only the header."""
    path = Path(path)
    info = regular_file(path)
    with open(path, "rb") as fh:
        head = fh.read(8)
        size = int.from_bytes(head, "little")
        if len(head) < 8 or size > info.st_size - 8:
            return  # not a safetensors file (too short, or a header longer than the file): its reader says so
        if size > SAFETENSORS_MAX_HEADER:
            raise CheckpointError(
                M_(
                    "{name} has a header of {size}, above the limit of {limit}: it names more tensors than a "
                    "checkpoint of this app's size holds",
                    name=path.name,
                    size=size_text(size),
                    limit=size_text(SAFETENSORS_MAX_HEADER),
                )
            )
        header = fh.read(size)
    try:
        entries = parse_json(header.decode("utf-8"), path.name, max_depth=4)
    except (UnicodeDecodeError, CheckpointError):
        return  # not a valid header: safetensors' own reader names the problem
    if isinstance(entries, dict) and (n := sum(1 for k in entries if k != "__metadata__")) > MAX_TENSORS:
        raise CheckpointError(_too_many(path.name, n))


def check_zip_entries(path: str | Path) -> None:
    """Refuse a torch.save zip archive with more records than MAX_TENSORS allows (one per storage), from its
    directory alone."""
    import zipfile

    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            n = len(archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return  # torch.load names what is wrong
    if n > MAX_TENSORS + 16:  # data.pkl, version, byteorder ... beside one record per storage
        raise CheckpointError(_too_many(path.name, n))
