"""Tests for the synthetic demo tasks in tasks/tasks.py."""

from __future__ import annotations

import calendar
import datetime
import random
import re

import pytest

from tasks.registry import TASKS, get_task
from tasks.task_dates import render_date
from tasks.task_lexicon import ADJECTIVES, DETERMINERS, NOUNS, PREPOSITIONS, VERBS
from tasks.tasks import (
    Example,
    NounPhrase,
    Task,
    dataset,
    held_out,
    render_phrase,
    render_sentence,
    tokens,
)

NAMES = ["copy", "reverse", "translate", "dates", "fr_en"]  # the sequence-to-sequence tasks; and "induction"
N_SAMPLES = 3000


@pytest.fixture(scope="module")
def samples() -> dict[str, list[Example]]:
    """A few thousand examples per task, drawn once for the whole module."""
    return {name: dataset(TASKS[name], N_SAMPLES, seed=7) for name in NAMES}


# --------------------------------------------------------------------------- all tasks


def test_registry_has_the_six_tasks_with_their_token_levels():
    assert sorted(TASKS) == sorted([*NAMES, "induction"])
    levels = {n: (t.source_level, t.target_level) for n, t in TASKS.items()}
    assert levels == {
        "copy": ("char", "char"),
        "reverse": ("char", "char"),
        "translate": ("word", "word"),
        "dates": ("char", "char"),
        "fr_en": ("word", "word"),
        "induction": ("char", "char"),
    }
    for name, task in TASKS.items():
        assert task.name == name and task.description.strip()
        assert 4 <= len(task.examples()) <= 6


def test_tokens_splits_by_level():
    assert tokens("ab c", "char") == ["a", "b", " ", "c"]
    assert tokens(" the  red car ", "word") == ["the", "red", "car"]
    with pytest.raises(ValueError, match="char"):
        tokens("abc", "byte")


