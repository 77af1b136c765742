"""Head roles over many inputs: which heads look at the previous token, at an earlier copy of the current token, at
the token after that copy (induction heads) or at the first token, as TransformerLens's head detector scores them.

For one sequence of ids a role is a detection pattern P (T, T) of 0/1, lower-triangular (TransformerLens's
`get_*_detection_pattern`); a head's score on that sequence is (A * P).sum() / A.sum() for its attention map A
(TransformerLens's `error_measure="mul"`, `exclude_bos=False`, `exclude_current_token=False`), and its score on a
set of sequences the mean over them.

    previous_token    P[i, i-1] = 1
    duplicate_token   P[i, j] = 1 where j < i and ids[j] == ids[i]
    induction         P[i, j] = 1 where 0 < j <= i and ids[j-1] == ids[i] (j - 1 != i): the token after an earlier copy
    first_token       P[i, 0] = 1 (the attention sink)

A perfect head (all of each row's weight on the pattern where the row has any) scores the share of rows whose
pattern is not empty: about 0.5 for induction on a sequence repeated twice, since the first copy's rows count too.

Inputs: a text (read as capture() reads it), or a list of token ids read as they are. With texts=None, induction
and duplicate_token read seeded sequences of random tokens repeated twice (Olsson et al. 2022), the other roles
seeded sequences of random tokens; the app and the command pass a corpus the model was trained on instead
(tasks/atlas_corpus.py).

Every map is read by `map_each` (model/analysis/batched_maps.py: many inputs in batched passes, each input's maps as
capture() gives them), or by `batched_maps.head_maps` (one input through capture()).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np
from torch import nn

from ..text.tokenizer import Tokenizer
from .batched_maps import Item, end_ids, map_each

ROLES = ("previous_token", "duplicate_token", "induction", "first_token")
REPEATED = ("induction", "duplicate_token")  # roles whose default inputs are random tokens repeated twice
RANDOM_TEXTS = 20  # sequences drawn when texts=None
RANDOM_LENGTHS = (15, 25)  # tokens in one copy of a random sequence (inclusive)

# -- detection patterns (TransformerLens, head_detector.py) --------------------------------------------------------


def duplicate_pattern(ids: Sequence[int]) -> np.ndarray:
    """(T, T): 1 where an earlier position holds the same id (the diagonal left out), lower triangle only."""
    a = np.asarray(ids)
    eq = (a[:, None] == a[None, :]).astype(np.float64)
    np.fill_diagonal(eq, 0.0)
    return np.tril(eq)


def detection_pattern(role: str, ids: Sequence[int]) -> np.ndarray:
    """The role's (T, T) 0/1 pattern for this sequence of ids (rows: query positions, columns: keys)."""
    n = len(ids)
    if role == "previous_token":
        out = np.zeros((n, n))
        out[1:, :-1] = np.eye(n - 1) if n > 1 else out[1:, :-1]
        return out
    if role == "duplicate_token":
        return duplicate_pattern(ids)
    if role == "induction":
        dup = duplicate_pattern(ids)
        shifted = np.zeros_like(dup)
        shifted[:, 1:] = dup[:, :-1]  # roll right by one; the first column is 0 (the last one is dropped)
        return np.tril(shifted)
    if role == "first_token":
        out = np.zeros((n, n))
        out[:, 0] = 1.0
        return out
    raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")


