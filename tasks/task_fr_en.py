"""French to English: the translate grammar the other way, plus pronouns with être and avoir.

The worked example of greedy decoding, "je suis étudiant" -> "i am a student", one word per step:

    je suis étudiant          -> i am a student          (être + a profession: no article in French)
    nous sommes étudiants     -> we are students
    elle est fatiguée         -> she is tired            (être + an adjective, which agrees in French only)
    elle a un chat            -> she has a cat           (avoir + a noun phrase; "je ai" is written "j'ai")
    il mange une pomme rouge  -> he eats a red apple     (il/elle/ils/elles + the translate verbs)
    la voiture rouge voit un petit chien -> the red car sees a small dog   (translate's sentences, reversed)

Every French sentence has exactly one English translation: "son/sa/ses" (his or her) are left out.
"""

from __future__ import annotations

import random

from i18n import M_

from .task_lexicon import (
    ADJECTIVES,
    AVOIR,
    CONJUNCTION,
    DETERMINERS,
    ETRE,
    J_AI,
    NOUNS,
    PERSON_ADJECTIVES,
    PREPOSITIONS,
    PROFESSIONS,
    PRONOUNS,
    VERBS,
    Pronoun,
)
from .tasks import Example, HandPickedTask, NounPhrase, TranslateTask, _phrase, render_sentence

AMBIGUOUS = ("his", "her")  # son/sa/ses: French does not say whose, so these determiners are left out
FR_DETERMINERS = tuple(d for d in sorted(DETERMINERS) if d not in AMBIGUOUS)
FORMS = ("sentence", "profession", "adjective", "avoir", "pronoun_verb")
WEIGHTS = (4, 2, 1, 2, 1)  # how often each form is sampled


def _reverse(example: Example) -> Example:
    """An English-to-French example turned around: French source, English target, alignment swapped."""
    return Example(example.target, example.source, tuple(sorted((t, s) for s, t in example.alignment)))


def _subject(pronoun: Pronoun, verb: dict[str, tuple[str, str]]) -> tuple[list[str], list[str], list[tuple[int, int]]]:
    """French words, English words and alignment of pronoun + verb ("j'ai" is one word for "i have")."""
    fr_verb, en_verb = verb[pronoun.person]
    if pronoun.fr == "je" and fr_verb == "ai":
        return [J_AI], [pronoun.en, en_verb], [(0, 0), (0, 1)]
    return [pronoun.fr, fr_verb], [pronoun.en, en_verb], [(0, 0), (1, 1)]


def render_pronoun_sentence(pronoun: Pronoun, form: str, word: str, gender: str | None = None,
                            plural: bool | None = None, phrase: NounPhrase | None = None) -> Example:  # fmt: skip
    """One sentence with a pronoun subject (French source, English target).

    form "profession": être + PROFESSIONS[word]; "adjective": être + ADJECTIVES[word]; "avoir": avoir + phrase;
    "pronoun_verb": VERBS[word] (third person only) + phrase. gender: the subject's, where the pronoun leaves
    it open (je, tu, nous, vous); plural: the profession's number (default: the pronoun's).
    """
    gender = pronoun.gender or gender or "m"
    if form in ("profession", "adjective"):
        fr, en, align = _subject(pronoun, ETRE)
        if form == "profession":
            job = PROFESSIONS[word]
            many = pronoun.plural if plural is None else plural
            fr.append(job.french(gender, many))
            noun = job.en_pl if many else job.en
            article = [] if many else ["an" if noun[0] in "aeiou" else "a"]
            align += [(2, 2 + k) for k in range(len(article) + 1)]  # "a student" <- étudiant
            en += article + [noun]
        else:
            fr.append(ADJECTIVES[word].french(gender, pronoun.plural))
            en.append(word)
            align.append((2, 2))
        return Example(" ".join(fr), " ".join(en), tuple(align))
    if phrase is None:
        raise ValueError(f"form {form!r} needs a noun phrase")
    if form == "avoir":
        fr, en, align = _subject(pronoun, AVOIR)
    elif form == "pronoun_verb" and pronoun.person.startswith("3") and word in VERBS:
        v = VERBS[word]
        fr, en = [pronoun.fr, v.fr_pl if pronoun.plural else v.fr], [pronoun.en, v.en_pl if pronoun.plural else v.en]
        align = [(0, 0), (1, 1)]
    else:
        raise ValueError(f"unknown pronoun sentence: {form!r} with {pronoun.fr!r} and {word!r}")
    en_np, fr_np, np_align = _phrase(phrase)
    align += [(len(fr) + j, len(en) + i) for i, j in np_align]
    return Example(" ".join(fr + fr_np), " ".join(en + en_np), tuple(sorted(align)))


