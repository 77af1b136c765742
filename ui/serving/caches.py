"""Cached model calls shared by every session of a server process, and the downloads made from them.

Process-wide, keyed by (model key, input): changing only a view (tab, layer, head, step) recomputes nothing
about the model. Bounded by entries AND bytes (ui/serving/bounded_cache.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import streamlit as st

from i18n import M_, N_, _
from model import Capture, Trace, capture, greedy_decode
from model.analysis.budget import (
    BudgetExceeded,
    WorkBudget,
    admit_examples,
    budget_from_environment,
    decode_ops,
    importance_batch,
    importance_row_bytes,
    steps_for,
)
from model.analysis.budget_input import source_length
from model.analysis.importance import MAX_ROWS, HeadImportance, head_importance
from model.decoding import Step
from model.interventions import NONE, Interventions
from tasks import intervened
from ui.serving.bounded_cache import BoundedCache
from ui.shell.figure_download import download_row

if TYPE_CHECKING:
    from ui.shell.session import Session

# -- cached model calls --------------------------------------------------------------------------
# Process-wide, shared by every session, keyed by (model key, input): changing only a view (tab, layer,
# head, step) recomputes nothing about the model. Bounded by entries AND bytes (numpy nbytes, string and
# bytes lengths), least recently used dropped first; at most 256 + 128 + 64 MB in all, models aside.
CAPTURES: BoundedCache[Capture] = BoundedCache("captures", max_entries=64, max_bytes=256 * 2**20)
TRACES: BoundedCache[Trace] = BoundedCache("traces", max_entries=64, max_bytes=128 * 2**20)
HTML: BoundedCache[str] = BoundedCache("bertviz HTML", max_entries=16, max_bytes=64 * 2**20)  # keys hold the language
RUNNING = N_("Running the model…")  # spinner texts: marked here, translated when shown
QKV: BoundedCache[Capture] = BoundedCache("captures with Q, K, V", max_entries=16, max_bytes=128 * 2**20)
# head importance per input (L x H floats per kind), exact match of a demo under an intervention, and the
# fresh examples that score it (one list per model).
IMPORTANCE: BoundedCache[HeadImportance] = BoundedCache("head importance", max_entries=64, max_bytes=16 * 2**20)
MATCHES: BoundedCache[intervened.MatchResult] = BoundedCache("exact match", max_entries=128, max_bytes=4 * 2**20)
EXAMPLES: BoundedCache[list] = BoundedCache("fresh examples", max_entries=8, max_bytes=16 * 2**20)
# one method's (T, S) attribution per (model key, text, target, method, settings, interventions), and the
# agreement table averaged over fresh examples of a demo per (model key, n, settings, interventions).
ATTRIBUTIONS: BoundedCache[Any] = BoundedCache("attributions", max_entries=160, max_bytes=32 * 2**20)
AGREEMENTS: BoundedCache[Any] = BoundedCache("attribution agreement", max_entries=32, max_bytes=2**20)


def _with_spinner(message: str | None, work: Callable[[], Any]) -> Callable[[], Any]:
    """work, under st.spinner while a page script runs (a deferred download runs it with no page to draw on).

    message: the spinner's English text (marked with N_), translated here."""
    if message is None:
        return work

    def run():
        with st.spinner(_(message)):
            return work()

    return run


def _changed(key: tuple, changes: Interventions) -> tuple:
    """A cache key, with the interventions at the end when there are some (the plain key stays as it was)."""
    return (*key, changes) if changes else key


# -- one decode per (model, input, interventions), shared by every page ----------------------------
# The greedy decoding is the one costly part of a new input (one decoder step per token, at the bound of reading the
# weights once per token); the attention, decoding, Inside, attribution and compare pages all start from it. It runs
# once per (model, input, interventions), fused and unrecorded (DECODES keeps its ids); then one teacher-forced pass
# over those ids records everything a page shows: the capture of the model's own output, and the decoding page's
# step-by-step trace read from that same capture (a causal pass gives each step's rows and probabilities exactly as
# the step did). Only a forced prefix, and a shuffle of positions (each step permutes its own prefix), decode again.
DECODES: BoundedCache[tuple] = BoundedCache("greedy outputs", max_entries=256, max_bytes=4 * 2**20)


