"""Uploaded checkpoints: written once into this process's private folder (mode 0700, removed at exit); a .zip
is checked whole before anything is unpacked (model.archive)."""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
from pathlib import Path

import streamlit as st

from i18n import _
from model.archive import safe_extract

_UPLOADS: list[Path] = []  # this process's private folder for uploads (mode 0700), removed at exit


def _upload_root() -> Path:
    if not _UPLOADS:
        root = Path(tempfile.mkdtemp(prefix="transformer-viz-uploads-"))  # readable by this user only
        atexit.register(shutil.rmtree, root, True)
        _UPLOADS.append(root)
    return _UPLOADS[0]


def _release_upload(local: str) -> None:
    """Remove an upload's files when the cache lets it go (a later use writes them again)."""
    root = _upload_root()
    path = Path(local)
    folder = path if path.parent == root else path.parent
    if folder.parent == root:
        shutil.rmtree(folder, ignore_errors=True)


@st.cache_resource(show_spinner=False, max_entries=8, on_release=_release_upload)
def _saved_upload(digest: str, name: str, _data: bytes) -> str:
    """Write an upload into the private upload folder once; a .zip is checked, then unpacked flat (model.archive)."""
    folder = Path(tempfile.mkdtemp(prefix=f"{digest}-", dir=_upload_root()))
    if not name.lower().endswith(".zip"):
        target = folder / (Path(name).name or "upload.bin")
        target.write_bytes(_data)
        return str(target)
    try:
        return str(safe_extract(_data, folder, name=name))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def upload_path(upload) -> tuple[str, str]:
    """(digest, local path) of a Streamlit UploadedFile."""
    data = upload.getvalue()
    digest = hashlib.sha256(data).hexdigest()[:16]
    with st.spinner(_("Reading the upload…")):  # shown after a moment: not for an upload already kept
        return digest, _saved_upload(digest, upload.name, data)
