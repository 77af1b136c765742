"""Every number the decoder-only demos' cards state is the one benchmarks/bench_demo_cards.py measured (its results
file), and README.md, README.zh.md and the docs state the cards' numbers: exact match beside each demo's name, the
NoPE lesson's "right at least half the time up to N letters", the per-length table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from model.checkpoints.checkpoint import load_card
from tasks import length_experiment as lx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "bench_demo_cards.json"
DOCS = ("README.md", "README.zh.md", "docs/families.md", "docs/zh/families.md", "docs/demos.md")
ROW_NAMES = {"reverse_decoder_rope": "decoder-only, RoPE", "reverse_decoder_nope": "decoder-only, NoPE"}


def measured() -> dict[str, dict]:
    """demo -> its row of the benchmark's table: examples, exact match, exact match per length."""
    (table,) = json.loads(RESULTS.read_text())["tables"]
    return {
        row[0]: {"examples": int(row[1]), "exact_match": float(row[2]), "per_length": json.loads(row[3])}
        for row in table["rows"]
    }


@pytest.mark.parametrize("name", sorted(ROW_NAMES))
def test_the_card_states_what_the_benchmark_measured(name):
    row, card = measured()[name], load_card(ROOT / "checkpoints" / name)
    assert card["held_out_exact_match"] == row["exact_match"]
    assert card["held_out_examples"] == row["examples"]
    curve = card["length_experiment"]
    assert {str(k): v for k, v in zip(curve["lengths"], curve["exact_match"], strict=True)} == row["per_length"]


@pytest.mark.parametrize("name", sorted(ROW_NAMES))
def test_the_docs_state_the_cards_numbers(name):
    card = load_card(ROOT / "checkpoints" / name)
    stated = []
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        # a number of the form 0.517 within a few words after the demo's name
        stated += [(doc, m) for m in re.findall(rf"`{name}`[^`\d]{{0,80}}?(\d\.\d{{3}})", text)]
    assert stated, name
    assert all(float(x) == card["held_out_exact_match"] for _doc, x in stated), stated
    table = (ROOT / "docs/families.md").read_text()
    (row,) = [line for line in table.splitlines() if line.startswith(f"| {ROW_NAMES[name]} |")]
    cells = [float(c) for c in row.strip("|").split("|")[1:]]
    assert cells == [round(x, 2) for x in card["length_experiment"]["exact_match"]]


def test_the_nope_lesson_says_the_measured_length():
    up_to = lx.holds_up_to(lx.measured_curve(load_card(ROOT / "checkpoints" / "reverse_decoder_nope")))
    english = [
        int(n)
        for doc in ("README.md", "docs/families.md")
        for n in re.findall(r"half the time up to (\d+) letters", (ROOT / doc).read_text())
    ]
    chinese = [
        int(n)
        for doc in ("README.zh.md", "docs/zh/families.md")
        for n in re.findall(r"(?:最多 |长度：\n?)(\d+) 个字母", (ROOT / doc).read_text())
    ]
    assert english and chinese and set(english) == set(chinese) == {up_to}, (english, chinese)
