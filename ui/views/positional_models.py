"""Two views of the positional page that compare the six reverse demos, which differ only in their positions:
side by side (exact match, a failure, each kind's position similarity), and the length experiment
(exact match against input length, in and beyond the trained lengths, optionally with every position shifted by k).
URL: pe_lshift.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from i18n import M_, N_, _, message_of
from model.analysis.budget import BudgetExceeded, WorkBudget, admit_examples
from model.checkpoints.demos import list_demos
from model.interventions import NONE
from tasks import length_experiment as lx
from tasks.intervened import UnknownTraining
from tasks.pe_experiment import training_sources
from ui.serving import caches
from ui.serving.bounded_cache import BoundedCache
from ui.serving.disk_cache import on_disk, stored
from ui.serving.workers import WorkerStopped, run_limited, session_gone, steady
from ui.shell import model_picker
from ui.shell.presentation import chart_box, presenting, show
from ui.shell.safe_text import md
from ui.shell.url_state import Key, Keys
from ui.views.positional_names import KINDS, without_gloss
from viz import pe_kinds_figs

FRESH = 200  # fresh examples behind each exact match of the trained lengths
SHOWN_POSITIONS = 40  # rows of the positional tables compared (the reverse demos read at most 25 tokens)
SHIFTS = (0, 1, 5, 10, 25, 50)  # k for "every position shifted by k" (49 positions + 50 fit max_len 128)
URL = Keys(Key("pe_lshift", 0, choices=SHIFTS, cast=int))
CURVES: BoundedCache[lx.LengthCurve] = BoundedCache("length curves", max_entries=64, max_bytes=2**20)


def reverse_models() -> dict[str, object]:
    """The shipped encoder-decoder reverse demos by positional kind (from each card: task, config.shape and
    config.positional), in KINDS order (the decoder-only ones, tasks/decoder_only.py, are not among the six)."""
    found = {}
    for demo in list_demos():
        config = demo.card.get("config") or {}
        kind = config.get("positional") if isinstance(config, dict) else None
        shape = config.get("shape", "encoder-decoder") if isinstance(config, dict) else None
        if demo.card.get("task") == "reverse" and shape == "encoder-decoder" and kind in KINDS and kind not in found:
            found[kind] = demo
    return {k: found[k] for k in KINDS if k in found}


def decoder_models() -> dict[str, object]:
    """The shipped decoder-only reverse demos (tasks/decoder_only.py: `stressed=` -> `desserts`) by positional kind,
    from each card, in KINDS order: the NoPE lesson's other half."""
    found = {}
    for demo in list_demos():
        config = demo.card.get("config") or {}
        kind = config.get("positional") if isinstance(config, dict) else None
        shape = config.get("shape") if isinstance(config, dict) else None
        if demo.card.get("task") == "reverse" and shape == "decoder-only" and kind in KINDS and kind not in found:
            found[kind] = demo
    return {k: found[k] for k in KINDS if k in found}


DECODER = N_("Decoder-only, {kind}")
DECODER_CURVES = N_(
    "The decoder-only curves are those measured when they were trained (tasks/decoder_only.py: {m} fresh strings "
    "per length, trained on {low}-{high} letters, every position as trained)."
)
NOPE_LESSON = N_(
    "**No positions at all** (NoPE): the causal decoder is right at least half the time up to {dec} letters, the "
    "encoder-decoder up to {encdec}. The causal mask lets each position count what it sees, so order survives "
    "(Kazemnejad et al. 2023); a bidirectional encoder without positions reads a bag of letters."
)


def nope_lesson(encdec: lx.LengthCurve | None, decoders: dict) -> None:
    """The NoPE lesson with this project's numbers: the decoder-only and the encoder-decoder demo without positions."""
    demo = decoders.get("none")
    dec = None if demo is None else lx.measured_curve(demo.card)
    if encdec is not None and dec is not None:
        st.markdown(_(NOPE_LESSON).format(dec=lx.holds_up_to(dec), encdec=lx.holds_up_to(encdec)))


def _decoder_lines(shown: dict, lines: list) -> dict:
    """The decoder-only demos' measured curves added to the length view's curves and lines; their demos."""
    decoders = decoder_models()
    for kind, demo in decoders.items():
        curve = lx.measured_curve(demo.card)
        if curve is None:
            continue
        name = _(DECODER).format(kind=_(KINDS[kind]))
        shown[name] = (curve.lengths, curve.exact_match)
        lines.append(_("**{kind}**: right at least half the time up to {n} letters.").format(kind=name,
                                                                                               n=lx.holds_up_to(curve)))  # fmt: skip
    return decoders


