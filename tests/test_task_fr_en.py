"""The fr_en task: the translate grammar the other way, plus pronouns with être and avoir."""

import re
import unicodedata

import pytest

from tasks.registry import get_task
from tasks.task_fr_en import render_pronoun_sentence
from tasks.task_lexicon import PRONOUNS
from tasks.tasks import NounPhrase, dataset, render_sentence, tokens
from tasks.training import build_tokenizer
from tests.i18n_helpers import msgid_starting

TASK = get_task("fr_en")
BY_FR = {p.fr: p for p in PRONOUNS}


@pytest.fixture(scope="module")
def samples():
    return dataset(TASK, 4000, seed=3)


@pytest.mark.parametrize(
    "pronoun, form, word, gender, plural, phrase, french, english",
    [
        ("je", "profession", "student", "m", None, None, "je suis étudiant", "i am a student"),
        ("je", "profession", "student", "f", None, None, "je suis étudiante", "i am a student"),
        ("nous", "profession", "student", "m", None, None, "nous sommes étudiants", "we are students"),
        ("vous", "profession", "doctor", "f", False, None, "vous êtes médecin", "you are a doctor"),
        ("elles", "profession", "engineer", None, None, None, "elles sont ingénieures", "they are engineers"),
        ("tu", "profession", "engineer", "f", None, None, "tu es ingénieure", "you are an engineer"),
        ("elle", "adjective", "tired", None, None, None, "elle est fatiguée", "she is tired"),
        ("ils", "adjective", "happy", None, None, None, "ils sont heureux", "they are happy"),
        ("elle", "avoir", "", None, None, NounPhrase("a", "cat"), "elle a un chat", "she has a cat"),
        (
            "je",
            "avoir",
            "",
            None,
            None,
            NounPhrase("a", "car", False, "red"),
            "j'ai une voiture rouge",
            "i have a red car",
        ),
        ("nous", "avoir", "", None, None, NounPhrase("a", "dog", True), "nous avons des chiens", "we have some dogs"),
        ("il", "pronoun_verb", "eats", None, None, NounPhrase("a", "apple"), "il mange une pomme", "he eats an apple"),
        (
            "elles",
            "pronoun_verb",
            "sees",
            None,
            None,
            NounPhrase("the", "moon"),
            "elles voient la lune",
            "they see the moon",
        ),
    ],
)
def test_pronoun_sentences_by_hand(pronoun, form, word, gender, plural, phrase, french, english):
    ex = render_pronoun_sentence(BY_FR[pronoun], form, word, gender, plural, phrase)
    assert (ex.source, ex.target) == (french, english)
    assert {t for _, t in ex.alignment} == set(range(len(english.split())))  # every English word has a source


def test_the_worked_example_and_the_translate_grammar_reversed():
    assert TASK.examples()[:3] == ["je suis étudiant", "nous sommes étudiants", "elle a un chat"]
    # the worked example of the task as its description (a message people read) states it
    stated = re.search(
        r"je suis étudiant → ([^)]*)\)", msgid_starting("Translate simple French sentences into English")
    )
    assert TASK.example_for("je suis étudiant").target == stated.group(1)
    en_fr = render_sentence(NounPhrase("the", "car", False, "red"), "sees", NounPhrase("a", "dog", False, "small"))
    fr_en = TASK.example_for(en_fr.target)
    assert (fr_en.source, fr_en.target) == (en_fr.target, en_fr.source)
    assert sorted(fr_en.alignment) == sorted((t, s) for s, t in en_fr.alignment)
    with pytest.raises(ValueError, match="unknown pronoun sentence"):
        render_pronoun_sentence(BY_FR["je"], "pronoun_verb", "eats", phrase=NounPhrase("a", "cat"))


def test_every_french_sentence_has_one_english_translation(samples):
    seen = {}
    for ex in samples:
        assert seen.setdefault(ex.source, ex.target) == ex.target, ex.source
    words = {w for ex in samples for w in ex.source.split()}
    assert not words & {"son", "sa", "ses"}  # his or her: French does not say whose
    assert not {w for ex in samples for w in ex.target.split()} & {"his", "her"}
    forms = {ex.source.split()[0] for ex in samples}
    assert {"je", "j'ai", "tu", "il", "elle", "nous", "vous", "ils", "elles", "le", "la"} <= forms
    assert {tok for ex in samples for _, tok in ex.alignment} and all(
        {t for _, t in ex.alignment} == set(range(len(ex.target.split()))) for ex in samples
    )


def test_accented_words_are_in_the_source_vocabulary_in_composed_form():
    tok = build_tokenizer(TASK)
    for word in ("étudiant", "êtes", "fatiguée", "boulangère", "achètent", "derrière", "j'ai"):
        assert word in TASK.source_symbols() and unicodedata.is_normalized("NFC", word)
    ids = tok.source.encode("Je suis e\u0301tudiant")  # a capital and a decomposed é, as some keyboards send
    assert ids == tok.source.encode("je suis étudiant") and tok.source.unk_id not in ids
    assert all(len(tokens(s, "word")) <= 11 for s in TASK.examples())
