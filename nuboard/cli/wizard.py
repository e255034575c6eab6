"""The wizard of `nuboard artifact add`: asks for each missing field, checks it on the spot, reviews.

Every question goes through prompt_toolkit's current app session (questionary's Question
over a PromptSession), so a test drives it with a pipe input:

    with create_pipe_input() as inp, create_app_session(input=inp, output=DummyOutput()):
        inp.send_bytes(b"datasets/fineweb-edu\\r...")
        form = run_wizard(AddForm(), root=root, output=buf)

The lines the wizard prints (the ✓ and ✗ after a field, the metadata list, the review) go
to `output`. It writes nothing to disk: adding the version is the caller's.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Callable, TextIO

from nuboard.artifacts import SourceInfo
from nuboard.artifacts.form import (
    FLAGS,
    REVIEW_FIELDS,
    RUN_PATH_DEFAULTS,
    AddForm,
    FieldError,
    Target,
    apply_meta_command,
    check_path,
    check_target,
    in_run_of_project,
    meta_lines,
    parse_description,
    parse_store,
    parse_type,
    parse_yes_no,
    review_lines,
    source_summary,
    target_summary,
    url_copy_refused,
)
from nuboard.remote.urls import is_url

# The questions, as the spec writes them; a default shows as ' [copy]' before the colon.
PROMPTS = {
    "target": "Project/name (such as datasets/fineweb-edu)",
    "path": "Path (the file or folder; ~ and $VARS work)",
    "store": "Store (copy, or reference to leave the files where they are)",
    "type": "Type (dataset | model | checkpoint | report | other)",
    "description": "Description (what this version is)",
    "checksum": "Hash every file? (y reads all the data once; n is quick)",
}
META_TITLE = "Metadata (optional)"
META_HELP = ("  key=value adds or replaces · 2 key=value edits line 2 · -2 deletes line 2 · "
             "key:int=5 sets the type · < back · Enter when done")
META_PROMPT = "metadata> "
REVIEW_TITLE = "Review"
REVIEW_PROMPT = "Write it? y = write · 1-7 = change · < back · q = quit: "
BACK_WORD = "<"
ORDER = ("target", "path", "store", "type", "description", "checksum")

BACK = object()        # an answer of '<': go back one field
DONE = object()        # a field answered and checked
QUIT = object()        # q at the review
WRITE = object()       # y at the review


def ask_line(message: str) -> str:
    """Ask one line through the current prompt_toolkit app session; Ctrl-C raises KeyboardInterrupt.

    The message is shown exactly as given (questionary.text would put a space before it).
    """
    import questionary
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.lexers import SimpleLexer
    from prompt_toolkit.shortcuts import PromptSession
    from questionary.styles import merge_styles_default

    session: PromptSession = PromptSession(FormattedText([("class:question", message)]),
                                           style=merge_styles_default([None]),
                                           lexer=SimpleLexer("class:answer"))
    answer = questionary.Question(session.app).unsafe_ask()
    if answer is None:                  # questionary's way of saying the question was left
        raise KeyboardInterrupt
    return answer


def run_wizard(form: AddForm, *, root: Path, output: TextIO | None = None) -> AddForm | None:
    """Ask for every field of `form` that is None (or wrong), then the metadata, then review.

    Returns the filled form on y, or None on q, Ctrl-C or Ctrl-D. Writes nothing to disk.
    """
    wizard = _Wizard(form, Path(root), output if output is not None else sys.stdout)
    try:
        return wizard.run()
    except (KeyboardInterrupt, EOFError):
        return None


class _Wizard:
    """One session of questions over a copy of the form; the target and source follow the answers."""

    def __init__(self, form: AddForm, root: Path, out: TextIO):
        self.form = dataclasses.replace(form, metadata=list(form.metadata))
        self.root = root
        self.out = out
        self.target: Target | None = None
        self.source: SourceInfo | None = None
        self.asked: list[str] = []        # the fields this session asks, in order
        self.reviewing = False            # a field is being changed from the review

    # --- output and input ---------------------------------------------------------------------

    def say(self, line: str = "") -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def ok(self, text: str) -> None:
        self.say(f"  ✓ {text}")

    def fail(self, text: object) -> None:
        self.say(f"  ✗ {text}")

    def read(self, field: str, default: str | None, *, optional: bool = False) -> object:
        """The answer to a field's question: BACK for '<', the default for an empty answer
        ('' for an optional field without one, shown as [none])."""
        shown = f" [{default}]" if default else " [none]" if optional else ""
        text = ask_line(f"{PROMPTS[field]}{shown}: ").strip()
        if text == BACK_WORD:
            return BACK
        if not text and default is not None:
            return default
        return text

    # --- the fields ---------------------------------------------------------------------------

    def ask(self, field: str) -> object:
        """Ask one field until its answer passes; BACK when the user typed '<'."""
        asker: Callable[[], object] = getattr(self, f"ask_{field}")
        return asker()

    def ask_until(self, field: str, default: str | None, accept: Callable[[str], None], *,
                  optional: bool = False) -> object:
        """Ask a field again after each ✗ until `accept` takes the answer (or '<' is typed)."""
        while True:
            answer = self.read(field, default, optional=optional)
            if answer is BACK:
                return BACK
            try:
                accept(answer)
            except FieldError as exc:
                self.fail(exc)
                continue
            return DONE

    def ask_target(self) -> object:
        def accept(text: str) -> None:
            self.target = check_target(text, self.root)
            self.form.target = text
            self.ok(target_summary(self.target))
        result = self.ask_until("target", self.form.target, accept)
        if result is DONE and not self.path_checked_later():
            return self.settle_path()
        return result

    def ask_path(self) -> object:
        def accept(text: str) -> None:
            self.source = check_path(text, self.root, self.project(),
                                     reference=self.form.store == "reference")
            self.form.path = text
            self.ok(source_summary(self.source))
            if is_url(text) and self.form.store == "copy":
                self.form.store = "reference"
                self.say("  store set to reference: a URL can only be referenced")
            if self.source.left_out:            # dangling links, FIFOs: named, then added without
                self.say(f"  ⚠ {self.source.left_out_warning}")
        return self.ask_until("path", self.form.path, accept)

    def ask_store(self) -> object:
        def accept(text: str) -> None:
            store = parse_store(text)
            if store == "copy" and is_url(self.form.path):
                raise FieldError(url_copy_refused(self.form.path))
            if self.form.path is not None and self.target is not None:
                self.source = check_path(self.form.path, self.root, self.project(),
                                         reference=store == "reference")
            self.form.store = store
        default = self.form.store or ("reference" if is_url(self.form.path) else "copy")
        result = self.ask_until("store", default, accept)
        if result is DONE and self.reviewing and self.checksum_asked() \
                and self.form.checksum is None:
            self.ask_checksum()
        return result

    def ask_type(self) -> object:
        """The type; for a path inside a run of the project, other unless told (as the
        flags and promote_run_path)."""
        def accept(text: str) -> None:
            self.form.type = parse_type(text)
        default = self.form.type or (RUN_PATH_DEFAULTS["type"] if self.in_run() else None)
        return self.ask_until("type", default, accept)

    def ask_description(self) -> object:
        """The description; for a path inside a run of the project it may be left out."""
        optional = self.in_run()

        def accept(text: str) -> None:
            self.form.description = None if optional and not text.strip() \
                else parse_description(text)
        return self.ask_until("description", self.form.description, accept, optional=optional)

    def ask_checksum(self) -> object:
        def accept(text: str) -> None:
            self.form.checksum = parse_yes_no(text, False)
        return self.ask_until("checksum", "y" if self.form.checksum else "n", accept)

    def ask_metadata(self) -> object:
        """The metadata editor: one command a line, the numbered list after each edit."""
        self.say(META_TITLE)
        self.say(META_HELP)
        if self.form.metadata:
            self.show_metadata()
        while True:
            text = ask_line(META_PROMPT).strip()
            if not text:
                return DONE
            if text == BACK_WORD:
                return BACK
            try:
                self.form.metadata = apply_meta_command(self.form.metadata, text)
            except FieldError as exc:
                self.fail(exc)
                continue
            self.show_metadata()

    def show_metadata(self) -> None:
        for line in meta_lines(self.form.metadata):
            self.say(line)

    # --- how the fields depend on each other --------------------------------------------------

    def project(self) -> str | None:
        return self.target.project if self.target else None

    def checksum_asked(self) -> bool:
        """Whether the checksum question applies: a reference to local files (a copy is always
        hashed; an object's ETag is its fingerprint)."""
        return self.form.store == "reference" and not is_url(self.form.path)

    def in_run(self) -> bool:
        """Whether the path, as last checked for the project, is inside one of its runs."""
        return self.target is not None and self.source is not None \
            and self.source.given == self.form.path and in_run_of_project(self.source)

    def ask_missing(self) -> None:
        """After a change from the review: ask the type and description again when they were
        left out for a run's path and the path (or project) no longer is one."""
        for field in ("type", "description"):
            if getattr(self.form, field) is None and not self.in_run():
                while self.ask(field) is BACK:
                    pass

    def path_checked_later(self) -> bool:
        """Whether the path is still to be asked in this pass (so no need to re-check it now)."""
        return not self.reviewing and "path" in self.asked

    def settle_path(self) -> object:
        """Re-check a path already given once the project is known; ask again what makes it fail.

        A path refused only as a reference (a running run's files) asks the store again;
        any other refusal asks the path again.
        """
        if self.form.path is None:
            return DONE
        try:
            self.source = check_path(self.form.path, self.root, self.project(),
                                     reference=self.form.store == "reference")
            return DONE
        except FieldError as exc:
            self.fail(exc)
        if self.fine_as_copy():
            self.form.store, ask = None, self.ask_store     # asked again, with copy the default
        else:
            ask = self.ask_path
        while ask() is BACK:
            pass
        return DONE

    def fine_as_copy(self) -> bool:
        """Whether the path, refused as a reference, would pass as a copy."""
        if self.form.store != "reference":
            return False
        try:
            check_path(self.form.path, self.root, self.project(), reference=False)
        except FieldError:
            return False
        return True

    def check_given(self) -> None:
        """Check the fields given on the command line; a wrong one is shown and asked again."""
        f = self.form
        if f.target is not None:
            try:
                self.target = check_target(f.target, self.root)
            except FieldError as exc:
                self.fail(f"{FLAGS['target']}: {exc}")
                f.target = None
        for name, parse in (("store", parse_store), ("type", parse_type),
                            ("description", parse_description)):
            value = getattr(f, name)
            if value is not None:
                try:
                    setattr(f, name, parse(value))
                except FieldError as exc:
                    self.fail(f"{FLAGS[name]}: {exc}")
                    setattr(f, name, None)
        if f.store == "copy" and is_url(f.path):
            self.fail(f"{FLAGS['store']}: {url_copy_refused(f.path)}")
            f.store = None                      # asked again, with reference the default
        if f.path is not None and self.target is not None:
            try:
                self.source = check_path(f.path, self.root, self.project(),
                                         reference=f.store == "reference")
            except FieldError as exc:
                self.fail(f"{FLAGS['path']}: {exc}")
                if self.fine_as_copy():
                    f.store = None              # asked again, with copy the default
                else:
                    f.path = None
        self.asked = [name for name in ORDER if getattr(f, name) is None]
        # A path given with a name still to ask is checked once the name is known (settle_path).

    # --- the whole session --------------------------------------------------------------------

    def run(self) -> AddForm | None:
        """Ask the asked fields in order ('<' steps back), the metadata, then the review."""
        self.check_given()
        steps = [*self.asked, "metadata", "review"]
        i, step_back = 0, False
        while True:
            step = steps[i]
            if step == "checksum" and not self.checksum_asked():
                i = i - 1 if step_back and i > 0 else i + 1
                continue
            result = self.review() if step == "review" else self.ask(step)
            if result is QUIT:
                return None
            if result is WRITE:
                return self.filled()
            if result is BACK:
                if i == 0 or all(s == "checksum" and not self.checksum_asked() for s in steps[:i]):
                    self.fail("there is no field before this one")
                    step_back = False
                    continue
                i, step_back = i - 1, True
            else:
                i, step_back = i + 1, False

    def review(self) -> object:
        """Show the review; y writes, a number changes that field, '<' goes back, q quits."""
        while True:
            self.say()
            self.say(REVIEW_TITLE)
            for line in review_lines(self.form, self.target, self.source):
                self.say(line)
            while True:
                answer = ask_line(REVIEW_PROMPT).strip().lower()
                if answer in ("y", "yes"):
                    return WRITE
                if answer in ("q", "quit"):
                    return QUIT
                if answer == BACK_WORD:
                    return BACK
                if answer.isdigit() and 1 <= int(answer) <= len(REVIEW_FIELDS):
                    if self.change(REVIEW_FIELDS[int(answer) - 1]):
                        self.ask_missing()
                        break
                    continue
                self.fail(f"{answer!r} is not y, a line number 1-{len(REVIEW_FIELDS)}, < or q")

    def change(self, field: str) -> bool:
        """Ask one field again from the review; False when there is nothing to ask."""
        if field == "checksum" and is_url(self.form.path):
            self.fail("each object's ETag is its fingerprint: there is nothing to hash")
            return False
        if field == "checksum" and self.form.store != "reference":
            self.fail("a copy is always hashed: change the store (line 3) to reference to choose")
            return False
        self.reviewing = True
        try:
            self.ask(field)
        finally:
            self.reviewing = False
        return True

    def filled(self) -> AddForm:
        """The form as answered: a copy is always hashed, a reference only when asked; the
        path's last check goes with it (form.source), so it is not listed again to be written."""
        f = self.form
        checksum = True if f.store == "copy" else bool(f.checksum) and not is_url(f.path)
        source = self.source if self.source is not None and self.source.given == f.path else None
        return dataclasses.replace(f, checksum=checksum, metadata=list(f.metadata), source=source)