DECODER_TRAINED = N_("decoder-only: trained on {low}-{high}")


def _decoder_ranges(decoders: dict, trained: tuple[int, int]) -> list[tuple[str, tuple[int, int]]]:
    """The decoder-only demos' own trained lengths where they differ from the encoder-decoders' (their cards'), each
    range once, with its label for the length chart."""
    ranges = []
    for demo in decoders.values():
        try:
            found = lx.training_range(demo.card)
        except ValueError:
            continue
        if found != trained and found not in ranges:
            ranges.append(found)
    return [(_(DECODER_TRAINED).format(low=low, high=high), (low, high)) for low, high in ranges]


def trained_range(found: dict) -> tuple[int, int] | None:
    """(shortest, longest) training input of the reverse demos, from the first card that says it."""
    for demo in found.values():
        try:
            return lx.training_range(demo.card)
        except ValueError:
            continue
    return None


def _loaded(found: dict) -> dict:
    return {kind: model_picker.load(str(d.path), model_picker.stamp(d.path), None, ()) for kind, d in found.items()}


def _missing_note(found: dict) -> None:
    missing = [_(KINDS[k]) for k in KINDS if k not in found]
    if missing:
        st.info(
            _("Not shipped with this installation: the reverse model with {missing}. The comparison shows the ones "
              "that are.").format(missing=_(", ").join(missing))
        )  # fmt: skip


def _curve(demo, model, tokenizer, shift: int, progress=None) -> lx.LengthCurve | None:
    """The demo's length curve for this shift: shipped in its card, computed earlier, or (with progress) now."""
    shipped = lx.card_curve(demo.card, shift)
    if shipped is not None:
        return shipped
    key = (demo.name, model_picker.stamp(demo.path), shift, lx.LENGTH_EXAMPLES)
    params = (shift, lx.LENGTH_EXAMPLES)  # on disk under the checkpoint's digest
    if progress is None:
        if key in CURVES:
            return CURVES.get(key, lambda: None)
        if stored(demo.path, "length_curve", params):
            return CURVES.get(key, lambda: on_disk(demo.path, "length_curve", params, lambda: None))
        return None
    low, high = lx.training_range(demo.card)
    recipe = demo.card.get("recipe") or {}
    seen = training_sources("reverse", int(recipe.get("train_size", 0)), int(demo.card.get("seed", 0)))
    examples = lx.examples_by_length("reverse", range(1, 2 * high + 1), lx.LENGTH_EXAMPLES, exclude=seen)

    def compute() -> lx.LengthCurve:  # in a limited worker process: stopped at the deadline or on a rerun
        n = sum(len(e) for e in examples.values())  # counted before it starts: every example at the longest length
        admit_examples(model.config, M_("The length curve of {n} strings", n=n), n, 2 * high + 2 + shift, 2 * high + 2,
                       WorkBudget.from_environment())  # fmt: skip
        return run_limited(
            lx.length_curve,
            model,
            tokenizer,
            examples,
            shift,
            progress=True,
            on_progress=steady(progress),
            should_stop=session_gone,
        )

    return CURVES.get(key, lambda: on_disk(demo.path, "length_curve", params, compute))


