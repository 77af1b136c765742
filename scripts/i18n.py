"""The translation catalogs: extract the marked strings, merge them into each language, compile, list what is missing.

    .venv/bin/python scripts/i18n.py extract    app.py, pages/, ui/, viz/, model/, tasks/ -> i18n/messages.pot (marked strings only)
    .venv/bin/python scripts/i18n.py update     merge messages.pot into i18n/locale/<lang>/LC_MESSAGES/messages.po
    .venv/bin/python scripts/i18n.py compile    messages.po -> messages.mo (what the app reads)
    .venv/bin/python scripts/i18n.py missing    msgids of the tree with no translation, or a fuzzy one; exit 1 if any
    .venv/bin/python scripts/i18n.py sync       extract, update and compile in one go
    .venv/bin/python scripts/i18n.py todo [FILE]     the entries still to translate, alone, as a small .po
    .venv/bin/python scripts/i18n.py merge FILE      copy the translations of such a file into messages.po, compile

After adding strings: `sync`, then either translate the entries `missing` lists in messages.po itself (fill msgstr,
delete the "#, fuzzy" line once a proposed translation is checked) and `compile`, or `todo todo.po`, fill in
todo.po, `merge todo.po`. `missing` exits 0 once every marked string has its translation.
Keywords: _ and N_ (one string), ngettext (singular, plural), M_ (a Message kept with its values), NM_ (its
plural form); see i18n/__init__.py. Babel is in requirements.txt: scripts/setup.sh compiles the .mo (not kept in git) and the app reads the
.mo with the standard library's gettext.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
I18N = ROOT / "i18n"
POT = I18N / "messages.pot"
LOCALE_DIR = I18N / "locale"
DOMAIN = "messages"
LANGUAGES = ("zh",)  # every language with a catalog (English is the source text)
KEYWORDS = ("_", "N_", "ngettext:1,2", "M_", "NM_:1,2")
MAPPING = ROOT / "babel.cfg"
HEADER = dict(project="transformer-viz", copyright_holder="transformer-viz contributors")


def po_path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def mo_path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


def _pybabel(*args: str) -> None:
    """Run a pybabel command in the repository root (paths in the catalogs are relative to it)."""
    import os

    from babel.messages.frontend import CommandLineInterface

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        CommandLineInterface().run(["pybabel", "-q", *args])
    finally:
        os.chdir(here)


def extract(output: Path = POT) -> Path:
    """The marked strings of the tree as a template (locations relative to the repository root, sorted by file)."""
    keywords = [arg for k in KEYWORDS for arg in ("-k", k)]
    _pybabel(
        "extract",
        "--no-default-keywords",
        *keywords,
        "-F",
        str(MAPPING),
        "--sort-by-file",
        "--no-wrap",
        "--project",
        HEADER["project"],
        "--copyright-holder",
        HEADER["copyright_holder"],
        "-o",
        str(output),
        ".",  # babel.cfg names what is read (app.py, pages/, ui/, viz/, model/, tasks/); every other file is skipped
    )
    return output


def update() -> None:
    """Merge the template into each language's .po (created when missing); removed strings are dropped."""
    for lang in LANGUAGES:
        command = "update" if po_path(lang).exists() else "init"
        extra = ["--ignore-obsolete", "--no-wrap"] if command == "update" else ["--no-wrap"]
        _pybabel(command, "-i", str(POT), "-d", str(LOCALE_DIR), "-D", DOMAIN, "-l", lang, *extra)


def compile_catalogs() -> None:
    """Each .po -> .mo (fuzzy entries are left out: the app shows their English until someone checks them)."""
    for lang in LANGUAGES:
        _pybabel("compile", "-d", str(LOCALE_DIR), "-D", DOMAIN, "-l", lang)


def read_catalog(path: Path):
    from babel.messages.pofile import read_po

    with open(path, "rb") as fh:
        return read_po(fh)


