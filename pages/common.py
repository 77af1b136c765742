"""What app.py and every page share: the model picker, the input box, URL state, navigation.

The model is loaded once per process (st.cache_resource) and shared by every browser session; it is
never mutated. Captures, traces and bertviz HTML are cached per (model, input) in pages/caches.py (bounded
by entries and bytes; re-exported here); uploads are kept by pages/uploads.py. Every widget's value also
lives in the URL (st.query_params), so a link reproduces the view. The language of the run (lang=zh in the
URL, else the browser's) is set first, before the navigation and the sidebar are drawn (i18n).
"""

from __future__ import annotations

import contextvars
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Imported here, once, before any session draws a chart: plotly asks sys.modules for pandas without importing
# it, so while one session's thread was still importing pandas (st.dataframe does, lazily) another session's
# chart failed with "partially initialized module 'pandas' has no attribute 'Series'".
import pandas  # noqa: F401
import streamlit as st

from i18n import M_, N_, _, message_of
from model import CheckpointError, load_checkpoint
from model.analysis.budget import (
    MAX_TEXT_CHARS,
    WorkBudget,
    apply_budget,
    page_bytes,
    source_length,
    steps_from_environment,
)
from model.analysis.cpu_share import share_cpu
from model.checkpoints.checkpoint import load_card
from model.checkpoints.demos import list_demos
from model.checkpoints.formats import FORMATS, CheckpointInfo, inspect_checkpoint
from model.checkpoints.serving import OFF, ServerFolders, folder_stamp
from model.decoding import set_step_cap
from model.text.inputs import InputCheck, check_text, trained_range_warning
from pages.caches import (  # noqa: F401  (re-exported: pages call common.cached_capture, ...)
    CAPTURES,
    HTML,
    QKV,
    TRACES,
    cached_capture,
    cached_html,
    cached_trace,
    capture_downloads,
    input_key,
    pe_downloads,
    session_capture,
    session_qkv_capture,
)
from pages.safe_text import md
from pages.uploads import RefusedUpload, refuse_upload, scrub, upload_path
from tasks.cards import card_description, grammar_warning

_LOG = logging.getLogger(__name__)

PAGES_DIR = Path(__file__).resolve().parent
# url_path -> (file, title, icon); the first is the default page. Titles are marked (N_) and translated in _pages.
PAGES = {
    "attention": ("attention.py", N_("Attention"), ":material/grid_on:"),
    "inside": ("inside.py", N_("Inside attention"), ":material/calculate:"),
    "positional": ("positional.py", N_("Positional encoding"), ":material/waves:"),
    "decoding": ("decoding.py", N_("Step-by-step decoding"), ":material/skip_next:"),
    "attribution": ("attribution.py", N_("Attribution"), ":material/troubleshoot:"),
    "compare": ("compare.py", N_("Compare two models"), ":material/compare:"),
    "training": ("training.py", N_("Training"), ":material/timeline:"),
    "model": ("model.py", N_("Model"), ":material/account_tree:"),
    "lecture_pack": ("lecture_pack.py", N_("Lecture pack"), ":material/school:"),
}
THREADS_ENV = "VIZ_TORCH_THREADS"  # torch threads per server process; default 1


def set_server_threads() -> int:
    """Give torch one thread (or $VIZ_TORCH_THREADS) for the whole server process, once, at start; numpy's BLAS
    (OpenBLAS, one thread per core by default) gets the same number.

    Every browser session runs the model on its own thread; with torch's default (one OpenMP thread per
    core, per session) concurrent sessions oversubscribe the cores, and issue 11 measured 10-24x more CPU for
    the same work (benchmarks/bench_threads.py measures it on your machine). One thread per session lets
    sessions share the cores; a single researcher on a big machine may raise it. The inter-op
    pool can only be sized before torch first uses it: later calls leave it as it is. numpy's products (the
    positional page's similarity and shift check) spun a second BLAS thread for matrices this small: twice the
    CPU for the same wall time.
    """
    import os

    import torch
    from threadpoolctl import threadpool_limits

    try:
        n = max(1, int(os.environ.get(THREADS_ENV, "1")))
    except ValueError:
        n = 1
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(n)
    except RuntimeError:  # already started (or set) in this process
        pass
    threadpool_limits(limits=n, user_api="blas")  # for the whole process, not only a block
    return n


