"""Setting a run's colour from the viewer: POST /api/p/<project>/.colours with the form fields
`run` and `colour` ('#rrggbb'); static/run_colours.js sends it from every input.run-colour.

Under the rule of saved views: allowed unless the viewer runs with --read-only (403). The app
checks the CSRF token and the Origin of every POST (security.py); here a colour that is not
'#rrggbb' is a 400 and a run the project does not have a 404, each with one message (JSON,
the route being under /api/). The colour is kept in the project's colours.json
(files/colours.py), so it travels with the folder and every page shows it.
"""
from __future__ import annotations

from flask import Blueprint, abort, request

from nuboard.files.colours import ColourError, check_colour, set_colour

from .context import edits_allowed, known_run, load_project, root_dir

colour_edit = Blueprint("colour_edit", __name__)
colour_edit.url_value_preprocessor(load_project)


@colour_edit.post("/api/p/<project:project>/.colours")
@edits_allowed("run colours cannot be set")
def set_run_colour(project: str):
    """{'run', 'colour'}: the colour now kept for the run."""
    try:
        colour = check_colour(request.form.get("colour", ""))
    except ColourError as exc:
        abort(400, description=str(exc))
    run_id = request.form.get("run", "")
    if not run_id:
        abort(400, description="run: give the id of the run to colour.")
    project, run_id = known_run(project, run_id)
    try:
        set_colour(root_dir(), project, run_id, colour)
    except ColourError as exc:
        abort(409, description=str(exc))
    return {"run": run_id, "colour": colour}
