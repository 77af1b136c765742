"""The model picker: a demo, a checkpoint folder the server allows, or an upload; loaded once per process.

The sidebar's picker has prefix "model" (URL key model=demo:NAME or path:FOLDER); the compare page asks for a
second one with another prefix. The model is loaded once per process (st.cache_resource) and shared by every
browser session; it is never mutated.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import streamlit as st

from i18n import M_, N_, _, message_of
from model import CheckpointError, load_checkpoint
from model.checkpoints.checkpoint import load_card
from model.checkpoints.demos import list_demos
from model.checkpoints.formats import FORMATS, CheckpointInfo, inspect_checkpoint
from model.checkpoints.handoff import check_checkpoint, open_checked
from model.checkpoints.serving import MAX_ENTRIES, OFF, ServerFolders, folder_stamp
from model.checkpoints.tokenizer_budget import budget_from_environment
from ui.serving import held_models
from ui.serving.long_lived import model_loaded
from ui.serving.uploads import RefusedUpload, refuse_upload, scrub, upload_path
from ui.serving.workers import Limits, WorkerStopped, run_limited, session_gone
from ui.shell.presentation import presenting
from ui.shell.safe_text import md
from ui.shell.url_state import Key, read

_LOG = logging.getLogger(__name__)
# The model box's two non-demo choices: values kept in English (session state, tests), shown translated.
PATH_CHOICE, UPLOAD_CHOICE = N_("Checkpoint folder on this computer…"), N_("Upload a checkpoint…")


def stamp(path: Path) -> float:
    """Changes when the checkpoint's files change, so an edited checkpoint is loaded again (bounded scan)."""
    return folder_stamp(path)


def server_folders() -> ServerFolders:
    """The folders visitors may open by path: `streamlit run app.py -- --allow-folder DIR` or $TRANSFORMER_VIZ_FOLDERS."""
    return ServerFolders.from_environment()


def _read(path: str, n_heads: int | None, vocab: tuple[tuple[str, str], ...]):
    return load_checkpoint(path, n_heads=n_heads, **dict(vocab))


@st.cache_resource(show_spinner=False, max_entries=16)  # the demos (list_demos): kept for the process
def _load_cached(path: str, stamp: float, n_heads: int | None, vocab: tuple[tuple[str, str], ...]):
    loaded = _read(path, n_heads, vocab)
    model_loaded()  # kept for the process: frozen out of the garbage collector's reach after this run
    return loaded


def load(
    path: str,
    stamp: float,
    n_heads: int | None,
    vocab: tuple[tuple[str, str], ...],
    held: tuple[str, str] | None = None,
):
    """The model, loaded once per process; a spinner in the reader's language while it loads (shown after a moment:
    never for a model already loaded). A demo is kept for the process; a visitor's folder or upload (held: the
    picker's prefix and the model key) only while a connected session shows it (ui/serving/held_models.py)."""
    with st.spinner(_("Loading model…")):
        if held is None:
            return _load_cached(path, stamp, n_heads, vocab)
        slot, model_key = held
        return held_models.hold(
            (path, stamp, n_heads, vocab), model_key, slot, lambda: _read_checked(path, n_heads, vocab)
        )


def _read_checked(path: str, n_heads: int | None, vocab: tuple[tuple[str, str], ...]):
    """A visitor's checkpoint loaded in a limited worker (model/checkpoints/handoff.py): its files are parsed, its
    tokenizer probed and its weights converted in a child process whose memory (beyond the files' mapping and the
    converted weights: three times the files' bytes), CPU and time the operating system bounds, killed when the
    visitor leaves; the server maps the checked weights and unpickles the checked tokenizer, counted first."""
    base = Limits.from_environment()
    limits = Limits(base.memory + budget_from_environment() + 3 * _file_bytes(Path(path)), base.deadline)
    folder = tempfile.mkdtemp(prefix="transformer-viz-checked-")  # readable by this user only
    try:
        checked = run_limited(
            check_checkpoint, path, folder, limits=limits, should_stop=session_gone, n_heads=n_heads, **dict(vocab)
        )
        return open_checked(checked)
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the weights stay mapped; nothing else of it is kept


def _file_bytes(path: Path, limit: int = MAX_ENTRIES) -> int:
    """The bytes of a checkpoint file, or of a folder's first `limit` files (bounded scan): what inspecting it may map
    into memory (weights are memory-mapped for their shapes and dtypes: address space, not resident memory)."""
    try:
        if not path.is_dir():
            return path.stat().st_size
        with os.scandir(path) as entries:
            return sum(e.stat().st_size for e in itertools.islice(entries, limit) if e.is_file())
    except OSError:
        return 0