def extracted_catalog():
    """What `extract` would write, read back as a catalog (nothing in the tree is changed)."""
    with tempfile.TemporaryDirectory() as tmp:
        return read_catalog(extract(Path(tmp) / "messages.pot"))


def _untranslated(message) -> bool:
    strings = message.string if isinstance(message.string, (list, tuple)) else [message.string]
    return not all(strings) or message.fuzzy


def missing(lang: str = "zh") -> list[tuple[str, str]]:
    """(msgid, why) for every string the tree marks that `lang`'s .po lacks, leaves empty or marks fuzzy."""
    catalog = read_catalog(po_path(lang))
    found = []
    for message in extracted_catalog():
        if not message.id:
            continue
        where = ", ".join(f"{f}:{n}" for f, n in message.locations[:3])
        known = catalog.get(message.id)
        if known is None:
            found.append((message.id, f"not in {po_path(lang).relative_to(ROOT)} ({where}): run update"))
        elif _untranslated(known):
            found.append((message.id, f"{'fuzzy' if known.fuzzy else 'empty'} ({where})"))
    return found


def todo(out: Path, lang: str = "zh") -> int:
    """Write the entries of `lang`'s .po that are empty or fuzzy (run `update` first) to `out`; their count."""
    from babel.messages.pofile import write_po

    catalog = read_catalog(po_path(lang))
    for message in list(catalog):
        if message.id and not _untranslated(message):
            del catalog[message.id]
    with open(out, "wb") as fh:
        write_po(fh, catalog, width=0, include_previous=True)
    return sum(1 for m in catalog if m.id)


def merge(source: Path, lang: str = "zh") -> int:
    """Copy every non-empty, non-fuzzy translation of `source` (a .po, e.g. a filled `todo` file) into `lang`'s
    .po, for msgids it holds; write it and compile. Returns how many entries were taken."""
    from babel.messages.pofile import write_po

    filled, catalog = read_catalog(source), read_catalog(po_path(lang))
    taken = 0
    for message in filled:
        target = catalog.get(message.id) if message.id else None
        if target is None or message.fuzzy or _untranslated(message):
            continue
        target.string = message.string
        target.flags.discard("fuzzy")
        taken += 1
    with open(po_path(lang), "wb") as fh:
        write_po(fh, catalog, width=0, ignore_obsolete=True)
    compile_catalogs()
    return taken


def _msgid_text(msgid) -> str:
    return " | ".join(msgid) if isinstance(msgid, (list, tuple)) else msgid


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["extract", "update", "compile", "missing", "sync", "todo", "merge"])
    parser.add_argument(
        "file", nargs="?", type=Path, help="todo: where to write (default todo.zh.po); merge: what to read"
    )
    args = parser.parse_args(argv)
    if args.command == "todo":
        out = args.file or Path("todo.zh.po")
        print(f"wrote {todo(out)} entries to translate to {out}")
        return 0
    if args.command == "merge":
        if args.file is None:
            parser.error("merge needs the .po file to read")
        print(f"took {merge(args.file)} translations from {args.file}; compiled")
        return 0
    if args.command in ("extract", "sync"):
        extract()
        print(f"wrote {POT.relative_to(ROOT)}")
    if args.command in ("update", "sync"):
        update()
        print("updated " + ", ".join(str(po_path(lang).relative_to(ROOT)) for lang in LANGUAGES))
    if args.command in ("compile", "sync"):
        compile_catalogs()
        print("compiled " + ", ".join(str(mo_path(lang).relative_to(ROOT)) for lang in LANGUAGES))
    if args.command == "missing":
        out = io.StringIO()
        total = 0
        for lang in LANGUAGES:
            for msgid, why in missing(lang):
                total += 1
                print(f"[{lang}] {_msgid_text(msgid)!r}: {why}", file=out)
        sys.stdout.write(out.getvalue())
        print(f"{total} message(s) to translate" if total else "every marked string is translated")
        return 1 if total else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
