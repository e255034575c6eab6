"""Faults of the catalog: rows 9, 11 and 12 of shared/reliability.md, and writers racing syncs.

Row 9: 16 indexers and a reader start together on an old catalog.
Row 10: two editors (the path the viewer's forms will take) and a long read on one catalog.
Row 11: the catalog deleted under a reader in another process, truncated, filled with garbage.
Row 12: a read-only project folder (a read-only bind mount), a tmpfs (where WAL works), and
the file systems without a working WAL, judged from a mount table.

Every process is a real child with a timeout; catalogs are real SQLite files.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
from helpers import catalog_rows, child_env, count, start_child, write_run
from sqlalchemy import select, text

from nuboard.catalog.engine import (
    CatalogError,
    alembic_config,
    catalog_path,
    filesystem_type,
    head_revision,
    make_engine,
    parse_mounts,
    wal_unsafe,
    why_not_here,
)
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync
from nuboard.catalog.tables import metadata, runs

CHILD_HEAD = """
import json, logging, os, sys, time
from pathlib import Path
upgrades = []
class _Collect(logging.Handler):
    def emit(self, record):
        if "Running upgrade" in record.getMessage():
            upgrades.append(record.getMessage())
_log = logging.getLogger("alembic.runtime.migration")
_log.setLevel(logging.INFO)
_log.addHandler(_Collect())
_log.propagate = False
from sqlalchemy import text
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync
root = Path(os.environ["NB_ROOT"])
sync_dir = Path(os.environ["NB_SYNC"])
(sync_dir / f"ready.{os.getpid()}").touch()
while not (sync_dir / "go").exists():
    time.sleep(0.01)
"""


def launch_together(bodies: list[str], sync_dir: Path, root: Path, timeout: float = 90
                    ) -> list[tuple[dict, str]]:
    """Start one child per body; release them at once; (last JSON line, stderr) of each."""
    sync_dir.mkdir(parents=True, exist_ok=True)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD_HEAD + textwrap.dedent(body)],
                              env=child_env(NB_ROOT=str(root), NB_SYNC=str(sync_dir)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for body in bodies]
    try:
        deadline = time.monotonic() + timeout
        while len(list(sync_dir.glob("ready.*"))) < len(procs):
            assert time.monotonic() < deadline, "children did not start in time"
            assert all(p.poll() is None for p in procs), \
                f"a child died before the start: {[p.communicate()[1] for p in procs if p.poll()]}"
            time.sleep(0.02)
        (sync_dir / "go").touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{out}\n{err}"
            results.append((json.loads(out.strip().splitlines()[-1]), err))
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def old_catalog(root: Path, project: str) -> str:
    """A catalog at the revision before head (base when there is one), by the real migrations."""
    from alembic import command
    from alembic.script import ScriptDirectory
    script = ScriptDirectory.from_config(alembic_config())
    head = script.get_current_head()
    older = script.get_revision(head).down_revision or "base"
    path = root.joinpath(*project.split("/"), ".nuboard", "catalog.sqlite")
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = make_engine(path)
    with engine.connect() as conn:
        cfg = alembic_config(conn)
        command.upgrade(cfg, head)
        command.downgrade(cfg, older)
        conn.commit()
    engine.dispose()
    return older


def exact_counts(catalog: Catalog) -> dict[str, int]:
    return {t: count(catalog, t) for t in ("runs", "tags", "config", "scalars")}


def no_duplicates(catalog: Catalog) -> None:
    with catalog.reader.connect() as conn:
        assert conn.execute(text("SELECT run_id FROM runs GROUP BY project_id, run_id "
                                 "HAVING count(*) > 1")).all() == []


# -- row 9: concurrent indexers and migrations ----------------------------------------------
INDEXER = """
catalog = Catalog(root, "proj")
first = sync(catalog)
second = sync(catalog)
with catalog.reader.connect() as conn:
    n = conn.execute(text("SELECT count(*) FROM runs")).scalar()
print(json.dumps({"migrated_from": catalog.migrated_from, "upgrades": upgrades, "runs": n,
                  "second": [second.added, second.updated, second.removed, second.unchanged]}))
