"""Which server folders a visitor may open: none, unless whoever starts the server names them.

    streamlit run app.py -- --allow-folder /srv/models [--allow-folder /data/ckpt]
    TRANSFORMER_VIZ_FOLDERS=/srv/models:/data/ckpt streamlit run app.py

`ServerFolders.from_environment()` reads both (the command line after `--` and the environment
variable; folders from both count). `open_path(raw)` turns what a visitor typed (or a link's
`path:...`) into a resolved path inside an allowed folder, or raises `PathRefused` with a message that
says nothing about what exists outside those folders:
- turned off: refused before anything is looked at (no stat, no open);
- never a `~` expansion (it would tell which users exist): `~x/...` is a folder named `~x` like any other;
- the path is first checked as text (absolute, normalised) against the allowed folders, so a path
  outside them is refused without touching the file system; then it is resolved (symlinks followed)
  and checked again, so a link inside an allowed folder cannot lead outside;
- a file must be a regular file (a FIFO, device or socket is refused at once, never opened); a folder
  may hold at most MAX_ENTRIES entries, each a regular file or folder resolving inside the allowed folders.
Pure Python: no torch, no streamlit.
"""

from __future__ import annotations

import argparse
import itertools
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from i18n import M_, N_

ENV = "TRANSFORMER_VIZ_FOLDERS"
MAX_ENTRIES = 256  # a checkpoint folder holds a handful of files; more is not a checkpoint
MAX_PATH_CHARS = 1024
SYSTEM = (Path("/proc"), Path("/sys"), Path("/dev"))  # never opened, even when an allowed folder contains them

OFF = M_("opening server folders is turned off on this server")  # an i18n Message: _(OFF) where shown
OUTSIDE = N_("{raw} is not inside the folders this server may open")  # a template: M_(OUTSIDE, raw=...)


class PathRefused(ValueError):
    """A path the server will not open; the message is safe to show to the visitor."""


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _lexical(raw: str, base: Path) -> Path:
    """Absolute, normalised path as text only ('..' folded): no file system access."""
    return Path(os.path.normpath(base / raw))


def parse_folders(argv: Sequence[str]) -> list[str]:
    """The --allow-folder values of a command line (what follows `--` in `streamlit run app.py -- ...`)."""
    parser = argparse.ArgumentParser(prog="streamlit run app.py --", add_help=False)
    parser.add_argument(
        "--allow-folder",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder whose checkpoints visitors may open by path (repeatable)",
    )
    known, _ = parser.parse_known_args(list(argv))
    return known.allow_folder


@dataclass(frozen=True)
class ServerFolders:
    """The folders visitors may open by path; empty means opening server paths is off."""

    folders: tuple[Path, ...] = ()  # as named (absolute, normalised)
    resolved: tuple[Path, ...] = ()  # the same with symlinks followed

    @classmethod
    def of(cls, names: Sequence[str | os.PathLike]) -> ServerFolders:
        named, real = [], []
        for name in names:
            if not str(name).strip():
                continue
            folder = Path(os.path.normpath(Path(name).expanduser().absolute()))
            named.append(folder)
            real.append(folder.resolve())
        return cls(tuple(dict.fromkeys(named)), tuple(dict.fromkeys(real)))

    @classmethod
    def from_environment(
        cls, argv: Sequence[str] | None = None, environ: dict[str, str] | None = None
    ) -> ServerFolders:
        """Folders named by --allow-folder in argv (default: sys.argv[1:] under `streamlit run`) and by $TRANSFORMER_VIZ_FOLDERS."""
        import sys

        environ = os.environ if environ is None else environ
        if argv is None:  # under `streamlit run app.py -- ...`, sys.argv is [app.py, ...]; under pytest it is pytest's
            argv = sys.argv[1:] if sys.argv and Path(sys.argv[0]).name == "app.py" else []
        names = parse_folders(argv) + [p for p in environ.get(ENV, "").split(os.pathsep) if p.strip()]
        return cls.of(names)

    @property
    def enabled(self) -> bool:
        return bool(self.folders)

    def describe(self) -> str:
        return ", ".join(str(f) for f in self.folders)

    def open_path(self, raw: str) -> Path:
        """The resolved path a visitor may open, or PathRefused. A relative path is taken inside the first folder."""
        if not self.enabled:
            raise PathRefused(OFF)
        raw = raw.strip()
        shown = "".join(c if c.isprintable() else "?" for c in raw[:200]) + ("…" if len(raw) > 200 else "")
        refused = PathRefused(M_(OUTSIDE, raw=shown))
        if not raw or len(raw) > MAX_PATH_CHARS or "\x00" in raw:
            raise refused
        # No ~ expansion: "~user" would ask the password database, and its answer (the user exists or not) would
        # show in the reply. A leading ~ is an ordinary folder name, taken inside the first folder like any
        # relative path, so every path outside gets the same answer before anything is looked up.
        candidate = _lexical(raw, self.folders[0])
        if not any(_inside(candidate, f) for f in self.folders + self.resolved):
            raise refused  # outside as text: nothing was looked at
        try:
            real = candidate.resolve()
        except (OSError, RuntimeError):  # a symlink loop
            raise refused from None
        if not any(_inside(real, f) for f in self.resolved) or any(_inside(real, s) for s in SYSTEM):
            raise refused
        try:
            info = real.stat()
        except OSError:
            raise PathRefused(M_("no checkpoint at {path}", path=shown)) from None
        if stat.S_ISDIR(info.st_mode):
            self._check_folder(real, shown)
        elif not stat.S_ISREG(info.st_mode):
            raise PathRefused(M_("{path} is not a regular file", path=shown))
        return real

    def _check_folder(self, folder: Path, shown: str) -> None:
        """Bounded look at a folder's entries: each a regular file or folder resolving inside the allowed folders."""
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries, 1):
                if count > MAX_ENTRIES:
                    raise PathRefused(
                        M_(
                            "{path} holds more than {max} entries; a checkpoint folder holds a few files",
                            path=shown,
                            max=MAX_ENTRIES,
                        )
                    )
                try:
                    mode = os.stat(entry.path).st_mode
                except OSError:  # a dangling link
                    continue
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    raise PathRefused(
                        M_("{path} holds {name}, which is not a regular file", path=shown, name=entry.name)
                    )
                if entry.is_symlink() and not any(_inside(Path(entry.path).resolve(), f) for f in self.resolved):
                    raise PathRefused(
                        M_(
                            "{path} holds {name}, a link that leads outside the folders this server may open",
                            path=shown,
                            name=entry.name,
                        )
                    )


def folder_stamp(path: Path, limit: int = MAX_ENTRIES) -> float:
    """Latest modification time of a file, or of a folder and its first `limit` entries: changes when a checkpoint is rewritten.

    Bounded: a folder with very many entries costs at most `limit` stat calls.
    """
    try:
        info = path.stat()
    except OSError:
        return 0.0
    if not stat.S_ISDIR(info.st_mode):
        return info.st_mtime
    latest = info.st_mtime
    with os.scandir(path) as entries:
        for entry in itertools.islice(entries, limit):
            try:
                latest = max(latest, entry.stat().st_mtime)
            except OSError:
                continue
    return latest
