"""What app.py and every page share: the model picker, the input box, cached model calls, URL state.

The model is loaded once per process (st.cache_resource) and shared by every browser session; it is
never mutated. Captures and traces are cached per (model, input) with st.cache_data. Every widget's
value also lives in the URL (st.query_params), so a link reproduces the view.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamlit as st

from model import Capture, CheckpointError, Trace, capture, greedy_decode, load_checkpoint
from model.checkpoint import load_card
from model.demos import list_demos
from model.inputs import InputCheck, check_text

PAGES_DIR = Path(__file__).resolve().parent
# url_path -> (file, title, icon); the first is the default page
PAGES = {
    "attention": ("attention.py", "Attention", ":material/grid_on:"),
    "positional": ("positional.py", "Positional encoding", ":material/waves:"),
    "decoding": ("decoding.py", "Step-by-step decoding", ":material/skip_next:"),
    "model": ("model_info.py", "Model", ":material/account_tree:"),
}
PATH_CHOICE, UPLOAD_CHOICE = "Checkpoint folder on this computer…", "Upload a checkpoint…"
MAX_UPLOAD_MB = 200


@dataclass
class Session:
    """What the sidebar settled on in this run."""

    key: str  # identifies the loaded model in caches and URLs: demo:NAME, path:FOLDER, upload:SHA
    label: str
    model: Any
    tokenizer: Any
    card: dict
    text: str  # exactly what the user typed
    check: InputCheck
    target: str | None  # a teacher-forcing target, or None for the model's own output
    target_check: InputCheck | None
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.check.errors and not (self.target_check and self.target_check.errors)


# -- URL state -----------------------------------------------------------------------------------


def url_state(key: str, default: Any, options: Sequence[Any] | None = None, cast: Callable[[str], Any] = str) -> Any:
    """Initialise st.session_state[key] from the URL (or the default) once; keep it valid for `options`."""
    if key not in st.session_state:
        value = default
        raw = st.query_params.get(key)
        if raw is not None:
            try:
                value = cast(raw)
            except (TypeError, ValueError):
                value = default
        st.session_state[key] = value
    if options is not None and st.session_state[key] not in options:
        st.session_state[key] = default if default in options else options[0]
    return st.session_state[key]


def write_url(**values: Any) -> None:
    """Put the current selections in the address bar (None removes a key)."""
    for k, v in values.items():
        if v is None or v == "":
            st.query_params.pop(k, None)
        elif st.query_params.get(k) != str(v):
            st.query_params[k] = str(v)


# -- loading models ------------------------------------------------------------------------------


@st.cache_resource(show_spinner="Loading model…", max_entries=8)
def _load_folder(path: str, stamp: float):
    return load_checkpoint(path)


def load_folder(path: str):
    folder = Path(path).expanduser()
    stamp = max((p.stat().st_mtime for p in folder.iterdir()), default=0.0) if folder.is_dir() else 0.0
    return _load_folder(str(folder), stamp)


@st.cache_resource(show_spinner="Reading the uploaded checkpoint…", max_entries=4)
def _load_upload(digest: str, name: str, _data: bytes):
    """A .zip of a checkpoint folder (model.safetensors, config.json, tokenizer.json)."""
    if not name.lower().endswith(".zip"):
        raise CheckpointError(f"{name}: upload a .zip of a checkpoint folder (model.safetensors, config.json, tokenizer.json)")
    try:
        archive = zipfile.ZipFile(io.BytesIO(_data))
    except zipfile.BadZipFile as err:
        raise CheckpointError(f"{name} is not a readable .zip file ({err})") from err
    folder = Path(tempfile.mkdtemp(prefix="upload-"))
    for member in archive.infolist():
        target = Path(member.filename).name  # flatten: never write outside the folder
        if target and not member.is_dir():
            if member.file_size > MAX_UPLOAD_MB * 2**20:
                raise CheckpointError(f"{member.filename} in {name} is larger than {MAX_UPLOAD_MB} MB")
            (folder / target).write_bytes(archive.read(member))
    return load_checkpoint(folder)


def model_choices() -> list[str]:
    return [d.name for d in list_demos()] + [PATH_CHOICE, UPLOAD_CHOICE]


def _pick_model() -> tuple[str, str, Any, Any, dict] | None:
    """Sidebar model picker; returns (key, label, model, tokenizer, card) or None after showing why not."""
    demos = {d.name: d for d in list_demos()}
    choices = model_choices()
    url_key = st.query_params.get("model", "")
    if "model_choice" not in st.session_state:
        if url_key.startswith("path:"):
            st.session_state["model_path"] = url_key[5:]
            st.session_state["model_choice"] = PATH_CHOICE
        elif url_key.startswith("demo:") and url_key[5:] in demos:
            st.session_state["model_choice"] = url_key[5:]
    choice = url_state("model_choice", choices[0], choices)
    st.sidebar.selectbox("Model", choices, key="model_choice", help="Trained demo models ship with the app; "
                         "you can also open your own checkpoint.")
    try:
        if choice in demos:
            demo = demos[choice]
            model, tok = load_folder(str(demo.path))
            return f"demo:{choice}", choice, model, tok, demo.card
        if choice == PATH_CHOICE:
            path = st.sidebar.text_input("Checkpoint folder", key="model_path", placeholder="/path/to/checkpoint")
            if not path.strip():
                st.sidebar.info("Type the path of a checkpoint folder.")
                return None
            model, tok = load_folder(path.strip())
            return f"path:{path.strip()}", Path(path).name, model, tok, load_card(Path(path).expanduser())
        upload = st.sidebar.file_uploader("Checkpoint (.zip of a checkpoint folder)", key="model_upload")
        if upload is None:
            st.sidebar.info("Choose a .zip holding model.safetensors, config.json and tokenizer.json.")
            return None
        data = upload.getvalue()
        digest = hashlib.sha256(data).hexdigest()[:16]
        model, tok = _load_upload(digest, upload.name, data)
        return f"upload:{digest}", upload.name, model, tok, {}
    except (CheckpointError, OSError, ValueError) as err:
        st.sidebar.error(f"Could not load this model: {err}")
        return None


# -- the sidebar ---------------------------------------------------------------------------------


def _use_example() -> None:
    example = st.session_state.get("example_pick")
    if example:
        st.session_state["text"] = example
        st.session_state["example_pick"] = None


def sidebar() -> Session | None:
    """Render the shared sidebar; None when no model could be loaded (the reason is shown)."""
    st.sidebar.header("Model and input")
    picked = _pick_model()
    if picked is None:
        if not list_demos():
            st.sidebar.warning("No demo models found in checkpoints/. Train one: python -m model.train --task reverse --out checkpoints/reverse")
        return None
    key, label, model, tok, card = picked
    examples = list(card.get("examples", []))
    url_state("text", examples[0] if examples else "")
    st.sidebar.text_area("Input text (source)", key="text", height=90,
                         help="What the encoder reads. The decoder then produces its output token by token.")
    if examples:
        st.sidebar.selectbox("Try an example", [None, *examples], key="example_pick", on_change=_use_example,
                             format_func=lambda e: "—" if e is None else e)
    url_state("target", "")
    st.sidebar.text_input("Target (optional)", key="target",
                          help="Leave empty to show the model's own greedy output; type a target to see the "
                          "attention with that text as the decoder input (teacher forcing).")
    if card.get("description"):
        st.sidebar.caption(card["description"])
    text, target = st.session_state["text"], st.session_state["target"]
    room = model.config.max_len - 1
    check = check_text(text, tok.source, room)
    target_check = check_text(target, tok.target, room, what="target") if target.strip() else None
    write_url(model=key if not key.startswith("upload:") else None, text=text, target=target or None)
    return Session(key, label, model, tok, card, text, check, target.strip() or None, target_check, examples)


def show_input_messages(session: Session) -> bool:
    """Errors and warnings about the input, on the page; False when the page has nothing to show."""
    for check in (session.check, session.target_check):
        if check is None:
            continue
        for message in check.errors:
            st.error(message)
        for message in check.warnings:
            st.warning(message)
    return session.ok


def run_app(default: str = "attention") -> None:
    """Navigation over pages/, the shared sidebar, then the chosen page (tests pick the default page)."""
    pages = [
        st.Page(PAGES_DIR / file, title=title, icon=icon, url_path=name, default=name == default)
        for name, (file, title, icon) in PAGES.items()
    ]
    page = st.navigation(pages)
    st.session_state["_session"] = sidebar()
    page.run()


def current() -> Session | None:
    return st.session_state.get("_session")


# -- cached model calls --------------------------------------------------------------------------


@st.cache_data(max_entries=64, show_spinner="Running the model…")
def cached_capture(model_key: str, text: str, target: str | None, _model, _tokenizer) -> Capture:
    return capture(_model, _tokenizer, text, target)


@st.cache_data(max_entries=64, show_spinner="Decoding…")
def cached_trace(model_key: str, text: str, prefix: tuple[int, ...], top_k: int, _model, _tokenizer) -> Trace:
    return greedy_decode(_model, _tokenizer, text, top_k=top_k, prefix=prefix)


def session_capture(session: Session) -> Capture:
    return cached_capture(session.key, session.check.text, session.target_check.text if session.target_check else None,
                          session.model, session.tokenizer)


@st.cache_data(max_entries=16, show_spinner=False)
def _npz(model_key: str, text: str, target: str | None, _capture: Capture) -> bytes:
    from model.export import capture_npz

    return capture_npz(_capture)


@st.cache_data(max_entries=16, show_spinner=False)
def _json(model_key: str, text: str, target: str | None, _capture: Capture) -> str:
    from model.export import capture_json

    return capture_json(_capture)


def npz_bytes(session: Session, cap: Capture) -> bytes:
    return _npz(session.key, session.check.text, session.target, cap)


def json_text(session: Session, cap: Capture) -> str:
    return _json(session.key, session.check.text, session.target, cap)