"""

READER = """
catalog = Catalog(root, "proj")
seen = []
for _ in range(30):
    with catalog.reader.connect() as conn:
        seen.append(conn.execute(text(
            "SELECT count(*) FROM runs JOIN tags ON tags.run = runs.id WHERE tags.tag = 'shared'"
        )).scalar())
    time.sleep(0.01)
print(json.dumps({"migrated_from": catalog.migrated_from, "upgrades": upgrades, "seen": seen}))
"""


def test_row9_sixteen_indexers_and_a_reader_on_an_old_catalog(root, tmp_path):
    """One migration under the lock; no child sees "database is locked"; no duplicate rows."""
    for i in range(10):
        write_run(root, run_name=f"r{i}", tags=["shared", f"t{i}"], config={"i": i, "lr": 0.1},
                  points={"loss": [(0, 1.0), (1, 0.5)], "acc": [(1, 0.9)]})
    older = old_catalog(root, "proj")

    results = launch_together([INDEXER] * 16 + [READER], tmp_path / "sync", root)
    assert all(err == "" for _, err in results), [err for _, err in results if err]
    migrated = [r["migrated_from"] for r, _ in results if r["migrated_from"] is not None]
    assert migrated == [older]
    assert sum(len(r["upgrades"]) for r, _ in results) == 1
    for out, _ in results[:16]:
        assert out["runs"] == 10 and out["second"] == [0, 0, 0, 10]
    assert all(0 <= n <= 10 for n in results[16][0]["seen"])

    with Catalog(root, "proj") as catalog:
        assert catalog.migrated_from is None
        with catalog.writer.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM alembic_version")).all() == \
                [(head_revision(),)]
            from alembic.autogenerate import compare_metadata
            from alembic.migration import MigrationContext
            assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        want = {"runs": 10, "tags": 20, "config": 20, "scalars": 20}
        assert exact_counts(catalog) == want
        no_duplicates(catalog)
        sync(catalog, full=True)                      # re-indexing adds nothing
        assert exact_counts(catalog) == want
        no_duplicates(catalog)


WRITER = """
import nuboard as nb
w = int(os.environ["NB_WRITER"])
made = []
for k in range(3):
    with nb.init("proj", dir=root, run_name=f"w{w}-{k}", tags=["w", f"writer-{w}"],
                 config={"writer": w, "k": k}, flush_interval=0.05, system_metrics=False,
                 capture_console=False, capture_env=False) as run:
        for step in range(20):
            run.add_scalar("train/loss", 1.0 / (step + 1), step=step)
            run.add_scalar("lr", 0.1, step=step)
            time.sleep(0.01)
    made.append(run.id)
print(json.dumps({"runs": made}))
"""

SYNCER = """
catalog = Catalog(root, "proj")
loops, running_seen = 0, 0
while True:
    stop = (sync_dir / "stop").exists()
    sync(catalog)
    with catalog.reader.connect() as conn:
        tagged = conn.execute(text("SELECT count(*) FROM runs JOIN tags ON tags.run = runs.id "
                                   "WHERE tags.tag = 'w'")).scalar()
        twice = conn.execute(text("SELECT run_id FROM runs GROUP BY run_id "
                                  "HAVING count(*) > 1")).all()
        assert not twice, twice
        assert tagged <= 24, tagged
        status = dict(conn.execute(text("SELECT status, count(*) FROM runs GROUP BY status")).all())
    running_seen = max(running_seen, status.get("running", 0))
    if loops == 0:
        print(json.dumps({"ready": True}), flush=True)
    loops += 1
    if stop:
        break
