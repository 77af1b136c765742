"""What a demo card's task adds to what the app shows: the card's description in the reader's language, and the
warning when a sentence leaves the task's grammar. The library (model/) reads cards but knows no task."""

from __future__ import annotations

import re
from typing import Any

from i18n import M_, N_, Message

from .registry import TASKS
from .tasks import ADJECTIVE_ONLY, PUNCTUATION, _patterns


def card_description(card: dict[str, Any]) -> str:
    """The card's description; when it is one of the built-in task's own sentences (Task.descriptions: the task's,
    a decoder-only demo's), that sentence as an i18n Message (so the app shows it in the reader's language). A card
    written by someone else is shown as written."""
    text = str(card.get("description", "")) if isinstance(card, dict) else ""
    task = TASKS.get(str(card.get("task", ""))) if text else None
    known = task.descriptions(card) if task is not None else []
    return next((d for d in known if str(d) == text), text)


def grammar_warning(card: dict, text: str) -> Message | None:
    """A warning when every word is the task's but the sentence follows none of its patterns (e.g. fr_en's "le chat
    noir mange": no object), else None: such a model knows its task's sentence patterns only, not the language."""
    task = TASKS.get(str(card.get("task", ""))) if isinstance(card, dict) else None
    if task is None or not task.outside_patterns(text):
        return None
    return M_(
        "Every word is one this model knows, but the sentence follows none of the patterns it was trained on "
        "(see its examples): it learned its task's sentences, not the language, so its output here is a guess."
    )


ENDS_WITH = N_(
    "This model continues an input that ends with “{end}”, as in its examples ({example}): add “{end}” at the end, "
    "or its output is a guess."
)


def format_warning(card: dict, text: str) -> Message | None:
    """A warning when the card says how an input ends (input_format.ends_with: a decoder-only demo's prompt
    `stressed=`) and the text does not end so, else None (also for an empty text: the vocabulary's check says it)."""
    end = _ends_with(card)
    if end is None or not text.strip() or text.rstrip().endswith(end):
        return None
    examples = card.get("examples") or []
    return M_(ENDS_WITH, end=end, example=str(examples[0]) if examples else end)


def _ends_with(card: dict) -> str | None:
    fmt = card.get("input_format") if isinstance(card, dict) else None
    end = fmt.get("ends_with") if isinstance(fmt, dict) else None
    return end if isinstance(end, str) and end else None


def pack_checks(card: dict) -> dict:
    """The checks the app makes on typed text beyond the vocabulary's, as data the lecture pack's page applies
    (pack/static/pack_live.js): "trained", the card's range of input lengths
    (model.text.trained_range.trained_range_warning), "ends_with", how an input ends (format_warning: {"end",
    "example"}), and
    "grammar", the task's word classes and sentence patterns (grammar_warning: a word's class is the first of its
    classes in alphabetical order, None for words that can only be adjectives, which patterns leave out; a pattern is
    its classes joined by spaces; "ends": the pattern of a word's punctuation at either end, which the check strips)."""
    out: dict = {}
    bounds = card.get("input_tokens") if isinstance(card, dict) else None
    if isinstance(bounds, dict) and isinstance(bounds.get("min"), int) and isinstance(bounds.get("max"), int):
        out["trained"] = {"low": bounds["min"], "high": bounds["max"], "unit": str(bounds.get("unit", "tokens"))}
    if (end := _ends_with(card)) is not None:
        examples = card.get("examples") or []
        out["ends_with"] = {"end": end, "example": str(examples[0]) if examples else end}
    task = TASKS.get(str(card.get("task", ""))) if isinstance(card, dict) else None
    classes = task.word_classes() if task is not None else None
    if classes is not None:
        marks = "".join("\\" + ch if ch in "\\[]^-" else ch for ch in PUNCTUATION)  # a character class's
        out["grammar"] = {
            "lowercase": bool(task.lowercase),
            "ends": f"^[{marks}]+|[{marks}]+$",  # a regular expression that Python and JavaScript read alike
            "classes": {w: None if c == ADJECTIVE_ONLY else min(c) for w, c in sorted(classes.items())},
            "patterns": sorted(" ".join(p) for p in _patterns(task)),
        }
    return out


