"""Team mode: every project under a root indexed into one PostgreSQL database (docs/team.md).

The catalog and viewer tests run on both backends through the `backend` fixture; these are
about the server itself: its URL and driver, schemas and migrations, `nuboard sql` read-only,
the commands that take --catalog, and many hosts syncing one root at once.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers import (
    QUIET_ARGS,
    catalog_rows,
    child_env,
    cli,
    loss_run,
    one_line_error,
    run_cli,
    start_child,
)
from helpers_http import RemoteViewer, Viewer
from sqlalchemy import text

from nuboard.catalog import server
from nuboard.catalog.engine import head_revision
from nuboard.catalog.project_catalog import Catalog
from nuboard.catalog.sync import sync


@pytest.fixture
def url(team_url) -> str:
    """The test cluster's URL; $NUBOARD_CATALOG_URL left unset (each test passes it itself)."""
    return team_url


def columns_of(catalog) -> list[tuple]:
    """(table, column, type, collation) of every column of the catalog's schema."""
    with catalog.reader.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT table_name, column_name, data_type, collation_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, column_name"))]


# -- the URL, the driver, the server ---------------------------------------------------------------

def test_commands_index_into_the_server_and_write_no_sqlite_file(root, url):
    run_id = loss_run(root, "llm", name="alpha", config={"lr": 0.1}, tags=["base"])
    loss_run(root, "llm", name="beta")
    listed = cli(root, "ls", "llm", "--json", "--catalog", url)
    assert listed.returncode == 0, listed.stderr
    assert sorted(r["name"] for r in json.loads(listed.stdout)) == ["alpha", "beta"]
    assert not (root / "llm" / ".nuboard").exists()           # nothing in the project folder
    with Catalog(root, "llm", url=url) as catalog:
        assert catalog.on_server and catalog.path is None
        assert catalog.schema.startswith("nb_") and catalog.schema.endswith(
            "_llm_" + catalog.schema.rsplit("_", 1)[1])
        with catalog.reader.connect() as conn:
            assert conn.execute(text("SELECT name FROM runs ORDER BY name")).scalars().all() == \
                ["alpha", "beta"]
            assert conn.execute(text("SELECT obj_description(%s::regnamespace)" % repr(catalog.schema))
                                ).scalar().startswith("NuBoard catalog of the project 'llm'")
    # the environment variable does the same as --catalog, for every command
    env = {"NUBOARD_CATALOG_URL": url}
    queried = cli(root, "sql", "SELECT name FROM runs WHERE name = 'alpha'", "--json", env=env)
    assert queried.returncode == 0, queried.stderr
    assert json.loads(queried.stdout) == [{"name": "alpha"}]
    reindexed = cli(root, "reindex", env=env)
    assert reindexed.returncode == 0 and "llm: 2 runs indexed" in reindexed.stdout, reindexed.stderr
    removed = cli(root, "rm", run_id, "--project", "llm", "--yes", env=env)
    assert removed.returncode == 0, removed.stderr
    with Catalog(root, "llm", url=url) as catalog, catalog.reader.connect() as conn:
        assert conn.execute(text("SELECT name FROM runs")).scalars().all() == ["beta"]
    assert not (root / "llm" / ".nuboard").exists()
    # --catalog '' is SQLite again, whatever the environment says
    local = cli(root, "ls", "llm", "--json", "--catalog", "", env=env)
    assert local.returncode == 0 and (root / "llm" / ".nuboard" / "catalog.sqlite").is_file()


