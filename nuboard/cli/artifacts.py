"""`nuboard artifact add | ls | show | unlink | restore`: artifact versions from the command line."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from nuboard.artifacts.form import (
    RUN_PATH_DEFAULTS,
    AddForm,
    check_form,
    check_path,
    check_target,
    format_count,
    format_size,
    parse_meta_flags,
)
from nuboard.artifacts.manifest import shown_fields
from nuboard.errors import InvalidArgumentError, NuBoardError

from . import formats
from .completion import complete_artifact, complete_project, complete_unlinked_artifact
from .options import catalog_option, debug_option, dir_option, stdin_is_terminal, stdout_is_terminal
from .projects import check_project_exists, check_root, find_projects, open_catalog


class FormError(NuBoardError, ValueError):
    """`nuboard artifact add` was given values that cannot make a version."""


@click.group("artifact", short_help="Add, list, show, unlink and restore artifact versions.")
def artifact() -> None:
    """Artifact versions: datasets, checkpoints and reports, copied or referenced.

    \b
    Examples:
      nuboard artifact add datasets/fineweb-edu ~/data/fineweb-edu/2026-10 --ref \\
          --type dataset --description "FineWeb-Edu, Oct 2026" --meta tokens=12B
      nuboard artifact ls datasets
      nuboard artifact show datasets/fineweb-edu:v3
    """


# ---- add ----

def _meta_file(path: str) -> tuple[list, list[str]]:
    """The metadata of --meta-file: a JSON object, each value typed by its JSON type."""
    try:
        doc = json.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        return [], [f"--meta-file: cannot read {path!r} ({exc.strerror or exc})"]
    except ValueError as exc:
        return [], [f"--meta-file: {path!r} is not JSON ({exc})"]
    if not isinstance(doc, dict):
        return [], [f"--meta-file: {path!r} holds a JSON {type(doc).__name__}, not an object "
                    "({\"key\": value, ...})"]
    items = []
    for key, value in doc.items():
        kind = ("bool" if isinstance(value, bool) else "int" if isinstance(value, int)
                else "float" if isinstance(value, float) else "text" if isinstance(value, str)
                else "json")
        items.append((key, value, kind))
    return items, []


def _merge_meta(first: list, then: list) -> list:
    """--meta-file's entries, then --meta's, a later key replacing an earlier one in place."""
    merged = list(first)
    for key, value, kind in then:
        for i, (k, _, _) in enumerate(merged):
            if k == key:
                merged[i] = (key, value, kind)
                break
        else:
            merged.append((key, value, kind))
    return merged


def _progress_bar():
    """A progress callback drawing a rich bar on stderr (a terminal only), and a closer."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TransferSpeedColumn
    bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(binary_units=False),
                   TransferSpeedColumn(), TimeElapsedColumn(), console=Console(stderr=True),
                   transient=True)
    tasks: dict[str, int] = {}
    words = {"listing": "Listing files", "hashing": "Hashing", "copying": "Copying"}

    def progress(phase: str, done: int, total: int | None) -> None:
        if not tasks:
            bar.start()
        if phase not in tasks:
            tasks[phase] = bar.add_task(words.get(phase, phase), total=total)
        if phase == "listing":
            bar.update(tasks[phase], description=f"Listing files: {done:,}", total=None)
        else:
            bar.update(tasks[phase], completed=done, total=total)

    return progress, bar.stop


def _add_version(form: AddForm, root: Path):
    """Add the version a complete form describes; return the Artifact. Its warnings (entries
    left out) are printed as one 'nuboard: warning: ...' line each on stderr."""
    import warnings

    from nuboard.artifacts import add_artifact
    target = check_target(form.target, root)
    metadata = {key: value for key, value, _ in form.metadata}
    progress, stop = _progress_bar()
    options = {"progress": progress} if progress is not None else {}
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            made = add_artifact(target.project, target.name, form.path,
                                type=form.type or RUN_PATH_DEFAULTS["type"],
                                metadata=metadata, reference=form.store == "reference",
                                checksum=bool(form.checksum), description=form.description,
                                dir=root, source_info=form.source, **options)
    finally:
        stop()
        _echo_warnings(caught)
    return made


def _echo_warnings(caught) -> None:
    for warning in caught:
        click.echo(f"nuboard: warning: {' '.join(str(warning.message).split())}", err=True)


def index_versions(root: Path, project: str) -> None:
    """Bring the project's catalog up to date with its versions (files first, then the index)."""
    from nuboard.catalog.sync_artifacts import sync_versions
    try:
        with open_catalog(root, project) as catalog:
            sync_versions(catalog)
    except Exception as exc:       # the files are the record; the index catches up next sync
        click.echo(f"nuboard: the version is written, but the catalog could not be updated ({exc})",
                   err=True)


