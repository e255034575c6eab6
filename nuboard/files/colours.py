"""The colours a user set for runs: the project's `colours.json`, beside `views.json`, so they
travel with the project folder.

    {"format": 1, "colours": {"<run id>": "#rrggbb", ...}}

Read with its kind's rules (documents.read_document: a regular file of at most 16 MB, nested
at most 100 levels, JSON); a file that breaks them or is not of that shape is read as no
colours, with a note saying why, never an error; an entry that is not '#rrggbb' is left out
of what is read, with a note. A colour is set under a lock (`.colours.json.lock`, flock) and
the file replaced atomically, keeping every other entry as it was (a hand-written one too);
while the file is damaged, setting a colour is refused (ColourError), so the colours it
holds are not lost by writing over it.
"""
from __future__ import annotations

import re
from pathlib import Path

from nuboard.errors import NuBoardError

from . import documents, layout
from .jsonfile import replacing, write_json_atomic
from .names import check_folder_name

COLOURS_FILE = "colours.json"
COLOURS = documents.Kind(COLOURS_FILE, 16 << 20)         # ~300,000 runs' colours
_COLOUR = re.compile(r"#[0-9a-f]{6}")


class ColourError(NuBoardError, ValueError):
    """A colour that cannot be kept: not '#rrggbb', or colours.json cannot be written now."""


def colours_path(root: Path, project: str) -> Path:
    return layout.project_dir(root, project) / COLOURS_FILE


def check_colour(value: object) -> str:
    """'#rrggbb' in lower case; ColourError naming the value unless it is one ('#ABCDEF' is)."""
    if isinstance(value, str) and _COLOUR.fullmatch(value.strip().lower()):
        return value.strip().lower()
    raise ColourError(f"colour {str(value)[:40]!r} is not a colour: give '#rrggbb', six hex "
                      "digits such as #2378b4.")


def read_colours_noted(root: Path, project: str) -> tuple[dict[str, str], str | None]:
    """The runs' colours ({run id: '#rrggbb'}) and a note saying what of colours.json was
    ignored (None when nothing was); ({}, None) when there is no file."""
    path = colours_path(root, project)
    try:
        doc = documents.read_document(path, COLOURS)
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as exc:
        why = documents.unreadable_reason(exc, COLOURS)
        return {}, f"{COLOURS_FILE} cannot be read ({why}); the runs' own colours are shown."
    entries = doc.get("colours") if isinstance(doc, dict) else None
    if not isinstance(entries, dict):
        return {}, (f"{COLOURS_FILE} is not of the shape {{\"colours\": {{...}}}}; the runs' "
                    "own colours are shown.")
    kept, bad = {}, []
    for run_id, colour in entries.items():
        if isinstance(colour, str) and _COLOUR.fullmatch(colour.lower()):
            kept[run_id] = colour.lower()
        else:
            bad.append(run_id)
    if not bad:
        return kept, None
    return kept, (f"{len(bad)} colour(s) in {COLOURS_FILE} are not '#rrggbb' and are ignored "
                  f"(the first: run {bad[0][:40]!r}).")


def read_colours(root: Path, project: str) -> dict[str, str]:
    """The runs' colours set by a user ({run id: '#rrggbb'}); {} when none or unreadable."""
    return read_colours_noted(root, project)[0]


def set_colour(root: Path, project: str, run_id: str, colour: str) -> dict[str, str]:
    """Keep `colour` for the run in colours.json; return every run's usable colour.

    Raises:
        InvalidNameError: a run id that cannot be a folder name.
        ColourError: not '#rrggbb'; colours.json damaged (it is left as it is) or the project
            folder not writable.
    """
    check_folder_name(run_id, "run id")
    colour = check_colour(colour)
    path = colours_path(root, project)
    with replacing(path, ColourError, "set colours"):
        try:
            doc = documents.read_document(path, COLOURS)
        except FileNotFoundError:
            doc = {"format": 1, "colours": {}}
        except (OSError, ValueError) as exc:
            raise ColourError(f"{documents.unreadable_reason(exc, COLOURS)}: fix or remove "
                              f"{str(path)!r} to set colours (it is left as it is).") from None
        entries = doc.get("colours") if isinstance(doc, dict) else None
        if not isinstance(entries, dict):
            raise ColourError(f"{COLOURS_FILE} is not of the shape {{\"colours\": {{...}}}}: fix "
                              f"or remove {str(path)!r} to set colours (it is left as it is).")
        entries[run_id] = colour
        doc["colours"] = entries
        doc.setdefault("format", 1)
        write_json_atomic(path, doc)
    return read_colours(root, project)


def stamp(root: Path, project: str) -> tuple[int, int, int] | None:
    """What changes whenever colours.json is replaced (inode, size, mtime); None when absent."""
    try:
        st = colours_path(root, project).stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns
