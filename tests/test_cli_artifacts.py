"""`nuboard artifact add | ls | show | unlink | restore`, and `rm` keeping referenced runs, for real.

The CLI runs in this process with click's CliRunner (helpers.run_cli) where what it says and
writes is the point, as a child process with pipes where the process is, and on a real pty
where a terminal matters.
"""
from __future__ import annotations

import json
from pathlib import Path

from helpers import cli, make_runs, make_tree, one_line_error, run_cli
from helpers_terminal import dialog


def listing_of(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def test_add_with_flags_as_the_spec_writes_it(root, tmp_path):
    data = make_tree(tmp_path / "home" / "data" / "fineweb-edu" / "2026-10",
                     {"train/shard-000.bin": b"x" * 1000, "train/shard-001.bin": b"y" * 204})
    out = run_cli(root, "artifact", "add", "datasets/fineweb-edu", "~/data/fineweb-edu/2026-10", "--ref",
             "--type", "dataset", "--description", "FineWeb-Edu, Oct 2026 snapshot, deduplicated",
             "--meta", "tokens=12B", "--meta", "dedup=true", "--meta", "rows=1200000",
             env={"HOME": str(tmp_path / "home")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "Added datasets/fineweb-edu:v1 (reference, 2 files, 1.2 kB)",
        'Use it with: run.use_artifact("datasets/fineweb-edu:v1")']
    doc = json.loads((root / "datasets/artifacts/fineweb-edu/v1/manifest.json").read_text())
    assert doc["metadata"] == {"tokens": "12B", "dedup": True, "rows": 1200000}
    assert doc["location"] == str(data) and doc["storage"] == "reference"
    assert doc["description"] == "FineWeb-Edu, Oct 2026 snapshot, deduplicated"
    # indexed at once: power users see it in SQL
    sql = run_cli(root, "sql", "SELECT files, storage FROM versions", "-p", "datasets", "--json")
    assert json.loads(sql.stdout) == [{"files": 2, "storage": "reference"}]


def test_every_bad_flag_is_reported_at_once_and_nothing_written(root, tmp_path):
    make_tree(tmp_path / "d", {"a": b"1"})
    before = listing_of(root)
    out = run_cli(root, "artifact", "add", "fineweb-edu", str(tmp_path / "nope"), "--type", "datset",
             "--meta", "n:int=abc")
    assert out.returncode == 1
    line = one_line_error(out)
    for part in ("give the project too", "does not exist", "--ref or --copy", "'datset'",
                 "--description", "'abc'"):
        assert part in line, (part, line)
    assert listing_of(root) == before
    out = run_cli(root, "artifact", "add", "datasets/d", str(tmp_path / "d"), "--copy", "--no-input")
    assert out.returncode == 1 and "--type" in one_line_error(out)


def test_dry_run_and_meta_file(root, tmp_path):
    src = make_tree(tmp_path / "ckpt", {"best.pt": b"w" * 10})
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"step": 25000, "score": 0.5, "note": "x"}))
    args = ["artifact", "add", "llm/model", str(src), "--copy", "--type", "checkpoint",
            "--description", "final", "--meta-file", str(meta), "--meta", "note=y"]
    out = run_cli(root, *args, "--dry-run")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("Would add llm/model:v1 (copy, 1 file, 10 B); nothing was written "
                                  "(--dry-run).")
    assert not (root / "llm").exists()
    assert run_cli(root, *args).returncode == 0
    doc = json.loads((root / "llm/artifacts/model/v1/manifest.json").read_text())
    assert doc["metadata"] == {"step": 25000, "score": 0.5, "note": "y"}
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    out = run_cli(root, *args[:-2], "--meta-file", str(bad))
    assert out.returncode == 1 and "not an object" in one_line_error(out)


def test_ls_show_unlink_restore(root, tmp_path):
    data = make_tree(tmp_path / "d", {"a.bin": b"aa", "b.bin": b"bbb"})
    for _ in range(2):
        assert run_cli(root, "artifact", "add", "datasets/d", str(data), "--ref", "--type", "dataset",
                  "--description", "d").returncode == 0
    out = run_cli(root, "artifact", "ls")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["ARTIFACT", "VERSION", "TYPE", "STORE", "FILES", "SIZE", "CREATED",
                                "PRODUCER"]
    assert [line.split()[:2] for line in lines[1:]] == [["datasets/d", "v2"], ["datasets/d", "v1"]]
    assert "outside a run" in lines[1]
    records = json.loads(run_cli(root, "artifact", "ls", "datasets", "--json").stdout)
    assert [(r["spec"], r["files"], r["bytes"]) for r in records] == \
        [("datasets/d:v2", 2, 5), ("datasets/d:v1", 2, 5)]

    show = run_cli(root, "artifact", "show", "datasets/d:v1")
    assert show.returncode == 0, show.stderr
    assert "Logged outside a run" in show.stdout and "all 2 files there and unchanged" in show.stdout
    (data / "b.bin").unlink()
    show = run_cli(root, "artifact", "show", "datasets/d:v1")
    assert show.returncode == 1
    assert "1 of 2 files missing or changed" in show.stdout and "b.bin: not found" in show.stdout

    out = run_cli(root, "artifact", "unlink", "datasets/d:v2")
    assert out.returncode == 0, out.stderr
    assert "Unlinked datasets/d:v2" in out.stdout
    assert [r["spec"] for r in json.loads(run_cli(root, "artifact", "ls", "--json").stdout)] == ["datasets/d:v1"]
    unlinked = run_cli(root, "artifact", "ls", "--unlinked")
    assert "v2 (unlinked)" in unlinked.stdout
    again = run_cli(root, "artifact", "unlink", "datasets/d:v2")
    assert again.returncode == 1 and "already unlinked" in one_line_error(again)
    assert run_cli(root, "artifact", "restore", "datasets/d:v2").returncode == 0
    out = run_cli(root, "artifact", "unlink", "datasets/d", "--all")
    assert out.returncode == 0 and out.stdout.count("Unlinked") == 2
    assert json.loads(run_cli(root, "artifact", "ls", "--json").stdout) == []
    bare = run_cli(root, "artifact", "unlink", "d:v1")
    assert bare.returncode == 1 and "names no project" in one_line_error(bare)
    no_version = run_cli(root, "artifact", "restore", "datasets/d")
    assert no_version.returncode == 1 and "names no version" in one_line_error(no_version)
    # a new version after unlinking everything still gets a new number
    assert "datasets/d:v3" in run_cli(root, "artifact", "add", "datasets/d", str(tmp_path / "d"), "--ref",
                                 "--type", "dataset", "--description", "d").stdout


