"""Media through run.log and back (issue 32, items 1 to 3): what each accepted input becomes on
disk, read back with nb.read_media and decoded by independent readers (Pillow, wave, pyarrow);
bad input refused with nothing logged changed; resume, fork, `nuboard events dump`; and kill -9
at random moments while logging never leaves a record without its whole file, nor loses an
entry or a point flushed."""
from __future__ import annotations

import io
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import wave
from pathlib import Path

import numpy as np
import pytest
from helpers import QUIET, child_env, cli

import nuboard as nb
from nuboard.eventlog.reader import RunReader

PIL = pytest.importorskip("PIL.Image")


def pixels(path) -> np.ndarray:
    with PIL.open(path) as im:
        return np.asarray(im)


def rgb(h=6, w=5, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def png_bytes(arr: np.ndarray, fmt="PNG") -> bytes:
    out = io.BytesIO()
    PIL.fromarray(arr).save(out, format=fmt)
    return out.getvalue()


def test_every_image_input_round_trips_through_run_log(tmp_path):
    torch = pytest.importorskip("torch")
    base = rgb()
    on_disk = tmp_path / "given.png"
    on_disk.write_bytes(png_bytes(base))
    jpeg = png_bytes(base, "JPEG")
    cases = {
        "hw": (base[..., 0], base[..., 0]),
        "hwc1": (base[..., :1], base[..., 0]),
        "hwc3": (base, base),
        "rgba": (np.dstack([base, base[..., :1]]), np.dstack([base, base[..., :1]])),
        "chw": (np.ascontiguousarray(base.transpose(2, 0, 1)), base),
        "floats": (base / 255.0, base),
        "torch_chw": (torch.from_numpy(base.transpose(2, 0, 1).copy()), base),
        "torch_hwc_float": (torch.from_numpy(base / 255.0), base),
        "pil": (PIL.fromarray(base), base),
        "png_bytes": (png_bytes(base), base),
        "path": (str(on_disk), base),
    }
    with nb.init("media", dir=tmp_path, **QUIET) as run:
        run.log({f"img/{name}": nb.Image(data, caption=name) for name, (data, _) in cases.items()}, step=3)
        run.log({"img/jpeg": nb.Image(jpeg)}, step=3)
        run.add_image("img/tb_default_chw", base.transpose(2, 0, 1), global_step=4)
    entries = {e.key: e for e in nb.read_media(run.path)}
    for name, (_, want) in cases.items():
        e = entries[f"img/{name}"]
        assert (e.step, e.kind, e.caption, e.width, e.height) == (3, "image", name, 5, 6)
        assert e.path.is_absolute() and e.path.is_relative_to(run.folder / "media")
        assert np.array_equal(pixels(e.path), want), name
    assert entries["img/jpeg"].path.read_bytes() == jpeg          # kept as given, never re-encoded
    assert entries["img/jpeg"].path.suffix == ".jpg"
    assert np.array_equal(pixels(entries["img/tb_default_chw"].path), base)


def test_histogram_text_table_and_audio_round_trip(tmp_path):
    values = np.random.default_rng(1).normal(size=10_000)
    long_text = "é" * 40_000                      # 80 KB of UTF-8: a file of its own
    samples = (np.sin(np.arange(4000) / 10) * 0.5).astype(np.float32)
    with nb.init("media", dir=tmp_path, **QUIET) as run:
        run.log({"loss": 1.0, "dist": nb.Histogram(values, bins=32), "note": "a plain str is text",
                 "story": nb.Text(long_text)}, step=0)
        run.log({"given": nb.Histogram(counts=[1, 2, 3], edges=[0, 1, 2, 4])}, step=1)
        run.log({"answers": nb.Table(columns=["q", "score", "pic", "any"],
                                     data=[["2+2", 1.0, nb.Image(rgb(2, 2)), 1],
                                           ["1+1", float("nan"), None, "x"]])}, step=2)
        run.add_media("voice", nb.Audio(samples, 8000, caption="beep"), step=2)
        run.add_histogram("tb/weights", values, global_step=5, bins=16)
        run.add_text("tb/text", "hello", global_step=5)
    got = {e.key: e for e in nb.read_media(run.path)}
    counts, edges = np.histogram(values, bins=32)
    assert got["dist"].value["counts"] == counts.tolist()
    assert np.allclose(got["dist"].value["edges"], edges)
    assert got["dist"].value["count"] == 10_000 and got["dist"].path is None
    assert got["given"].value["counts"] == [1, 2, 3] and got["given"].value["edges"] == [0, 1, 2, 4]
    assert got["tb/weights"].value["count"] == 10_000 and len(got["tb/weights"].value["counts"]) == 16
    assert got["note"].value == "a plain str is text" and got["note"].path is None
    assert got["story"].value == long_text and got["story"].path.suffix == ".txt"
    assert got["tb/text"].value == "hello" and got["tb/text"].step == 5
    table = got["answers"].value
    assert table["columns"] == ["q", "score", "pic", "any"]
    assert table["rows"][0][:2] == ["2+2", 1.0] and np.isnan(table["rows"][1][1])
    assert np.array_equal(pixels(table["rows"][0][2]), rgb(2, 2)) and table["rows"][1][2] is None
    assert [table["rows"][0][3], table["rows"][1][3]] == [1, "x"]
    with wave.open(str(got["voice"].path)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getnframes()) == (8000, 1, 4000)
        read = np.frombuffer(wav.readframes(4000), dtype="<i2")
    assert np.abs(read / 32767 - samples).max() < 1e-4
    assert (got["voice"].sample_rate, got["voice"].caption) == (8000, "beep")
    assert nb.read_scalars(run.path)["loss"].values.tolist() == [1.0]


def test_bad_input_is_one_error_and_changes_nothing(tmp_path):
    with nb.init("media", dir=tmp_path, **QUIET) as run:
        run.log({"loss": 0.5, "pic": nb.Image(rgb())}, step=0)
        with pytest.raises(ValueError, match="5 axes"):
            nb.Image(np.zeros((2, 3, 4, 5, 6), np.uint8))
        with pytest.raises(ValueError, match="surrogate"):
            run.log({"loss": 0.7, "note": "bad \udc80 text"}, step=1)
        with pytest.raises(ValueError, match="'loss' is a scalar of this run"):
            run.log({"loss": "text now"}, step=1)
        with pytest.raises(ValueError, match="'pic' is a media key"):
            run.add_scalar("pic", 1.0)
        with pytest.raises(TypeError, match="not a media object"):
            run.add_media("other", 3.5)
        with pytest.raises(TypeError, match="add_text"):
            run.add_scalar("note", "text")
        with pytest.raises(ValueError, match="starts with 'system'"):
            run.log({"system/pic": nb.Image(rgb())})
    assert nb.read_scalars(run.path)["loss"].values.tolist() == [0.5]
    assert [(e.key, e.step) for e in nb.read_media(run.path)] == [("pic", 0)]
    with pytest.raises(nb.RunFinishedError):
        run.log({"pic": nb.Image(rgb())})


def test_resume_hides_a_keys_entries_from_the_first_step_logged_again(tmp_path):
    with nb.init("media", dir=tmp_path, run_name="r", **QUIET) as run:
        for step in range(6):
            run.log({"pic": nb.Image(rgb(seed=step)), "note": f"first {step}"}, step=step)
    with nb.init("media", dir=tmp_path, run_id=run.id, resume="must", **QUIET) as again:
        again.log({"pic": nb.Image(rgb(seed=40))}, step=3)      # from step 3 on, the new session's
        again.log({"note": "next"})                              # step None: after the last (5)
    got = [(e.key, e.step, e.session) for e in nb.read_media(run.path)]
    assert [g for g in got if g[0] == "pic"] == [("pic", 0, 0), ("pic", 1, 0), ("pic", 2, 0), ("pic", 3, 1)]
    assert [g for g in got if g[0] == "note"][-2:] == [("note", 5, 0), ("note", 6, 1)]
    pic3 = [e for e in nb.read_media(run.path, keys="pic") if e.step == 3][0]
    assert np.array_equal(pixels(pic3.path), rgb(seed=40))


def test_fork_copies_entries_up_to_the_fork_step_with_hard_links(tmp_path):
    with nb.init("media", dir=tmp_path, run_name="parent", **QUIET) as parent:
        for step in range(5):
            parent.log({"pic": nb.Image(rgb(seed=step)), "h": nb.Histogram([step, step + 1])}, step=step)
        parent.log({"tab": nb.Table(columns=["p"], data=[[nb.Image(rgb(2, 2))]])}, step=1)
    with nb.init("media", dir=tmp_path, run_name="child", fork_from=(parent.id, 2), **QUIET) as child:
        child.log({"pic": nb.Image(rgb(seed=99))}, step=3)
    got = nb.read_media(child.path)
    assert [(e.key, e.step) for e in got] == [("h", 0), ("h", 1), ("h", 2), ("pic", 0), ("pic", 1),
                                              ("pic", 2), ("pic", 3), ("tab", 1)]
    for e in got:
        assert e.path is None or e.path.is_relative_to(child.folder)
    mine = {e.step: e.path for e in got if e.key == "pic"}
    theirs = {e.step: e.path for e in nb.read_media(parent.path, keys=["pic"])}
    assert os.stat(mine[1]).st_ino == os.stat(theirs[1]).st_ino        # a hard link, not a copy
    assert np.array_equal(pixels(mine[3]), rgb(seed=99))
    cell = [e for e in got if e.key == "tab"][0].value["rows"][0][0]
    assert cell.startswith(str(child.folder)) and np.array_equal(pixels(cell), rgb(2, 2))


def test_events_dump_shows_media_records(tmp_path):
    with nb.init("media", dir=tmp_path, **QUIET) as run:
        run.log({"pic": nb.Image(rgb(), caption="a cat"), "h": nb.Histogram(range(100), bins=10)}, step=7)
    out = cli(tmp_path, "events", "dump", str(run.folder / "events.r0.s0.log"))
    lines = [line for line in out.stdout.splitlines() if line.startswith("media ")]
    assert lines[0].startswith("media 'pic' step=7 image") and '"caption": "a cat"' in lines[0]
    assert '"file": "media/pic/7-0.png"' in lines[0]
    assert lines[1].startswith("media 'h' step=7 histogram") and '"count": 100' in lines[1]


def test_flush_waits_for_queued_media(tmp_path):
    run = nb.init("media", dir=tmp_path, **QUIET)
    for step in range(40):
        run.log({"pic": nb.Image(rgb(64, 64, seed=step))}, step=step)
    run.flush()
    reader = RunReader(run.folder)
    reader.refresh()
    assert len(reader.media()) == 40            # named in the log, before finish
    run.finish()


CHILD = """
import sys, numpy as np, nuboard as nb
run = nb.init("kill", run_name="k", {quiet}, flush_interval=0.01)
print(run.folder, flush=True)
rng = np.random.default_rng({seed})
for step in range(100000):
    run.log({{"loss": float(step), "pic": nb.Image(rng.integers(0, 256, (96, 96, 3), dtype=np.uint8)),
             "h": nb.Histogram(rng.normal(size=5000))}}, step=step)
    if step % 5 == 4:
        run.flush()
        print("flushed", step, flush=True)
"""


def test_kill_9_never_leaves_a_record_without_its_file_nor_loses_what_was_flushed(tmp_path):
    """24 children, 8 at a time, each killed at a random moment while logging images,
    histograms and scalars (flushing every 5 steps and saying so)."""
    from helpers import QUIET_ARGS
    rng = random.Random(32)
    for batch in range(3):
        procs = []
        for i in range(8):
            root = tmp_path / f"{batch}-{i}"
            code = textwrap.dedent(CHILD).format(quiet=QUIET_ARGS, seed=batch * 8 + i)
            procs.append(subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                                          env=child_env(NUBOARD_DIR=str(root))))
        folders = [p.stdout.readline().strip() for p in procs]
        started = time.monotonic()
        for at, proc in sorted(zip((rng.uniform(0.02, 0.5) for _ in procs), procs), key=lambda x: x[0]):
            time.sleep(max(0.0, started + at - time.monotonic()))
            os.kill(proc.pid, signal.SIGKILL)
        for folder, proc in zip(folders, procs):
            out, _ = proc.communicate()
            _check_killed_run(folder, out)