def test_get_task_returns_the_task_and_rejects_unknown_names_listing_valid_ones():
    assert get_task("dates") is TASKS["dates"]
    with pytest.raises(ValueError) as info:
        get_task("sort")
    message = str(info.value)
    assert "sort" in message and all(name in message for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_dataset_is_deterministic_per_seed_and_seeds_differ(name):
    task = TASKS[name]
    assert dataset(task, 50, seed=1) == dataset(task, 50, seed=1)
    assert dataset(task, 50, seed=1) != dataset(task, 50, seed=2)
    assert len(dataset(task, 17, seed=3)) == 17


@pytest.mark.parametrize("name", NAMES)
def test_symbols_are_sorted_unique_and_cover_every_sampled_token(name, samples):
    task = TASKS[name]
    src, tgt = task.source_symbols(), task.target_symbols()
    assert src == sorted(set(src)) and tgt == sorted(set(tgt))
    seen_src, seen_tgt = set(), set()
    for ex in samples[name]:
        seen_src.update(tokens(ex.source, task.source_level))
        seen_tgt.update(tokens(ex.target, task.target_level))
    for text in task.examples():
        seen_src.update(tokens(text, task.source_level))
    assert seen_src <= set(src), seen_src - set(src)
    assert seen_tgt <= set(tgt), seen_tgt - set(tgt)


@pytest.mark.parametrize("name", NAMES)
def test_alignment_indices_are_in_range_and_unique(name, samples):
    task = TASKS[name]
    for ex in samples[name]:
        n_src = len(tokens(ex.source, task.source_level))
        n_tgt = len(tokens(ex.target, task.target_level))
        assert ex.alignment and len(set(ex.alignment)) == len(ex.alignment)
        assert all(0 <= s < n_src and 0 <= t < n_tgt for s, t in ex.alignment), ex


# --------------------------------------------------------------------------- copy / reverse


def test_copy_and_reverse_targets_alignments_and_lengths(samples):
    for name in ("copy", "reverse"):
        assert 18 <= len(TASKS[name].source_symbols()) <= 26
        assert " " not in TASKS[name].source_symbols()
        lengths = set()
        for ex in samples[name]:
            n = len(ex.source)
            lengths.add(n)
            if name == "copy":
                assert ex.target == ex.source
                assert ex.alignment == tuple((i, i) for i in range(n))
            else:
                assert ex.target == ex.source[::-1]
                assert ex.alignment == tuple((i, n - 1 - i) for i in range(n))
            assert all(ex.source[s] == ex.target[t] for s, t in ex.alignment)
        assert lengths == set(range(1, 25))


# --------------------------------------------------------------------------- translate


def test_translate_lexicon_is_large_enough():
    genders = [n.gender for n in NOUNS.values()]
    assert len(NOUNS) >= 40 and genders.count("m") >= 20 and genders.count("f") >= 20
    assert set(genders) == {"m", "f"}
    assert len(ADJECTIVES) >= 20 and len(VERBS) >= 20
    pre = [a for a in ADJECTIVES.values() if a.pre]
    assert 3 <= len(pre) < len(ADJECTIVES) - 15
    assert {"the", "a", "this", "my"} <= set(DETERMINERS)


def test_translate_never_needs_elision():
    """French nouns and pre-nominal adjectives start with a consonant other than h."""
    words = [n.fr for n in NOUNS.values()] + [a.m for a in ADJECTIVES.values() if a.pre]
    words += [a.f for a in ADJECTIVES.values() if a.pre]
    assert [w for w in words if w[0] in "aeiouhéèêâîôœ"] == []


@pytest.mark.parametrize(
    "det, adj, noun, plural, english, french",
    [
        ("the", "red", "car", False, "the red car", "la voiture rouge"),
        ("the", "red", "car", True, "the red cars", "les voitures rouges"),
        ("a", "small", "dog", False, "a small dog", "un petit chien"),
        ("a", "small", "dog", True, "some small dogs", "de petits chiens"),
        ("a", "green", "apple", True, "some green apples", "des pommes vertes"),
        ("a", "old", "house", False, "an old house", "une vieille maison"),
        ("a", None, "apple", False, "an apple", "une pomme"),
        ("this", "white", "horse", False, "this white horse", "ce cheval blanc"),
        ("this", "white", "horse", True, "these white horses", "ces chevaux blancs"),
        ("my", "beautiful", "boat", True, "my beautiful boats", "mes beaux bateaux"),
        ("her", "new", "hat", False, "her new hat", "son nouveau chapeau"),
        ("his", "small", "girl", True, "his small girls", "ses petites filles"),
        ("your", "happy", "cow", False, "your happy cow", "ta vache heureuse"),
        ("our", None, "knife", True, "our knives", "nos couteaux"),
    ],
)
def test_translate_noun_phrases_by_hand(det, adj, noun, plural, english, french):
    ex = render_phrase(det, adj, noun, plural)
    assert (ex.source, ex.target) == (english, french)


def test_translate_alignment_crosses_only_for_post_nominal_adjectives():
    assert render_phrase("the", "red", "car").alignment == ((0, 0), (1, 2), (2, 1))
    assert render_phrase("a", "small", "dog").alignment == ((0, 0), (1, 1), (2, 2))
    assert render_phrase("the", None, "car").alignment == ((0, 0), (1, 1))


def test_translate_sentences_by_hand():
    np = NounPhrase
    cases = [
        (
            render_sentence(np("the", "car", False, "red"), "sees", np("a", "dog", False, "small")),
            "the red car sees a small dog",
            "la voiture rouge voit un petit chien",
            ((0, 0), (1, 2), (2, 1), (3, 3), (4, 4), (5, 5), (6, 6)),
        ),
        (
            render_sentence(np("my", "cat", True, "old"), "eats", np("the", "apple", True, "green")),
            "my old cats eat the green apples",
            "mes vieux chats mangent les pommes vertes",
            ((0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 6), (6, 5)),
        ),
        (
            render_sentence([np("the", "cat"), np("the", "dog")], "eats", np("a", "cake")),
            "the cat and the dog eat a cake",
            "le chat et le chien mangent un gâteau",
            None,
        ),
        (
            render_sentence(np("the", "girl"), "finds", np("the", "key"), "under", np("the", "table")),
            "the girl finds the key under the table",
            "la fille trouve la clé sous la table",
            None,
        ),
        (
            render_sentence(np("this", "mouse"), "bites", [np("a", "wolf", True), np("their", "pig")]),
            "this mouse bites some wolves and their pig",
            "cette souris mord des loups et leur cochon",
            None,
        ),
    ]
    for ex, english, french, alignment in cases:
        assert (ex.source, ex.target) == (english, french)
        if alignment is not None:
            assert ex.alignment == alignment


def test_translate_rejects_unknown_words():
    with pytest.raises(ValueError, match="unicorn"):
        render_phrase("the", None, "unicorn")
    with pytest.raises(ValueError, match="flies"):
        render_sentence(NounPhrase("the", "dog"), "flies", NounPhrase("the", "cat"))


def _french_forms() -> dict[str, set[str]]:
    """English word -> every French word it may translate to, straight from the lexicon."""
    forms: dict[str, set[str]] = {"and": {"et"}, "an": {"un", "une"}}
    for p, f in PREPOSITIONS.items():
        forms[p] = {f}
    for d in DETERMINERS.values():
        forms.setdefault(d.en, set()).update({d.fr_m, d.fr_f})
        forms.setdefault(d.en_pl, set()).update({d.fr_pl, "de"} if d.fr_pl == "des" else {d.fr_pl})
    for a in ADJECTIVES.values():
        forms[a.en] = {a.m, a.f, a.m_pl, a.f_pl}
    for n in NOUNS.values():
        forms.setdefault(n.en, set()).add(n.fr)
        forms.setdefault(n.en_pl, set()).add(n.fr_pl)
    for v in VERBS.values():
        forms[v.en], forms[v.en_pl] = {v.fr}, {v.fr_pl}
    return forms


def test_translate_samples_align_one_to_one_with_lexicon_translations(samples):
    forms = _french_forms()
    post = {a.en for a in ADJECTIVES.values() if not a.pre}
    crossings = 0
    for ex in samples["translate"]:
        en, fr = ex.source.split(), ex.target.split()
        assert 3 <= len(en) <= 14 and len(fr) == len(en)
        assert sorted(s for s, _ in ex.alignment) == list(range(len(en)))
        assert sorted(t for _, t in ex.alignment) == list(range(len(fr)))
        links = dict(ex.alignment)
        for s, t in ex.alignment:
            assert fr[t] in forms[en[s]], (ex, en[s], fr[t])
        for s, word in enumerate(en):
            if word in post:  # the adjective lands right after the French noun
                assert links[s] == links[s + 1] + 1
                crossings += 1
            elif word in ADJECTIVES:
                assert links[s] == links[s + 1] - 1
    assert crossings > N_SAMPLES // 4


def test_translate_samples_agree_in_gender_and_number(samples):
    """Determiner, adjective and noun agree inside each phrase; the verb agrees with the subject."""
    noun_of = {n.en: (n, False) for n in NOUNS.values()}
    noun_of |= {n.en_pl: (n, True) for n in NOUNS.values()}
    verb_of = {v.en: (v, False) for v in VERBS.values()}
    verb_of |= {v.en_pl: (v, True) for v in VERBS.values()}
    for ex in samples["translate"]:
        en, fr = ex.source.split(), ex.target.split()
        links = dict(ex.alignment)
        for i, word in enumerate(en):
            if word in verb_of:
                verb, plural = verb_of[word]
                subject_plural = "and" in en[:i] or noun_of[en[i - 1]][1]
                assert plural == subject_plural, ex
                assert fr[links[i]] == (verb.fr_pl if plural else verb.fr)
            if word not in noun_of:
                continue
            noun, plural = noun_of[word]
            assert fr[links[i]] == (noun.fr_pl if plural else noun.fr)
            d = i - 1
            if en[d] in ADJECTIVES:
                adj = ADJECTIVES[en[d]]
                assert fr[links[d]] == adj.french(noun.gender, plural), ex
                d -= 1
            det = DETERMINERS[{"an": "a", "some": "a", "these": "this"}.get(en[d], en[d])]
            expected = det.fr_pl if plural else (det.fr_m if noun.gender == "m" else det.fr_f)
            if expected == "des" and en[i - 1] in ADJECTIVES and ADJECTIVES[en[i - 1]].pre:
                expected = "de"
            assert fr[links[d]] == expected, ex


# --------------------------------------------------------------------------- dates

MONTH = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTH.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
WEEKDAY = {d.lower(): i for i, d in enumerate(calendar.day_name)}
WEEKDAY.update({d.lower(): i for i, d in enumerate(calendar.day_abbr)})
SUFFIX = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}