def test_rm_keeps_a_run_that_a_version_references_unless_forced(root, tmp_path):
    (run_id,) = make_runs(root, "llm", [{"run_name": "trainer"}])
    files = make_tree(root / "llm" / "runs" / run_id / "files", {"best.pt": b"best"})
    out = run_cli(root, "artifact", "add", "llm/best", str(files / "best.pt"), "--ref", "--type",
             "checkpoint", "--description", "best")
    assert out.returncode == 0, out.stderr
    doc = json.loads((root / "llm/artifacts/best/v1/manifest.json").read_text())
    assert doc["location"] == f"runs/{run_id}/files/best.pt"
    assert doc["producer"] == {"project": "llm", "run_id": run_id}
    out = run_cli(root, "rm", run_id, "--yes")
    assert out.returncode == 1
    assert "llm/best:v1" in one_line_error(out)
    assert (root / "llm" / "runs" / run_id).is_dir()
    assert run_cli(root, "artifact", "unlink", "llm/best:v1").returncode == 0
    out = run_cli(root, "rm", run_id, "--yes")              # an unlinked version does not keep it
    assert out.returncode == 0, out.stderr
    assert not (root / "llm" / "runs" / run_id).exists()


def test_rm_force_removes_a_referenced_run_and_the_version_reports_it_missing(root, tmp_path):
    (run_id,) = make_runs(root, "llm", [{"run_name": "trainer"}])
    files = make_tree(root / "llm" / "runs" / run_id / "files", {"best.pt": b"best"})
    assert run_cli(root, "artifact", "add", "llm/best", str(files), "--ref", "--type", "checkpoint",
              "--description", "best").returncode == 0
    assert run_cli(root, "rm", run_id, "--yes", "--force").returncode == 0
    show = run_cli(root, "artifact", "show", "llm/best:v1")
    assert show.returncode == 1 and "best.pt: not found" in show.stdout


def test_the_run_file_example_in_a_terminal_asks_for_the_rest(root, tmp_path):
    """The spec's `artifact add llm-pretrain/best <run file> --copy`, in a real terminal."""
    (run_id,) = make_runs(root, "llm-pretrain", [{"run_name": "trainer"}])
    make_tree(root / "llm-pretrain" / "runs" / run_id / "files", {"best.safetensors": b"w" * 3})
    code, out = dialog(root.parent, [
        "artifact", "add", "llm-pretrain/best",
        f"experiments/llm-pretrain/runs/{run_id}/files/best.safetensors", "--copy", "--dir",
        str(root)], [("Type", "checkpoint\r"), ("Description", "best so far\r"),
                     ("metadata>", "\r"), ("Write it?", "y\r")], cwd=root.parent)
    assert code == 0, out
    assert "Added llm-pretrain/best:v1 (copy, 1 file, 3 B)" in out
    doc = json.loads((root / "llm-pretrain/artifacts/best/v1/manifest.json").read_text())
    assert doc["producer"] == {"project": "llm-pretrain", "run_id": run_id}
    assert doc["source"] == {"path": f"experiments/llm-pretrain/runs/{run_id}/files/best.safetensors",
                             "run_id": run_id}
    assert (root / "llm-pretrain/artifacts/best/v1/files/best.safetensors").read_bytes() == b"www"


def test_quitting_the_terminal_wizard_writes_nothing(root, tmp_path):
    src = make_tree(tmp_path / "d", {"a": b"1"})
    before = listing_of(root)
    code, out = dialog(root, ["artifact", "add", "datasets/d", str(src), "--ref", "--type", "dataset"],
                       [("Description", "d\r"), ("Hash every file", "\r"), ("metadata>", "\r"),
                        ("Write it?", "q\r")])
    assert code == 1 and "Nothing was written." in out
    assert listing_of(root) == before


def test_hashing_shows_a_progress_bar_on_a_terminal_only(root, tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    with open(big / "zeros.bin", "wb") as fh:          # sparse: a second of hashing, no disk
        fh.truncate(1 << 30)
    args = ["artifact", "add", "datasets/big", str(big), "--ref", "--checksum", "--type", "dataset",
            "--description", "zeros"]
    code, out = dialog(root, args, [], timeout=120)
    assert code == 0, out
    assert "Hashing" in out and "Added datasets/big:v1 (reference, 1 file, 1.07 GB)" in out
    piped = cli(root, *args, timeout=120)
    assert piped.returncode == 0 and "Hashing" not in piped.stdout + piped.stderr
