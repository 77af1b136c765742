"""Synthetic sequence-to-sequence tasks that small demo Transformers are trained on.

Each task samples `Example`s: a source text, its target text and the gold alignment between their
tokens, so the visualizer can show what a head *should* attend to next to what it does.
Standard library only: everything is generated here, nothing is downloaded.

- copy / reverse: random strings over a 20-letter alphabet (a-t), char-level.
- translate: a toy English-to-French grammar (see `tasks/task_lexicon.py`), word-level.
- dates: free-form English dates to ISO "YYYY-MM-DD", char-level (`tasks/task_dates.py`).
- fr_en: the translate grammar the other way, plus pronouns with être and avoir (`tasks/task_fr_en.py`).

Every task by name: `tasks/registry.py`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from i18n import M_, Message
from model.text.tokenizer import split

from .task_lexicon import ADJECTIVES, CONJUNCTION, DETERMINERS, NOUNS, PREPOSITIONS, VERBS

Alignment = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Example:
    """One training pair and its gold alignment."""

    source: str  # the input text as a user would type it
    target: str  # the expected output text
    alignment: Alignment  # (source_token_index, target_token_index) pairs, 0-based


PATTERN_SAMPLES = 20_000  # sentences sampled (seeded) to collect a task's patterns of word classes
ADJECTIVE_ONLY = frozenset({"adj"})
PUNCTUATION = '.,;:!?«»"“”()…'


@lru_cache(maxsize=8)
def _patterns(task: Task) -> frozenset[tuple[str, ...]]:
    """The word-class sequences of a task's sampled sentences (once per task and process: about a second)."""
    classes, rng = task.word_classes() or {}, random.Random(0)
    found = set()
    for _ in range(PATTERN_SAMPLES):
        words = split(task.sample(rng).source, "word")
        if all(w in classes for w in words):
            found.add(_pattern(words, classes))
    return frozenset(found)


def _pattern(words: Sequence[str], classes: dict[str, frozenset[str]]) -> tuple[str, ...]:
    """A sentence as word classes: a word of several classes ("médecin": noun and profession) by the first in
    alphabetical order (the same for sampled sentences and typed ones), and words that can only be adjectives left
    out (optional anywhere in a noun phrase: rare combinations of two phrases went unsampled)."""
    return tuple(min(classes[w]) for w in words if classes[w] != ADJECTIVE_ONLY)


tokens = split  # text -> tokens at a level ("char": one per character, "word": whitespace-separated)