def own_output(model_key: str, text: str, model, tokenizer, changes: Interventions = NONE) -> tuple[int, ...]:
    """The greedy output ids of `text` (ending with </s> when it was written), once per (model key, text, changes);
    in a limited worker when the decode may cost more than a second (decoding_ops)."""
    if not model.config.has_decoder:  # an encoder alone writes nothing
        return ()
    key = _changed((model_key, text), changes)
    return DECODES.get(key, lambda: bounded_run(decoding_ops(model, tokenizer, text), decode_ids, model, tokenizer,
                                                text, changes, key=key, label=DECODING))  # fmt: skip


def decoding_ops(model, tokenizer, text: str, rows: int = 1) -> int:
    """The operations of decoding `text` to the step limit with `rows` hypotheses at once (a beam's width): what a
    model that never writes its end token costs."""
    cfg = model.config
    S = source_length(tokenizer.source, cfg, text)
    return decode_ops(cfg, S, steps_for(cfg, S), rows)


def bounded_run(ops: int, fn: Callable, *args: Any, key: tuple, label: str, **kwargs: Any) -> Any:
    """fn(*args, **kwargs): here, under a spinner, when it costs at most IN_PROCESS_OPS operations (about a
    second); else in a limited worker (ui/serving/workers.py), with a progress bar and Cancel in a page's run (a
    deferred download waits without them). The work a visitor's input asks for never holds the server's cores
    longer than that second, whatever the model does (a model that never writes its end token decodes to the
    step limit)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    from ui.serving.workers import run_limited, run_with_progress

    if ops <= IN_PROCESS_OPS:
        return _with_spinner(label, partial(fn, *args, **kwargs))()
    if get_script_run_ctx(suppress_warning=True) is None:
        return run_limited(fn, *args, **kwargs)
    return run_with_progress(fn, *args, key=key, label=label, **kwargs)


DECODING = N_("Decoding…")


def decode_ids(model, tokenizer, text: str, changes: Interventions = NONE) -> tuple[int, ...]:
    """The greedy output ids of `text`, unrecorded (a decoder-only model continues the text); no cache, no page."""
    from model.decoding import greedy_ids
    from model.text.inputs import prepare_sequence, prepare_source

    prepare = prepare_source if model.config.has_encoder else prepare_sequence
    source = prepare(model, tokenizer, text).ids
    vocab = tokenizer.target
    return tuple(greedy_ids(model, [source], bos_id=vocab.bos_id, eos_id=vocab.eos_id, interventions=changes)[0])


def _pass_on(model, tokenizer, text: str, ids: Sequence[int], qkv: bool, changes: Interventions) -> Capture:
    """capture() with the decoder reading <s> + ids (</s> left out), marked as the model's own output."""
    written = [i for i in ids if i != tokenizer.target.eos_id]
    return capture(model, tokenizer, text, qkv=qkv, interventions=changes, output_ids=written)


def _capture(model_key: str, text: str, target: str | None, model, tokenizer, qkv: bool, changes: Interventions):
    """capture(model, tokenizer, text, target, qkv, **changes); with target None on the shared decode's ids (the
    unchanged model's output: capture keeps it under interventions too, so that log-probs compare)."""
    if target is None and model.config.has_decoder:
        return _pass_on(model, tokenizer, text, own_output(model_key, text, model, tokenizer), qkv, changes)
    return capture(model, tokenizer, text, target, qkv=qkv, interventions=changes)


