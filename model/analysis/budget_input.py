"""A visitor's text fitted to the work budget (model/analysis/budget.py), counted in tokens as the model's vocabulary
reads it, never by characters: `apply_budget` cuts a checked text to what fits and says so, `fit_text` keeps the
longest prefix of at most n tokens, `source_length` counts the source tokens a text gives the model. Reading is
bounded (model/text/bounded.py): a tokenizer that multiplies text is never run past the limit.
"""

from __future__ import annotations

from i18n import M_

from ..text.bounded import content_count, read_bounded
from ..text.inputs import CUTS, WHAT, count_limit  # the names and the max_len warnings of check_text's messages
from .budget import WorkBudget, largest


def fit_text(vocab, text: str, n: int) -> str:
    """The longest prefix of `text` that the vocabulary reads as at most n tokens of content (a <s> that a
    vocabulary puts in front not counted), cut where a space was when there is one: a prefix of what was typed."""

    def count(prefix: str) -> int:  # exact up to n + 1: more is never read (model/text/bounded.py)
        read = read_bounded(vocab, prefix, n)
        return content_count(vocab, read.ids) if read.complete else n + 1

    if count(text) <= n:
        return text
    end = largest(lambda m: count(text[:m]) <= n, 0, len(text))
    kept = text[: max(end, 0)]
    space = kept.rfind(" ")
    return kept[:space].rstrip() if space > 0 and not text[len(kept) : len(kept) + 1].isspace() else kept.rstrip()


def apply_budget(
    check, vocab, cfg, budget: WorkBudget, what: str = "input", source_tokens: int | None = None, cost=None
) -> None:
    """Cut a checked text (model.text.inputs.InputCheck) to what `budget` allows this model, in place: check.text
    becomes its longest prefix that fits and a warning says so; an error when not even one token fits.

    what: "input" (the source: room from source_room) or "target" (room from target_room beside
    `source_tokens` source tokens). Texts within the model's own max_len and the budget are left as they are."""
    if check.errors:
        return
    name = M_(WHAT.get(what, what))
    if what == "target":
        room = budget.target_room(cfg, source_tokens or 1, cost) - 1  # <s> comes first
    else:
        room = budget.source_room(cfg, cost) - 1  # </s> comes last
    if room < 1:
        check.errors.append(
            M_(
                "This model's attention ({heads} heads, {layers} layers) does not fit this server's work budget "
                "of {budget} even for one token.",
                heads=cfg.n_heads,
                layers=cfg.n_encoder_layers + cfg.n_decoder_layers,
                budget=budget.describe(),
            )
        )
        return
    if room >= cfg.max_len - 1:
        return  # the model's own max_len binds first: check_text has said what it cuts
    read = read_bounded(vocab, check.text, count_limit(room))  # to twice the room: more is "more than" that
    n = content_count(vocab, read.ids)
    if n <= room:
        return
    kept = fit_text(vocab, check.text, room)
    check.warnings[:] = [w for w in check.warnings if getattr(w, "template", None) not in CUTS]  # one cut, named once
    complete = read.complete and getattr(check, "complete", True)
    check.warnings.append(budget.cut_notice(cfg, name, n, room, kept, complete))
    check.text = kept


def source_length(vocab, cfg, text: str) -> int:
    """Source tokens a text gives the model (</s> included, cut to max_len as model.inputs.prepare_source does)."""
    return min(len(read_bounded(vocab, text, cfg.max_len).ids) + 1, cfg.max_len)