_MACHINE = re.compile(r"(\d+)-core CPU \((.*)\), (\d+) threads?, torch (\S+)")


def machine_text(trained_on: str) -> Message | str:
    """The card's `trained_on` ("2-core CPU (AMD EPYC), 1 threads, torch 2.13.0+cpu", as tasks/train.py writes it)
    as a Message in the reader's language, one thread said as such; any other text as written."""
    found = _MACHINE.fullmatch(str(trained_on).strip())
    if found is None:
        return str(trained_on)
    cores, cpu, threads, torch = found.groups()
    if threads == "1":
        return M_("{cores}-core CPU ({cpu}), one thread, torch {torch}", cores=cores, cpu=cpu, torch=torch)
    return M_("{cores}-core CPU ({cpu}), {threads} threads, torch {torch}", cores=cores, cpu=cpu, threads=threads,
              torch=torch)  # fmt: skip


def label_smoothing_note(card: dict[str, Any]) -> Message | None:
    """Why a trained demo's top choice sits near 1 − ε at almost every step: it was trained with label smoothing ε
    (its targets gave the right token 1 − ε and spread ε over the others), so a sure model says about 1 − ε, not
    100%. None when the card records no label smoothing."""
    recipe = card.get("recipe") if isinstance(card, dict) else None
    smoothing = recipe.get("label_smoothing") if isinstance(recipe, dict) else None
    if not isinstance(smoothing, (int, float)) or not 0 < smoothing < 1:
        return None
    return M_(
        "Why the top choice is about {top} at almost every step: this model was trained with label smoothing "
        "{eps} (its targets gave the right token {top} and spread {eps} over all the others), so even when it is "
        "sure it says about {top}, not 100%.",
        top=f"{1 - smoothing:.0%}",
        eps=f"{smoothing:g}",
    )


def measured_lines(card: dict[str, Any]) -> list[Message]:
    """What a demo card measured beyond exact match, as sentences in the reader's language: the induction demo's
    numbers (tasks/induction.py `measure`: its best induction head against a perfect one, the accuracy on each half,
    the head switched off, the snapshots' change). [] when the card has none."""
    found = card.get("induction") if isinstance(card, dict) else None
    if not isinstance(found, dict):
        return []
    try:
        layer, head = (int(x) for x in found["best_induction_head"])
        lines = [
            M_(
                "Best induction head: layer {layer}, head {head}, {share} of a perfect head's score on {n} fresh "
                "sequences. Next-token accuracy: {repeated} on the repeated half, {first} on the first (chance "
                "{chance}); with that head switched off, {without} on the repeated half.",
                layer=layer,
                head=head,
                share=f"{float(found['best_induction_share']):.0%}",
                n=int(found["sequences"]),
                repeated=f"{float(found['accuracy_repeated_half']):.0%}",
                first=f"{float(found['accuracy_first_half']):.0%}",
                chance=f"{float(found['chance']):.0%}",
                without=f"{float(found['repeated_half_without_best']):.0%}",
            )
        ]
        snaps = found.get("snapshots") or []
        if len(snaps) >= 2:
            lines.append(
                M_(
                    "During training the best induction score went from {before} of a perfect head's (step {first}) "
                    "to {after} (step {last}).",
                    before=f"{float(snaps[0]['induction_share']):.0%}",
                    first=int(snaps[0]["step"]),
                    after=f"{float(snaps[-1]['induction_share']):.0%}",
                    last=int(snaps[-1]["step"]),
                )
            )
        return lines
    except (KeyError, TypeError, ValueError):  # a card written by someone else: nothing claimed
        return []