def parse_english_date(source: str) -> tuple[datetime.date, int | None]:
    """An independent reading of a source: (date, weekday number or None). Numbers are d/m/y."""
    words = re.findall(r"[a-z]+", source)
    numbers = [int(n) for n in re.findall(r"\d+", source)]
    weekday = WEEKDAY.get(words[0]) if words else None
    months = [MONTH[w] for w in words if w in MONTH]
    if months:
        (month,) = months
        (year,) = [n for n in numbers if n >= 1000]
        (day,) = [n for n in numbers if n < 1000]
    else:
        day, month, year = numbers
    return datetime.date(year, month, day), weekday


def test_dates_source_means_the_target_date(samples):
    years = set()
    for ex in samples["dates"]:
        date = datetime.date.fromisoformat(ex.target)
        assert len(ex.target) == 10 and 1900 <= date.year <= 2099
        parsed, weekday = parse_english_date(ex.source)
        assert parsed == date, ex
        if weekday is not None:
            assert weekday == date.weekday(), ex
        for number, suffix in re.findall(r"\b(\d+)(st|nd|rd|th)\b", ex.source):
            assert suffix == SUFFIX.get(int(number), "th"), ex
        assert len(ex.source) <= 40
        years.add(date.year)
    assert min(years) < 1905 and max(years) > 2094


def test_dates_examples_are_consistent():
    for text in TASKS["dates"].examples():
        date, weekday = parse_english_date(text)
        assert weekday is None or weekday == date.weekday(), text


