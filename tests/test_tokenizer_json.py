"""model/text/tokenizer_json.py: this project's vocabularies as one tokenizer.json, run by `tokenizers` (the app)
and by the vendored tokenizers.js (the lecture pack, here under node) with the same symbols for generated input."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from model import load_checkpoint
from model.checkpoints.demos import list_demos
from model.text.tokenizer import SPECIALS, Vocab
from pack.live import HERE

WORDS = ["le", "chat", "noir", "j'ai", "...", "«", "»", ".", "(", "l'", "étudiant", "--x--", "Noël"]
ODD = ["Noir.", "noir.", "«chat»", "((le", "?!", "...", "j'ai,", "Élève", "e\u0301tudiant", "42", "😀", "👩‍🔬", "zzqx",
       "chat,", "ÇA", "<s>", "<unk>", "l'homme!", "--x--!", "'noir'", "x.y", "¿qué?", "-"]  # fmt: skip


def generated(vocab: Vocab, n: int, seed: int) -> list[str]:
    """Random known symbols and odd words: capitals, punctuation at word ends, accents (NFD too), digits, emoji."""
    rng = random.Random(seed)
    known = [t for t in vocab.tokens if t not in SPECIALS]
    joiner = "" if vocab.level == "char" else " "
    texts = []
    for _ in range(n):
        words = [rng.choice(known + ODD) for _ in range(rng.randint(1, 8))]
        if rng.random() < 0.5:
            words = [w.capitalize() for w in words]
        texts.append((joiner if rng.random() < 0.7 else " ").join(words) + rng.choice(["", ".", " ?", "!!", "…", ","]))
    return texts


def test_the_rules_of_a_word_vocabulary():
    vocab = Vocab.build(WORDS, "word", lowercase=True)
    assert vocab.split("Le chat noir.") == ["le", "chat", "noir", "."]  # the full stop is split off (fr_en's drift)
    assert vocab.split("«Chat» ((le") == ["«", "chat", "»", "(", "(", "le"]  # each mark on its own
    assert vocab.split("J'ai ... ?!") == ["j'ai", "...", "?!"]  # inner marks stay; all-punctuation words stay whole
    assert vocab.split("--x--") == ["--x--"] and vocab.split("--y--") == ["-", "-", "y", "-", "-"]  # known: whole
    assert vocab.split("e\u0301tudiant NOËL") == ["étudiant", "noël"]  # NFC, then lower-case
    chars = Vocab.build(list("abc "), "char")
    assert chars.split("a b😀é") == ["a", " ", "b", "😀", "é"]  # one symbol per code point, spaces included
    assert vocab.encode("noir. zzqx") == [vocab.tokens.index("noir"), vocab.tokens.index("."), vocab.unk_id]


def test_the_description_is_a_tokenizer_json_that_tokenizers_reads():
    from tokenizers import Tokenizer

    vocab = Vocab.build(WORDS, "word", lowercase=True)
    data = vocab.description()
    assert data["model"]["type"] == "WordLevel" and data["added_tokens"] == []
    tok = Tokenizer.from_str(json.dumps(data))
    assert tok.encode("Le chat noir.", add_special_tokens=False).ids == vocab.encode("Le chat noir.")


def vocabularies() -> dict[str, Vocab]:
    out = {"words": Vocab.build(WORDS, "word", lowercase=True), "chars": Vocab.build(list("abcé.,!? "), "char")}
    for demo in list_demos():
        if demo.name in ("fr_en", "translate", "dates", "reverse"):
            out[demo.name] = load_checkpoint(demo.path)[1].source
    return out


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_tokenizers_js_reads_generated_text_as_the_app(tmp_path):
    cases = [
        {
            "name": name,
            "json": v.description(),
            "texts": (texts := generated(v, 120, i)),
            "want": [v.split(t) for t in texts],
        }
        for i, (name, v) in enumerate(vocabularies().items())
    ]
    (tmp_path / "cases.json").write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    module = (HERE / "vendor" / "tokenizers" / "tokenizers.min.mjs").as_uri()
    script = f"""
    import {{ Tokenizer }} from {json.dumps(module)};
    import {{ readFileSync }} from "node:fs";
    const cases = JSON.parse(readFileSync({json.dumps(str(tmp_path / "cases.json"))}, "utf8"));
    const out = cases.map(c => {{ const t = new Tokenizer(c.json, {{unk_token: "<unk>"}}); return c.texts.map(x => t.tokenize(x)); }});
    console.log(JSON.stringify(out));
    """
    got = json.loads(subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True,
                                    check=True, timeout=120).stdout)  # fmt: skip
    for case, symbols in zip(cases, got):
        for text, want, have in zip(case["texts"], case["want"], symbols):
            assert have == want, (case["name"], text)