def cached_reading(model_key: str, text: str, ids: Sequence[int], _model, _tokenizer) -> Capture:
    """capture() of `text` with the decoder reading <s> + ids (another model's output, token for token; </s> left
    out), once per (model key, text, ids), in CAPTURES beside cached_capture's."""
    ids = tuple(int(i) for i in ids)
    return CAPTURES.get(
        (model_key, text, ids), _with_spinner(RUNNING, lambda: _pass_on(_model, _tokenizer, text, ids, False, NONE))
    )


def trace_from_pass(cap: Capture, ids: Sequence[int], vocab, top_k: int, changes: Interventions) -> Trace:
    """The greedy Trace whose outputs are `ids`, read from a teacher-forced capture of them: step t is position t
    (decoder self-attention over positions 0..t, cross-attention, probabilities from the pass's log-probs).
    A decoder-only model's pass reads prompt + ids: step t is position P - 1 + t, P the prompt's tokens.
    (A Capture -> Trace conversion: its place is beside greedy_decode once model/decoding/ is a package.)"""
    probs = np.exp(cap.log_probs.astype(np.float64))  # (T, V)
    k = max(1, min(top_k, probs.shape[1]))
    prompt = not cap.source_tokens  # decoder-only: no source side
    start = len(cap.target_ids) - len([i for i in ids if i != vocab.eos_id]) - 1 if prompt else 0  # P - 1
    steps = []
    for t, choice in enumerate(ids):
        at = start + t
        top = np.argsort(-probs[at], kind="stable")[:k]
        rows = dict(decoder_self=cap.decoder_self[:, :, at, : at + 1].copy(), cross=cap.cross[:, :, at, :].copy())
        steps.append(Step(index=t, token=vocab.token(choice), token_id=int(choice), prob=float(probs[at, choice]),
                          forced=False, top_ids=top, top_tokens=vocab.decode(top.tolist()),
                          top_probs=probs[at, top].astype(np.float32), **rows))  # fmt: skip
    source = list(cap.target_tokens[: start + 1]) if prompt else list(cap.source_tokens)
    source_ids = cap.target_ids[: start + 1] if prompt else cap.source_ids
    trace = Trace(source, [int(i) for i in source_ids], steps,
                  stop_reason="eos" if list(ids[-1:]) == [vocab.eos_id] else "max_len",
                  truncated=cap.target_truncated if prompt else cap.source_truncated,
                  start_token=vocab.token(vocab.bos_id), interventions=changes.describe(), prompt=prompt)  # fmt: skip
    trace.text = vocab.detokenize(trace.output_tokens)
    return trace


def cached_capture(
    model_key: str,
    text: str,
    target: str | None,
    _model,
    _tokenizer,
    spinner: str | None = RUNNING,
    changes: Interventions = NONE,
) -> Capture:
    """capture() once per (model key, text, target, interventions): CAPTURES holds at most 64 of them and 256 MB.
    With target None, on the shared decode of the input."""
    return CAPTURES.get(
        _changed((model_key, text, target), changes),
        _with_spinner(spinner, lambda: _capture(model_key, text, target, _model, _tokenizer, False, changes)),
    )


# The lazy capture of an input (model/analysis/lazy_capture.py): what one fused pass keeps, O(layers x tokens x
# d_model), every map computed when a view asks. Its pass runs in a worker with a progress bar (one step per attention
# module of the pass) and Cancel (ui/serving/workers.py) when it costs more operations than IN_PROCESS_OPS (about a second);
# the shared decode of the input, when it is not known yet, runs in the same worker first; the answer comes back
# pickled. The operations of a new input are admitted by the work budget first (attention_page_ops): the default
# refuses a pass of minutes (a 1B model at 2,048 tokens) and says what fits.
# At least one capture the work budget admits is kept (a SmolLM-135M shape at 8,192 tokens keeps about 380 MB).
LAZY: BoundedCache[Any] = BoundedCache(
    "lazy captures", max_entries=32, max_bytes=max(512 * 2**20, budget_from_environment())
)
IN_PROCESS_OPS = 10**10
READING = N_("Reading the input…")
LONG_READING = N_("Reading the input: the model's forward pass, layer by layer…")