def _under_apptest() -> bool:
    from streamlit import config

    return bool(config.get_option("global.appTest"))


_threads_set = (
    False  # set_server_threads() runs at the server's first page run (not under AppTest: tests keep the default)
)
# The model box's two non-demo choices: values kept in English (session state, tests), shown translated.
PATH_CHOICE, UPLOAD_CHOICE = N_("Checkpoint folder on this computer…"), N_("Upload a checkpoint…")


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


def url_ints(key: str, default: Sequence[int], options: Sequence[int]) -> list[int]:
    """A multiselect's list of ints, kept in the URL as "3,7,12" ("none": empty): read from it once, kept within options."""
    allowed = set(options)
    if key not in st.session_state:
        raw = st.query_params.get(key)
        try:
            value = (
                list(default) if raw is None else [] if raw == "none" else [int(v) for v in raw.split(",") if v.strip()]
            )
        except ValueError:
            value = list(default)
        st.session_state[key] = value
    kept = [v for v in dict.fromkeys(st.session_state[key]) if v in allowed]
    if kept != st.session_state[key]:
        st.session_state[key] = kept
    return kept


def write_url(**values: Any) -> None:
    """Put the current selections in the address bar (None removes a key)."""
    for k, v in values.items():
        if v is None or v == "":
            st.query_params.pop(k, None)
        elif st.query_params.get(k) != str(v):
            st.query_params[k] = str(v)


# -- loading models ------------------------------------------------------------------------------


def _stamp(path: Path) -> float:
    """Changes when the checkpoint's files change, so an edited checkpoint is loaded again (bounded scan)."""
    return folder_stamp(path)


def server_folders() -> ServerFolders:
    """The folders visitors may open by path: `streamlit run app.py -- --allow-folder DIR` or $TRANSFORMER_VIZ_FOLDERS."""
    return ServerFolders.from_environment()


@st.cache_resource(show_spinner=False, max_entries=8)
def _load_cached(path: str, stamp: float, n_heads: int | None, vocab: tuple[tuple[str, str], ...]):
    return load_checkpoint(path, n_heads=n_heads, **dict(vocab))


def _load(path: str, stamp: float, n_heads: int | None, vocab: tuple[tuple[str, str], ...]):
    """The model, loaded once per process; a spinner in the reader's language while it loads (shown after a moment:
    never for a model already loaded)."""
    with st.spinner(_("Loading model…")):
        return _load_cached(path, stamp, n_heads, vocab)


@st.cache_data(max_entries=32, show_spinner=False)
def _inspect(path: str, stamp: float) -> CheckpointInfo:
    return inspect_checkpoint(path)


def _load_options(path: Path, prefix: str = "model", where: Any = None) -> tuple[dict, str]:
    """Identify a checkpoint, ask for what its file does not record; returns (load keywords, cache key suffix)."""
    where = st.sidebar if where is None else where
    info = _inspect(str(path), _stamp(path))
    where.caption(_("Format: {title}. {notes}").format(title=md(info.title), notes=md(info.notes)).strip())
    options: dict[str, Any] = {"n_heads": None, "vocab": ()}
    suffix = ""
    if info.needs_n_heads:
        url_state(f"{prefix}_heads", info.default_n_heads, info.head_choices, int)
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
    """A checkpoint upload that could not be loaded: its files go now (issue 22). Its error is kept for the
    session's reruns only when the file alone decided it (no vocabulary or head count chosen beside it)."""
    if upload is not None and not isinstance(err, RefusedUpload):
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