def length_view() -> None:
    found = reverse_models()
    _missing_note(found)
    if not found:
        return
    trained = trained_range(found)
    if trained is None:
        st.info(_("The reverse demos' cards do not say which lengths they were trained on: no length experiment."))
        return
    low, high = trained
    shift = URL.read("pe_lshift")
    st.segmented_control(_("Every position shifted by k"), list(SHIFTS), key="pe_lshift", required=True,
                         format_func=lambda k: _("as trained") if k == 0 else f"k = {k}")  # fmt: skip
    URL.write(pe_lshift=shift)
    st.markdown(
        _("Exact match against input length, from 1 to twice the longest training input ({n} letters): {m} fresh "
          "random strings per length (fewer for 1 letter: there are only 20), the same strings for every model.")
        .format(n=2 * high, m=lx.LENGTH_EXAMPLES)
    )  # fmt: skip
    loaded = _loaded(found)
    curves = {kind: _curve(d, *loaded[kind], shift) for kind, d in found.items()}
    todo = [kind for kind, c in curves.items() if c is None]
    if todo and st.button(_("Compute the {n} missing curves (about a minute each)").format(n=len(todo)),
                          key="pe_length_go"):  # fmt: skip
        bar = st.progress(0.0)
        for i, kind in enumerate(todo):

            def tick(done: int, total: int, i=i, kind=kind) -> None:
                bar.progress((i + done / total) / len(todo), _("{kind}: {done} of {total} strings").format(
                    kind=_(KINDS[kind]), done=done, total=total))  # fmt: skip

            try:  # each curve in its own limited worker
                curves[kind] = _curve(found[kind], *loaded[kind], shift, tick)
            except (WorkerStopped, BudgetExceeded) as stopped:  # stopped, or refused before it started
                st.warning(md(message_of(stopped)))
                break
        bar.empty()
    shown = {_(KINDS[k]): (c.lengths, c.exact_match) for k, c in curves.items() if c is not None}
    if not shown:
        st.info(_("No curve for this shift yet: compute them with the button above."))
        return
    title = _("Exact match by input length") if not shift else _("Exact match by input length, every position + {k}")
    lines = [
        _("**{kind}**: right at least half the time up to {n} letters.").format(kind=_(KINDS[k]), n=lx.holds_up_to(c))
        for k, c in curves.items()
        if c is not None
    ]
    decoders = _decoder_lines(shown, lines) if not shift else {}  # their curves are measured as trained only
    others = _decoder_ranges(decoders, (low, high))
    show(
        pe_kinds_figs.length_curves(shown, (low, high), title.format(k=shift), min(460, chart_box()[0] - 40), others),
        key="pe_length_curves",
        top_px=360,  # below the shift control and the sentence above, measured in presentation mode at 1366x768
    )
    st.markdown("  \n".join(lines))
    if decoders:
        first = next(iter(decoders.values()))
        d_low, d_high = lx.training_range(first.card)
        measured = lx.measured_curve(first.card)
        st.caption(_(DECODER_CURVES).format(m=int(measured.examples.max()), low=d_low, high=d_high))
        nope_lesson(curves.get("none"), decoders)
    drawn = [c for c in curves.values() if c is not None]
    past = [max(lx.all_below_from(c, 0.1) for c in drawn)] if drawn else []
    if past and high < past[0] <= int(drawn[0].lengths.max()):
        st.markdown(_("From {n} letters on, every model is right less than one time in ten: no kind carries the task "
                      "far past the lengths it was trained on.").format(n=past[0]))  # fmt: skip
    sinus = curves.get("sinusoidal")
    if sinus is not None and not shift:
        verdict = (_("The paper hoped sinusoids \"may allow the model to extrapolate to sequence lengths longer than "
                     "the ones encountered during training\". Here they do not: the sinusoidal curve falls to zero "
                     "within a few letters past the shaded range.")
                   if lx.holds_up_to(sinus) <= high + 3 else
                   _("The paper hoped sinusoids would extrapolate past the training lengths; here the sinusoidal "
                     "model stays right beyond the shaded range."))  # fmt: skip
        st.markdown(verdict)
    st.caption(
        _("Shifting every position by k changes nothing for RoPE, ALiBi and T5's bias (they see only distances) and "
          "everything a model with absolute positions learned about where a string starts.")
    )  # fmt: skip


def models_view() -> None:
    """The reverse models that differ only in positions: exact match in and beyond the trained lengths, a typical
    failure of each, and each kind's position similarity, one colour range per row of maps."""
    found = reverse_models()
    _missing_note(found)
    if not found:
        return
    loaded = _loaded(found)
    trained = trained_range(found)
    if trained is None:
        st.markdown(_("**Exact match on {n} fresh examples**").format(n=FRESH))
    else:
        low, high = trained
        st.markdown(_("**Exact match**: {n} fresh examples of the trained lengths ({low}-{high} letters); beyond them, "
                      "the length experiment's {high1}-{high2} letters").format(n=FRESH, low=low, high=high,
                                                                            high1=high + 1, high2=2 * high))  # fmt: skip
    failures = []
    for column, (kind, demo) in zip(st.columns(len(found)), found.items()):
        model, tokenizer = loaded[kind]
        try:
            with st.spinner(_("Scoring {n} fresh examples…").format(n=FRESH)):
                result = caches.demo_exact_match(f"demo:{demo.name}", model, tokenizer, demo.card, NONE, FRESH)
        except UnknownTraining:
            column.metric(_(KINDS[kind]), "—", help=_("its card does not say how it was trained"))
            continue
        except (WorkerStopped, BudgetExceeded) as stopped:  # the deadline, the memory limit, or refused up front
            column.metric(_(KINDS[kind]), "—")
            column.caption(md(message_of(stopped)))
            continue
        curve = None if trained is None else _curve(demo, model, tokenizer, 0)
        beyond = None if curve is None else float(np.mean(curve.exact_match[curve.lengths > trained[1]]))
        label, why = _metric_label(_(KINDS[kind]), demo.name)
        column.metric(label, f"{result.exact_match:.0%}", help=why)
        if beyond is not None:
            column.caption(_("{v:.0%} beyond").format(v=beyond))
        if result.failure is not None:
            failures.append((kind, result.failure))
    if presenting():  # on a projector the maps come first, on the first screen; the decoder-only row and failures under
        _similarity_rows(loaded)
    _decoder_metrics(found, loaded)
    for kind, (typed, target, output) in failures[:3]:
        st.markdown(
            _("{kind}: `{input}` → `{output}` (should be `{target}`)").format(
                kind=_(KINDS[kind]), input=typed, output=output or "∅", target=target
            )
        )  # fmt: skip  (demo letters only)
    if not presenting():
        _similarity_rows(loaded)