class Task:
    """A synthetic task: how to sample examples and which tokens can ever occur."""

    name: str
    source_level: str  # "char" or "word": how the source text splits into tokens
    target_level: str  # "char" or "word"
    description: str  # one sentence for the app's UI (an i18n Message: _(description) where shown)
    lowercase: bool = False  # the source vocabulary lower-cases typed text ("Je" reads as "je")

    def sample(self, rng: random.Random) -> Example:
        """Draw one random example using only `rng` (so a seed fixes the result)."""
        raise NotImplementedError

    def source_symbols(self) -> list[str]:
        """Every token that can appear in a source, sorted."""
        raise NotImplementedError

    def target_symbols(self) -> list[str]:
        """Every token that can appear in a target, sorted."""
        raise NotImplementedError

    def examples(self) -> list[str]:
        """A few hand-picked inputs for the app's "try this" list."""
        raise NotImplementedError

    def example_for(self, source: str) -> Example | None:
        """The Example (target and gold alignment) of this exact source, when the task can tell; else None."""
        return None

    def descriptions(self, card: dict) -> list[Message]:
        """The sentences a demo card of this task is written with (i18n Messages; the app shows the one the card
        carries in the reader's language): the task's own description."""
        return [self.description]

    def word_classes(self) -> dict[str, frozenset[str]] | None:
        """Source word -> its word classes ("det", "noun", ...), for tasks whose sentences follow a grammar; else None."""
        return None

    def outside_patterns(self, source: str) -> bool:
        """True when the source is made of the task's words in an order none of its sentences has (compared by word
        class against the patterns of PATTERN_SAMPLES sampled sentences); False when in one, or when it cannot tell
        (no word classes, an unknown word: the vocabulary's warning covers that)."""
        classes = self.word_classes()
        if classes is None:
            return False
        text = source.lower() if self.lowercase else source
        words = [w.strip(PUNCTUATION) for w in split(text, "word")]
        words = [w for w in words if w]
        if not words or any(w not in classes for w in words):
            return False
        return _pattern(words, classes) not in _patterns(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class HandPickedTask(Task):
    """A task whose app examples are a fixed list of pairs: their targets and gold alignments are known, and no
    other source's (the grammar is not parsed back from arbitrary text)."""

    @staticmethod
    def _example_pairs() -> list[Example]:
        raise NotImplementedError

    def examples(self) -> list[str]:
        return [e.source for e in self._example_pairs()]

    def example_for(self, source: str) -> Example | None:
        return next((e for e in self._example_pairs() if e.source == source), None)


# --------------------------------------------------------------------------- copy / reverse

ALPHABET = "abcdefghijklmnopqrst"  # 20 symbols, easy to type
MAX_SYMBOLS = 24  # strings have 1..MAX_SYMBOLS symbols


def one_sequence_description(n: int) -> Message:
    """The description of a decoder-only demo of the reverse task, trained on strings of 1-n letters."""
    return M_("Reverse a string of 1-{n} letters a-t, written as one sequence: `stressed=` -> `desserts`.", n=n)


class SymbolTask(Task):
    """Copy a random symbol string, or reverse it."""

    source_level = target_level = "char"

    def __init__(self, reverse: bool) -> None:
        self.reverse = reverse
        self.name = "reverse" if reverse else "copy"
        self.description = (
            M_("Reverse a string of 1-{n} letters a-t, character by character.", n=MAX_SYMBOLS)
            if reverse
            else M_("Copy a string of 1-{n} letters a-t, character by character.", n=MAX_SYMBOLS)
        )

    def descriptions(self, card: dict) -> list[Message]:
        """The task's description, and for the reverse task a decoder-only demo's (one sequence, trained on 1-n
        letters: n its recipe's max_length)."""
        n = (card.get("recipe") or {}).get("max_length") if isinstance(card, dict) else None
        one = [one_sequence_description(n)] if self.reverse and isinstance(n, int) else []
        return [self.description, *one]

    def sample(self, rng: random.Random) -> Example:
        n = rng.randint(1, MAX_SYMBOLS)
        example = self.example_for("".join(rng.choice(ALPHABET) for _ in range(n)))
        assert example is not None  # n letters of ALPHABET
        return example

    def example_for(self, source: str) -> Example | None:
        n = len(source)
        if not 1 <= n <= MAX_SYMBOLS or any(ch not in ALPHABET for ch in source):
            return None
        if self.reverse:
            return Example(source, source[::-1], tuple((i, n - 1 - i) for i in range(n)))
        return Example(source, source, tuple((i, i) for i in range(n)))

    def source_symbols(self) -> list[str]:
        return list(ALPHABET)

    def target_symbols(self) -> list[str]:
        return list(ALPHABET)

    def examples(self) -> list[str]:
        if self.reverse:
            return ["stressed", "parts", "abcdefghij", "aaabbbccc", "lager"]
        return ["hello", "feedback", "abcdefghij", "abababab", "qrst"]


# --------------------------------------------------------------------------- translate


@dataclass(frozen=True)
class NounPhrase:
    """A parsed noun phrase, named by English lexicon keys."""

    det: str  # determiner key: its English singular form ("the", "a", "this", "my", ...)
    noun: str  # English singular noun ("car")
    plural: bool = False
    adj: str | None = None  # English adjective ("red") or None


def _phrase(p: NounPhrase) -> tuple[list[str], list[str], list[tuple[int, int]]]:
    """English words, French words and their alignment for one noun phrase."""
    try:
        det, noun = DETERMINERS[p.det], NOUNS[p.noun]
        adj = ADJECTIVES[p.adj] if p.adj is not None else None
    except KeyError as e:
        raise ValueError(f"word {e.args[0]!r} is not in the translate lexicon") from None
    en = [det.en_pl if p.plural else det.en] + ([adj.en] if adj else [])
    en.append(noun.en_pl if p.plural else noun.en)
    if en[0] == "a" and en[1][0] in "aeiou":
        en[0] = "an"
    fr_det = det.fr_pl if p.plural else (det.fr_m if noun.gender == "m" else det.fr_f)
    fr_noun = noun.fr_pl if p.plural else noun.fr
    if adj is None:
        return en, [fr_det, fr_noun], [(0, 0), (1, 1)]
    fr_adj = adj.french(noun.gender, p.plural)
    if adj.pre:  # "des petits chiens" is written "de petits chiens"
        return en, ["de" if fr_det == "des" else fr_det, fr_adj, fr_noun], [(0, 0), (1, 1), (2, 2)]
    return en, [fr_det, fr_noun, fr_adj], [(0, 0), (1, 2), (2, 1)]


def render_phrase(det: str, adj: str | None, noun: str, plural: bool = False) -> Example:
    """Translate one noun phrase, e.g. ("the", "red", "car") -> "la voiture rouge"."""
    en, fr, align = _phrase(NounPhrase(det, noun, plural, adj))
    return Example(" ".join(en), " ".join(fr), tuple(align))


def render_sentence(
    subject: NounPhrase | Sequence[NounPhrase],
    verb: str,
    obj: NounPhrase | Sequence[NounPhrase],
    prep: str | None = None,
    prep_object: NounPhrase | None = None,
) -> Example:
    """Translate "subject(s) verb object(s) [prep prep_object]"; two phrases join with "and".

    The verb agrees with the subject: plural if the subject is plural or coordinated.
    """
    subjects = [subject] if isinstance(subject, NounPhrase) else list(subject)
    objects = [obj] if isinstance(obj, NounPhrase) else list(obj)
    if not 1 <= len(subjects) <= 2 or not 1 <= len(objects) <= 2:
        raise ValueError("need one or two subject phrases and one or two object phrases")
    if verb not in VERBS:
        raise ValueError(f"verb {verb!r} is not in the translate lexicon")
    if (prep is None) != (prep_object is None) or (prep is not None and prep not in PREPOSITIONS):
        raise ValueError(f"need a known preposition and its object together, got {prep!r}")
    en: list[str] = []
    fr: list[str] = []
    align: list[tuple[int, int]] = []

    def add(e: Sequence[str], f: Sequence[str], a: Sequence[tuple[int, int]]) -> None:
        align.extend((i + len(en), j + len(fr)) for i, j in a)
        en.extend(e)
        fr.extend(f)

    def add_phrases(phrases: list[NounPhrase]) -> None:
        for k, p in enumerate(phrases):
            if k:
                add([CONJUNCTION[0]], [CONJUNCTION[1]], [(0, 0)])
            add(*_phrase(p))

    add_phrases(subjects)
    v = VERBS[verb]
    plural = len(subjects) > 1 or subjects[0].plural
    add([v.en_pl if plural else v.en], [v.fr_pl if plural else v.fr], [(0, 0)])
    add_phrases(objects)
    if prep is not None and prep_object is not None:
        add([prep], [PREPOSITIONS[prep]], [(0, 0)])
        add(*_phrase(prep_object))
    return Example(" ".join(en), " ".join(fr), tuple(align))


class TranslateTask(HandPickedTask):
    """Translate sentences of a toy English grammar into French (word order, gender, agreement)."""

    name = "translate"
    source_level = target_level = "word"
    description = M_(
        "Translate simple English sentences into French: adjectives move after the noun "
        "(except petit, grand, beau...), and determiners, adjectives and verbs agree."
    )

    determiners: tuple[str, ...] = tuple(sorted(DETERMINERS))  # what a random noun phrase starts with

    def _random_phrase(self, rng: random.Random) -> NounPhrase:
        adj = rng.choice(sorted(ADJECTIVES)) if rng.random() < 0.45 else None
        return NounPhrase(rng.choice(self.determiners), rng.choice(sorted(NOUNS)), rng.random() < 0.4, adj)

    def sample(self, rng: random.Random) -> Example:
        return self._random_sentence(rng)

    def _random_sentence(self, rng: random.Random) -> Example:
        """A sentence of one of four shapes (simple, with a prepositional phrase, two subjects, two objects)."""
        form = rng.choice(["simple", "prep", "and_subject", "and_object"])
        subject = [self._random_phrase(rng) for _ in range(2 if form == "and_subject" else 1)]
        verb = rng.choice(sorted(VERBS))
        obj = [self._random_phrase(rng) for _ in range(2 if form == "and_object" else 1)]
        if form == "prep":
            prep = rng.choice(sorted(PREPOSITIONS))
            return render_sentence(subject, verb, obj, prep, self._random_phrase(rng))
        return render_sentence(subject, verb, obj)

    def source_symbols(self) -> list[str]:
        words = {CONJUNCTION[0], "an", *PREPOSITIONS, *ADJECTIVES}
        words |= {w for d in DETERMINERS.values() for w in (d.en, d.en_pl)}
        words |= {w for n in NOUNS.values() for w in (n.en, n.en_pl)}
        words |= {w for v in VERBS.values() for w in (v.en, v.en_pl)}
        return sorted(words)

    def target_symbols(self) -> list[str]:
        words = {CONJUNCTION[1], "de", *PREPOSITIONS.values()}
        words |= {w for d in DETERMINERS.values() for w in (d.fr_m, d.fr_f, d.fr_pl)}
        words |= {w for a in ADJECTIVES.values() for w in (a.m, a.f, a.m_pl, a.f_pl)}
        words |= {w for n in NOUNS.values() for w in (n.fr, n.fr_pl)}
        words |= {w for v in VERBS.values() for w in (v.fr, v.fr_pl)}
        return sorted(words)

    @staticmethod
    def _example_pairs() -> list[Example]:
        np = NounPhrase
        return [
            render_sentence(np("the", "car", False, "red"), "sees", np("a", "dog", False, "small")),
            render_sentence(np("my", "cat", True, "old"), "eats", np("the", "apple", True, "green")),
            render_sentence([np("the", "king"), np("the", "queen")], "buys", np("a", "house", False, "white")),
            render_sentence(
                np("this", "girl", False, "beautiful"),
                "finds",
                np("the", "key", False, "black"),
                "under",
                np("the", "table"),
            ),
            render_sentence(
                np("our", "neighbor"), "washes", [np("his", "bike", True), np("her", "car", False, "blue")]
            ),
        ]


def dataset(task: Task, n: int, seed: int) -> list[Example]:
    """`n` examples drawn from `task`; the same (task, seed) always gives the same list."""
    rng = random.Random(f"dataset:{task.name}:{seed}")
    return [task.sample(rng) for _ in range(n)]


def input_range(task: Task, sources: set[str]) -> dict[str, int | str]:
    """A card's input_tokens: the shortest and longest of these (training) sources, in the task's source tokens."""
    lengths = [len(tokens(s, task.source_level)) for s in sources] or [0]
    return {"min": min(lengths), "max": max(lengths), "unit": "characters" if task.source_level == "char" else "words"}


def held_out(task: Task, n: int, seed: int, exclude: set[str]) -> list[Example]:
    """`n` examples with distinct sources, none of them in `exclude` (e.g. the training sources)."""
    rng = random.Random(f"held_out:{task.name}:{seed}")
    seen, out = set(exclude), []
    for _ in range(100 * n + 1000):
        if len(out) == n:
            break
        example = task.sample(rng)
        if example.source not in seen:
            seen.add(example.source)
            out.append(example)
    if len(out) < n:
        raise ValueError(f"could only find {len(out)} of {n} fresh {task.name} examples")
    return out