def test_artifact_commands_take_the_catalog(root, url, tmp_path):
    data = tmp_path / "corpus.txt"
    data.write_text("hello\n")
    added = cli(root, "artifact", "add", "datasets/corpus", str(data), "--copy", "--type", "dataset",
                "--description", "a corpus", "--no-input", "--catalog", url)
    assert added.returncode == 0, added.stderr
    listed = cli(root, "artifact", "ls", "datasets", "--json", "--catalog", url)
    assert listed.returncode == 0, listed.stderr
    assert [(v["name"], v["version"]) for v in json.loads(listed.stdout)] == [("corpus", 1)]
    shown = cli(root, "artifact", "show", "datasets/corpus:v1", "--catalog", url)
    assert shown.returncode == 0 and "corpus" in shown.stdout, shown.stderr
    assert not (root / "datasets" / ".nuboard").exists()
    with Catalog(root, "datasets", url=url) as catalog, catalog.reader.connect() as conn:
        assert conn.execute(text("SELECT version, type FROM versions")).all() == [(1, "dataset")]


@pytest.mark.parametrize("given, says", [
    ("mysql://user@host/db", "names 'mysql'; a shared catalog is on PostgreSQL"),
    ("not a url", "is not a database URL"),
    ("postgresql+psycopg2://u@h/db", "driver 'psycopg2'; NuBoard talks to PostgreSQL through psycopg 3"),
])
def test_a_bad_catalog_url_is_one_line(root, given, says):
    loss_run(root, "llm")
    result = cli(root, "ls", "--catalog", given)
    assert result.returncode == 1
    assert says in one_line_error(result)
    assert not (root / "llm" / ".nuboard").exists()


def test_a_missing_driver_names_the_install(root, tmp_path):
    """psycopg not importable (a stand-in package that raises on import, first on the path)."""
    loss_run(root, "llm")
    fake = tmp_path / "nodriver" / "psycopg"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named psycopg')\n")
    env = child_env(NUBOARD_DIR=str(root))
    env["PYTHONPATH"] = f"{fake.parent}{os.pathsep}{env['PYTHONPATH']}"
    for args in (["ls", "--catalog", "postgresql+psycopg://u@127.0.0.1/db"], ["ls"]):
        result = subprocess.run([sys.executable, "-m", "nuboard.cli.main", *args], capture_output=True,
                                text=True, timeout=60, stdin=subprocess.DEVNULL,
                                env={**env, "NUBOARD_CATALOG_URL": "postgresql://u@127.0.0.1/db"})
        assert result.returncode == 1, result
        assert "pip install 'nuboard[postgres]'" in one_line_error(result)


def test_a_server_that_cannot_be_reached_is_one_line(root):
    loss_run(root, "llm")
    started = time.monotonic()
    result = cli(root, "ls", "--catalog", "postgresql+psycopg://nuboard@127.0.0.1:1/nuboard")
    assert result.returncode == 1
    err = one_line_error(result)
    assert "The catalog server 'postgresql+psycopg://nuboard@127.0.0.1:1/nuboard' cannot be used" in err
    assert time.monotonic() - started < 30


def test_a_role_that_may_not_create_schemas_is_told_so_in_one_line(root, url):
    """The role of the URL has no CREATE on the database: one line naming the schema and what the
    role needs, not the SQL."""
    import random

    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    loss_run(root, "llm")
    role = f"nb_test_reader_{random.randrange(1 << 30)}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE ROLE {role} LOGIN")
    try:
        weak = make_url(url).set(username=role).render_as_string(hide_password=False)
        result = cli(root, "ls", "--catalog", weak)
        assert result.returncode == 1
        err = one_line_error(result)
        assert "refused the schema nb_" in err and "permission denied for database" in err, err
        assert "The role needs CREATE on the database" in err and "SQL:" not in err
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP ROLE {role}")
        admin.dispose()


def test_a_viewer_checks_its_server_first_and_pages_say_503_when_it_is_gone(root, monkeypatch):
    """`nuboard up` with a server that is down: one line, exit 1, before serving. A viewer whose
    server goes away afterwards answers 503 (not the user's mistake) with the reason, HTML and
    JSON alike, and no SQL."""
    loss_run(root, "llm")
    down = "postgresql+psycopg://nuboard@127.0.0.1:1/nuboard"
    started = time.monotonic()
    result = cli(root, "up", str(root), "--port", "0", "--catalog", down)
    assert result.returncode == 1 and time.monotonic() - started < 30
    assert "cannot be used: connection failed" in one_line_error(result)
    monkeypatch.setenv("NUBOARD_CATALOG_URL", down)
    with Viewer(root) as viewer:
        page = viewer.get("/p/llm")
        assert page.status == 503 and "Catalog unavailable" in page.text
        assert "cannot be used" in page.text and "SELECT" not in page.text
        twin = viewer.get("/api/p/llm/runs")
        assert twin.status == 503 and "cannot be used" in twin.json()["error"]


