"""The command line around runs: ls, rm, sql, reindex, run for real in child processes.

Run folders are written by the real API in child processes. The CLI runs in this process with
click's CliRunner (helpers.run_cli) where what it prints is the point; as `python -m
nuboard.cli.main` with pipes where the process is (exit codes and usage lines of the real
program, a traceback under --debug, $TZ); and in a real terminal (a pty) where a terminal matters.
"""
from __future__ import annotations

import csv
import datetime as dt
import fcntl
import io
import json
import os
import pty
import select
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from helpers import QUIET_ARGS, child_env, cli, make_runs, one_line_error, run_child, run_cli, start_child

from nuboard.cli import formats

ANSI = "\x1b["


def in_terminal(root: Path, *args: str, answer: tuple[str, str] | None = None,
                cols: int = 160, timeout: float = 60) -> tuple[int, str]:
    """Run the CLI on a real pseudo-terminal; answer=(prompt, keys) types keys once prompt shows."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    env = child_env(NUBOARD_DIR=str(root), TERM="xterm-256color")
    for var in ("NO_COLOR", "COLUMNS", "LINES", "FORCE_COLOR"):
        env.pop(var, None)
    proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", *args], env=env,
                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    out, answered, deadline = b"", answer is None, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:                 # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
            if not answered and answer[0].encode() in out:
                os.write(master, answer[1].encode())
                answered = True
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, out.decode("utf-8", "replace")


def start_running(root: Path, project: str, name: str) -> tuple[subprocess.Popen, str]:
    """A child that starts a run and keeps it running; returns it and the run id."""
    child = start_child(f"""
        import time, nuboard as nb
        run = nb.init({project!r}, run_name={name!r}, {QUIET_ARGS})
        print(run.id, flush=True)
        time.sleep(600)
    """, NUBOARD_DIR=str(root))
    line = child.stdout.readline().strip()
    assert line, child.stderr.read()
    return child, line


def make_lost(root: Path, project: str, name: str) -> str:
    """A run left 'running' by a SIGKILLed child, its heartbeat three minutes old."""
    child, run_id = start_running(root, project, name)
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    child.stderr.close()
    old = time.time() - 180
    os.utime(root / project / "runs" / run_id / "heartbeat", (old, old))
    return run_id


def catalog_rows(root: Path, project: str, sql: str) -> list[tuple]:
    path = root.joinpath(*project.split("/"), ".nuboard", "catalog.sqlite")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def listing(tmp_path_factory):
    """A root with 'llm' (two finished runs and a lost one) and the nested 'team/llm' (one)."""
    root = tmp_path_factory.mktemp("cli") / "experiments"
    base, big = make_runs(root, "llm", [
        {"run_name": "base-1", "tags": ["baseline", "small"], "group": "sweep",
         "config": {"lr": 1e-3, "model": {"width": 256}}},
        {"run_name": "big-2", "tags": ["big"], "config": {"lr": 1e-2, "model": {"width": 1024}}},
    ])
    lost = make_lost(root, "llm", "lost-3")
    (nested,) = make_runs(root, "team/llm", [{"run_name": "nested-1"}])
    return {"root": root, "base": base, "big": big, "lost": lost, "nested": nested}


# ---- ls ----

def test_ls_in_a_pipe_is_plain_aligned_text_newest_first_with_lost(listing):
    out = cli(listing["root"], "ls", "llm", env={"TZ": "Asia/Kolkata"})
    assert out.returncode == 0, out.stderr
    assert ANSI not in out.stdout
    lines = out.stdout.splitlines()
    assert lines[0].split() == list(formats.TABLE_HEADERS)
    assert [line.split()[2] for line in lines[1:]] == [listing["lost"], listing["big"],
                                                      listing["base"]]
    assert lines[1].split()[:2] == ["lost", "lost-3"]
    assert lines[3].split()[:2] == ["finished", "base-1"]
    assert "baseline,small" in lines[3] and "sweep" in lines[3]
    # START is local time: India is UTC+05:30, without daylight saving
    doc = json.loads((listing["root"] / "llm/runs" / listing["base"] / "run.json").read_text())
    start = dt.datetime.fromisoformat(doc["start_time"].replace("Z", "+00:00"))
    local = (start + dt.timedelta(hours=5, minutes=30)).strftime("%Y-%m-%d %H:%M")
    assert local in lines[3]
    # the columns line up: each header starts where its cells start
    at = lines[0].index("ID")
    assert all(line[at:at + len(listing["base"])] in (listing["base"], listing["big"],
                                                        listing["lost"]) for line in lines[1:])


def test_ls_json_gives_every_field_of_every_project(listing):
    out = run_cli(listing["root"], "ls", "--json")
    assert out.returncode == 0, out.stderr
    records = json.loads(out.stdout)
    assert [r["id"] for r in records][:1] == [listing["nested"]]      # the newest, nested project
    assert all(list(r) == [*formats.RUN_FIELDS, "media", "hidden"] for r in records)
    assert all(r["media"] == {} for r in records)                      # no run logged media
    by_id = {r["id"]: r for r in records}
    assert by_id[listing["nested"]]["project"] == "team/llm"
    base = by_id[listing["base"]]
    assert (base["project"], base["name"], base["status"], base["group"], base["tags"]) == \
        ("llm", "base-1", "finished", "sweep", ["baseline", "small"])
    assert base["start"].endswith("Z") and base["end"] and base["duration_s"] >= 0
    assert base["host"]
    assert by_id[listing["lost"]]["status"] == "lost"
    assert by_id[listing["lost"]]["end"] is None


def test_ls_csv_has_a_header_and_one_row_per_run(listing):
    out = run_cli(listing["root"], "ls", "llm", "--csv")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert out.stdout.splitlines()[0] == ",".join(formats.RUN_FIELDS)
    assert [r["id"] for r in rows] == [listing["lost"], listing["big"], listing["base"]]
    assert rows[2]["tags"] == "baseline;small" and rows[0]["status"] == "lost"


@pytest.mark.parametrize("query, expected", [
    ("tag:baseline", ["base"]),
    ("lr>=5e-3", ["big"]),
    ("status:lost", ["lost"]),
    ("-tag:big name:*-*", ["lost", "base"]),
])
def test_ls_query_filters(listing, query, expected):
    out = run_cli(listing["root"], "ls", "llm", "--query", query, "--json")
    assert out.returncode == 0, out.stderr
    assert [r["id"] for r in json.loads(out.stdout)] == [listing[k] for k in expected]


def test_ls_limit_keeps_the_newest(listing):
    out = run_cli(listing["root"], "ls", "--limit", "2", "--json")
    assert out.returncode == 0, out.stderr
    assert [r["id"] for r in json.loads(out.stdout)] == [listing["nested"], listing["lost"]]


def test_a_bad_query_is_a_usage_error_naming_the_column(listing):
    out = run_cli(listing["root"], "ls", "llm", "--query", "tag:")
    assert out.returncode == 2
    err = one_line_error(out)
    assert "expected a tag after 'tag:' at column 5" in err and "--query" in err


@pytest.mark.parametrize("query", ["name:\"x'; DROP TABLE runs; --\"",
                                   "\"' OR '1'='1\"",
                                   "tag:\"baseline' OR 1=1; DELETE FROM tags; --\""])
def test_sql_injection_through_ls_query_changes_nothing(listing, query):
    before = catalog_rows(listing["root"], "llm", "SELECT count(*) FROM runs")[0][0]
    out = run_cli(listing["root"], "ls", "llm", "--query", query, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
    assert catalog_rows(listing["root"], "llm", "SELECT count(*) FROM runs")[0][0] == before == 3
    assert catalog_rows(listing["root"], "llm", "SELECT count(*) FROM tags")[0][0] == 3


def test_a_missing_project_or_root_is_one_line_and_a_traceback_with_debug(listing, tmp_path):
    out = cli(listing["root"], "ls", "nope")
    assert out.returncode == 1
    err = one_line_error(out)
    assert "'nope' not found" in err and "llm, team/llm" in err
    out = cli(listing["root"], "ls", "--dir", str(tmp_path / "nowhere"))
    assert out.returncode == 1
    assert "NUBOARD_DIR" in one_line_error(out)
    out = cli(listing["root"], "--debug", "ls", "nope")
    assert out.returncode == 1
    assert "Traceback" in out.stderr and "ProjectNotFoundError" in out.stderr
    out = cli(listing["root"], "ls", "nope", "--debug")
    assert out.returncode == 1 and "Traceback" in out.stderr


@pytest.mark.parametrize("args", [("ls", "--json", "--csv"), ("ls", "--limit", "0"),
                                  ("rm",), ("sql",), ("ls", "--bogus")])
def test_usage_errors_exit_2_on_one_line(listing, args):
    out = cli(listing["root"], *args)
    assert out.returncode == 2, out
    assert f"nuboard {args[0]}" in one_line_error(out)


def test_every_command_has_help_with_an_example(listing):
    code = """
        import subprocess, sys
        for cmd in ([], ["ls"], ["rm"], ["sql"], ["reindex"]):
            out = subprocess.run([sys.executable, "-m", "nuboard.cli.main", *cmd, "--help"],
                                 capture_output=True, text=True)
            assert out.returncode == 0, out.stderr
            assert "Example" in out.stdout and "nuboard " in out.stdout, (cmd, out.stdout)
            if cmd:
                assert "--dir DIR" in out.stdout, (cmd, out.stdout)
        bare = subprocess.run([sys.executable, "-m", "nuboard.cli.main"], capture_output=True,
                              text=True)
        assert bare.returncode == 2 and "Commands:" in bare.stdout + bare.stderr, bare
        print("ok")
    """
    assert run_child(code).stdout.strip() == "ok"


# ---- sql ----

def test_sql_select_as_text_and_json(listing):
    root = listing["root"]
    out = run_cli(root, "sql", "SELECT name, status FROM runs ORDER BY name", "--project", "llm")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["name", "status"]
    assert [line.split() for line in lines[1:]] == [["base-1", "finished"], ["big-2", "finished"],
                                                    ["lost-3", "running"]]
    out = run_cli(root, "sql", "SELECT r.name, s.last FROM runs r JOIN scalars s ON s.run = r.id "
             "WHERE s.name = 'train/loss' ORDER BY r.name", "--project", "llm", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [{"name": "base-1", "last": 0.5}, {"name": "big-2", "last": 0.5}]


def test_sql_reads_the_pragma_tables(listing):
    root = listing["root"]
    out = run_cli(root, "sql", "SELECT name, type FROM pragma_table_info('runs')", "-p", "llm",
                  "--json")
    assert out.returncode == 0, out.stderr
    columns = catalog_rows(root, "llm", "SELECT name, type FROM pragma_table_info('runs')")
    assert [(c["name"], c["type"]) for c in json.loads(out.stdout)] == columns
    assert {"run_id", "name", "status"} <= {name for name, _ in columns}
    for statement in ("SELECT name FROM pragma_index_list('runs')",
                      "SELECT \"table\" FROM pragma_foreign_key_list('tags')",
                      "SELECT name FROM pragma_table_list WHERE name = 'runs'",
                      "SELECT * FROM pragma_journal_mode"):
        out = run_cli(root, "sql", statement, "-p", "llm", "--json")
        assert out.returncode == 0 and json.loads(out.stdout), (statement, out.stderr)


@pytest.mark.parametrize("statement, name", [
    ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer"),
    ("SELECT name FROM runs WHERE FTS3_Tokenizer('simple', x'00') IS NULL", "fts3_tokenizer"),
    ("SELECT load_extension('elsewhere')", "load_extension")])
def test_sql_refuses_the_functions_that_reach_past_sql(listing, statement, name):
    out = cli(listing["root"], "sql", statement, "--project", "llm")
    assert out.returncode == 1 and out.stdout == ""
    assert f"The SQL function {name}() is refused" in one_line_error(out)


@pytest.mark.parametrize("statement", ["DELETE FROM runs", "DROP TABLE tags",
                                       "PRAGMA query_only=0", "PRAGMA journal_mode=delete",
                                       "SELECT * FROM pragma_optimize(0xfffe)", "PRAGMA optimize",
                                       "PRAGMA wal_checkpoint(TRUNCATE)",
                                       "ATTACH DATABASE 'elsewhere.sqlite' AS x"])
def test_sql_cannot_write(listing, statement, tmp_path):
    root = listing["root"]
    before = catalog_rows(root, "llm", "SELECT * FROM runs ORDER BY id")
    out = subprocess.run([sys.executable, "-m", "nuboard.cli.main", "sql", statement,
                          "--project", "llm"], env=child_env(NUBOARD_DIR=str(root)), cwd=tmp_path,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "read-only" in one_line_error(out)
    assert catalog_rows(root, "llm", "SELECT * FROM runs ORDER BY id") == before
    assert catalog_rows(root, "llm", "SELECT count(*) FROM tags")[0][0] == 3
    assert not (tmp_path / "elsewhere.sqlite").exists()


def test_sql_needs_a_project_when_there_are_several(listing):
    out = run_cli(listing["root"], "sql", "SELECT 1")
    assert out.returncode == 1
    assert "--project" in one_line_error(out)


# ---- rm ----

def test_rm_asks_removes_and_refuses_unknown_ids(root):
    keep, gone = make_runs(root, "p", [{"run_name": "keep"}, {"run_name": "gone"}])
    runs = root / "p" / "runs"
    assert run_cli(root, "ls", "p").returncode == 0                      # index them
    out = run_cli(root, "rm", gone, "--project", "p")                    # stdin is not a terminal
    assert out.returncode == 1
    assert "--yes" in one_line_error(out)
    assert (runs / gone).is_dir()
    out = run_cli(root, "rm", gone, "no-such-run", "--yes")             # one unknown: nothing goes
    assert out.returncode == 1
    assert "'no-such-run' not found" in one_line_error(out)
    assert (runs / gone).is_dir()
    out = run_cli(root, "rm", "../p", "--yes")
    assert out.returncode == 1 and "safe folder name" in one_line_error(out)
    out = run_cli(root, "rm", gone, "--yes")
    assert out.returncode == 0, out.stderr
    assert f"Removed p/{gone}" in out.stdout
    assert not (runs / gone).exists() and (runs / keep).is_dir()
    assert sorted(os.listdir(runs)) == [keep]
    assert catalog_rows(root, "p", "SELECT run_id FROM runs") == [(keep,)]
    assert catalog_rows(root, "p", "SELECT count(*) FROM scalars") == [(1,)]    # rows cascade


def test_rm_keeps_a_live_run_unless_forced(root):
    child, run_id = start_running(root, "p", "alive")
    try:
        out = run_cli(root, "rm", run_id, "--yes")
        assert out.returncode == 1
        assert "still running" in one_line_error(out)
        assert (root / "p" / "runs" / run_id).is_dir()
        out = run_cli(root, "rm", run_id, "--yes", "--force")
        assert out.returncode == 0, out.stderr
        assert not (root / "p" / "runs" / run_id).exists()
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
        child.stderr.close()


def test_a_live_run_with_a_long_heartbeat_interval_is_never_lost_nor_removed(root):
    """heartbeat_interval=300: lost only after 3 intervals; while its process lives, rm keeps it."""
    from nuboard import run_status
    child = start_child(f"""
        import time, nuboard as nb
        run = nb.init("p", run_name="slow-beat", heartbeat_interval=300, {QUIET_ARGS})
        print(run.id, flush=True)
        time.sleep(600)
    """, NUBOARD_DIR=str(root))
    run_id = child.stdout.readline().strip()
    assert run_id, child.stderr.read()
    folder = root / "p" / "runs" / run_id
    try:
        assert json.loads((folder / "heartbeat").read_text())["interval"] == 300
        for age, status in ((200, "running"), (890, "running"), (1000, "lost")):
            old = time.time() - age
            os.utime(folder / "heartbeat", (old, old))
            assert run_status(folder) == status, age
            (listed,) = json.loads(run_cli(root, "ls", "p", "--json").stdout)   # the catalog agrees
            assert listed["status"] == status, age
            lost = json.loads(run_cli(root, "ls", "p", "--json", "--query", "status:lost").stdout)
            assert [r["id"] for r in lost] == ([run_id] if status == "lost" else []), age
            out = run_cli(root, "rm", run_id, "--yes")
            assert out.returncode == 1, out.stdout
            assert "still running" in one_line_error(out)
            assert folder.is_dir()
        assert f"pid {child.pid}) is alive on this host" in one_line_error(out)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
        child.stderr.close()
    out = run_cli(root, "rm", run_id, "--yes")              # its process is gone: lost, removable
    assert out.returncode == 0, out.stderr
    assert not folder.exists()


def test_a_heartbeat_from_another_host_or_a_dead_pid_does_not_keep_a_lost_run(root):
    run_id = make_lost(root, "p", "gone")
    beat_path = root / "p" / "runs" / run_id / "heartbeat"
    beat = json.loads(beat_path.read_text())
    beat.update(pid=os.getpid(), host="some-other-host")     # a live pid, but not on this host
    beat_path.write_text(json.dumps(beat))
    old = time.time() - 180
    os.utime(beat_path, (old, old))
    out = run_cli(root, "rm", run_id, "--yes")
    assert out.returncode == 0, out.stderr


def test_rm_of_a_referenced_run_names_the_unlink_commands_to_paste(root, tmp_path):
    (run_id,) = make_runs(root, "p", [{"run_name": "trainer"}])
    files = root / "p" / "runs" / run_id / "files"
    files.mkdir()
    (files / "best.pt").write_bytes(b"best")
    for name in ("best", "last"):
        add = run_cli(root, "artifact", "add", f"p/{name}", str(files / "best.pt"), "--ref", "--type",
                 "checkpoint", "--description", name)
        assert add.returncode == 0, add.stderr
    out = run_cli(root, "rm", run_id, "--yes")
    assert out.returncode == 1
    line = one_line_error(out)
    commands = line.split("Unlink those versions first (")[1].split("), or pass --force")[0]
    assert commands == "nuboard artifact unlink p/best:v1 && nuboard artifact unlink p/last:v1"
    bin_dir = tmp_path / "bin"                  # `nuboard` as the user's shell finds it
    bin_dir.mkdir()
    (bin_dir / "nuboard").write_text(f"#!/bin/sh\nexec {sys.executable} -m nuboard.cli.main \"$@\"\n")
    (bin_dir / "nuboard").chmod(0o755)
    env = child_env(NUBOARD_DIR=str(root))
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    pasted = subprocess.run(["bash", "-c", commands], env=env, capture_output=True, text=True,
                            timeout=120)
    assert pasted.returncode == 0, pasted.stderr
    out = run_cli(root, "rm", run_id, "--yes")
    assert out.returncode == 0, out.stderr


# ---- reindex ----

def make_damaged(root: Path, project: str) -> dict[str, Path]:
    """A half-written run folder (no run.json) and one whose run.json is not JSON."""
    runs = root / project / "runs"
    broken, half = runs / "20261201T0000-broken00", runs / "20261201T0000-half0000"
    broken.mkdir(parents=True)
    (broken / "run.json").write_text("{not json")
    half.mkdir()
    return {"broken": broken, "half": half}


def skip_lines(stderr: str, command: str) -> dict[str, str]:
    """{folder: reason} from the 'nuboard <command>: skipped run folder ...' lines of stderr."""
    out = {}
    for line in stderr.splitlines():
        assert line.startswith(f"nuboard {command}: skipped run folder '"), line
        folder, why = line.split("skipped run folder ", 1)[1].split(": ", 1)
        out[folder.strip("'")] = why
    return out


def test_reindex_prints_the_runs_indexed_and_one_line_per_skipped_run(root):
    (good,) = make_runs(root, "p", [{"run_name": "good"}])
    bad = make_damaged(root, "p")
    out = run_cli(root, "reindex")
    assert out.returncode == 0, out.stderr
    assert ANSI not in out.stdout + out.stderr
    assert out.stdout.splitlines() == ["p: 1 run indexed, 2 skipped"]
    skipped = skip_lines(out.stderr, "reindex")
    assert skipped.keys() == {str(bad["broken"]), str(bad["half"])}
    assert skipped[str(bad["broken"])].startswith("run.json is not readable JSON")
    assert skipped[str(bad["half"])].startswith("no run.json")
    assert catalog_rows(root, "p", "SELECT run_id FROM runs") == [(good,)]


def test_reindex_of_an_indexed_project_counts_every_run_it_indexed_again(root):
    make_runs(root, "p", [{"run_name": f"r{i}"} for i in range(3)])
    assert run_cli(root, "ls", "p").returncode == 0                      # the catalog knows them
    out = run_cli(root, "reindex", "p")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["p: 3 runs indexed, 0 skipped"]     # not "0 runs added"


@pytest.mark.parametrize("fmt", [[], ["--json"], ["--csv"]])
def test_ls_lists_the_good_runs_and_reports_each_damaged_one_on_stderr(root, fmt):
    (good,) = make_runs(root, "p", [{"run_name": "good"}])
    bad = make_damaged(root, "p")
    for args in (["ls", "p", *fmt], ["ls", *fmt]):              # twice: each ls reports them
        for _ in range(2):
            out = run_cli(root, *args)
            assert out.returncode == 0, out.stderr
            assert good in out.stdout and "broken00" not in out.stdout
            if fmt == ["--json"]:
                assert [r["id"] for r in json.loads(out.stdout)] == [good]
            skipped = skip_lines(out.stderr, "ls")
            assert skipped.keys() == {str(bad["broken"]), str(bad["half"])}


# ---- in a real terminal ----

def test_ls_on_a_terminal_is_a_rich_table(listing):
    rc, screen = in_terminal(listing["root"], "ls", "llm")
    assert rc == 0, screen
    assert ANSI in screen                                           # coloured
    assert "│" in screen or "┃" in screen                           # a drawn table
    lost_line = next(line for line in screen.splitlines() if listing["lost"] in line)
    assert "lost" in lost_line and "lost-3" in lost_line


def test_rm_on_a_terminal_asks_first(root):
    (run_id,) = make_runs(root, "p", [{"run_name": "doomed"}])
    folder = root / "p" / "runs" / run_id
    rc, screen = in_terminal(root, "rm", run_id, answer=("[y/N]", "n\r"))
    assert rc == 1 and "Nothing was removed" in screen and folder.is_dir()
    rc, screen = in_terminal(root, "rm", run_id, answer=("[y/N]", "y\r"))
    assert rc == 0, screen
    assert f"p/{run_id}" in screen and f"Removed p/{run_id}" in screen
    assert not folder.exists()


def test_reindex_on_a_terminal_shows_a_bar_then_the_summary(root):
    make_runs(root, "p", [{"run_name": f"r{i}"} for i in range(3)])
    rc, screen = in_terminal(root, "reindex", "p")
    assert rc == 0, screen
    assert "━" in screen                                            # the bar was drawn
    assert "p: 3 runs indexed, 0 skipped" in screen


# ---- the formatters alone ----

def test_formatters():
    assert [formats.format_duration(s) for s in (None, -1, 0, 42.9, 185, 3720, 90000)] == \
        ["-", "-", "0s", "42s", "3m 05s", "1h 02m", "1d 01h"]
    tz = dt.timezone(dt.timedelta(hours=2))
    assert formats.format_local_time("2026-12-02T16:53:45.786Z", tz) == "2026-12-02 18:53"
    assert formats.format_local_time(None) == "-"
    assert formats.display_status("running", 1000.0, now=1000.0 + 121) == "lost"
    assert formats.display_status("running", 1000.0, now=1000.0 + 60) == "running"
    assert formats.display_status("finished", 0.0, now=1e9) == "finished"
    row = {"run_id": "r1", "name": "n", "status": "running", "group_name": None, "created":
           "2026-12-02T16:00:00Z", "ended": None, "duration_s": None, "host": "h",
           "heartbeat_mtime": None, "notes": "a\nb"}
    now = dt.datetime(2026, 12, 2, 17, 2, tzinfo=dt.timezone.utc).timestamp()
    record = formats.run_record(row, ["t"], "llm", now)
    assert record["duration_s"] == 3720 and record["status"] == "running"
    assert formats.run_cells(record, tz)[4:] == ["t", "2026-12-02 18:00", "1h 02m", "h"]
    assert formats.plain_table(["A", "BB"], [["xyz", "1"], ["", "22"]]) == "A    BB\nxyz  1\n     22"
    assert formats.as_csv(["a", "b"], [[["x", "y"], None]]) == "a,b\nx;y,\n"
