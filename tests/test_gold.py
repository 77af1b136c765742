"""Gold alignments of demo inputs (tasks/gold.py): the task's own Example for that exact source, or None."""

import datetime

import pytest

from tasks.gold import gold_alignment, gold_example
from tasks.registry import TASKS
from tasks.task_dates import render_date


def test_reverse_and_copy_align_each_letter_with_its_mirror_or_itself():
    assert gold_alignment({"task": "reverse"}, "abcd") == [(0, 3), (1, 2), (2, 1), (3, 0)]
    assert gold_alignment({"task": "copy"}, "abcd") == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert gold_alignment({"task": "reverse"}, "abcd", output_text="dcba") is not None
    assert gold_alignment({"task": "reverse"}, "abcd", output_text="dcbb") is None  # the model's output differs
    assert gold_alignment({"task": "reverse"}, "xyz") is None  # letters the task never uses
    assert gold_alignment({"task": "reverse"}, "a" * 25) is None  # longer than the task's strings


def test_translate_knows_its_example_sentences_only():
    card = {"task": "translate"}
    example = gold_example(card, "the red car sees a small dog")
    assert example.target == "la voiture rouge voit un petit chien"
    pairs = gold_alignment(card, "the red car sees a small dog")
    assert (1, 2) in pairs and (2, 1) in pairs  # "red" -> "rouge" after the noun, "car" -> "voiture"
    assert gold_alignment(card, "the red car sees a big dog") is None
    for sentence in TASKS["translate"].examples():
        assert gold_example(card, sentence).source == sentence


@pytest.mark.parametrize(
    "date, fmt, short, weekday",
    [
        (datetime.date(2026, 11, 21), "{D} of {M} {Y}", False, "full"),
        (datetime.date(1999, 12, 31), "{d}/{m}/{Y}", False, None),
        (datetime.date(2001, 1, 1), "{d} {M} {Y}", True, "short,"),
        (datetime.date(2026, 3, 3), "{Y} {M} {d}", False, None),
    ],
)
def test_dates_are_found_for_what_the_templates_write(date, fmt, short, weekday):
    written = render_date(date, fmt, short, weekday)
    found = gold_example({"task": "dates"}, written.source)
    assert found is not None and found.target == date.isoformat() and found.alignment == written.alignment


def test_unknown_cards_and_inputs_give_none():
    assert gold_alignment({}, "abc") is None
    assert gold_alignment({"task": "nonsense"}, "abc") is None
    assert gold_alignment({"task": "dates"}, "tuesday 21st of november 2026") is None  # it was a saturday
    assert gold_alignment({"task": "dates"}, "21st nov") is None  # no year
    for example in TASKS["dates"].examples():
        assert gold_example({"task": "dates"}, example) is not None