def _check_killed_run(folder: str, out: str) -> None:
    flushed = max([int(line.split()[1]) for line in out.splitlines() if line.startswith("flushed")],
                  default=-1)
    entries = nb.read_media(folder)
    for e in entries:
        if e.kind == "image":
            with PIL.open(e.path) as im:
                im.load()                        # a whole PNG: a cut one fails to decode
            assert im.size == (96, 96)
    for key in ("pic", "h"):
        got = sorted(e.step for e in entries if e.key == key)
        assert got[:flushed + 1] == list(range(flushed + 1)), (folder, key, flushed)
    loss = nb.read_scalars(folder)["loss"].steps.tolist() if flushed >= 0 else []
    assert loss[:flushed + 1] == list(range(flushed + 1))
    recorded = {str(e.path) for e in entries if e.path is not None}
    on_disk = {str(p) for p in Path(folder).rglob("*.png") if not p.name.startswith(".tmp-")}
    assert len(on_disk - recorded) <= 1          # at most the one file whose record was cut off


def test_a_records_file_name_never_leaves_the_media_folder(tmp_path):
    """A hand-made record naming '../run.json' is skipped as bad, never read as a file."""
    from nuboard.eventlog import logfile
    with nb.init("media", dir=tmp_path, **QUIET) as run:
        run.log({"pic": nb.Image(rgb())}, step=0)
    log = run.folder / "events.r0.s0.log"
    reader = logfile.LogReader(log)
    reader.read()
    bad = {"key": "evil", "step": 1, "wall": 1.0, "kind": "image", "file": "media/../run.json"}
    with open(log, "ab") as fh:
        fh.write(logfile.media_record(bad, reader.salt))
    assert [e.key for e in nb.read_media(run.path)] == ["pic"]
    again = logfile.LogReader(log)
    again.read()
    assert again.stats.bad_records == 1