def lazy_pass(model, tokenizer, text: str, target: str | None, changes: Interventions, decode: bool,
              ids: tuple[int, ...] | None = None, progress=None):  # fmt: skip
    """(ids, capture): capture(..., lazy=True) of `text`; with `decode`, on the model's own output: the shared
    decode's `ids`, or when they are None (not decoded yet) the decode run first (it then reports progress 0);
    progress(done, total) after each attention module of the capture's pass. What a worker runs for a long input."""
    kwargs = dict(lazy=True, interventions=changes, progress=progress)
    if decode:
        if ids is None:
            if progress is not None:
                progress(0, 1)
            ids = decode_ids(model, tokenizer, text)  # the unchanged model's output, as own_output decodes it
        kwargs["output_ids"] = [i for i in ids if i != tokenizer.target.eos_id]
    return ids, capture(model, tokenizer, text, target, **kwargs)


def cached_lazy_capture(
    model_key: str,
    text: str,
    target: str | None,
    _model,
    _tokenizer,
    changes: Interventions = NONE,
    spinner: str | None = RUNNING,
):
    """capture(..., lazy=True) once per (model key, text, target, interventions), LAZY holding at most 32 and 512 MB;
    with target None on the shared decode of the input (as cached_capture). A head switch then costs that head's
    map only. Raises BudgetExceeded (what fits) when the pass would cost more operations than the work budget
    allows, WorkerStopped (its message says why: memory, deadline, cancelled) when the worker stops."""
    from model.analysis.budget import admit_input, attention_page_bytes, attention_page_ops, forward_ops
    from ui.serving.workers import run_with_progress

    key = _changed(("lazy", model_key, text, target), changes)
    cfg = _model.config

    def compute():
        decode, known = target is None and cfg.has_decoder, None
        if decode and (model_key, text) in DECODES:
            known = DECODES.get((model_key, text), lambda: None)
        S = source_length(_tokenizer.source, cfg, text)
        T = (len(known) if known is not None else steps_for(cfg, S)) + 1
        need = lambda s, t: (attention_page_bytes(cfg, s, t), attention_page_ops(cfg, s, t))  # noqa: E731
        admit_input(WorkBudget.from_environment(), M_("Reading this input"), need, S, T)
        if forward_ops(cfg, S, T) <= IN_PROCESS_OPS:
            ids = own_output(model_key, text, _model, _tokenizer) if decode else None
            return _with_spinner(spinner, lambda: lazy_pass(_model, _tokenizer, text, target, changes, decode,
                                                            ids)[1])()  # fmt: skip
        ids, cap = run_with_progress(lazy_pass, _model, _tokenizer, text, target, changes, decode, known,
                                     progress=None, key=key, label=LONG_READING)  # fmt: skip
        if decode and known is None:
            DECODES.put((model_key, text), ids)
        return cap.attach(_model)

    return LAZY.get(key, compute)


def cached_trace(
    model_key: str, text: str, prefix: tuple[int, ...], top_k: int, _model, _tokenizer, changes: Interventions = NONE
) -> Trace:
    """Greedy decoding with top_k candidates per step, once per (model key, text, forced prefix, top_k,
    interventions): TRACES holds at most 64 and 128 MB. Without a forced prefix (and without a shuffle), read from
    one pass over the shared decode's output; otherwise decoded step by step
    (greedy_decode with the interventions)."""

    def decode() -> Trace:
        if not prefix and not changes.needs_full_prefix:
            ids = own_output(model_key, text, _model, _tokenizer, changes)
            if changes:  # the changed model's own output, read by the changed model: this trace's own pass, over
                # the positions the decoding ran (a shift leaves no room for one more)
                cap = _pass_on(_model, _tokenizer, text, ids[: len(ids) - 1], False, changes)
            else:  # the attention page's capture of this input: one pass for both pages
                cap = cached_capture(model_key, text, None, _model, _tokenizer, spinner=None)
            return trace_from_pass(cap, ids, _tokenizer.target, top_k, changes)
        return greedy_decode(_model, _tokenizer, text, top_k=top_k, prefix=prefix, interventions=changes)

    return TRACES.get(
        _changed((model_key, text, tuple(prefix), top_k), changes), _with_spinner(N_("Decoding…"), decode)
    )


