"""Server folders: off unless the operator names some; inside them only; the same answer for whatever lies outside."""

from __future__ import annotations

import builtins
import os
import pathlib

import pytest

from model.checkpoints import serving
from model.checkpoints.serving import ENV, MAX_ENTRIES, OFF, PathRefused, ServerFolders, folder_stamp, parse_folders
from tests.apptest_helpers import open_page, shown
from tests.browser_helpers import letters_checkpoint
from tests.i18n_helpers import rendered


@pytest.fixture
def area(tmp_path):
    """allowed/letters (a checkpoint), outside/letters (another), and a FIFO in each."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    letters_checkpoint(allowed)
    letters_checkpoint(outside)
    os.mkfifo(allowed / "pipe")
    os.mkfifo(outside / "pipe")
    return allowed, outside


def refusal(folders: ServerFolders, raw: str) -> str:
    with pytest.raises(PathRefused) as err:
        folders.open_path(raw)
    return str(err.value)


def test_off_touches_nothing(monkeypatch, area):
    def touched(*args, **kwargs):
        raise AssertionError(f"the file system was touched: {args}")

    for module, name in [
        (os, "stat"),
        (os, "lstat"),
        (os, "scandir"),
        (os, "listdir"),
        (os.path, "expanduser"),
        (builtins, "open"),
        (pathlib.Path, "resolve"),
        (pathlib.Path, "stat"),
    ]:
        monkeypatch.setattr(module, name, touched)
    off = ServerFolders.of([])
    for raw in [str(area[1] / "pipe"), "/etc/passwd", "~root/.ssh", "~nosuchuser", "relative/x"]:
        assert refusal(off, raw) == OFF


def test_inside_is_resolved_and_opened(area):
    allowed, _ = area
    folders = ServerFolders.of([allowed])
    assert folders.open_path(str(allowed / "letters")) == (allowed / "letters").resolve()
    assert folders.open_path("letters") == (allowed / "letters").resolve()  # relative: inside the first folder
    assert folders.open_path(f"{allowed}/x/../letters/") == (allowed / "letters").resolve()
    os.symlink(allowed / "letters", allowed / "link")  # a link that stays inside is followed
    assert folders.open_path(str(allowed / "link")) == (allowed / "letters").resolve()


def test_outside_gets_one_answer_whether_it_exists_or_not(area, monkeypatch):
    allowed, outside = area
    folders = ServerFolders.of([allowed])
    os.symlink(outside / "letters", allowed / "escape")
    cases = [
        str(outside / "letters"),
        str(outside / "nothing"),
        str(outside / "pipe"),
        "/etc/passwd",
        "/no/such",
        "/root/.ssh",
        "/proc/self/environ",
        f"{allowed}/../outside/letters",
        str(allowed / "escape"),
        "~root/../../outside/letters",
        "~nosuchuser/../../outside/letters",
        "~daemon/../../../outside/letters",
        "a\x00b",
        "x" * 5000,
    ]
    answers = {raw: refusal(folders, raw) for raw in cases}
    shapes = {
        answer.replace(shown, "RAW")
        for raw, answer in answers.items()
        for shown in ["".join(c if c.isprintable() else "?" for c in raw[:200]) + ("…" if len(raw) > 200 else "")]
    }
    assert shapes == {"RAW is not inside the folders this server may open"}, answers


def test_a_tilde_is_an_ordinary_folder_name_and_tells_nothing_about_users(area, monkeypatch):
    """Issue 22: `~daemon/../../<allowed>/letters` loaded while `~nosuchuser/...` was refused (which users exist).
    No visitor path is expanded: both are folders named `~...` inside the first allowed folder, answered alike."""
    allowed, _ = area
    monkeypatch.setattr(os.path, "expanduser", lambda p: pytest.fail("a visitor's ~ was expanded"))
    folders = ServerFolders.of([allowed])
    (allowed / "~me").mkdir()
    letters_checkpoint(allowed / "~me")
    assert folders.open_path("~me/letters") == (allowed / "~me" / "letters").resolve()
    trail = "/".join([".."] * (len(allowed.parts) + 1)) + str(allowed) + "/letters"
    opened = {user: folders.open_path(f"~{user}/{trail}") for user in ("root", "daemon", "nosuchuser")}
    assert set(opened.values()) == {(allowed / "letters").resolve()}  # the same for every name, real user or not
    short = "/".join([".."] * 2) + str(allowed) + "/letters"  # lands outside: refused alike
    answers = {refusal(folders, f"~{u}/{short}")[len(u) + 1 :] for u in ("root", "daemon", "nosuchuser")}
    assert len(answers) == 1 and next(iter(answers)).endswith("is not inside the folders this server may open")
    assert {refusal(folders, f"~{u}").replace(u, "U") for u in ("root", "nosuchuser")} == {"no checkpoint at ~U"}


def test_system_folders_are_refused_even_when_allowed():
    folders = ServerFolders.of(["/"])
    for raw in ["/proc/self/environ", "/dev/zero", "/sys/kernel"]:
        assert refusal(folders, raw).endswith("is not inside the folders this server may open")


def test_non_regular_files_are_refused_at_once(area):
    allowed, _ = area
    folders = ServerFolders.of([allowed])
    assert (
        refusal(folders, str(allowed / "pipe")) == f"{allowed / 'pipe'} is not a regular file"
    )  # opening it would hang
    os.mkfifo(allowed / "letters" / "extra")
    assert "holds extra, which is not a regular file" in refusal(folders, str(allowed / "letters"))


def test_a_folder_with_very_many_entries_is_refused_after_a_bounded_look(tmp_path, monkeypatch):
    big = tmp_path / "big"
    big.mkdir()
    for i in range(MAX_ENTRIES * 8):
        (big / f"f{i}").touch()
    seen = []
    real_scandir = os.scandir

    def counting(path):
        class Counted:
            def __enter__(self):
                self.it = real_scandir(path)
                return (seen.append(e) or e for e in self.it)

            def __exit__(self, *exc):
                self.it.close()

        return Counted()

    monkeypatch.setattr(serving.os, "scandir", counting)
    assert "holds more than" in refusal(ServerFolders.of([tmp_path]), str(big))
    assert len(seen) == MAX_ENTRIES + 1
    seen.clear()
    folder_stamp(big)
    assert len(seen) == MAX_ENTRIES


def test_folder_stamp_follows_a_rewrite(tmp_path):
    folder = letters_checkpoint(tmp_path)
    for p in [folder, *folder.iterdir()]:
        os.utime(p, (1000, 1000))
    assert folder_stamp(folder) == 1000
    os.utime(folder / "config.json", (2000, 2000))
    assert folder_stamp(folder) == 2000
    assert folder_stamp(tmp_path / "nothing") == 0.0


def test_folders_come_from_the_command_line_and_the_environment(tmp_path):
    a, b, c = (tmp_path / n for n in "abc")
    assert parse_folders(["--allow-folder", str(a), "--other", "--allow-folder", str(b)]) == [str(a), str(b)]
    folders = ServerFolders.from_environment(["--allow-folder", str(a)], {ENV: f"{b}{os.pathsep}{c}"})
    assert folders.folders == (a, b, c) and folders.enabled
    assert not ServerFolders.from_environment([], {}).enabled
    assert not ServerFolders.from_environment([], {ENV: " "}).enabled


# -- through the app ---------------------------------------------------------------------------------------


def sidebar_errors(at) -> list[str]:
    return [shown(e.value) for e in at.sidebar.error]


def test_the_app_refuses_path_links_when_off(area, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    _, outside = area
    at = open_page("attention", f"path:{outside / 'pipe'}", timeout=30)  # a FIFO: opening it would hang the run
    assert not at.exception, at.exception
    assert sidebar_errors(at) == [f"Could not open the linked model: {OFF}."]
    options = at.sidebar.selectbox(key="model_choice").options
    assert (
        rendered("Checkpoint folder on this computer…") not in options and rendered("Upload a checkpoint…") in options
    )


def test_the_app_gives_one_answer_outside_and_opens_inside(area, monkeypatch):
    allowed, outside = area
    monkeypatch.setenv(ENV, str(allowed))
    answers = []
    for raw in [str(outside / "letters"), str(outside / "nothing"), "~nosuchuser/../../x", "~root/../../.ssh"]:
        at = open_page("attention", f"path:{raw}", timeout=30)
        assert not at.exception, at.exception
        answers.append([e.replace(raw, "RAW") for e in sidebar_errors(at)])
    assert all(
        a == ["Could not load this model: RAW is not inside the folders this server may open"] for a in answers
    ), answers
    at = open_page("attention", f"path:{allowed / 'letters'}", text="cafe", timeout=30)
    assert not at.exception and not sidebar_errors(at) and at.get("plotly_chart")