def _media_payloads():
    from hypothesis import strategies as st

    from nuboard.eventlog import logfile
    good = [logfile.media_record(doc)[12:-4] for doc in (
        {"key": "h", "step": 3, "wall": 1.5, "kind": "histogram", "counts": [1, 2], "edges": [0, 1, 2]},
        {"key": "p", "step": 0, "wall": 2.0, "kind": "image", "file": "media/p/0-0.png", "width": 2},
        {"key": "t", "step": 1, "wall": 3.0, "kind": "text", "text": "hi"})]
    flips = st.tuples(st.sampled_from(good), st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)),
                                                      max_size=4))
    return st.one_of(flips.map(lambda g: bytes(_flipped(*g))), st.binary(max_size=300).map(lambda b: b"\x04" + b))


def _flipped(payload: bytes, changes: list) -> bytearray:
    out = bytearray(payload)
    for at, value in changes:
        out[at % len(out)] = value
    return out


def test_any_media_payload_is_an_entry_that_checks_out_or_a_bad_record(tmp_path):
    """A MEDIA frame whose payload is anything (well framed, so the CRCs pass): the reader
    never raises, and an entry it keeps has a known kind, an int step and a file under media/."""
    from hypothesis import given, settings

    from nuboard.eventlog import logfile

    @settings(max_examples=4 * settings.default.max_examples)
    @given(payload=_media_payloads())
    def check(payload):
        log = tmp_path / "events.r0.s0.log"
        log.write_bytes(logfile.FILE_HEADER + logfile.frame(payload))
        reader = logfile.LogReader(log)
        reader.read()
        assert reader.stats.records == 1 and len(reader.media) + reader.stats.bad_records == 1
        for doc in reader.media:
            assert doc["kind"] in logfile.MEDIA_KINDS and type(doc["step"]) is int
            assert "file" not in doc or (doc["file"].startswith("media/") and ".." not in doc["file"].split("/"))
            if doc["kind"] == "histogram":
                assert len(doc["edges"]) in (0, len(doc["counts"]) + 1)
            assert doc["kind"] not in ("image", "table", "audio") or isinstance(doc["file"], str)

    check()


