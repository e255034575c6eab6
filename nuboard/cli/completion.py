"""Shell completion: `nuboard completion bash|zsh|fish` prints the script, and the callbacks
that complete project names, run ids and artifact names from the folders (docs/cli.md,
"Shell completion").

Completion is click's own (`_NUBOARD_COMPLETE=bash_source nuboard` is the same script). The
callbacks read only folder names under the experiments folder (the command's --dir, else
$NUBOARD_DIR, else ./experiments): no catalog is opened and nothing is written, so a TAB
stays quick on a project of thousands of runs. A folder that cannot be read completes nothing.
"""
from __future__ import annotations

import os
from pathlib import Path

import click
from click.shell_completion import CompletionItem, get_completion_class

from nuboard.files import layout

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_NUBOARD_COMPLETE"
TRASH = ".trash"            # files/run_trash.TRASH, not imported: a TAB imports as little as it can
ARTIFACTS = "artifacts"     # artifacts/version_folders.ARTIFACTS
UNLINKED = ".unlinked"      # artifacts/version_folders.UNLINKED


def _root(ctx: click.Context) -> Path:
    """The experiments folder the command line names so far (--dir is parsed before a TAB)."""
    root = ctx.params.get("root")
    if isinstance(root, Path):
        return root
    directory = ctx.params.get("directory")          # `nuboard up DIR`
    return layout.resolve_root(directory if isinstance(directory, str) else None)


def _projects(root: Path) -> list[str]:
    try:
        return layout.find_projects(root) if root.is_dir() else []
    except OSError:
        return []


def _folders(folder: Path) -> list[str]:
    """The names of the folders in `folder` not starting with a dot, sorted; [] when unreadable."""
    try:
        with os.scandir(folder) as entries:
            return sorted(e.name for e in entries if not e.name.startswith(".")
                          and e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def complete_project(ctx: click.Context, _param, incomplete: str) -> list[CompletionItem]:
    """The project names under the experiments folder that start with what is typed."""
    return [CompletionItem(p) for p in _projects(_root(ctx)) if p.startswith(incomplete)]


def _run_ids(ctx: click.Context, incomplete: str, inside: str | None) -> list[CompletionItem]:
    """Run ids (folder names) of the --project given, else of every project, each with its
    project as help; ids already on the command line are left out."""
    root = _root(ctx)
    project = ctx.params.get("project")
    projects = [project] if isinstance(project, str) and project else _projects(root)
    typed = set(ctx.params.get("run_ids") or ())
    items = []
    for name in projects:
        try:
            runs = layout.runs_dir(root, name)
        except (OSError, ValueError):
            continue
        folder = runs / inside if inside else runs
        items.extend(CompletionItem(run_id, help=name) for run_id in _folders(folder)
                     if run_id.startswith(incomplete) and run_id not in typed)
    return items


def complete_run(ctx: click.Context, _param, incomplete: str) -> list[CompletionItem]:
    """The run ids of the project given (--project), else of every project."""
    return _run_ids(ctx, incomplete, None)


def complete_trashed_run(ctx: click.Context, _param, incomplete: str) -> list[CompletionItem]:
    """The run ids in the trash (runs/.trash/) of the project given, else of every project."""
    return _run_ids(ctx, incomplete, TRASH)


def _artifacts(ctx: click.Context, incomplete: str, inside: str | None) -> list[CompletionItem]:
    root = _root(ctx)
    items = []
    for project in _projects(root):
        if not (project.startswith(incomplete) or incomplete.startswith(project + "/")):
            continue
        try:
            folder = layout.project_dir(root, project) / ARTIFACTS
        except (OSError, ValueError):
            continue
        items.extend(CompletionItem(f"{project}/{name}")
                     for name in _folders(folder / inside if inside else folder)
                     if f"{project}/{name}".startswith(incomplete))
    return items


def complete_artifact(ctx: click.Context, _param, incomplete: str) -> list[CompletionItem]:
    """PROJECT/NAME of every artifact under the experiments folder that starts with what is
    typed (the version after ':' is left to the user: bash splits words at ':')."""
    return _artifacts(ctx, incomplete, None)


def complete_unlinked_artifact(ctx: click.Context, _param, incomplete: str) -> list[CompletionItem]:
    """PROJECT/NAME of every artifact with an unlinked version (artifacts/.unlinked/)."""
    return _artifacts(ctx, incomplete, UNLINKED)


def complete_dir(_ctx: click.Context, _param, incomplete: str) -> list[CompletionItem]:
    """Folders, as the shell itself completes them."""
    return [CompletionItem(incomplete, type="dir")]


@click.command("completion", short_help="Print the shell completion script (bash, zsh, fish).")
@click.argument("shell", metavar="SHELL", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the script that makes SHELL (bash, zsh or fish) complete nuboard's commands,
    options, project names, run ids and artifact names. Load it from the shell's startup
    file (bash 4.4 or later).

    \b
    Example:
      echo 'eval "$(nuboard completion bash)"' >> ~/.bashrc
      echo 'eval "$(nuboard completion zsh)"' >> ~/.zshrc
      nuboard completion fish > ~/.config/fish/completions/nuboard.fish
    """
    root = ctx.find_root()
    cls = get_completion_class(shell)
    assert cls is not None                       # one of SHELLS, which click ships
    click.echo(cls(root.command, {}, root.info_name or "nuboard", COMPLETE_VAR).source())