def _pick_model(
    prefix: str = "model", where: Any = None, default: str | None = None, label: str = N_("Model")
) -> tuple[str, str, Any, Any, dict] | None:
    """A model picker; returns (key, label, model, tokenizer, card) or None after showing why not.

    The sidebar's (prefix "model", in the URL as model=) by default; another page may ask for a second model with
    another prefix (widget keys {prefix}_choice, {prefix}_path, ...; URL key {prefix}), drawn in `where`, starting
    from `default` (a choice) when the link names none.
    """
    where = st.sidebar if where is None else where
    refused = "_link_refused" if prefix == "model" else f"_{prefix}_link_refused"
    demos = {d.name: d for d in list_demos()}
    choices = model_choices()
    url_key = st.query_params.get(prefix, "")
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
    choice = url_state(f"{prefix}_choice", default if default in choices else choices[0], choices)
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
            model, tok = _load(str(demo.path), _stamp(demo.path), None, ())
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
        model, tok = _load(str(path), _stamp(path), options["n_heads"], options["vocab"])
        card = load_card(path) if path.is_dir() else {}
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


# -- the sidebar ---------------------------------------------------------------------------------


def _use_example() -> None:
    example = st.session_state.get("example_pick")
    if example:
        st.session_state["text"] = example
        st.session_state["example_pick"] = None


def sidebar() -> Session | None:
    """Render the shared sidebar; None when no model could be loaded (the reason is shown)."""
    st.sidebar.header(_("Model and input"))
    picked = _pick_model()
    if picked is None:
        if not list_demos():
            st.sidebar.warning(
                _("No demo models found in checkpoints/. Train one: {command}").format(
                    command="python -m model.train --task reverse --out checkpoints/reverse"
                )
            )
        return None
    key, label, model, tok, card = picked
    examples = list(card.get("examples", []))
    base_key = key.split("|", 1)[0]
    previous = st.session_state.get("_text_model")
    if previous is not None and previous != base_key and examples:
        # Another model: start from its own first example rather than read the old text with a vocabulary that
        # does not fit. The old text is not lost: it stays in the browser's history with the old URL.
        st.session_state["text"], st.session_state["target"] = examples[0], ""
    st.session_state["_text_model"] = base_key
    url_state("text", examples[0] if examples else "")
    url_state("target", "")
    long_link = _bound_typed_text()
    st.sidebar.text_area(
        _("Input text (source)"),
        key="text",
        height=90,
        max_chars=MAX_TEXT_CHARS,
        help=_("What the encoder reads. The decoder then produces its output token by token."),
    )
    if examples:
        st.sidebar.selectbox(
            _("Try an example"),
            [None, *examples],
            key="example_pick",
            on_change=_use_example,
            format_func=lambda e: "—" if e is None else e,
        )
    st.sidebar.text_input(
        _("Target (optional)"),
        key="target",
        max_chars=MAX_TEXT_CHARS,
        help=_(
            "Leave empty to show the model's own greedy output; type a target to see the "
            "attention with that text as the decoder input (teacher forcing)."
        ),
    )
    if description := card_description(card):
        st.sidebar.caption(_(description))
    text, target = st.session_state["text"], st.session_state["target"]
    room = model.config.max_len - 1
    budget = WorkBudget.from_environment()  # attention grows with heads x length^2: cut before any work (issue 22)
    check = check_text(text, tok.source, room)
    check.warnings[:0] = long_link
    apply_budget(check, tok.source, model.config, budget)
    target_check = check_text(target, tok.target, room, what="target") if target.strip() else None
    source_tokens = source_length(tok.source, model.config, check.text)
    if target_check is not None:
        apply_budget(target_check, tok.target, model.config, budget, "target", source_tokens)
    share_cpu(page_bytes(model.config, source_tokens), budget.max_bytes)  # a heavy run yields to the room's light ones
    if not check.errors and (outside := trained_range_warning(card, check.text, tok.source)):
        check.warnings.append(outside)
    if not check.errors and (guess := grammar_warning(card, check.text)):
        check.warnings.append(guess)
    write_url(
        model=None if base_key.startswith("upload:") else base_key,
        text=text,
        target=target or None,
        model_heads=st.session_state.get("model_heads") if "|heads=" in key else None,
    )
    typed_target = target_check.text if target_check is not None else None  # cleaned and cut as the model reads it
    return Session(key, label, model, tok, card, text, check, typed_target or None, target_check, examples)