SURFACE_FORMS = {
    "saturday 21st of november 2026": r"^[a-z]+day \d\d?(st|nd|rd|th) of [a-z]{4,} \d{4}$",
    "nov 21, 2026": r"^[a-z]{3} \d\d?, \d{4}$",
    "21 november 2026": r"^\d\d? [a-z]{4,} \d{4}$",
    "21st nov 2026": r"^\d\d?(st|nd|rd|th) [a-z]{3} \d{4}$",
    "november 21st, 2026": r"^[a-z]{4,} \d\d?(st|nd|rd|th), \d{4}$",
    "november 21 2026": r"^[a-z]{4,} \d\d? \d{4}$",
    "21/11/2026": r"^\d\d?/\d\d?/\d{4}$",
    "05/03/2026": r"^0\d/0\d/\d{4}$",
    "the 21st of nov 2026": r"^the \d\d?(st|nd|rd|th) of [a-z]{3} \d{4}$",
    "2026 november 21": r"^\d{4} [a-z]+ \d\d?$",
    "sat, ...": r"^(mon|tue|wed|thu|fri|sat|sun), ",
    "saturday, ...": r"^[a-z]+day, ",
    "no weekday": r"^(?!mon|tue|wed|thu|fri|sat|sun)",
}


def test_dates_every_surface_form_occurs(samples):
    sources = [ex.source for ex in samples["dates"]]
    missing = [k for k, rx in SURFACE_FORMS.items() if not any(re.search(rx, s) for s in sources)]
    assert missing == []
    text = " ".join(sources)
    for day in ("1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "31st"):
        assert re.search(rf"\b{day}\b", text), day


def test_dates_alignment_points_at_the_characters_each_digit_comes_from(samples):
    for ex in samples["dates"]:
        by_target: dict[int, list[int]] = {}
        for s, t in ex.alignment:
            by_target.setdefault(t, []).append(s)
        assert sorted(by_target) == [0, 1, 2, 3, 5, 6, 8, 9]
        for t in (0, 1, 2, 3):  # year digits one to one
            assert [ex.source[s] for s in by_target[t]] == [ex.target[t]]
        month_chars = "".join(ex.source[s] for s in sorted(set(by_target[5] + by_target[6])))
        if month_chars.isdigit():
            assert int(month_chars) == int(ex.target[5:7])
            assert all(ex.source[s] == ex.target[6] for s in by_target[6])
        else:  # both month digits come from every character of the month word
            assert by_target[5] == by_target[6] and MONTH[month_chars] == int(ex.target[5:7])
        day_chars = "".join(ex.source[s] for s in sorted(set(by_target[8] + by_target[9])))
        assert int(day_chars) == int(ex.target[8:10])
        assert all(ex.source[s] == ex.target[9] for s in by_target[9])


def test_dates_alignment_by_hand():
    ex = render_date(datetime.date(2026, 11, 5), "{D} of {M} {Y}", short_month=True, weekday="full")
    assert ex.source == "thursday 5th of nov 2026" and ex.target == "2026-11-05"
    assert ex.alignment == (
        (20, 0),
        (21, 1),
        (22, 2),
        (23, 3),
        (16, 5),
        (17, 5),
        (18, 5),
        (16, 6),
        (17, 6),
        (18, 6),
        (9, 8),
        (9, 9),
    )
    ex = render_date(datetime.date(1999, 3, 5), "{dd}/{mm}/{Y}")
    assert (ex.source, ex.target) == ("05/03/1999", "1999-03-05")
    assert ex.alignment == ((6, 0), (7, 1), (8, 2), (9, 3), (3, 5), (4, 6), (0, 8), (1, 9))


# --------------------------------------------------------------------------- held_out


@pytest.mark.parametrize("name", NAMES)
def test_held_out_avoids_excluded_sources(name):
    task = TASKS[name]
    train = {ex.source for ex in dataset(task, 2000, seed=0)}
    fresh = held_out(task, 300, seed=0, exclude=train)
    sources = [ex.source for ex in fresh]
    assert len(fresh) == 300 and len(set(sources)) == 300
    assert not set(sources) & train
    assert held_out(task, 300, seed=0, exclude=train) == fresh


def test_held_out_skips_a_source_that_the_same_stream_would_produce():
    task = TASKS["reverse"]
    first = held_out(task, 5, seed=4, exclude=set())
    again = held_out(task, 5, seed=4, exclude={first[0].source})
    assert first[0].source not in {ex.source for ex in again}
    assert again[:4] == first[1:]


def test_held_out_raises_when_no_fresh_example_exists():
    class Constant(Task):
        name, source_level, target_level, description = "constant", "char", "char", "x"

        def sample(self, rng: random.Random) -> Example:
            return Example("a", "a", ((0, 0),))

    with pytest.raises(ValueError, match="constant"):
        held_out(Constant(), 1, seed=0, exclude={"a"})
