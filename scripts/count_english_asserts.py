"""Count the tests that assert English sentences of the UI instead of message ids and values.

    python scripts/count_english_asserts.py           # files and their count, then the totals
    python scripts/count_english_asserts.py --lines   # every place found: line and sentence
    python scripts/count_english_asserts.py --all     # any English phrase of three words, UI or not

Where: a string literal inside
- an `assert` statement;
- `pytest.raises(..., match=...)` / `pytest.warns(..., match=...)`;
- a lookup of a page by its text: `get_by_text`, `get_by_role`, `to_have_text`, `to_contain_text`, `has_text=`,
  `text=`, `wait_text(watch, text)`, `wait_title(watch, title)`, and the expressions given to `wait_until` / `wait_for_function`.
What: a phrase of three English words in a row (words of letters, separated by spaces or punctuation, not by a
`{placeholder}`) that is also a phrase of a message of the catalog (i18n/messages.pot): a sentence of the UI copied
into a test. `--all` counts every such phrase, in the catalog or not (inputs the test types, a library's own
exception text).
Not counted: a literal handed to the catalog (`_()`, `M_()`, `N_()`, `NM_()`, `ngettext()`) or to
tests/i18n_helpers' msgid(), msgid_starting(), rendered() and matching() (which fail unless it is a message id of
the catalog): that is a message id, rendered or
compared as one. Neither are docstrings, comments, or strings outside the places above.
docs/architecture.md writes this script's totals.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POT = ROOT / "i18n" / "messages.pot"
WORD = r"[A-Za-z][a-z']*"
PHRASE = re.compile(rf"(?<![\w./\\{{-]){WORD}(?:[ ,;:]+{WORD}){{2,}}(?![\w}}])")
CATALOG = {"_", "M_", "N_", "NM_", "ngettext", "msgid", "msgid_starting", "rendered", "matching"}
TEXT_CALLS = {
    "get_by_text",
    "get_by_role",
    "to_have_text",
    "to_contain_text",
    "wait_text",
    "wait_title",
    "wait_until",
    "wait_for_function",
}


def _trigrams(text: str) -> set[tuple[str, str, str]]:
    """Every three words in a row of the phrases in `text`, lower case."""
    found = set()
    for phrase in PHRASE.findall(text):
        words = re.findall(WORD, phrase.lower())
        found.update(zip(words, words[1:], words[2:]))
    return found


@cache
def catalog_trigrams() -> frozenset:
    """The three-word phrases of every message of the catalog (its template file, messages.pot)."""
    msgids = re.findall(r'^msgid(?:_plural)? ((?:".*"\n)+)', POT.read_text(encoding="utf-8"), re.M)
    found: set = set()
    for block in msgids:
        text = "".join(ast.literal_eval(line) for line in block.splitlines())
        found |= _trigrams(text)
    return frozenset(found)


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _literals(node: ast.AST, ui_only: bool) -> list[tuple[int, str]]:
    """(line, literal) for the string literals under `node` holding an English phrase of three words (of the
    catalog, when ui_only), skipping those handed to the catalog's markers or to msgid()."""
    found = []

    def walk(n: ast.AST) -> None:
        if isinstance(n, ast.Call) and _name(n.func) in CATALOG:
            return
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            grams = _trigrams(n.value)
            if grams and (not ui_only or grams & catalog_trigrams()):
                found.append((n.lineno, n.value))
        for child in ast.iter_child_nodes(n):
            walk(child)

    walk(node)
    return found


def _checked(node: ast.AST) -> list[ast.AST]:
    """The parts of `node` that a test compares with what the code said (empty: none)."""
    if isinstance(node, ast.Assert):
        return [node.test]
    if not isinstance(node, ast.Call):
        return []
    name = _name(node.func)
    if name in {"raises", "warns"}:
        return [k.value for k in node.keywords if k.arg == "match"]
    if name in TEXT_CALLS:
        args = (
            node.args[1:] if name in {"wait_until", "wait_text", "wait_title"} else node.args
        )  # (page, text or expression)
        return [*args, *(k.value for k in node.keywords)]
    return [k.value for k in node.keywords if k.arg in {"has_text", "text"}]


def places(path: Path, ui_only: bool = True) -> list[tuple[int, str]]:
    """(line, literal) of every English sentence that the test file `path` asserts on."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: dict[tuple[int, str], None] = {}
    for node in ast.walk(tree):
        for part in _checked(node):
            for place in _literals(part, ui_only):
                found[place] = None
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", action="store_true", help="list every place found")
    parser.add_argument("--all", action="store_true", help="any English phrase of three words, UI or not")
    parser.add_argument("folder", nargs="?", default=str(ROOT / "tests"))
    args = parser.parse_args(argv)
    files = total = 0
    for path in sorted(Path(args.folder).rglob("test_*.py")):
        found = places(path, ui_only=not args.all)
        if not found:
            continue
        files += 1
        total += len(found)
        print(f"{len(found):4d}  {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        for line, text in found if args.lines else ():
            print(f"        {line}: {text[:110]!r}")
    what = "English phrases of three words" if args.all else "English sentences of the UI (a catalog phrase)"
    print(f"{files} test files assert {total} {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