def _bound_typed_text() -> list:
    """Both boxes hold at most MAX_TEXT_CHARS characters (the browser stops typing there; a link may carry more):
    a longer text from a link is cut here, before anything reads it, with a warning to show above the result."""
    notes = []
    for key, what in (("text", N_("input")), ("target", N_("target"))):
        value = st.session_state.get(key) or ""
        if len(value) > MAX_TEXT_CHARS:
            st.session_state[key] = value[:MAX_TEXT_CHARS]
            notes.append(
                M_(
                    "The link's {what} has {n} characters; this app reads at most {max}: the rest was left out.",
                    what=M_(what),
                    n=len(value),
                    max=MAX_TEXT_CHARS,
                )
            )
    return notes


def show_input_messages(session: Session) -> bool:
    """Errors and warnings about the input, on the page; False when the page has nothing to show."""
    for check in (session.check, session.target_check):
        if check is None:
            continue
        for message in check.errors:
            st.error(md(message))
        for message in check.warnings:
            st.warning(md(message))
    return session.ok


_THROUGH_APP = contextvars.ContextVar("page_runs_through_app", default=False)


def _pages(default: str = "attention", icons: bool = True) -> list:
    """The pages for st.navigation. The default page is served at the root URL, which Streamlit gives it instead
    of its name; the same script is also registered under its name, hidden from the menu, so that a typed or
    shared /attention opens that page rather than a "Page not found" dialog."""
    pages = []
    for name, (file, title, icon) in PAGES.items():
        title = _(title)
        shown = icon if icons else None
        if name == default:
            pages.append(st.Page(PAGES_DIR / file, title=title, icon=shown, url_path=f"{name}-home", default=True))
            pages.append(st.Page(PAGES_DIR / file, title=title, icon=shown, url_path=name, visibility="hidden"))
        else:
            pages.append(st.Page(PAGES_DIR / file, title=title, icon=shown, url_path=name))
    return pages


def run_app(default: str = "attention") -> None:
    """The language, the navigation over pages/, the shared sidebar, then the chosen page (tests pick the default page)."""
    from pages.language import choose_language, language_switch
    from pages.presentation import presentation_mode

    global _threads_set
    if not _threads_set and not _under_apptest():
        set_server_threads()
        set_step_cap(steps_from_environment())  # every decoding of the server: at most $VIZ_MAX_STEPS steps
        _threads_set = True
    choose_language()  # first: page titles, the navigation and every label below follow it
    st.set_page_config(page_title=_("Transformer attention explorer"))
    page = st.navigation(_pages(default))
    language_switch()
    st.session_state["_session"] = sidebar()
    presentation_mode()  # the page's CSS, and the sidebar's presentation toggle (present=1 in the URL)
    token = _THROUGH_APP.set(True)
    try:
        page.run()
    finally:
        _THROUGH_APP.reset(token)


def _rerun_through_app() -> None:
    """A page file ran on its own, without app.py (so without sidebar and model): run it again through app.py.

    To Streamlit, a pages/ folder beside app.py is an old-style multipage app until st.navigation is first
    called in the process. Until then a link straight to a page (/positional) runs that file alone: as the
    first visit after a start, and for every later visit to a page until someone opens the app's root.
    Calling st.navigation switches Streamlit to app.py's pages for good; the rerun then goes through app.py
    to the same page. Tried once per session, so a page file run alone on purpose still runs.
    """
    if st.session_state.get("_rerun_through_app"):
        return
    st.session_state["_rerun_through_app"] = True
    st.navigation(_pages(icons=False), position="hidden")  # no icons: a page's icon became a favicon fetched online
    st.rerun()


def current() -> Session | None:
    if not _THROUGH_APP.get():
        _rerun_through_app()
    return st.session_state.get("_session")


def require_session(valid_input: bool = True) -> Session:
    """The sidebar's session; stops the page with a message when there is no model (or, if asked, no valid input)."""
    session = current()
    if session is None:
        st.info(_("Choose a model in the sidebar to begin."))
        st.stop()
    if valid_input and not show_input_messages(session):
        st.stop()
    return session
