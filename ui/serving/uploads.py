"""Uploaded checkpoints, kept in this process's private folder (mode 0700, removed at exit) within a disk budget.

- Each upload lives in a folder named by the digest of its bytes; a single file is saved as `upload` plus its
  suffix when that suffix is one a checkpoint reader uses (.pt, .safetensors, .json, ...). The name the visitor's
  browser sent is never part of a path: it is only shown, escaped, in messages (`scrub` puts it in place of the
  server's copy).
- A .zip is checked whole before anything is unpacked (model.checkpoints.archive: members, sizes by kind of file,
  compression ratio, method, encryption, links); its unpacked size is known before a byte is written.
- Disk budget: all uploads kept by one process take at most $VIZ_UPLOAD_DISK_MB (default 2048 MB) and at most
  MAX_KEPT uploads; the least recently used are deleted to make room, and an upload larger than the whole budget
  is refused before it is written.
- A refused upload (it unpacks, but no format can load it) is deleted at once; its digest and error are remembered
  (at most MAX_REFUSED), so the session's reruns answer the same without unpacking it again.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

import streamlit as st

from i18n import M_, _
from model.checkpoints.archive import TEXT_SUFFIXES, WEIGHT_SUFFIXES, unpacked_size
from model.checkpoints.archive import safe_extract as _safe_extract
from model.checkpoints.errors import CheckpointError
from model.checkpoints.safe_io import size_text
from ui.shell.safe_text import esc

DISK_ENV = "VIZ_UPLOAD_DISK_MB"
DEFAULT_DISK_MB = 2048
MAX_KEPT = 8
MAX_REFUSED = 64
SUFFIXES = WEIGHT_SUFFIXES + TEXT_SUFFIXES


def disk_budget() -> int:
    """Bytes all uploads of this process may take on disk: $VIZ_UPLOAD_DISK_MB, default 2048 MB."""
    try:
        return max(1, int(os.environ.get(DISK_ENV, DEFAULT_DISK_MB))) * 2**20
    except ValueError:
        return DEFAULT_DISK_MB * 2**20


def stored_name(name: str) -> str:
    """The file name an upload is saved under: `upload` plus its suffix when a reader uses that suffix."""
    suffix = Path(name.replace("\x00", "")).suffix.lower() if len(name) < 4096 else ""
    return "upload" + (suffix if suffix in SUFFIXES else "")


class RefusedUpload(CheckpointError):
    """An upload refused earlier in this process: the original error, and where its files were."""

    def __init__(self, error: BaseException, local: str):
        super().__init__(*error.args)
        self.local = local


class UploadStore:
    """The uploads one process keeps: a folder per digest inside a private root, within `budget` bytes."""

    def __init__(self, budget: int | None = None, max_kept: int = MAX_KEPT, root: Path | None = None):
        self.budget = disk_budget() if budget is None else budget
        self.max_kept = max_kept
        self._root = root
        self._kept: OrderedDict[str, tuple[Path, int]] = OrderedDict()  # digest -> (path to load, bytes on disk)
        self._refused: OrderedDict[str, RefusedUpload] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def root(self) -> Path:
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="transformer-viz-uploads-"))  # readable by this user only
            atexit.register(shutil.rmtree, self._root, True)
        return self._root

    def usage(self) -> int:
        """Bytes on disk under the root (walked, not counted from the records)."""
        if self._root is None or not self._root.exists():
            return 0
        return sum(p.stat().st_size for p in self._root.rglob("*") if p.is_file())

    def path(self, digest: str, name: str, data: bytes) -> Path:
        """The local path of an upload, written (or unpacked) on first use; CheckpointError when refused."""
        with self._lock:
            if digest in self._refused:  # a fresh copy: the kept one never gets a traceback (and its frames' data)
                refused = self._refused[digest]
                raise RefusedUpload(refused, refused.local)
            if digest in self._kept:
                path, _ = self._kept[digest]
                if path.exists():
                    self._kept.move_to_end(digest)
                    return path
                self._forget(digest)
            is_zip = name.lower().endswith(".zip")
            size = unpacked_size(data, name=name) if is_zip else len(data)
            if size > self.budget:
                raise CheckpointError(
                    M_(
                        "{name} would take {size} on this server, which keeps at most {limit} of uploads",
                        name=name,
                        size=size_text(size),
                        limit=size_text(self.budget),
                    )
                )
            while self._kept and (len(self._kept) >= self.max_kept or self._used() + size > self.budget):
                self._forget(next(iter(self._kept)))
            folder = self.root / digest
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(mode=0o700)
            try:
                if is_zip:
                    path = _safe_extract(data, folder, name=name)
                else:
                    path = folder / stored_name(name)
                    path.write_bytes(data)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            self._kept[digest] = (path, size)
            return path

    def refuse(self, digest: str, error: BaseException, remember: bool = True) -> None:
        """No format could load this upload: delete its files now; when `remember`, later uses get the same error."""
        with self._lock:
            local = str(self._kept[digest][0]) if digest in self._kept else str(self.root / digest)
            self._forget(digest)
            if not remember:
                return
            # only the error's message is kept: the exception itself holds its traceback, whose frames hold the
            # upload's bytes and whatever was parsed from them, for as long as it is kept
            self._refused[digest] = RefusedUpload(error, getattr(error, "local", local))
            while len(self._refused) > MAX_REFUSED:
                self._refused.popitem(last=False)

    def _used(self) -> int:
        return sum(size for _, size in self._kept.values())

    def _forget(self, digest: str) -> None:
        self._kept.pop(digest, None)
        shutil.rmtree(self.root / digest, ignore_errors=True)


STORE = UploadStore()


def scrub(message: str, local: str, shown: str) -> str:
    """`message` (Markdown, values escaped) with the server's copy of an upload named as the visitor knows it:
    its full path, its folder and its stored file name all become `shown` (escaped), so no private path or
    digest folder is ever shown."""
    local_path = Path(local)
    folder = local_path if local_path.parent == STORE.root else local_path.parent
    private = [str(local_path), str(folder), folder.name, str(STORE.root)]
    if local_path != folder:
        private.append(local_path.name)
    for text in sorted(set(p for p in private if p), key=len, reverse=True):
        message = message.replace(esc(text), esc(shown)).replace(text, esc(shown))
    return message


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def refuse_upload(upload, error: BaseException, remember: bool = True) -> None:
    """Delete a Streamlit UploadedFile's files now (no format could load it); see UploadStore.refuse."""
    STORE.refuse(_digest(upload.getvalue()), error, remember)


def upload_path(upload) -> tuple[str, str]:
    """(digest, local path) of a Streamlit UploadedFile; CheckpointError (RefusedUpload) when refused."""
    data = upload.getvalue()
    digest = _digest(data)
    with st.spinner(_("Reading the upload…")):  # shown after a moment: not for an upload already kept
        return digest, str(STORE.path(digest, upload.name, data))