def test_a_full_media_queue_makes_run_log_wait_and_loses_nothing(tmp_path):
    """While the media thread cannot append (the log's writer lock is held, as by a long
    write to a slow disk), run.log queues MAX_ENTRIES entries and then waits; once the writer
    goes on, every entry is stored."""
    import threading

    from nuboard.recording.media_queue import MAX_ENTRIES
    run = nb.init("media", dir=tmp_path, **QUIET)
    pic = rgb(8, 8)
    done = []

    def log_many():
        for step in range(MAX_ENTRIES + 20):
            run.log({"pic": nb.Image(pic)}, step=step)
            done.append(step)

    with run._writer._lock:
        worker = threading.Thread(target=log_many, daemon=True)
        worker.start()
        deadline = time.monotonic() + 20
        while len(done) < MAX_ENTRIES - 1 and time.monotonic() < deadline:
            worker.join(0.01)
        worker.join(0.3)                        # room for one more call, were there any
        assert worker.is_alive()                # run.log waits for room
        assert MAX_ENTRIES - 1 <= len(done) <= MAX_ENTRIES
    worker.join(20)
    assert not worker.is_alive() and len(done) == MAX_ENTRIES + 20
    run.finish()
    assert [e.step for e in nb.read_media(run.path)] == list(range(MAX_ENTRIES + 20))