@artifact.command("add", short_help="Add a version (flags, or questions in a terminal).")
@click.argument("target", required=False, metavar="[PROJECT/NAME]", shell_complete=complete_artifact)
@click.argument("path", required=False)
@click.option("--ref", "ref", is_flag=True,
              help="Reference the files where they are (checked by size); a URL "
                   "(s3://bucket/prefix, gs://, az://) records each object's size, ETag and "
                   "version id.")
@click.option("--copy", "copy", is_flag=True, help="Copy the files into the version.")
@click.option("--type", "kind", metavar="TYPE", help="dataset, model, checkpoint, report or other.")
@click.option("--description", metavar="TEXT", help="What this version is.")
@click.option("--meta", multiple=True, metavar="KEY=VALUE",
              help="Metadata; numbers, true/false typed as such; KEY:int=, :float=, :bool=, "
                   ":str=, :json= set the type. Repeat it.")
@click.option("--meta-file", metavar="FILE", help="Metadata from a JSON object in FILE.")
@click.option("--checksum", is_flag=True, default=None, help="Hash every referenced file (SHA-256).")
@click.option("--dry-run", is_flag=True, help="Check everything, write nothing.")
@click.option("--no-input", is_flag=True, help="Never ask: a missing value is an error.")
@dir_option
@catalog_option
@debug_option
def add(target, path, ref, copy, kind, description, meta, meta_file, checksum, dry_run, no_input,
        root: Path) -> None:
    """Add a version of an artifact: a file or folder, copied or referenced.

    In a terminal, whatever is not given is asked for, one field at a time, then reviewed
    before anything is written. Without a terminal, or with --no-input, the name, the path,
    --ref or --copy, --type and --description are required, and every problem is reported at
    once. A path inside a run of the project makes that run the version's producer, and
    --type and --description may be left out there (type other, no description; a terminal
    offers them as the defaults).

    \b
    Examples:
      nuboard artifact add datasets/fineweb-edu ~/data/fineweb-edu/2026-10 --ref \\
          --type dataset --description "FineWeb-Edu, Oct 2026 snapshot, deduplicated" \\
          --meta tokens=12B --meta dedup=true --meta rows=1200000
      nuboard artifact add llm-pretrain/best \\
          experiments/llm-pretrain/runs/<run>/files/best.safetensors --copy
      nuboard artifact add datasets/shards s3://lab-data/shards/2026-10 --ref \\
          --type dataset --description "Tokenized shards in S3"
      nuboard artifact add          # asks for everything
    """
    if ref and copy:
        raise click.UsageError("give --ref or --copy, not both")
    store = "reference" if ref else "copy" if copy else None
    items, problems = parse_meta_flags(meta)
    if meta_file is not None:
        from_file, file_problems = _meta_file(meta_file)
        items, problems = _merge_meta(from_file, items), file_problems + problems
    form = AddForm(target=target, path=path, store=store, type=kind, description=description,
                   checksum=checksum, metadata=items)
    found = check_form(form, root).problems + problems
    interactive = not no_input and stdin_is_terminal() and stdout_is_terminal()
    # Left out for a path inside a run of the project: the defaults, offered in a terminal.
    defaulted = form.type is None or form.description is None
    if interactive and (found or defaulted):   # something to ask: missing, wrong or defaulted
        form = _fix_in_wizard(form, problems, root)
        if form is None:
            click.echo("Nothing was written.")
            raise SystemExit(1)
    elif found:
        raise FormError(f"{len(found)} problem{'s' if len(found) > 1 else ''}, nothing was "
                        f"written: " + "; ".join(found) + ". See 'nuboard artifact add --help'.")
    if form.store == "copy":
        form.checksum = True
    if dry_run:
        target_info = check_target(form.target, root)
        source = form.source or check_path(form.path, root, target_info.project,
                                           reference=form.store == "reference")
        if source.left_out:
            click.echo(f"nuboard: warning: {source.left_out_warning}", err=True)
        click.echo(f"Would add {target_info.project}/{target_info.name}:v{target_info.next_version} "
                   f"({form.store}, {format_count(source.file_count)}, "
                   f"{format_size(source.total_bytes)}); nothing was written (--dry-run).")
        return
    version = _add_version(form, root)
    index_versions(root, version.project)
    click.echo(f"Added {version.spec} ({version.storage}, {format_count(len(version))}, "
               f"{format_size(version.total_bytes)})")
    click.echo(f'Use it with: run.use_artifact("{version.spec}")')


