"""The wizard of `nuboard artifact add`, driven through a real prompt_toolkit pipe input.

What it prints (✓, ✗, the metadata list, the review) is read from its output; what
prompt_toolkit draws (the questions and the answers typed) from a screen that keeps it.
"""
from __future__ import annotations

import asyncio
import io
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from nuboard.artifacts import add_artifact
from nuboard.artifacts.form import AddForm
from nuboard.cli.wizard import run_wizard

HELP = ("  key=value adds or replaces · 2 key=value edits line 2 · -2 deletes line 2 · "
        "key:int=5 sets the type · < back · Enter when done")
Q_TARGET = "Project/name (such as datasets/fineweb-edu): "
Q_PATH = "Path (the file or folder; ~ and $VARS work): "
Q_STORE = "Store (copy, or reference to leave the files where they are) [copy]: "
Q_TYPE = "Type (dataset | model | checkpoint | report | other): "
Q_DESCRIPTION = "Description (what this version is): "
Q_HASH = "Hash every file? (y reads all the data once; n is quick) [n]: "
Q_META = "metadata> "
Q_WRITE = "Write it? y = write · 1-7 = change · < back · q = quit: "


class Screen(DummyOutput):
    """A 200-column terminal that keeps the text prompt_toolkit draws."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def write(self, data: str) -> None:
        self.parts.append(data)

    write_raw = write

    def get_size(self) -> Size:
        return Size(rows=40, columns=200)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def drive(keys: str, root: Path, form: AddForm | None = None) -> tuple[AddForm | None, list[str], str]:
    """Type `keys` into the wizard; return its result, the lines it printed and the screen.

    The input is closed after the keys, so a wizard that wants more ends (with None)
    instead of waiting.
    """
    screen, printed = Screen(), io.StringIO()

    def run() -> AddForm | None:
        with create_pipe_input() as inp, create_app_session(input=inp, output=screen):
            inp.send_text(keys)
            inp.close()
            return run_wizard(form if form is not None else AddForm(), root=root, output=printed)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        result = run()
    else:      # a browser test ran in this process (xdist) and left Playwright's loop running here
        with ThreadPoolExecutor(1) as pool:
            result = pool.submit(run).result()
    return result, printed.getvalue().splitlines(), screen.text


def assert_in_order(text: str, pieces: list[str]) -> None:
    """Each piece appears in text, after the one before it."""
    at = 0
    for piece in pieces:
        piece = piece.rstrip()             # a space before nothing typed is not drawn
        found = text.find(piece, at)
        assert found >= 0, f"{piece!r} not found after position {at}"
        at = found + len(piece)


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def keys(*answers: str) -> str:
    """Answers typed one a line (Enter after each)."""
    return "".join(a + "\r" for a in answers)


@pytest.fixture
def data(tmp_path) -> Path:
    """A small folder of 3 files, 3 kB."""
    folder = tmp_path / "data"
    folder.mkdir()
    for i in range(3):
        (folder / f"s{i}.bin").write_bytes(b"x" * 1000)
    return folder


def spec_home(tmp_path: Path, monkeypatch) -> Path:
    """$HOME with ~/data/fineweb-edu/2026-10: 1,204 sparse files, 812 GB in all."""
    home = tmp_path / "home"
    folder = home / "data" / "fineweb-edu" / "2026-10"
    folder.mkdir(parents=True)
    first = folder / "shard-0000.bin"
    first.touch()
    os.truncate(first, 674_418_605)
    if os.stat(first).st_blocks * 512 >= 674_418_605:
        pytest.skip("this filesystem has no sparse files")
    for i in range(1, 1204):
        path = folder / f"shard-{i:04d}.bin"
        path.touch()
        os.truncate(path, 674_418_605)
    monkeypatch.setenv("HOME", str(home))
    return home


def test_the_spec_transcript(root, tmp_path, monkeypatch):
    spec_home(tmp_path, monkeypatch)
    small = tmp_path / "old"
    small.mkdir()
    (small / "a").write_bytes(b"1")
    add_artifact("datasets", "fineweb-edu", small, reference=True)
    add_artifact("datasets", "fineweb-edu", small, reference=True)
    before = listing(root)

    result, printed, screen = drive(keys(
        "fineweb-edu", "datasets/fineweb-edu", "~/data/fineweb-edu/2026-10", "reference", "dataset",
        "FineWeb-Edu, Oct 2026 snapshot, deduplicated", "", "tokens=12B", "rows=1200000", "", "y"), root)

    assert printed == [
        "  ✗ give the project too, as in datasets/fineweb-edu",
        "  ✓ will be fineweb-edu:v3",
        "  ✓ 1,204 files, 812 GB",
        "Metadata (optional)",
        HELP,
        '  1  tokens = "12B"  (text)',
        '  1  tokens = "12B"  (text)',
        "  2  rows = 1200000  (int)",
        "",
        "Review",
        "  1  name         datasets/fineweb-edu  (new version v3)",
        "  2  path         ~/data/fineweb-edu/2026-10  (1,204 files, 812 GB)",
        "  3  store        reference",
        "  4  type         dataset",
        "  5  description  FineWeb-Edu, Oct 2026 snapshot, deduplicated",
        "  6  checksum     no",
        '  7  metadata     tokens="12B" (text), rows=1200000 (int)',
    ]
    assert_in_order(screen, [
        Q_TARGET + "fineweb-edu", Q_TARGET + "datasets/fineweb-edu",
        Q_PATH + "~/data/fineweb-edu/2026-10", Q_STORE + "reference", Q_TYPE + "dataset",
        Q_DESCRIPTION + "FineWeb-Edu, Oct 2026 snapshot, deduplicated", Q_HASH,
        Q_META + "tokens=12B", Q_META + "rows=1200000", Q_META, Q_WRITE + "y"])
    assert screen.startswith(Q_TARGET.rstrip())           # no space before the question
    assert result == AddForm(target="datasets/fineweb-edu", path="~/data/fineweb-edu/2026-10",
                             store="reference", type="dataset",
                             description="FineWeb-Edu, Oct 2026 snapshot, deduplicated", checksum=False,
                             metadata=[("tokens", "12B", "text"), ("rows", 1200000, "int")])
    assert listing(root) == before                        # the wizard writes nothing


def test_a_mistake_is_asked_again(root, tmp_path, data):
    result, printed, screen = drive(keys(
        "datasets/x", str(tmp_path / "nope"), str(data), "copy", "datset", "dataset", "", "d", "", "y"), root)
    assert printed[:5] == [
        "  ✓ will be x:v1, a new artifact",
        f"  ✗ path {str(tmp_path / 'nope')!r} does not exist: give an existing file or folder.",
        "  ✓ 3 files, 3 kB",
        "  ✗ 'datset' is not one of dataset, model, checkpoint, report, other",
        "  ✗ give a description: say in a few words what this version is",
    ]
    assert_in_order(screen, [Q_TYPE + "datset", Q_TYPE + "dataset", Q_DESCRIPTION, Q_DESCRIPTION + "d"])
    assert Q_HASH not in screen                           # a copy is always hashed: not asked
    assert "  6  checksum     yes (a copy is always hashed)" in printed
    assert result.type == "dataset" and result.store == "copy" and result.checksum is True


def test_back_keeps_earlier_answers_as_defaults(root, data):
    result, printed, screen = drive(keys(
        "datasets/x", str(data), "reference",
        "<", "",                    # at type: back to store, Enter keeps reference
        "model", "<", "",           # at description: back to type, Enter keeps model
        "first", "<", "",           # at the hash question: back to description, Enter keeps it
        "y", "", "y"), root)
    assert_in_order(screen, [
        Q_STORE + "reference", Q_TYPE + "<", Q_STORE.replace("[copy]", "[reference]"),
        Q_TYPE + "model", Q_DESCRIPTION + "<", Q_TYPE.replace(": ", " [model]: "),
        Q_DESCRIPTION + "first", Q_HASH + "<", Q_DESCRIPTION.replace(": ", " [first]: "), Q_HASH + "y"])
    assert (result.store, result.type, result.description, result.checksum) == \
        ("reference", "model", "first", True)
    assert "  6  checksum     yes" in printed


def test_back_to_the_name_and_path_keeps_them(root, data):
    result, printed, screen = drive(keys("datasets/x", str(data), "<", "<", "", "", "", "other", "d", "", "y"),
                                    root)
    assert_in_order(screen, [Q_PATH + str(data), Q_STORE + "<",
                             Q_PATH.replace(": ", f" [{data}]: ") + "<",
                             Q_TARGET.replace(": ", " [datasets/x]: "), Q_PATH.replace(": ", f" [{data}]: ")])
    assert printed.count("  ✓ will be x:v1, a new artifact") == 2
    assert (result.target, result.path, result.store) == ("datasets/x", str(data), "copy")


def test_back_at_the_first_question_says_so(root, data):
    result, printed, _ = drive(keys("<", "datasets/x", str(data), "", "other", "d", "", "y"), root)
    assert printed[0] == "  ✗ there is no field before this one"
    assert result.target == "datasets/x"


def test_metadata_edits(root, data):
    form = AddForm(target="datasets/x", path=str(data), store="copy", type="dataset", description="d",
                   metadata=[("tokens", "12B", "text")])
    result, printed, screen = drive(keys(
        "rows=5", "2 rows=1200000", "-1", "steps:int=5", "steps:int=x", "rows=7", "", "y"), root, form)
    assert Q_TARGET not in screen and Q_TYPE not in screen    # given on the command line: not asked
    assert printed == [
        "Metadata (optional)", HELP,
        '  1  tokens = "12B"  (text)',                          # from the command line
        '  1  tokens = "12B"  (text)', "  2  rows = 5  (int)",
        '  1  tokens = "12B"  (text)', "  2  rows = 1200000  (int)",
        "  1  rows = 1200000  (int)",
        "  1  rows = 1200000  (int)", "  2  steps = 5  (int)",
        "  ✗ 'x' is not a whole number, as steps:int= needs (such as steps:int=5)",
        "  1  rows = 7  (int)", "  2  steps = 5  (int)",
        "", "Review",
        "  1  name         datasets/x  (new artifact, v1)",
        f"  2  path         {data}  (3 files, 3 kB)",
        "  3  store        copy", "  4  type         dataset", "  5  description  d",
        "  6  checksum     yes (a copy is always hashed)",
        "  7  metadata     rows=7 (int), steps=5 (int)",
    ]
    assert result.metadata == [("rows", 7, "int"), ("steps", 5, "int")]


def test_review_change_by_number(root, data):
    form = AddForm(target="datasets/x", path=str(data), store="copy", type="dataset", description="d")
    result, printed, screen = drive(keys("", "4", "model", "3", "reference", "y", "6", "n", "8", "y"),
                                    root, form)
    assert [line for line in printed if line.startswith("  4  type")] == \
        ["  4  type         dataset", "  4  type         model", "  4  type         model",
         "  4  type         model"]
    assert printed.count("Review") == 4                   # shown again after each change
    assert [line for line in printed if line.startswith("  6  checksum")] == \
        ["  6  checksum     yes (a copy is always hashed)", "  6  checksum     yes (a copy is always hashed)",
         "  6  checksum     yes", "  6  checksum     no"]
    assert "  3  store        reference" in printed
    assert printed[-1] == "  ✗ '8' is not y, a line number 1-7, < or q"
    assert_in_order(screen, [Q_WRITE + "4", Q_TYPE.replace(": ", " [dataset]: ") + "model",
                             Q_WRITE + "3", Q_STORE + "reference", Q_HASH + "y", Q_WRITE + "6",
                             Q_HASH.replace("[n]", "[y]") + "n", Q_WRITE + "8", Q_WRITE + "y"])
    assert (result.type, result.store, result.checksum) == ("model", "reference", False)


def test_review_cannot_choose_the_checksum_of_a_copy(root, data):
    form = AddForm(target="datasets/x", path=str(data), store="copy", type="dataset", description="d")
    result, printed, screen = drive(keys("", "6", "<", "", "y"), root, form)
    assert "  ✗ a copy is always hashed: change the store (line 3) to reference to choose" in printed
    assert Q_HASH not in screen
    assert_in_order(screen, [Q_WRITE + "6", Q_WRITE + "<", Q_META, Q_WRITE + "y"])
    assert printed.count("Review") == 2 and result.checksum is True


def running_run(root: Path) -> Path:
    """A run of project llm that is still running (a fresh heartbeat), with files/best.pt."""
    run = root / "llm" / "runs" / "r1"
    (run / "files").mkdir(parents=True)
    (run / "files" / "best.pt").write_bytes(b"best")
    (run / "run.json").write_text(json.dumps({"id": "r1", "project": "llm", "status": "running"}))
    (run / "heartbeat").write_text("{}")
    return run


def test_a_running_run_cannot_be_referenced(root):
    run = running_run(root)
    result, printed, _ = drive(keys("llm/best", str(run / "files" / "best.pt"), "reference", "copy",
                                    "checkpoint", "best", "", "y"), root)
    assert printed[2].startswith("  ✗ run 'r1' is still running")
    assert result.store == "copy"


def test_a_flag_path_refused_as_a_reference_asks_the_store(root):
    run = running_run(root)
    form = AddForm(path=str(run / "files" / "best.pt"), store="reference", type="checkpoint",
                   description="best")
    result, printed, screen = drive(keys("llm/best", "", "", "y"), root, form)
    assert printed[0] == "  ✓ will be best:v1, a new artifact"
    assert printed[1].startswith("  ✗ run 'r1' is still running")
    assert_in_order(screen, [Q_TARGET + "llm/best", Q_STORE, Q_META, Q_WRITE + "y"])
    assert Q_PATH not in screen and "  2  path         " + str(run / "files" / "best.pt") + \
        "  (1 file, 4 B)" in printed
    assert result.store == "copy" and result.checksum is True


def test_back_from_the_metadata_to_the_field_before(root, data):
    form = AddForm(target="datasets/x", path=str(data), store="copy", type="dataset")
    result, printed, screen = drive(keys("d", "a=1", "<", "e", "", "y"), root, form)
    assert_in_order(screen, [Q_DESCRIPTION + "d", Q_META + "a=1", Q_META + "<",
                             Q_DESCRIPTION.replace(": ", " [d]: ") + "e", Q_META, Q_WRITE + "y"])
    assert printed.count("Metadata (optional)") == 2
    assert result.description == "e" and result.metadata == [("a", 1, "int")]


def test_bad_flags_are_shown_and_asked(root, data):
    form = AddForm(target="fineweb-edu", path=str(data), store="copy", type="datset", description="d")
    result, printed, screen = drive(keys("datasets/x", "dataset", "", "y"), root, form)
    assert printed[:3] == ["  ✗ NAME: give the project too, as in datasets/fineweb-edu",
                           "  ✗ --type: 'datset' is not one of dataset, model, checkpoint, report, other",
                           "  ✓ will be x:v1, a new artifact"]
    assert Q_PATH not in screen and Q_STORE not in screen
    assert (result.target, result.type, result.path) == ("datasets/x", "dataset", str(data))


@pytest.mark.parametrize("tail", ["q\r", "\x03"])
def test_quit_and_ctrl_c_write_nothing(root, data, tail):
    add_artifact("datasets", "x", data, reference=True)
    before = listing(root)
    result, printed, _ = drive(keys("datasets/x", str(data), "reference", "dataset", "d", "", "")
                               + tail, root)
    assert result is None
    assert printed[-2:] == ["  6  checksum     no", "  7  metadata     none"]     # left at once
    assert listing(root) == before


def test_ctrl_c_at_the_first_question(root):
    result, printed, _ = drive("\x03", root)
    assert result is None and printed == [] and not root.exists()


def test_the_path_names_what_it_leaves_out(root, tmp_path, data):
    os.symlink("../nowhere", data / "gone")
    os.mkfifo(data / "pipe")
    result, printed, _ = drive(keys("datasets/x", str(data), "copy", "dataset", "d", "", "y"), root)
    assert printed[1:3] == [
        "  ✓ 3 files, 3 kB",
        f"  ⚠ path {str(data)!r}: 2 entries left out (not regular files or folders): "
        "gone (a dangling link), pipe (a FIFO)",
    ]
    assert result is not None and result.path == str(data)