def pattern_scores(maps: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """(L, H) scores of every head on one sequence: (A * P).sum() / A.sum() per head; maps (L, H, Tq, Tk)."""
    maps = maps.astype(np.float64)
    return (maps * pattern).sum(axis=(-1, -2)) / maps.sum(axis=(-1, -2))


def sparse_scores(maps: np.ndarray, pattern: np.ndarray, total: np.ndarray | None = None) -> np.ndarray:
    """pattern_scores(maps, pattern) read from the pattern's cells only: (L, H) sum of A over the cells where P is 1,
    over A.sum() (`total`, given when the caller has it)."""
    rows, cols = np.nonzero(pattern)
    total = maps.sum(axis=(-1, -2), dtype=np.float64) if total is None else total
    return maps[..., rows, cols].sum(axis=-1, dtype=np.float64) / total


def perfect_score(role: str, ids: Sequence[int]) -> float:
    """What a perfect head of this role scores on this sequence: the share of rows with a non-empty pattern."""
    return float((detection_pattern(role, ids).sum(axis=-1) > 0).mean())


# -- default inputs ----------------------------------------------------------------------------------------------


def ordinary_ids(model: nn.Module, tokenizer: Tokenizer) -> list[int]:
    """The token ids a random sequence draws from: the vocabulary's ids the model has, specials left out."""
    vocab = tokenizer.source
    size = min(len(vocab), model.config.src_vocab_size if model.config.has_encoder else model.config.tgt_vocab_size)
    special = {getattr(vocab, name, None) for name in ("pad_id", "bos_id", "eos_id", "unk_id")}
    special |= set(getattr(vocab, "_special_ids", ()) or ())
    special |= set(vocab.encode(""))  # what the tokenizer adds around every text (BOS, [CLS] [SEP])
    return [i for i in range(size) if i not in special]


def random_sequences(
    model: nn.Module, tokenizer: Tokenizer, n: int = RANDOM_TEXTS, seed: int = 0, repeated: bool = True
) -> list[list[int]]:
    """n seeded sequences of random tokens (RANDOM_LENGTHS each), repeated twice when `repeated`, between what the
    tokenizer puts around a text (its BOS, or BERT's [CLS] and [SEP]); cut to fit the model's positions."""
    rng = random.Random(f"head-scores:{seed}")
    pool = ordinary_ids(model, tokenizer)
    before, after = list(tokenizer.source.encode("")), end_ids(model, tokenizer)
    room = model.config.max_len - len(before) - len(after)
    out = []
    for _ in range(n):
        length = rng.randint(*RANDOM_LENGTHS)
        length = max(1, min(length, room // 2 if repeated else room))
        half = [rng.choice(pool) for _ in range(length)]
        out.append(before + half + (half if repeated else []) + after)
    return out


def default_items(model: nn.Module, tokenizer: Tokenizer, role: str, seed: int = 0) -> list[list[int]]:
    """The inputs of texts=None: random tokens repeated twice (induction, duplicate_token) or not (the others)."""
    return random_sequences(model, tokenizer, seed=seed, repeated=role in REPEATED)


# -- the maps ----------------------------------------------------------------------------------------------------


def default_kind(model: nn.Module) -> str:
    """The self-attention that reads the text: decoder_self of a decoder-only model, encoder_self otherwise."""
    return "decoder_self" if model.config.shape == "decoder-only" else "encoder_self"


def per_text_scores(
    model: nn.Module,
    tokenizer: Tokenizer,
    roles: Sequence[str],
    items: Sequence[Item],
    kind: str,
    progress: Callable[[int, int], None] | None = None,
    on_maps: Callable[[np.ndarray], None] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[list[int]]]:
    """({role: (N, L, H) each input's scores}, {role: (N,) a perfect head's score}, each input's ids): the maps of
    every input read once (batched passes: map_each), every role scored from them; on_maps(maps (L, H, T, T)) sees each input's maps."""
    for role in roles:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    scores: dict[str, list[np.ndarray]] = {r: [] for r in roles}
    perfect: dict[str, list[float]] = {r: [] for r in roles}
    seen = []

    def read(ids: np.ndarray, maps: np.ndarray) -> tuple:
        if on_maps is not None:
            on_maps(maps)
        total = maps.sum(axis=(-1, -2), dtype=np.float64)  # (L, H)
        patterns = {role: detection_pattern(role, ids) for role in roles}
        return (
            [int(i) for i in ids],
            {role: sparse_scores(maps, p, total) for role, p in patterns.items()},
            {role: float((p.sum(-1) > 0).mean()) for role, p in patterns.items()},
        )

    for ids, per_role, best in map_each(model, tokenizer, items, kind, read, progress=progress):
        seen.append(ids)
        for role in roles:
            scores[role].append(per_role[role])
            perfect[role].append(best[role])
    L, H = maps_shape(model, kind)
    return (
        {r: np.stack(v) if v else np.zeros((0, L, H)) for r, v in scores.items()},
        {r: np.asarray(v) for r, v in perfect.items()},
        seen,
    )


def maps_shape(model: nn.Module, kind: str) -> tuple[int, int]:
    cfg = model.config
    layers = cfg.n_encoder_layers if kind == "encoder_self" else cfg.n_decoder_layers
    return layers, cfg.n_heads


def check_kind(model: nn.Module, kind: str | None) -> str:
    kind = default_kind(model) if kind is None else kind
    if kind not in ("encoder_self", "decoder_self"):
        raise ValueError(f"kind must be encoder_self or decoder_self (cross: gold alignment scores), got {kind!r}")
    if kind not in model.config.attention_kinds:
        raise ValueError(f"this {model.config.shape} model has no {kind} attention")
    return kind


def head_scores(
    model: nn.Module,
    tokenizer: Tokenizer,
    role: str,
    texts: Sequence[Item] | None = None,
    kind: str | None = None,
    seed: int = 0,
) -> np.ndarray:
    """(L, H) float64: each head's score for `role` (ROLES), the mean over `texts` (texts or lists of ids; None: the
    default inputs, seeded) of (attention x detection pattern).sum() / attention.sum(), as TransformerLens's
    detect_head with error_measure="mul", exclude_bos=False, exclude_current_token=False.

    kind: the self-attention scored (default: the stack that reads the text; an encoder-decoder's decoder_self reads
    the model's own greedy output). ValueError for an unknown role or kind, or no texts."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    kind = check_kind(model, kind)
    items = default_items(model, tokenizer, role, seed) if texts is None else list(texts)
    if not items:
        raise ValueError("head_scores needs at least one text")
    scores, _, _ = per_text_scores(model, tokenizer, [role], items, kind)
    return scores[role].mean(axis=0)


def alignment_pattern(pairs: Sequence[tuple[int, int]], rows: int, keys: int) -> np.ndarray:
    """(T, S) 0/1: row j (the decoder position that writes target token j) and the source tokens linked to it."""
    out = np.zeros((rows, keys))
    for s, t in pairs:
        if 0 <= t < rows and 0 <= s < keys:
            out[t, s] = 1.0
    return out


def alignment_scores(cross: np.ndarray, pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """(L, H) cross-attention's agreement with a gold alignment on one input, the same formula: (A * P).sum() /
    A.sum() with P the gold links (alignment_pattern); cross (L, H, T, S) read with <s> + the gold target."""
    return pattern_scores(cross, alignment_pattern(pairs, cross.shape[-2], cross.shape[-1]))