def _metric_label(title: str, demo: str) -> tuple[str, str]:
    """(label, help) of a demo's metric: on a projector the title without its gloss, which would be cut in a sixth
    of the row ("RoPE（旋转位置…"), the full title then in the help beside the demo's name."""
    return (without_gloss(title), f"{title} · {demo}") if presenting() else (title, demo)


DECODER_MATCH = N_(
    "**Decoder-only** (no encoder, one causal sequence `stressed=desserts`): exact match on {n} fresh examples of "
    "their trained lengths ({low}-{high} letters)"
)


def _decoder_metrics(found: dict, loaded: dict) -> None:
    """The decoder-only demos' exact match (shipped in their results.json, scripts/precompute.py) in a row under the
    six kinds, and the NoPE lesson with the encoder-decoder without positions."""
    decoders = decoder_models()
    if not decoders:
        return
    first = next(iter(decoders.values()))
    try:
        low, high = lx.training_range(first.card)
    except ValueError:
        return
    st.markdown(_(DECODER_MATCH).format(n=FRESH, low=low, high=high))
    for column, (kind, demo) in zip(st.columns(max(len(found), len(decoders))), decoders.items()):
        model, tokenizer = _loaded({kind: demo})[kind]
        name = _(DECODER).format(kind=_(KINDS[kind]))
        try:
            with st.spinner(_("Scoring {n} fresh examples…").format(n=FRESH)):
                result = caches.demo_exact_match(f"demo:{demo.name}", model, tokenizer, demo.card, NONE, FRESH)
        except (UnknownTraining, WorkerStopped):
            column.metric(name, "—")
            continue
        label, why = _metric_label(name, demo.name)
        column.metric(label, f"{result.exact_match:.0%}", help=why)
    encdec = found.get("none")
    nope_lesson(None if encdec is None else _curve(encdec, *loaded["none"], 0), decoders)


def _similarity_rows(loaded: dict) -> None:
    """Row 1: cosine similarity of positions (added tables; RoPE's rotations), one range [-1, 1]. Row 2: the bias
    ALiBi and T5 add to the scores (head average), one range for both."""
    from ui.views import (
        positional_views,  # each kind's app half says how its positions compare (ui/views/positional_views/)
    )

    P = SHOWN_POSITIONS
    cosine, bias = {}, {}
    for name, (model, *_rest) in loaded.items():
        row, matrix = positional_views.of(name).similarity(model, P)
        (cosine if row == "cos" else bias)[name] = matrix
    height = 360 if presenting() else 300  # beside the sidebar the four maps are about 180 px wide
    for heading, maps, label in (
        (_("**How alike two positions look** (cosine similarity of the rows added; RoPE: of a vector turned to "
           "each position), one colour range: −1 to 1"), cosine, "cos"),
        (_("**The bias on the scores** (head average, encoder), one colour range for both"), bias, _("bias")),
    ):  # fmt: skip
        if not maps:
            continue
        st.markdown(heading)
        zrange = (-1.0, 1.0) if label == "cos" else None  # the bias: the range of both maps
        # One chart a row, one colour bar: the maps as large as the width allows (at most 4 a row)
        show(
            pe_kinds_figs.head_maps(list(maps.values()), [_(KINDS[k]) for k in maps], label, height, zrange=zrange),
            key=f"pe_models_maps_{label}",
            top_px=400,  # below the header, the scores and the heading (measured in presentation mode at 1366x768)
        )