print(json.dumps({"loops": loops, "status": status, "running_seen": running_seen}))
"""


def test_eight_writers_while_two_processes_sync_and_query(root, tmp_path):
    """Runs written and finished during syncs: all indexed at the end, counts exact."""
    sync_dir = tmp_path / "sync"
    sync_dir.mkdir()
    (sync_dir / "go").touch()
    root.mkdir()
    env = dict(NB_ROOT=str(root), NB_SYNC=str(sync_dir))
    syncers = [start_child(CHILD_HEAD + SYNCER, **env) for _ in range(2)]
    writers = []
    try:
        for proc in syncers:                           # each has synced once: they are looping
            assert json.loads(proc.stdout.readline()) == {"ready": True}, proc.stderr.read()
        writers = [start_child(CHILD_HEAD + WRITER, NB_WRITER=str(w), **env) for w in range(8)]
        made, seen_running = [], []
        for proc in writers:
            out, err = proc.communicate(timeout=90)
            assert proc.returncode == 0, err
            made += json.loads(out.strip().splitlines()[-1])["runs"]
        (sync_dir / "stop").touch()
        for proc in syncers:
            out, err = proc.communicate(timeout=90)
            assert proc.returncode == 0 and "locked" not in err, err
            assert err == ""
            done = json.loads(out.strip().splitlines()[-1])
            assert done["loops"] >= 2 and done["status"] == {"finished": 24}
            seen_running.append(done["running_seen"])
    finally:
        for proc in syncers + writers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert len(set(made)) == 24
    assert max(seen_running) > 0                       # the syncs did overlap the writing
    with Catalog(root, "proj") as catalog:
        report = sync(catalog)
        assert report.unchanged == 24 and not (report.added or report.updated or report.removed)
        assert exact_counts(catalog) == {"runs": 24, "tags": 48, "config": 48, "scalars": 48}
        with catalog.reader.connect() as conn:
            assert sorted(conn.execute(select(runs.c.run_id)).scalars()) == sorted(made)
            assert conn.execute(text("SELECT DISTINCT count, last_step, min, max FROM scalars "
                                     "WHERE name = 'train/loss'")).all() == [(20, 19, 0.05, 1.0)]
        no_duplicates(catalog)


# -- row 10: two viewers on one catalog -------------------------------------------------------
LONG_READ = """
with Catalog(root, "proj") as catalog:
    with catalog.reader.connect() as conn:
        counts = []
        end = time.monotonic() + 3.0                 # one read transaction, held for 3 s
        while time.monotonic() < end:
            counts.append(conn.execute(text("SELECT count(*) FROM runs")).scalar())
            time.sleep(0.05)
print(json.dumps({"counts": sorted(set(counts))}))
"""

EDITOR = """
from nuboard.files.edits import EditConflictError, edit_notes
import nuboard.files.jsonfile as jf
target = root / "proj" / "runs" / os.environ["NB_TARGET"]
who = os.environ["NB_WHO"]
ok = conflicts = 0
wal_max = 0
with Catalog(root, "proj") as catalog:
    for i in range(25):
        base = None if i == 0 else jf.read_json(target / "run.json").get("notes")
        try:
            edit_notes(target, f"{who} {i}", base=base)
            ok += 1
        except EditConflictError:
            conflicts += 1
        sync(catalog, full=(i % 5 == 4))           # a reindex now and then: many pages
        wal = Path(str(catalog.path) + "-wal")
        wal_max = max(wal_max, wal.stat().st_size if wal.exists() else 0)