def cached_html(key: tuple, build: Callable[[], str]) -> str:
    """An HTML view (bertviz) once per key and language, e.g. (model key, text, target, view, kind, layer): at most 16
    and 64 MB. The page's words are in the reader's language, so the language is part of the key."""
    from i18n import language

    return HTML.get((*key, language()), _with_spinner(N_("Drawing…"), build))


def input_key(session: Session) -> tuple[str, str, str | None]:
    """(model key, source text, target text or None): what a capture of this session depends on."""
    return session.key, session.check.text, session.target_check.text if session.target_check else None


def session_capture(session: Session, spinner: str | None = RUNNING, changes: Interventions = NONE) -> Capture:
    return cached_capture(*input_key(session), session.model, session.tokenizer, spinner=spinner, changes=changes)


def session_importance(session: Session, progress: Callable[[int, int], None] | None = None) -> HeadImportance:
    """head_importance() of the session's input once per (model key, text, target): at most 64 and 16 MB."""
    _, text, target = key = input_key(session)
    cfg = session.model.config
    source = source_length(session.tokenizer.source, cfg, text)
    decoder = steps_for(cfg, source) + 1 if target is None else source_length(session.tokenizer.target, cfg, target)
    budget = WorkBudget.from_environment()
    rows = importance_batch(cfg, source, decoder, budget, MAX_ROWS)  # batched passes sized to the budget
    if rows < 1:
        raise BudgetExceeded(
            budget.refusal(
                M_("Head importance on this input"),
                importance_row_bytes(cfg, source, decoder),
                M_("a shorter input is needed."),
            )
        )
    return IMPORTANCE.get(
        key,
        lambda: head_importance(session.model, session.tokenizer, text, target, progress=progress, batch_size=rows),
    )


def has_importance(session: Session) -> bool:
    """Whether the head importance of the session's input is computed already (shown without asking)."""
    return input_key(session) in IMPORTANCE


def trained_longest(card: dict) -> int | None:
    """The longest training input a demo's card names (tasks.length_experiment.training_range), None if none."""
    from tasks.length_experiment import training_range

    try:
        return training_range(card)[1]
    except (ValueError, TypeError, KeyError):
        return None


def demo_exact_match(
    model_key: str, model, tokenizer, card: dict, changes: Interventions, n: int = 200
) -> intervened.MatchResult:
    """Exact match of a shipped demo on n fresh examples of its task with `changes` applied, once per
    (model key, changes, n). UnknownTraining when the card does not say how the model was trained; ValueError when
    a change does not fit the examples (a shift past max_len)."""
    from ui.serving.disk_cache import checkpoint_cached
    from ui.serving.workers import heartbeat, run_limited, session_gone  # in a limited worker process

    def compute() -> intervened.MatchResult:  # the fresh examples too: drawing them excludes the training set
        cfg = model.config  # counted before it starts: n examples at the longest input its card trained on
        longest = min(cfg.max_len, trained_longest(card) + 2) if trained_longest(card) else cfg.max_len
        admit_examples(cfg, M_("Exact match on {n} fresh examples", n=n), n, longest, longest,
                       WorkBudget.from_environment())  # fmt: skip
        return run_limited(intervened.exact_match_fresh, model, tokenizer, card, n, changes,
                           on_progress=heartbeat(), should_stop=session_gone)  # fmt: skip

    # as trained, or with positions changed: depends on the checkpoint only
    params = intervened.match_params(n, changes)
    return MATCHES.get(  # a shipped demo's result comes from its results.json (scripts/precompute.py)
        (model_key, changes, n),
        lambda: checkpoint_cached(model_key, "exact_match", params, compute, decode=intervened.match_from_json),
    )