def test_a_viewer_answers_503_while_its_server_restarts_and_serves_again_after(root, url):
    """A PostgreSQL of this test's own (scripts/pg_cluster), stopped under a live viewer and
    started again on the same port: 503 while it is down, the runs again once it is back."""
    script = Path(__file__).resolve().parent.parent / "scripts" / "pg_cluster"
    # not under tmp_path: the server runs as `postgres` when the tests run as root, and must be
    # able to enter every folder above its own (pytest's are 0700)
    folder = Path(tempfile.mkdtemp(prefix="nuboard-pg-test-"))
    started = subprocess.run(["bash", str(script), "start", str(folder)], capture_output=True,
                             text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    own = started.stdout.strip()
    try:
        loss_run(root, "llm")
        with RemoteViewer(root, "--catalog", own) as viewer:
            assert viewer.get("/api/p/llm/runs").json()["total"] == 1
            subprocess.run(["bash", str(script), "stop", str(folder)], check=True, timeout=120)
            gone = viewer.get("/api/p/llm/runs?q=x")
            assert gone.status == 503 and "The catalog" in gone.json()["error"], gone.text
            port = own.rsplit(":", 1)[1].split("/")[0]
            again = subprocess.run(["bash", str(script), "start", str(folder), port],
                                   capture_output=True, text=True, timeout=120)
            assert again.returncode == 0, again.stderr
            deadline = time.monotonic() + 30
            while viewer.get("/api/p/llm/runs").status != 200:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert viewer.get("/api/p/llm/runs").json()["total"] == 1
    finally:
        subprocess.run(["bash", str(script), "stop", str(folder)], timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_password_in_the_url_is_never_printed(root):
    loss_run(root, "llm")
    result = cli(root, "ls", "--catalog", "postgresql+psycopg://nuboard:s3cret@127.0.0.1:1/nuboard")
    assert result.returncode == 1
    assert "s3cret" not in result.stderr and "***" in one_line_error(result)


# -- schemas and migrations ----------------------------------------------------------------------

def test_hosts_that_mount_the_folder_elsewhere_share_its_schemas(root, url, tmp_path):
    loss_run(root, "llm")
    elsewhere = tmp_path / "mnt" / "experiments"
    elsewhere.parent.mkdir()
    elsewhere.symlink_to(root)                     # another host's mount point, here a link
    with Catalog(root, "llm", url=url) as one, Catalog(str(elsewhere), "llm", url=url) as other:
        assert one.schema == other.schema
        assert sync(one).added == 1 and sync(other).unchanged == 1
    doc = json.loads((root / ".nuboard" / "root.json").read_text())
    assert doc["id"][:8] in one.schema
    # another root, another set of schemas; another project, another schema
    other_root = tmp_path / "other"
    loss_run(other_root, "llm")
    with Catalog(other_root, "llm", url=url) as third, Catalog(root, "llm/sub", url=url) as fourth:
        assert len({one.schema, third.schema, fourth.schema}) == 3


def test_a_schema_from_an_older_nuboard_is_upgraded_on_open(root, url):
    """A schema at revision 0004 (before team mode) with a run in it: opening upgrades it to
    head, columns and collations as a new schema has them, and the next sync indexes the run."""
    from alembic import command

    from nuboard.catalog.engine import alembic_config
    loss_run(root, "llm", name="old", config={"lr": 0.5})
    schema = server.schema_name(server.root_id(root), "llm")
    writer, _ = server.schema_engines(server.server_engine(url), schema)
    server.create_schema(writer, schema, "an older NuBoard's")
    with writer.connect() as conn:
        command.upgrade(alembic_config(conn), "0004")
        conn.commit()
    with writer.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0004"
    with Catalog(root, "llm", url=url) as catalog:
        assert catalog.migrated_from == "0004"
        assert sync(catalog).added == 1
        with catalog.reader.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == head_revision()
            assert conn.execute(text("SELECT key, seq FROM config")).all() == [("lr", 0)]
        upgraded = columns_of(catalog)
    loss_run(root, "fresh")
    with Catalog(root, "fresh", url=url) as fresh:
        assert fresh.migrated_from == "base"
        assert columns_of(fresh) == upgraded
    kinds = {(t, c): (kind, coll) for t, c, kind, coll in upgraded}
    assert kinds[("runs", "folder_mtime_ns")] == ("bigint", None)
    assert kinds[("runs", "name")] == ("character varying", "C")
    assert kinds[("config", "value_text")] == ("text", "C")


def test_many_processes_opening_a_new_schema_at_once_migrate_it_once(root, url):
    loss_run(root, "llm")
    code = f"""
        from nuboard.catalog.project_catalog import Catalog
        from nuboard.catalog.sync import sync
        with Catalog({str(root)!r}, "llm", url={url!r}) as c:
            report = sync(c)
            print(c.migrated_from, report.added + report.unchanged)
    """
    children = [start_child(code) for _ in range(6)]
    outs = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        outs.append(out.split())
    assert sorted(o[0] for o in outs).count("base") == 1          # one of them migrated it
    assert {o[1] for o in outs} == {"1"}


FORKED = """
    import os, sys
    from nuboard.catalog import run_reads
    from nuboard.catalog.project_catalog import Catalog
    from nuboard.catalog.sync import sync
    catalog = Catalog({root!r}, "llm", url={url!r})
    sync(catalog)
    pids = []
    for _ in range(3):                        # children that read while the parent reads too
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                for _ in range(200):
                    assert run_reads.count_runs(catalog, now=0.0) == 2
                sync(catalog)
            except BaseException as exc:
                print("child:", repr(exc), file=sys.stderr, flush=True)
                code = 1
            os._exit(code)
        pids.append(pid)
    for _ in range(200):
        assert run_reads.count_runs(catalog, now=0.0) == 2
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    assert run_reads.count_runs(catalog, now=0.0) == 2
    print(codes)
"""


def test_forked_children_read_the_server_on_connections_of_their_own(root, url):
    """A process that opened a catalog on the server forks (a DataLoader's workers): parent and
    children read at once, each on its own connections, and all see the runs."""
    for name in ("a", "b"):
        loss_run(root, "llm", name=name)
    child = start_child(FORKED.format(root=str(root), url=url))
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert out.strip() == "[0, 0, 0]", err


def test_a_schema_dropped_under_a_live_viewer_is_made_again(root, url, monkeypatch):
    for i in range(3):
        loss_run(root, "llm", name=f"r{i}")
    monkeypatch.setenv("NUBOARD_CATALOG_URL", url)
    with Viewer(root, sync_every=0.0) as viewer:
        assert viewer.get("/api/p/llm/runs").json()["total"] == 3
        with Catalog(root, "llm") as catalog, catalog.writer.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{catalog.schema}" CASCADE')
        deadline = time.monotonic() + 30
        while True:
            reply = viewer.get("/api/p/llm/runs")
            if reply.status == 200 and reply.json()["total"] == 3:
                break
            assert time.monotonic() < deadline, reply.text
            time.sleep(0.2)


def test_a_viewer_sees_what_another_host_indexed(root, url, monkeypatch):
    """Another process indexes a run with a new config key first: this viewer's own sync then
    finds nothing to do, yet its column choices show the key (projects.changes)."""
    loss_run(root, "llm", name="first", config={"lr": 0.1})
    monkeypatch.setenv("NUBOARD_CATALOG_URL", url)
    with Viewer(root, sync_every=0.0) as viewer:
        assert "width" not in viewer.get("/api/p/llm/.query-keys").json()["config"]
        loss_run(root, "llm", name="second", config={"lr": 0.2, "width": 512})
        indexed = cli(root, "reindex", "llm", env={"NUBOARD_CATALOG_URL": url})
        assert indexed.returncode == 0, indexed.stderr
        deadline = time.monotonic() + 20
        while viewer.get("/api/p/llm/runs").json()["total"] != 2 or \
                "width" not in viewer.get("/api/p/llm/.query-keys").json()["config"]:
            assert time.monotonic() < deadline
            time.sleep(0.2)


def test_a_run_whose_rows_the_server_refuses_is_skipped_with_the_reason(root, url):
    """A run.json written by hand naming an input of 4 kB (past what a PostgreSQL index entry
    holds): that run is skipped and reported with the server's reason; the others of its batch
    are indexed, and the sync does not fail."""
    import random
    import string
    hostile = loss_run(root, "llm", name="hostile")
    loss_run(root, "llm", name="fine")
    path = root / "llm" / "runs" / hostile / "run.json"
    doc = json.loads(path.read_text())
    name = "".join(random.Random(5).choices(string.ascii_letters + string.digits, k=4000))
    doc["inputs"] = [{"project": "datasets", "name": name, "version": 1}]
    path.write_text(json.dumps(doc))
    with Catalog(root, "llm", url=url) as catalog:
        report = sync(catalog)
        assert report.added == 1
        assert [(run, why.split(" (")[0]) for run, why in report.skipped] == \
            [(hostile, "the catalog server refused its rows")]
        assert "exceeds btree" in report.skipped[0][1]
        with catalog.reader.connect() as conn:
            assert conn.execute(text("SELECT name FROM runs")).scalars().all() == ["fine"]
        again = sync(catalog)                      # reported again, not read again
        assert (again.unchanged, [r for r, _ in again.skipped]) == (1, [hostile])


# -- nuboard sql on the server -------------------------------------------------------------------

SQL_REFUSED = [
    ("DELETE FROM runs", "is not a statement that reads"),
    ("WITH gone AS (DELETE FROM runs RETURNING id) SELECT count(*) FROM gone", "would change it"),
    ("SELECT nextval('runs_id_seq')", "would change it"),
    ("SELECT 1; DROP TABLE runs", "holds several statements"),
    ("COMMIT; DROP TABLE runs", "is not a statement that reads"),
    ("SET default_transaction_read_only = off", "is not a statement that reads"),
    ("SELECT * FROM missing_table", 'relation "missing_table" does not exist'),
]


def test_sql_on_the_server_reads_and_refuses_writes_in_one_line(root, url):
    """Each refused statement: one line, exit 1, and the rows as they were (run in this process,
    with $NUBOARD_CATALOG_URL set for the call only; one child process shows the exit code)."""
    for name in ("a", "b"):
        loss_run(root, "llm", name=name)
    env = {"NUBOARD_CATALOG_URL": url}
    listing = "SELECT name, run_id LIKE '%' AS any FROM runs ORDER BY name"
    for statement, says in SQL_REFUSED:
        result = run_cli(root, "sql", statement, env=env)
        assert result.returncode == 1, (statement, result.stdout)
        assert says in one_line_error(result), statement
        after = run_cli(root, "sql", listing, "--json", env=env)
        assert after.returncode == 0, after.stderr
        assert json.loads(after.stdout) == [{"name": "a", "any": True}, {"name": "b", "any": True}]
    child = cli(root, "sql", "DELETE FROM runs", "--catalog", url)
    assert child.returncode == 1 and "is not a statement that reads" in one_line_error(child)


# -- many hosts, one root, one database ----------------------------------------------------------

WRITER = """
    import random, time, nuboard as nb
    from pathlib import Path
    for k in range(4):
        run = nb.init("{project}", run_name="w{w}-" + str(k), config={{"lr": 0.1 * k, "w": {w}}},
                      tags=["w{w}", "k" + str(k)], {quiet})
        for step in range(30):
            run.log({{"train/loss": 1.0 / (step + 1), "acc": step / 30}}, step=step)
            run.flush()
            time.sleep(random.uniform(0.005, 0.03))
        if {w} % 4 == 0 and k == 1:
            data = Path(run.path).parent.parent / ("data-{w}.txt")
            data.write_text("{w}" * 100)
            run.add_artifact("data-{w}", data, type="dataset")
        run.finish("crashed" if k == 2 and {w} % 3 == 0 else "finished")
        time.sleep(0.5)
"""

SYNCER = """
    from pathlib import Path
    from nuboard.catalog.project_catalog import Catalog
    from nuboard.catalog.sync import sync
    root, stop = Path({root!r}), Path({stop!r})
    catalogs = {{}}
    rounds = 0
    while not stop.exists():
        for project in ("llm", "vision"):
            if (root / project / "runs").is_dir():
                if project not in catalogs:
                    catalogs[project] = Catalog(root, project)
                sync(catalogs[project], full=rounds % 7 == 3)
        rounds += 1
    print(rounds)
"""


def test_four_syncs_two_viewers_and_eight_writers_leave_what_a_reindex_gives(root, url, tmp_path):
    """4 processes syncing in a loop (now and then a full resync), 2 `nuboard up` answering
    requests, 8 processes logging runs (and adding versions) into two projects: no sync and no
    request ever fails, and the database then holds exactly what a fresh rebuild writes, on the
    server and in a new SQLite catalog alike."""
    for project in ("llm", "vision"):
        (root / project / "runs").mkdir(parents=True)
    stop = tmp_path / "stop"
    viewers = [RemoteViewer(root, "--catalog", url) for _ in range(2)]
    syncers = [start_child(SYNCER.format(root=str(root), stop=str(stop)), NUBOARD_CATALOG_URL=url)
               for _ in range(4)]
    writers = [start_child(WRITER.format(w=w, project="llm" if w < 5 else "vision", quiet=QUIET_ARGS),
                           NUBOARD_DIR=str(root)) for w in range(8)]
    try:
        replies = 0
        while any(w.poll() is None for w in writers):
            for viewer in viewers:
                for path in ("/api/p/llm/runs", "/api/p/vision/runs?q=tag:k1", "/p/llm",
                             "/p/vision/.artifacts"):
                    reply = viewer.get(path)
                    assert reply.status == 200, (path, reply.text[:500])
                    replies += 1
        for w in writers:
            out, err = w.communicate(timeout=60)
            assert w.returncode == 0, err
        assert replies > 20
    finally:
        stop.write_text("")
        ended = [(s, *s.communicate(timeout=120)) for s in syncers]
        for viewer in viewers:
            viewer.proc.send_signal(signal.SIGINT)
        stopped = [viewer.proc.communicate(timeout=30)[1] for viewer in viewers]
        for w in writers:
            if w.poll() is None:
                w.kill()
                w.communicate()
    for s, out, err in ended:
        assert s.returncode == 0, err                          # no lock or serialization error
        assert int(out.strip()) > 3, out
        assert "Traceback" not in err, err
    for err in stopped:
        assert "Traceback" not in err, err
    for project, runs in (("llm", 20), ("vision", 12)):
        with Catalog(root, project, url=url) as shared:
            sync(shared)                                      # the last runs finished after the loops
            synced = catalog_rows(shared)
            assert len(synced["runs"]) == runs
            assert sync(shared, full=True).added + sync(shared).unchanged >= runs
            assert catalog_rows(shared) == synced             # what a reindex writes
        with Catalog(root, project, url="") as local:         # and what SQLite holds of the files
            sync(local)
            assert catalog_rows(local) == synced