class FrenchToEnglishTask(HandPickedTask):
    """Translate simple French sentences into English: pronouns with être and avoir, and translate's grammar."""

    name = "fr_en"
    source_level = target_level = "word"
    lowercase = True  # "Je suis étudiant" reads as "je suis étudiant"
    description = M_(
        "Translate simple French sentences into English: pronouns with être and avoir "
        "(je suis étudiant → i am a student), adjectives move before the noun, verbs agree."
    )

    determiners = tuple(FR_DETERMINERS)
    _random_phrase = TranslateTask._random_phrase  # the same draw, from this task's determiners
    _random_sentence = TranslateTask._random_sentence  # the same sentences, reversed below

    def sample(self, rng: random.Random) -> Example:
        form = rng.choices(FORMS, WEIGHTS)[0]
        if form == "sentence":
            return _reverse(self._random_sentence(rng))
        pronoun = rng.choice([p for p in PRONOUNS if form != "pronoun_verb" or p.person.startswith("3")])
        gender = rng.choice("mf")
        if form == "profession":
            plural = pronoun.plural if pronoun.fr != "vous" else rng.random() < 0.7  # vous: also one person
            return render_pronoun_sentence(pronoun, form, rng.choice(sorted(PROFESSIONS)), gender, plural)
        if form == "adjective":
            return render_pronoun_sentence(pronoun, form, rng.choice(PERSON_ADJECTIVES), gender)
        word = rng.choice(sorted(VERBS)) if form == "pronoun_verb" else ""
        return render_pronoun_sentence(pronoun, form, word, gender, phrase=self._random_phrase(rng))

    def source_symbols(self) -> list[str]:
        words = {CONJUNCTION[1], "de", J_AI, *PREPOSITIONS.values()}
        words |= {w for k in FR_DETERMINERS for w in (DETERMINERS[k].fr_m, DETERMINERS[k].fr_f, DETERMINERS[k].fr_pl)}
        words |= {w for a in ADJECTIVES.values() for w in (a.m, a.f, a.m_pl, a.f_pl)}
        words |= {w for n in NOUNS.values() for w in (n.fr, n.fr_pl)}
        words |= {w for v in VERBS.values() for w in (v.fr, v.fr_pl)}
        words |= {p.fr for p in PRONOUNS} | {fr for fr, _ in ETRE.values()} | {fr for fr, _ in AVOIR.values()}
        words |= {w for p in PROFESSIONS.values() for w in (p.m, p.f, p.m_pl, p.f_pl)}
        return sorted(words)

    def word_classes(self) -> dict[str, frozenset[str]]:
        """Every source word's classes: the parts of speech the sentences are made of (see Task.outside_patterns)."""
        found: dict[str, set[str]] = {}
        groups = {
            "and": [CONJUNCTION[1]],
            "j'ai": [J_AI],
            "prep": list(PREPOSITIONS.values()),
            "det": [  # with "de" ("de vieilles boîtes": before an adjective)
                "de",
                *(w for k in FR_DETERMINERS for w in (DETERMINERS[k].fr_m, DETERMINERS[k].fr_f, DETERMINERS[k].fr_pl)),
            ],
            "adj": [w for a in ADJECTIVES.values() for w in (a.m, a.f, a.m_pl, a.f_pl)],
            "noun": [w for n in NOUNS.values() for w in (n.fr, n.fr_pl)],
            "verb": [w for v in VERBS.values() for w in (v.fr, v.fr_pl)],
            "pronoun": [p.fr for p in PRONOUNS],
            "être": [fr for fr, _ in ETRE.values()],
            "avoir": [fr for fr, _ in AVOIR.values()],
            "profession": [w for p in PROFESSIONS.values() for w in (p.m, p.f, p.m_pl, p.f_pl)],
        }
        for kind, words in groups.items():
            for word in words:
                found.setdefault(word, set()).add(kind)
        return {word: frozenset(kinds) for word, kinds in found.items()}

    def target_symbols(self) -> list[str]:
        words = set(TranslateTask().source_symbols()) - set(AMBIGUOUS)
        words |= {p.en for p in PRONOUNS} | {en for _, en in ETRE.values()} | {en for _, en in AVOIR.values()}
        words |= {w for p in PROFESSIONS.values() for w in (p.en, p.en_pl)} | {"a", "an"}
        return sorted(words)

    @staticmethod
    def _example_pairs() -> list[Example]:
        by_fr = {p.fr: p for p in PRONOUNS}
        np = NounPhrase
        return [
            render_pronoun_sentence(by_fr["je"], "profession", "student", "m"),
            render_pronoun_sentence(by_fr["nous"], "profession", "student", "m"),
            render_pronoun_sentence(by_fr["elle"], "avoir", "", phrase=np("a", "cat")),
            render_pronoun_sentence(by_fr["je"], "avoir", "", phrase=np("a", "dog", False, "small")),
            _reverse(render_sentence(np("the", "car", False, "red"), "sees", np("a", "dog", False, "small"))),
            _reverse(
                render_sentence([np("the", "king"), np("the", "queen")], "buys", np("a", "house", False, "white"))
            ),
        ]