print(json.dumps({"ok": ok, "conflicts": conflicts, "wal_max": wal_max}))
"""


def test_row10_two_viewers_on_one_catalog(root, tmp_path, monkeypatch):
    """Two editors and a long read on one catalog: no busy error, a lost edit is caught as a
    conflict, the notes end the same in run.json and the catalog, and the WAL comes back down.

    (The viewer is not built yet: its editors are these processes using the same edit path,
    nuboard.files.edits.edit_notes, that its forms will call.)
    """
    made = [write_run(root).name for _ in range(30)]
    target = made[0]
    with Catalog(root, "proj") as catalog:
        sync(catalog)
    editor = EDITOR.replace('os.environ["NB_TARGET"]', repr(target))
    results = launch_together(
        [LONG_READ, editor.replace('os.environ["NB_WHO"]', '"A"'),
         editor.replace('os.environ["NB_WHO"]', '"B"')],
        tmp_path / "sync", root, timeout=120)
    for _, err in results:
        assert "locked" not in err and "Traceback" not in err, err
    (reader, _), (a, _), (b, _) = results
    assert reader["counts"] == [30]                  # one snapshot for the whole read
    assert a["ok"] + a["conflicts"] == 25 and b["ok"] + b["conflicts"] == 25
    assert a["conflicts"] + b["conflicts"] >= 1      # the first edits raced: one was refused
    notes = json.loads((root / "proj" / "runs" / target / "run.json").read_text())["notes"]
    assert notes.split()[0] in ("A", "B")
    import nuboard.catalog.sync as sync_module
    monkeypatch.setattr(sync_module, "WAL_LIMIT", 64 * 1024)
    with Catalog(root, "proj") as catalog:
        sync(catalog)
        with catalog.reader.connect() as conn:
            stored = conn.execute(select(runs.c.notes).where(runs.c.run_id == target)).scalar()
        wal = Path(str(catalog.path) + "-wal")
        assert stored == notes
        assert max(a["wal_max"], b["wal_max"]) > 64 * 1024        # it grew during the long read
        assert not wal.exists() or wal.stat().st_size <= 64 * 1024  # and came back down


# -- row 11: the catalog deleted or damaged ---------------------------------------------------
HOLDER = """
catalog = Catalog(root, "proj")
with catalog.reader.connect() as conn:
    before = conn.execute(text("SELECT count(*) FROM runs")).scalar()
print(json.dumps({"ready": before}), flush=True)
while not (sync_dir / "deleted").exists():
    time.sleep(0.01)
if os.environ["NB_HOW"] == "reopen":         # as a viewer checks before each page
    reopened = catalog.reopen_if_gone()
    report = None
else:                                        # a sync reopens by itself
    reopened = None
    report = sync(catalog)
with catalog.reader.connect() as conn:
    after = conn.execute(text("SELECT count(*) FROM runs")).scalar()
print(json.dumps({"reopened": reopened, "after": after, "again": catalog.reopen_if_gone(),
                  "sync": report and [report.added, report.unchanged]}))