@st.cache_data(max_entries=32, show_spinner=False)
def _inspect(path: str, stamp: float) -> CheckpointInfo:
    """A visitor's checkpoint (a server folder or an upload) is first read in a limited worker (ui/serving/workers.py): its
    config files, and the headers of its weights, are parsed in a child process whose memory (beyond the weights'
    mapping) and time the operating system bounds, killed when the visitor leaves; the server only keeps the
    checked record. A hostile file costs the worker, never the server."""
    base = Limits.from_environment()
    limits = Limits(base.memory + _file_bytes(Path(path)), base.deadline)
    return run_limited(inspect_checkpoint, path, limits=limits, should_stop=session_gone)


@st.cache_data(max_entries=32, show_spinner=False)
def _card(path: str, stamp: float) -> dict:
    """A visitor's card.json (free-form metadata: examples, the task), read in a limited worker as the rest of the
    folder; the server keeps the parsed dict."""
    return run_limited(load_card, path, should_stop=session_gone)


def _load_options(path: Path, prefix: str = "model", where: Any = None) -> tuple[dict, str]:
    """Identify a checkpoint, ask for what its file does not record; returns (load keywords, cache key suffix)."""
    where = st.sidebar if where is None else where
    info = _inspect(str(path), stamp(path))
    if where is st.sidebar or not presenting():  # a page's own picker (Compare's B) in a hall: the chart first
        where.caption(_("Format: {title}. {notes}").format(title=md(info.title), notes=md(info.notes)).strip())
    options: dict[str, Any] = {"n_heads": None, "vocab": ()}
    suffix = ""
    if info.needs_n_heads:
        read(Key(f"{prefix}_heads", cast=int), info.default_n_heads, info.head_choices)
        options["n_heads"] = where.selectbox(
            _("Attention heads (this file does not record them)"), info.head_choices, key=f"{prefix}_heads"
        )
        suffix += f"|heads={options['n_heads']}"
    if info.takes_vocabulary:
        vocab = []
        both = where.file_uploader(
            _("Vocabulary: JSON, one token per line, or vocab.pt (optional)"), key=f"{prefix}_vocab"
        )
        with where.expander(_("Separate source and target vocabularies")):
            source = st.file_uploader(_("Source vocabulary"), key=f"{prefix}_vocab_src")
            target = st.file_uploader(_("Target vocabulary"), key=f"{prefix}_vocab_tgt")
        for name, upload in (("vocab", both), ("source_vocab", source), ("target_vocab", target)):
            if upload is not None:
                digest, local = upload_path(upload)
                vocab.append((name, local))
                suffix += f"|{name}={digest}"
        if not vocab:
            where.info(_("No vocabulary given: type token ids, e.g. 12 7 431; tokens show as <id 12>."))
        options["vocab"] = tuple(vocab)
    return options, suffix


def _refuse_upload(upload, err: BaseException, remember: bool) -> None:
    """A checkpoint upload that could not be loaded: its files go now. Its error is kept for the
    session's reruns only when the file alone decided it (no vocabulary or head count chosen beside it). A load
    its worker did not finish (cancelled, past the deadline on a busy machine) refuses nothing: it may be tried again."""
    if upload is not None and not isinstance(err, (RefusedUpload, WorkerStopped)):
        refuse_upload(upload, err, remember)


def model_choices() -> list[str]:
    """Demos, uploads, and server folders only when whoever started the server allowed some."""
    return [d.name for d in list_demos()] + ([PATH_CHOICE] if server_folders().enabled else []) + [UPLOAD_CHOICE]


def _forget_refused_link(prefix: str = "model") -> None:
    refused = "_link_refused" if prefix == "model" else f"_{prefix}_link_refused"
    st.session_state.pop(refused, None)
    st.session_state.pop(refused + "_note", None)


def shown_name(text: str, limit: int = 60) -> str:
    """A name from a link, safe to show inside a message: letters, digits and . _ - : / only, at most `limit` long."""
    kept = re.sub(r"[^\w.:/-]", "?", text)
    return kept if len(kept) <= limit else kept[: limit - 1] + "…"


def pick_model(
    prefix: str = "model", where: Any = None, default: str | None = None, label: str = N_("Model")
) -> tuple[str, str, Any, Any, dict] | None:
    """A model picker; returns (key, label, model, tokenizer, card) or None after showing why not.

    The sidebar's (prefix "model", in the URL as model=) by default; another page may ask for a second model with
    another prefix (widget keys {prefix}_choice, {prefix}_path, ...; URL key {prefix}), drawn in `where`, starting
    from `default` (a choice, or a folder as path:FOLDER, opened as a link's would be) when the link names none.
    """
    picked = _pick(prefix, where, default, label)
    if picked is None:
        held_models.let_go(prefix)  # no model shown here: a folder or upload shown before may be nobody's now
    return picked