def session_qkv_capture(session: Session) -> Capture:
    """capture(..., qkv=True) once per (model key, text, target): QKV holds at most 16 of them and 128 MB."""
    _, text, target = key = input_key(session)
    return QKV.get(
        key,
        _with_spinner(
            N_("Recording Q, K, V…"),
            lambda: _capture(session.key, text, target, session.model, session.tokenizer, True, NONE),
        ),
    )


def _npz(session: Session, changes: Interventions = NONE) -> bytes:
    """The session's capture as .npz bytes; built when the download is requested, never kept."""
    from model.analysis.export import capture_npz

    return capture_npz(session_capture(session, spinner=None, changes=changes))


def _json(session: Session, changes: Interventions = NONE) -> str:
    """The session's capture as JSON; built when the download is requested, never kept."""
    from model.analysis.export import capture_json

    return capture_json(session_capture(session, spinner=None, changes=changes))


def capture_downloads(session: Session, page: str, changes: Interventions = NONE) -> None:
    """Two buttons that every page shows: the captured attention and PE as .npz and as JSON.

    The files are made only when a button is pressed (st.download_button runs a callable then, on its own
    thread): a page run that nobody downloads from costs nothing here. With the capture already cached (the
    page showed it), that is only the conversion; otherwise the model runs then, once. With `changes`, the
    capture of the changed model, which records them (Capture.interventions, in both files).
    """
    download_row(
        (_("Download attention and PE (.npz)"), partial(_npz, session, changes), "capture.npz", f"{page}_dl_npz"),
        (_("Download attention and PE (.json)"), partial(_json, session, changes), "capture.json", f"{page}_dl_json"),
    )


def pe_downloads(length: int, d_model: int, base: float) -> tuple[Callable[[], bytes], Callable[[], str]]:
    """The sinusoidal table and its wavelengths as .npz and JSON: two callables for st.download_button."""
    from model.analysis import pe_analysis as pea
    from model.analysis.export import pe_json, pe_npz

    def arrays():
        return dict(pe=pea.pe_table(length, d_model, base), wavelengths=pea.pe_wavelengths(d_model, base))

    return (lambda: pe_npz(**arrays())), (lambda: pe_json(**arrays()))


# -- decoding strategies and training snapshots ---------------------------------------
# A decoding through a strategy's decode() (a sampled trace, a beam search with every step's 2K hypotheses and their
# attention rows): 32 of them and 128 MB at most.
DECODINGS: BoundedCache[Any] = BoundedCache("decodings", max_entries=32, max_bytes=128 * 2**20)


def cached_decoding(session: Session, strategy, changes: Interventions = NONE, **extra: Any) -> Any:
    """The strategy's own decode() (model/decoding/strategies.py) of the session's input, with its settings, the
    interventions and `extra` (e.g. shown=5): once per (model key, text, strategy, settings, extra, interventions).
    DECODINGS holds them."""
    module = strategy.module
    key = _changed((session.key, session.check.text, module.NAME, strategy.values, tuple(sorted(extra.items()))),
                   changes)  # fmt: skip
    model, tokenizer, text = session.model, session.tokenizer, session.check.text

    def work():  # counted only when it runs: a cached decoding costs no tokenizing
        rows = getattr(module, "rows", lambda settings: 1)(strategy.settings)  # hypotheses decoded at once
        return bounded_run(decoding_ops(model, tokenizer, text, rows), module.decode, model, tokenizer, text, key=key,
                           label=DECODING, interventions=changes, **strategy.settings, **extra)  # fmt: skip

    return DECODINGS.get(key, work)
