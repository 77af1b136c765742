"""The Training page's snapshots (model/checkpoints/snapshots.py): where a session's model keeps them, each one loaded
once per process, and this input run through each, with a damaged snapshot named by its step, never a traceback."""

from __future__ import annotations

import logging
from pathlib import Path

import streamlit as st

from i18n import N_, _, message_of
from model import CheckpointError
from model.checkpoints.demos import list_demos
from model.checkpoints.snapshots import list_snapshots
from ui.serving import caches
from ui.shell import model_picker
from ui.shell.safe_text import md

_LOG = logging.getLogger(__name__)

# the numbers a run's snapshot index may record beside exact match and alignment, titled (others: their name)
SCORE_TITLES = {
    "induction_share": N_("best induction head (share of a perfect head's score, held-out)"),
    "repeated_half": N_("next-token accuracy on the repeated half (held-out)"),
}


def snapshot_score_title(name: str) -> str:
    """The curve's title of a snapshot score, in the reader's language (an unknown name as it is)."""
    return _(SCORE_TITLES[name]) if name in SCORE_TITLES else name


# Every snapshot is needed at once for this input's curve: small models only (CURVE_BYTES of stored weights in all).
CURVE_BYTES = 64 * 2**20


def checkpoint_folder(key: str) -> Path | None:
    """The folder of the session's model when it is a demo or a server folder (uploads keep no snapshots)."""
    base = key.split("|", 1)[0]
    if base.startswith("demo:"):
        return next((d.path for d in list_demos() if d.name == base[5:]), None)
    if base.startswith("path:"):
        folders = model_picker.server_folders()
        try:
            path = folders.open_path(base[5:]) if folders.enabled else None
        except ValueError:
            return None
        return path if path is not None and path.is_dir() else None
    return None


@st.cache_data(max_entries=16, show_spinner=False)
def _snapshots(folder: str, stamp: float):
    return list_snapshots(folder)


def snapshots_of(folder: Path):
    """The snapshots a checkpoint folder keeps (read again when its snapshots folder changes)."""
    return _snapshots(str(folder), model_picker.stamp(folder / "snapshots"))


@st.cache_resource(max_entries=16, show_spinner=False)  # its spinner is shown by the caller, in the page's language
def _load_snapshot(path: str, stamp: float):
    import model  # looked up at each load (a test replaces model.load_checkpoint)

    return model.load_checkpoint(path)


def stored_bytes(snaps) -> int:
    """The bytes of weights every snapshot stores, in all."""
    files = [s.path / "model.safetensors" for s in snaps.items]
    return sum(f.stat().st_size for f in files if f.is_file())


class DamagedSnapshot(Exception):
    """A snapshot's files could not be loaded or run; the message (translated) names its step, no file contents."""


def snapshot_capture(snapshot, text: str, target: str):
    """This input through one snapshot; DamagedSnapshot when its folder cannot be read or does not fit the model."""
    try:
        stamp = model_picker.stamp(snapshot.path)
        with st.spinner(_("Loading a snapshot…")):  # shown after half a second: not for a snapshot already loaded
            model, tokenizer = _load_snapshot(str(snapshot.path), stamp)
        key = f"snapshot:{snapshot.path}:{stamp}"
        return caches.cached_capture(key, text, target, model, tokenizer, spinner=_("Running the snapshots…"))
    except (CheckpointError, OSError, ValueError) as err:  # what the folder holds is not trusted
        why = _("The snapshot of step {step} could not be loaded: {why}").format(
            step=snapshot.step, why=md(message_of(err))
        )
    except Exception:  # anything else: the server log keeps it, the page says which step
        _LOG.warning("running the snapshot of step %s failed", snapshot.step, exc_info=True)
        why = _("The snapshot of step {step} could not be run with this model's input.").format(step=snapshot.step)
    raise DamagedSnapshot(why)