"""


def five_runs(root: Path) -> None:
    for i in range(5):
        write_run(root, run_name=f"r{i}", tags=["t", f"n{i}"], config={"i": i, "m": {"w": 2 * i}},
                  points={"loss": [(s, 1.0 / (s + 1)) for s in range(50)], "acc": [(49, 0.5)]})


def test_row11_catalog_deleted_under_a_reader_in_another_process(root, tmp_path):
    """catalog, -wal and -shm removed while other processes read it: rebuilt to the same rows."""
    five_runs(root)
    with Catalog(root, "proj") as catalog:
        sync(catalog)
        before = catalog_rows(catalog)
        path = catalog.path
    sync_dir = tmp_path / "sync"
    sync_dir.mkdir()
    (sync_dir / "go").touch()
    holders = [start_child(CHILD_HEAD + HOLDER, NB_ROOT=str(root), NB_SYNC=str(sync_dir),
                           NB_HOW=how) for how in ("reopen", "sync")]
    try:
        for holder in holders:
            assert json.loads(holder.stdout.readline()) == {"ready": 5}, holder.stderr.read()
        parts = [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm")]
        assert all(p.exists() for p in parts)            # the readers hold it open
        for part in parts:
            part.unlink()
        with Catalog(root, "proj") as catalog:
            report = sync(catalog)
            assert report.added == 5
            assert catalog_rows(catalog) == before
        (sync_dir / "deleted").touch()
        results = []
        for holder in holders:
            out, err = holder.communicate(timeout=60)
            assert holder.returncode == 0 and err == "", err
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for holder in holders:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
    assert results == [{"reopened": True, "after": 5, "again": False, "sync": None},
                       {"reopened": None, "after": 5, "again": False, "sync": [0, 5]}]


@pytest.mark.parametrize("damage", ["truncated", "garbage", "garbage-header"])
def test_row11_damaged_catalog_is_set_aside_and_rebuilt(root, damage):
    """Truncated to half or filled with garbage: a warning, the file set aside, the same rows."""
    five_runs(root)
    with Catalog(root, "proj") as catalog:
        sync(catalog)
        before = catalog_rows(catalog)
        path = catalog.path
    assert not Path(f"{path}-wal").exists()           # closed: the WAL was checkpointed
    size = path.stat().st_size
    if damage == "truncated":
        os.truncate(path, size // 2)
    elif damage == "garbage":
        path.write_bytes(os.urandom(size))
    else:                                             # a good header, garbage after it
        with open(path, "r+b") as fh:
            fh.seek(100)
            fh.write(os.urandom(size - 100))
    with pytest.warns(RuntimeWarning, match="damaged") as caught:
        catalog = Catalog(root, "proj")
    try:
        assert str(path) in str(caught[0].message)
        assert catalog.damaged_because
        aside = [p for p in path.parent.iterdir() if p.name.startswith("catalog.sqlite.damaged-")
                 and not p.name.endswith(("-wal", "-shm"))]
        assert len(aside) == 1
        report = sync(catalog)
        assert report.added == 5 and report.skipped == []
        assert catalog_rows(catalog) == before
    finally:
        catalog.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")                # a rebuilt catalog opens quietly
        with Catalog(root, "proj") as again:
            assert again.damaged_because is None and sync(again).unchanged == 5


# -- row 12: where WAL does not work ----------------------------------------------------------
def _mount(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


def test_row12_read_only_project_folder_puts_the_catalog_in_the_cache(root, tmp_path,
                                                                       monkeypatch):
    """A read-only bind mount of the project: the catalog goes under $NUBOARD_CACHE_DIR."""
    for i in range(3):
        write_run(root, run_name=f"r{i}", tags=["t"], points={"loss": [(0, 1.0)]})
    project = root / "proj"
    cache = tmp_path / "cache"
    monkeypatch.setenv("NUBOARD_CACHE_DIR", str(cache))
    mounted = False
    if os.geteuid() == 0:                          # root writes through chmod: mount read-only
        bind = _mount("--bind", str(project), str(project))
        if bind.returncode != 0:
            pytest.skip(f"cannot bind-mount the project folder: {bind.stderr.strip()}")
        mounted = True
        remount = _mount("-o", "remount,ro,bind", str(project))
        if remount.returncode != 0:
            _umount(project)
            pytest.skip(f"cannot remount the project folder read-only: {remount.stderr.strip()}")
    else:
        project.chmod(0o555)
    try:
        with pytest.raises(OSError):
            (project / "probe").write_bytes(b"")
        with Catalog(root, "proj") as catalog:
            assert catalog.path.parent.parent == cache
            assert catalog.path.parent.name.startswith("proj-")
            assert "cannot be written" in catalog.moved_because
            assert "Read-only" in catalog.moved_because or "ermission" in catalog.moved_because
            report = sync(catalog)
            assert report.added == 3
            with catalog.writer.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            first = catalog.path
        with Catalog(root, "proj") as catalog:         # found again: keyed by the project's path
            assert catalog.path == first and sync(catalog).unchanged == 3
        assert not (project / ".nuboard").exists()
    finally:
        if mounted:
            _umount(project)
        else:
            project.chmod(0o755)


def test_row12_tmpfs_keeps_the_catalog_in_the_project(tmp_path, monkeypatch):
    """WAL works on tmpfs: its type is read from the mount table, and the catalog stays put."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "tmpfs"
    where.mkdir()
    mounted = _mount("-t", "tmpfs", "-o", "size=64m", "tmpfs", str(where))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    monkeypatch.delenv("NUBOARD_CACHE_DIR", raising=False)     # set, it would hold the catalog
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    try:
        root = where / "experiments"
        write_run(root, tags=["t"], points={"loss": [(0, 1.0)]})
        assert filesystem_type(root / "proj") == "tmpfs"
        assert filesystem_type(tmp_path) != "tmpfs"
        assert why_not_here(root / "proj") is None
        with Catalog(root, "proj") as catalog:
            assert catalog.moved_because is None
            assert catalog.path == root / "proj" / ".nuboard" / "catalog.sqlite"
            assert filesystem_type(catalog.path) == "tmpfs"
            assert sync(catalog).added == 1
            with catalog.writer.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert not (tmp_path / "home" / ".cache").exists()
    finally:
        _umount(where)


MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
{kind_src} {mnt} {kind} rw,relatime 0 0
"""


@pytest.mark.parametrize("kind", ["nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "9p", "ceph",
                                  "fuse", "fuse.sshfs", "fuse.gcsfuse", "fuseblk", "beegfs",
                                  "vboxsf"])
def test_row12_no_wal_filesystems_move_the_catalog(tmp_path, monkeypatch, kind):
    """The decision, from a /proc/mounts-like table: the project's file system lacks WAL."""
    project = tmp_path / "exp" / "proj"
    project.mkdir(parents=True)
    cache = tmp_path / "cache"
    monkeypatch.setenv("NUBOARD_CACHE_DIR", str(cache))
    mounts = MOUNTS.format(kind_src="server:/export", mnt=tmp_path / "exp", kind=kind)
    assert wal_unsafe(kind)
    assert filesystem_type(project, mounts) == kind
    reason = why_not_here(project, mounts)
    assert reason is not None and kind in reason and "WAL" in reason
    path, why = catalog_path(project, mounts)
    assert why == reason and path.parent.parent == cache and path.name == "catalog.sqlite"
    assert not (project / ".nuboard").exists()


@pytest.mark.parametrize("kind", ["ext4", "xfs", "btrfs", "tmpfs", "zfs", "overlay", "f2fs"])
def test_row12_local_filesystems_keep_the_catalog(tmp_path, monkeypatch, kind):
    project = tmp_path / "exp" / "proj"
    monkeypatch.delenv("NUBOARD_CACHE_DIR", raising=False)     # set, it would hold the catalog
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    mounts = MOUNTS.format(kind_src="/dev/sdb1", mnt=tmp_path / "exp", kind=kind)
    assert not wal_unsafe(kind)
    assert why_not_here(project, mounts) is None
    assert catalog_path(project, mounts) == (project / ".nuboard" / "catalog.sqlite", None)


def test_row12_mount_table_matching(tmp_path):
    """Longest mount point on a path boundary wins, the later of two on one point, escapes read."""
    spaced = tmp_path / "my exp"
    table = "\n".join([
        "/dev/vda / ext4 rw 0 0",
        f"srv:/a {tmp_path}/nfs nfs4 rw 0 0",
        f"srv:/b {str(spaced).replace(' ', chr(92) + '040')} cifs rw 0 0",
        f"tmpfs {tmp_path}/over tmpfs rw 0 0",
        f"srv:/c {tmp_path}/over nfs rw 0 0",             # mounted on top of the tmpfs
        "garbage line",
    ])
    assert parse_mounts(table)[2] == (str(spaced), "cifs")
    assert filesystem_type(tmp_path / "nfs" / "x" / "proj", table) == "nfs4"
    assert filesystem_type(tmp_path / "nfsdata" / "proj", table) == "ext4"   # not under /nfs
    assert filesystem_type(spaced / "proj", table) == "cifs"
    assert filesystem_type(tmp_path / "over" / "proj", table) == "nfs"
    assert filesystem_type(tmp_path / "elsewhere", table) == "ext4"
    assert filesystem_type(tmp_path, "") is None


def test_row12_cache_without_wal_is_a_clear_refusal(tmp_path, monkeypatch):
    """Project and cache both on NFS: CatalogError naming both folders and what to do."""
    project = tmp_path / "exp" / "proj"
    project.mkdir(parents=True)
    monkeypatch.setenv("NUBOARD_CACHE_DIR", str(tmp_path / "cache"))
    mounts = f"/dev/vda / ext4 rw 0 0\nsrv:/x {tmp_path} nfs4 rw 0 0\n"
    with pytest.raises(CatalogError, match="NUBOARD_CACHE_DIR") as info:
        catalog_path(project, mounts)
    assert "nfs4" in str(info.value) and str(project) in str(info.value)