def _pick(prefix: str, where: Any, default: str | None, label: str) -> tuple[str, str, Any, Any, dict] | None:
    where = st.sidebar if where is None else where
    refused = "_link_refused" if prefix == "model" else f"_{prefix}_link_refused"
    demos = {d.name: d for d in list_demos()}
    choices = model_choices()
    url_key = st.query_params.get(prefix, "")
    if not url_key and default and default.startswith("path:"):  # a folder to start from: opened as a link's is
        url_key = default
    folders = server_folders()
    if f"{prefix}_choice" not in st.session_state:
        if url_key.startswith("path:") and not folders.enabled:  # refused before anything is looked at
            st.session_state[refused] = M_("Could not open the linked model: {reason}.", reason=OFF)
        elif url_key.startswith("path:"):
            st.session_state[f"{prefix}_path"] = url_key[5:]
            st.session_state[f"{prefix}_choice"] = PATH_CHOICE
        elif url_key.startswith("demo:") and url_key[5:] in demos:
            st.session_state[f"{prefix}_choice"] = url_key[5:]
        elif url_key in demos:  # a demo's bare name ("fr_en" for "demo:fr_en"): opened, and said so
            st.session_state[f"{prefix}_choice"] = url_key
            st.session_state[refused + "_note"] = M_(
                "The link's model “{name}” opened as the demo demo:{name}.", name=url_key
            )
        elif url_key:  # a name the app does not know: said, never silently replaced
            st.session_state[refused] = M_(
                "The link names a model this app does not know (“{name}”): showing another one. A link names a demo "
                "as demo:NAME (e.g. demo:{first}) or a checkpoint as path:FOLDER.",
                name=shown_name(url_key),
                first=next(iter(demos), "reverse"),
            )
    choice = read(Key(f"{prefix}_choice"), default if default in choices else choices[0], choices)
    where.selectbox(
        _(label),
        choices,
        key=f"{prefix}_choice",
        on_change=_forget_refused_link,
        args=(prefix,),
        format_func=lambda c: _(c) if c in (PATH_CHOICE, UPLOAD_CHOICE) else c,  # demo names stay as they are
        help=_(
            "Trained demo models ship with the app; you can also open your own checkpoint or one "
            "from a well-known PyTorch implementation."
        ),
    )
    if (refused_message := st.session_state.get(refused)) is not None:
        where.error(md(refused_message))
    if (note := st.session_state.get(refused + "_note")) is not None:
        where.caption(md(note))
    private: tuple[str, str] | None = None  # (the server's copy of an upload, the name the user knows)
    suffix, upload = "", None  # the load options' cache-key part ("" when the file alone decides), the upload
    try:
        if choice in demos:
            demo = demos[choice]
            held_models.let_go(prefix)  # the folder or upload this picker showed before may be nobody's now
            model, tok = load(str(demo.path), stamp(demo.path), None, ())
            return f"demo:{choice}", choice, model, tok, demo.card
        if choice == PATH_CHOICE:
            raw = where.text_input(
                _("Checkpoint folder or file"),
                key=f"{prefix}_path",
                placeholder="/path/to/checkpoint",
                help=_("This server opens checkpoints inside: {folders}").format(folders=folders.describe()),
            )
            if not raw.strip():
                where.info(
                    _("Type the path of a checkpoint folder or .pt file inside {folders}.").format(
                        folders=folders.describe()
                    )
                )
                return None
            path = folders.open_path(raw)  # PathRefused unless inside an allowed folder; resolved
            key, label = f"path:{path}", path.name
        else:
            upload = where.file_uploader(
                _("Checkpoint: a .zip of a checkpoint folder, or a .pt / .pth state_dict"), key=f"{prefix}_upload"
            )
            if upload is None:
                where.info(
                    _(
                        "Choose a .zip of a checkpoint folder or a .pt / .pth state_dict. The formats this app "
                        "reads: {formats}."
                    ).format(formats="; ".join(_(title) for title in FORMATS.values()))
                )
                return None
            try:
                digest, local = upload_path(upload)
            except RefusedUpload as refused:  # refused earlier in this process: the same answer, nothing unpacked
                private = (refused.local, upload.name)
                raise
            path, key, label = Path(local), f"upload:{digest}", upload.name
            private = (local, upload.name)
        if not path.exists():
            raise CheckpointError(M_("no checkpoint at {path}", path=str(path)))
        options, suffix = _load_options(path, prefix, where)
        model, tok = load(str(path), stamp(path), options["n_heads"], options["vocab"], held=(prefix, key + suffix))
        card = _card(str(path), stamp(path)) if path.is_dir() else {}
        return key + suffix, label, model, tok, card
    except (CheckpointError, OSError, ValueError) as err:  # PathRefused is a ValueError
        message = md(message_of(err))  # in the reader's language, what it quotes escaped
        if private is not None:  # the upload's name, never the server's copy of it
            message = scrub(message, *private)
            _refuse_upload(upload, err, remember=not suffix)
        where.error(_("Could not load this model: {message}").format(message=message))
        return None
    except Exception as err:  # untrusted input must not reach a traceback; the server log keeps it
        _LOG.warning("loading %s failed", choice, exc_info=True)
        if private is not None:
            _refuse_upload(upload, err, remember=not suffix)
        where.error(_("Could not load this model: it could not be read ({error}).").format(error=type(err).__name__))
        return None
