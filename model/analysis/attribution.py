"""Which source tokens explain each output token: attention rollout and flow, gradients, occlusion.

    attribute(model, tokenizer, source, target=None, method="occlusion", interventions=None) -> Attribution

Attribution.scores is (T, S): row t explains the output token written at decoder position t (the decoder input
shifted by one, </s> last when the output ends with it), one column per source token (</s> included). The output is
`target` (then </s>) or the unchanged model's greedy output for the source, teacher-forced with the decoder input
held fixed, as head importance (model/analysis/importance.py) scores it; `interventions` (heads off, positions changed) apply
to every pass, through the same recording hooks.

The methods are a registry (model/analysis/attribution_methods/): one module each says what it computes (its
docstring), its title, explanation and settings; METHODS lists their names in the page's order. Every method runs
the model's own forward pass: the gradient methods differentiate `model.encode(src, embeds=x)` then `model.decode`,
x the output of the source embedding table (before the sqrt(d_model) scale and the positions), so rotary, ALiBi and
relative positions, norms and interventions are those of every other view (tests/test_one_forward_path.py).

Decoder-only and encoder-only models, through the same methods and passes (model/analysis/scored.py says
what is scored): a decoder-only model's "source" is its prompt and each row explains a token of the continuation
(its greedy one, or `target`), the continuation held fixed as an encoder-decoder's decoder input; the gradient methods
differentiate `model.decode` of the whole sequence from the prompt's embeddings (the continuation's looked up).
An encoder-only model with an output head (BERT's masked-LM head): each row explains the head's top prediction at
one position by every token of the text; rollout and flow run through its one stack. `attention_over_source` gives
the raw attention a page shows beside the methods: cross-attention, or the one stack's self-attention rows.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from torch import nn

from ..interventions import NONE, Interventions
from ..text.inputs import require_eval
from ..text.tokenizer import Tokenizer
from .attribution_methods.passes import keep_masks, output_log_prob
from .attribution_methods.registry import METHODS as REGISTRY
from .scored import prepare

METHODS = tuple(REGISTRY)  # ("rollout", "flow", "grad_x_input", "integrated_gradients", "occlusion")
_CHOICES = {c.name: tuple(c.options) for module in REGISTRY.values() for c in module.SETTINGS}
BASELINES, REPLACEMENTS = _CHOICES["baseline"], _CHOICES["replacement"]  # the registry's own option lists
DEFAULT_STEPS = 32  # integrated gradients: Gauss-Legendre points per piece of the path
MAX_STEPS = 1024

__all__ = ["METHODS", "Attribution", "attention_over_source", "attribute", "explained_sizes", "attributions_json",
           "attributions_npz", "keep_masks", "output_log_prob", "plans"]  # fmt: skip


@dataclass
class Attribution:
    """One method's scores of every output token over the source tokens, and what it was computed with."""

    method: str
    source_tokens: list[str]  # S, ending with </s>
    target_tokens: list[str]  # the decoder's inputs <s> y_1 .. y_{T-1}
    output_tokens: list[str]  # T: the scored tokens y_1 .. y_T (</s> last when the output ends with it)
    scores: np.ndarray  # (T, S) float64
    generated: bool  # True when the output is the model's own greedy output
    settings: dict  # what the method used: {"steps": 64, "baseline": "zero"} / {"replacement": "<unk>"} / {}
    interventions: dict = field(default_factory=dict)  # Interventions.describe() of every pass
    log_probs: np.ndarray | None = None  # (T,) log p of each output token (gradient methods and occlusion)
    # integrated gradients only: (T,) log p(y_t | x) - log p(y_t | baseline), what each row should sum to
    expected_sums: np.ndarray | None = None
    # (T,) the token read at the position that writes each output token (the row convention's hover): the decoder
    # input (encoder-decoder, decoder-only), or the text's own token there (encoder-only)
    row_inputs: list[str] = field(default_factory=list)

    def row_sums(self) -> np.ndarray:
        return self.scores.sum(axis=1)