def _fix_in_wizard(form: AddForm, problems: list[str], root: Path) -> AddForm | None:
    """In a terminal: the wizard checks the flags given (a wrong one is shown and asked again)
    and asks the rest; bad --meta values are shown and left out of the metadata editor."""
    from .wizard import run_wizard
    for problem in problems:
        click.echo(f"  ✗ {problem}")
    try:
        return run_wizard(form, root=root)
    except KeyboardInterrupt:
        return None


# ---- naming a version on the command line ----

def parse_cli_spec(spec: str, *, version_needed: bool = True, all_hint: bool = False
                   ) -> tuple[str, str, int | None]:
    """'project/name:vN' (or 'project/name' where version_needed is False) as the CLI takes it;
    all_hint: a missing version's message also offers 'project/name --all'."""
    from nuboard.artifacts import parse_spec
    if "/" not in spec.rpartition(":")[0] and "/" not in spec:
        raise InvalidArgumentError(f"artifact {spec!r} names no project: write it as "
                                   f"'project/{spec}', such as 'datasets/fineweb-edu:v3'.")
    project, name, number = parse_spec(spec)
    if version_needed and number is None:
        raise InvalidArgumentError(f"artifact {spec!r} names no version: write "
                                   f"'{project}/{name}:vN' (such as 'datasets/fineweb-edu:v3')"
                                   + (f", or '{project}/{name} --all' for every version"
                                      if all_hint else "") + ".")
    return project, name, number


# ---- ls ----

LS_HEADERS = ["ARTIFACT", "VERSION", "TYPE", "STORE", "FILES", "SIZE", "CREATED", "PRODUCER"]


def version_records(root: Path, project: str, unlinked: bool,
                    skipped: list | None = None) -> list[dict]:
    """Every version of a project (or its unlinked ones), newest first per artifact; a damaged
    one is left out, and ('project/name:vN', why) appended to skipped when given."""
    from nuboard.artifacts.api import version_manifests
    records = []
    for name, number, doc, why in version_manifests(project, unlinked=unlinked, dir=root):
        if doc is None:
            if skipped is not None:
                skipped.append((f"{project}/{name}:v{number}", why or "it has no manifest"))
            continue
        producer = doc.get("producer") if isinstance(doc.get("producer"), dict) else None
        metadata, description, cut = shown_fields(doc)
        records.append({
            "project": project, "name": name, "version": number,
            "spec": f"{project}/{name}:v{number}", "type": doc.get("type"),
            "storage": doc.get("storage"), "files": doc.get("file_count"),
            "bytes": doc.get("total_bytes"), "created": doc.get("created_at"),
            "producer": (f"{producer.get('project')}/{producer.get('run_id')}" if producer else None),
            "description": description, "metadata": metadata, "unlinked": unlinked,
            "cut": "; ".join(cut) or None,
        })
    return records


def _ls_cells(r: dict) -> list[str]:
    return [f"{r['project']}/{r['name']}", f"v{r['version']}" + (" (unlinked)" if r["unlinked"] else ""),
            r["type"] or "", r["storage"] or "", f"{r['files'] or 0:,}", format_size(r["bytes"] or 0),
            formats.format_local_time(r["created"]), r["producer"] or "outside a run"]


@artifact.command("ls", short_help="List artifact versions.")
@click.argument("project", required=False, shell_complete=complete_project)
@click.option("--unlinked", is_flag=True, help="List the unlinked versions instead, marked (unlinked).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of objects.")
@dir_option
@catalog_option
@debug_option
def ls(project: str | None, unlinked: bool, as_json: bool, root: Path) -> None:
    """List artifact versions, newest first: type, copy or reference, files, size, producer.

    Without PROJECT, those of every project under the folder.

    \b
    Examples:
      nuboard artifact ls datasets
      nuboard artifact ls --unlinked --json
    """
    if project is not None:
        projects = [check_project_exists(root, project)]
    else:
        check_root(root)
        projects = find_projects(root)
    skipped: list = []
    records = [r for p in projects for r in version_records(root, p, unlinked, skipped)]
    for spec, why in skipped:
        click.echo(f"nuboard: skipped {spec}: {' '.join(why.split())}", err=True)
    if as_json:
        click.echo(formats.as_json(records))
        return
    if not records:
        where = f"project {project!r}" if project else f"{str(root)!r}"
        click.echo(f"No {'unlinked ' if unlinked else ''}artifact versions in {where}.")
        return
    rows = [_ls_cells(r) for r in records]
    if stdout_is_terminal():
        from rich.console import Console
        Console().print(formats.rich_table(LS_HEADERS, rows))
    else:
        click.echo(formats.plain_table(LS_HEADERS, rows))