def test_a_full_disk_drops_and_counts_media_and_training_goes_on(tmp_path):
    """On a 512 KiB disk, images that do not fit are dropped and counted (one warning); the
    loop goes on, and every entry named in the log has its whole file."""
    import warnings

    from helpers import small_tmpfs
    with small_tmpfs(tmp_path / "tiny", "512k") as disk:
        noise = np.random.default_rng(3)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            run = nb.init("p", dir=disk, **QUIET)
            for step in range(60):                       # ~12 KB a PNG of noise: 720 KB in all
                run.log({"loss": float(step), "pic": nb.Image(noise.integers(0, 256, (64, 64, 3), np.uint8))},
                        step=step)
            run.finish()
        media_warnings = [w for w in seen if "media are being dropped" in str(w.message)]
        assert len(media_warnings) == 1, [str(w.message) for w in seen]
        assert run.dropped_media > 0
        entries = nb.read_media(run.path)
        assert 0 < len(entries) == 60 - run.dropped_media
        for e in entries:
            with PIL.open(e.path) as im:
                im.load()


FORKING = """
import os, json, numpy as np, nuboard as nb
run = nb.init("fork", run_name="f", {quiet})
for step in range(30):                                   # queued: the media thread is busy
    run.log({{"pic": nb.Image(np.full((128, 128, 3), step, np.uint8))}}, step=step)
pid = os.fork()
if pid == 0:
    run.log({{"pic": nb.Image(np.zeros((4, 4), np.uint8)), "child/note": "from the child"}}, step=99)
    run.flush()
    run.finish()
    os._exit(0)
_, status = os.waitpid(pid, 0)
run.log({{"pic": nb.Image(np.full((8, 8), 7, np.uint8))}}, step=30)
run.finish()
print(json.dumps({{"path": str(run.folder), "child": os.waitstatus_to_exitcode(status)}}))
"""


def test_a_forked_child_never_writes_the_parents_media(tmp_path):
    import json as json_module

    from helpers import QUIET_ARGS, run_child
    done = run_child(FORKING.format(quiet=QUIET_ARGS), NUBOARD_DIR=str(tmp_path))
    out = json_module.loads(done.stdout.strip().splitlines()[-1])
    assert out["child"] == 0
    entries = nb.read_media(out["path"])
    assert [(e.key, e.step) for e in entries] == [("pic", s) for s in range(31)]
    assert len(list(Path(out["path"]).rglob("*.png"))) == 31            # no file of the child's