def attribute(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    target: str | None = None,
    method: str = "occlusion",
    interventions: Interventions | None = None,
    steps: int = DEFAULT_STEPS,
    baseline: str = "pad",
    replacement: str = "unk",
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
    plan=None,
) -> Attribution:
    """One method's (T, S) scores for the output of `source` (see each method's module for what it computes).

    steps and baseline: integrated gradients; replacement: occlusion. batch_size: most rows of one pass.
    progress(done, total): after each batch of the slow methods (flow, gradients, occlusion).
    plan: the method's budget.Plan (rows of one backward pass, pieces of integrated gradients' path in all), counted
    before the work starts (`plans`, each method module's `plan`); None: the methods' own limits.
    ValueError naming a bad method, setting or intervention.
    """
    if method not in REGISTRY:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {', '.join(BASELINES)}, got {baseline!r}")
    if replacement not in REPLACEMENTS:
        raise ValueError(f"replacement must be one of {', '.join(REPLACEMENTS)}, got {replacement!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be a whole number from 1 to {MAX_STEPS}, got {steps!r}")
    require_eval(model)
    changes = interventions or NONE
    prep = prepare(model, tokenizer, source, target)
    cfg = model.config
    lengths = (len(prep.src), len(prep.inputs)) if cfg.has_encoder else (0, len(prep.inputs))  # as capture checks
    changes.check(model, lengths)
    options = {"steps": steps, "baseline": baseline, "replacement": replacement, "plan": plan}
    scores, settings, extra = REGISTRY[method].compute(
        model, tokenizer, source, target, prep, changes, options, batch_size, progress
    )
    vocab = tokenizer.target
    read = vocab.decode(prep.inputs) if prep.inputs else list(prep.src_tokens)
    row_inputs = [read[prep.first + t] if prep.first + t < len(read) else "" for t in range(len(prep.scored))]
    return Attribution(
        method=method,
        row_inputs=row_inputs,
        source_tokens=prep.src_tokens,
        target_tokens=vocab.decode(prep.inputs),
        output_tokens=vocab.decode(prep.scored),
        scores=np.asarray(scores, dtype=np.float64),
        generated=target is None,
        settings=settings,
        interventions=changes.describe(),
        **extra,
    )


def attention_over_source(cap, sources: int) -> tuple[str, np.ndarray]:
    """(kind, (L, H, rows, S)) the raw attention of the positions that write the output over the source tokens, as
    the attribution methods' rows and columns: an encoder-decoder's cross-attention; a decoder-only model's
    self-attention from the prompt's last position on (row t writes output token t) over the prompt's `sources`
    tokens; an encoder-only model's self-attention."""
    if cap.cross.shape[0]:
        return "cross", cap.cross
    if cap.decoder_self.shape[0]:
        return "decoder_self", cap.decoder_self[:, :, sources - 1 :, :sources]
    return "encoder_self", cap.encoder_self


def explained_sizes(model: nn.Module, tokenizer: Tokenizer, text: str, cap) -> tuple[int, int]:
    """(source tokens, output tokens) the methods explain for `text` and its capture (at most; before computing):
    an encoder-decoder's source and decoder inputs, a decoder-only model's prompt and continuation (+ </s>), an
    encoder-only model's text on both sides."""
    from ..text.inputs import prepare_sequence

    cfg = model.config
    if cfg.has_encoder:
        n = len(cap.source_tokens)
        return (n, len(cap.target_tokens)) if cfg.has_decoder else (n, n)
    prompt = len(prepare_sequence(model, tokenizer, text).ids)
    return prompt, len(cap.target_tokens) - prompt + 1


def plans(cfg, S: int, T: int, methods, settings: dict, budget) -> dict:
    """{method: budget.Plan} of each of `methods` on S source tokens and T decoder inputs (each method module's
    `plan`), all counted before any starts and together within one request's operations: the methods with a fixed
    cost first, then the adaptive ones (ADAPTIVE: integrated gradients' halving) with what the others leave.
    BudgetExceeded (its message says what fits) for the first that does not fit."""
    from dataclasses import replace

    out, used = {}, 0
    for method in sorted(methods, key=lambda m: getattr(REGISTRY[m], "ADAPTIVE", False)):
        left = replace(budget, max_ops=max(0, budget.ops - used))
        out[method] = REGISTRY[method].plan(cfg, S, T, settings, left)
        used += out[method].ops
    return {m: out[m] for m in methods}


# -- downloads -------------------------------------------------------------------------------------


def attributions_npz(results: dict[str, Attribution]) -> bytes:
    """Each method's scores as scores_<method> (T, S), plus the token lists and settings (JSON), in one .npz."""
    first = next(iter(results.values()))
    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        **{f"scores_{m}": r.scores for m, r in results.items()},
        source_tokens=np.array(first.source_tokens, dtype=str),
        output_tokens=np.array(first.output_tokens, dtype=str),
        settings=np.array(json.dumps({m: r.settings for m, r in results.items()})),
        interventions=np.array(json.dumps(first.interventions)),
    )
    return buf.getvalue()


def attributions_json(results: dict[str, Attribution]) -> str:
    """The same as JSON: tokens, then per method its settings and scores (rows: output tokens)."""
    first = next(iter(results.values()))
    return json.dumps(
        {
            "source_tokens": first.source_tokens,
            "output_tokens": first.output_tokens,
            "interventions": first.interventions,
            "methods": {
                m: {"settings": r.settings, "scores": np.round(r.scores, 6).tolist()} for m, r in results.items()
            },
        },
        ensure_ascii=False,
    )