# ---- show ----

def show_lines(version, used_by: list[str], problems, verified: bool = False) -> list[str]:
    """A version as the lines `artifact show` prints (pure: the check is done by the caller;
    verified: the check re-hashed the files that have a SHA-256; problems None: a URL reference
    not checked against its store)."""
    doc = version.manifest
    verified = ", SHA-256 re-hashed" if verified and doc.get("checksum") else ""
    producer = version.producer
    metadata, description, cut = shown_fields(doc)
    source = doc.get("source") or {}
    lines = [f"{version.spec}" + ("  (unlinked)" if version.unlinked else ""),
             f"  type         {version.type}",
             f"  store        {version.storage}" + (", SHA-256 of every file" if doc.get("checksum") else ""),
             f"  files        {format_count(len(version))}, {format_size(version.total_bytes)}",
             f"  created      {formats.format_local_time(doc.get('created_at'))}"
             + (f" by {doc['created_by']}" if doc.get("created_by") else "")
             + (f" on {doc['host']}" if doc.get("host") else ""),
             "  produced by  " + (f"run {producer['project']}/{producer['run_id']}" if producer
                                  else "Logged outside a run"),
             f"  source       {source.get('path')}" if source.get("path") else None,
             f"  objects at   {version.uri}" if version.is_remote else None,
             (f"  local copy   {version.files}" if version.is_remote else f"  files at     {version.files}"),
             f"  description  {description}" if description else None,
             f"  cut          shown cut to the API's limits: {'; '.join(cut)}" if cut else None]
    lines = [line for line in lines if line is not None]
    left_out = doc.get("left_out") if isinstance(doc.get("left_out"), list) else []
    if left_out:
        lines.append(f"  left out     {len(left_out):,} {'entry' if len(left_out) == 1 else 'entries'}"
                     " (not regular files or folders): "
                     + ", ".join(f"{e.get('path')} ({e.get('what')})" for e in left_out[:20]
                                 if isinstance(e, dict))
                     + (f" and {len(left_out) - 20} more" if len(left_out) > 20 else ""))
    if metadata:
        lines.append("  metadata     " + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}"
                                                 for k, v in metadata.items()))
    lines.append("  used by      " + (", ".join(used_by) if used_by else "no run yet"))
    word = "object" if version.is_remote else "file"
    if version.unset_variables:
        lines.append("  check        " + ", ".join("$" + v for v in version.unset_variables)
                     + f" not set here, so the {word}s cannot be checked")
    elif problems is None:
        lines.append("  check        not checked against the store (--verify lists it)")
    elif problems:
        lines.append(f"  check        {len(problems):,} of {format_count(len(version))} missing or changed:")
        for p in problems[:20]:
            lines.append(f"    {p.path}: {p.detail}")
        if len(problems) > 20:
            lines.append(f"    ... and {len(problems) - 20} more")
    elif version.is_remote:
        lines.append(f"  check        {'the 1 object is' if len(version) == 1 else f'all {len(version):,} objects'}"
                     " in the store, their sizes and ETags unchanged")
    elif len(version) == 1:
        lines.append("  check        the 1 file is there and unchanged" + verified)
    else:
        lines.append(f"  check        all {len(version):,} files there and unchanged" + verified)
    return lines


def used_by(root: Path, project: str, name: str, number: int) -> list[str]:
    """The runs that used a version ('llm/20261103T1504-90c3affc'), from the project's catalog."""
    from nuboard.catalog import artifact_reads
    from nuboard.catalog.sync import sync
    with open_catalog(root, project) as catalog:
        sync(catalog)
        rows = artifact_reads.used_by(catalog, project, name, number)
    return [f"{p}/{r}" for p, r in rows]


@artifact.command("show", short_help="Print a version and check its files.")
@click.argument("spec", metavar="PROJECT/NAME:vN", shell_complete=complete_artifact)
@click.option("--json", "as_json", is_flag=True, help="Print the manifest and the check as JSON.")
@click.option("--verify", is_flag=True,
              help="Also re-hash every file that has a SHA-256 (reads all the data once); for "
                   "objects in a store, list them and compare sizes and ETags.")
@dir_option
@catalog_option
@debug_option
def show(spec: str, as_json: bool, verify: bool, root: Path) -> None:
    """Print one version: who added it, where its files are, who used it, and a check that
    every file is still there with its size (exit 1 when one is missing or changed).
    Modification times are not compared. --verify re-hashes the files that have a SHA-256.
    A reference to object storage is checked only with --verify: one listing of its prefix
    compares each object's size and ETag (nothing is downloaded).

    \b
    Example:
      nuboard artifact show datasets/fineweb-edu:v3
      nuboard artifact show datasets/fineweb-edu:v3 --verify
    """
    from nuboard.artifacts import get_artifact
    from nuboard.artifacts.errors import ArtifactNotFoundError
    project, name, number = parse_cli_spec(spec, version_needed=False)
    check_project_exists(root, project)
    try:
        version = get_artifact(f"{project}/{name}:" + (f"v{number}" if number else "latest"), dir=root)
    except ArtifactNotFoundError:
        version = _unlinked_version(root, project, name, number)
        if version is None:
            raise
    if version.unset_variables:
        problems = []
    elif version.is_remote and not verify:
        problems = None                 # the store is listed only when asked (--verify)
    elif verify:
        progress, stop = _progress_bar()
        try:
            problems = version.verify(progress)
        finally:
            stop()
    else:
        problems = version.check()
    users = used_by(root, project, name, version.version)
    if as_json:
        metadata, description, cut = shown_fields(version.manifest)
        shown = {k: v for k, v in version.manifest.items() if k != "files"}
        shown.update(metadata=metadata, description=description)
        click.echo(json.dumps({"spec": version.spec, "unlinked": version.unlinked,
                               "files_at": str(version.files), "uri": version.uri,
                               "used_by": users, "unset_variables": version.unset_variables,
                               "checked": problems is not None,
                               "problems": [p._asdict() for p in problems or []],
                               "cut": "; ".join(cut) or None, "manifest": shown},
                              indent=2, ensure_ascii=False))
    else:
        for line in show_lines(version, users, problems, verified=verify):
            click.echo(line)
    if problems or version.unset_variables:
        raise SystemExit(1)


def _unlinked_version(root: Path, project: str, name: str, number: int | None):
    """The unlinked version asked for by number, so `show` can print it, or None."""
    from nuboard.artifacts.api import get_unlinked_version
    if number is None:
        return None
    return get_unlinked_version(project, name, number, dir=root)


# ---- unlink and restore ----

@artifact.command("unlink", short_help="Hide a version (or all), deleting nothing.")
@click.argument("spec", metavar="PROJECT/NAME:vN | PROJECT/NAME --all",
                shell_complete=complete_artifact)
@click.option("--all", "every", is_flag=True, help="Unlink every version of the artifact.")
@dir_option
@catalog_option
@debug_option
def unlink(spec: str, every: bool, root: Path) -> None:
    """Move a version's folder to artifacts/.unlinked/ in its project: it leaves the lists and
    use_artifact, its number is never reused, and nothing is deleted (a referenced dataset is
    never touched). `nuboard artifact restore` brings it back.

    \b
    Examples:
      nuboard artifact unlink datasets/fineweb-edu:v3
      nuboard artifact unlink datasets/fineweb-edu --all
    """
    from nuboard.artifacts import list_versions, unlink_version
    if every and ":" in spec:
        raise click.UsageError(f"give either {spec.rpartition(':')[0]}:vN or "
                               f"{spec.rpartition(':')[0]} --all, not both.")
    project, name, number = parse_cli_spec(spec, version_needed=not every, all_hint=True)
    check_project_exists(root, project)
    numbers = list_versions(project, name, dir=root) if every else [number]
    if not numbers:
        raise InvalidArgumentError(f"artifact {project}/{name} has no linked versions; nothing was "
                                   "unlinked. List them with 'nuboard artifact ls --unlinked'.")
    for n in numbers:
        unlink_version(project, name, n, dir=root)
        click.echo(f"Unlinked {project}/{name}:v{n} (moved to artifacts/.unlinked/{name}/v{n}; "
                   "nothing deleted)")
    index_versions(root, project)


@artifact.command("restore", short_help="Bring an unlinked version back.")
@click.argument("spec", metavar="PROJECT/NAME:vN", shell_complete=complete_unlinked_artifact)
@dir_option
@catalog_option
@debug_option
def restore(spec: str, root: Path) -> None:
    """Move an unlinked version back where it was, under the same number.

    \b
    Example:
      nuboard artifact restore datasets/fineweb-edu:v3
    """
    from nuboard.artifacts import restore_version
    project, name, number = parse_cli_spec(spec)
    check_project_exists(root, project)
    restore_version(project, name, number, dir=root)
    index_versions(root, project)
    click.echo(f"Restored {project}/{name}:v{number}")
