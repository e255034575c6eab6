"""Labs' file systems (reliability.md row 21): where flock fails (NFS without lockd, Lustre
without -o flock) and where link(2) is refused (s3fs, gcsfuse, exFAT, some SMB), runs start,
log, finish and index, with one warning naming the file system, never a raw OSError and never
a run folder without its run.json.

The faults are injected in a child process through a sitecustomize that makes fcntl.flock or
os.link fail (from the start, or once a flag file exists), and on a real FUSE mount that
refuses both (a passthrough file system written here on mfusepy and libfuse 3).
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import QUIET_ARGS, REPO, child_env, cli

# Loaded by the child before anything else: fcntl.flock and os.link fail with the errno named
# in the environment, from the start or, with NB_FAULT_AFTER, once that file exists.
FAULTS = '''
import errno, os
_after = os.environ.get("NB_FAULT_AFTER")


def _failing():
    return not _after or os.path.exists(_after)


if os.environ.get("NB_FLOCK_ERRNO"):
    import fcntl
    _flock, _flock_errno = fcntl.flock, int(os.environ["NB_FLOCK_ERRNO"])

    def flock(fd, operation):
        if _failing():
            raise OSError(_flock_errno, os.strerror(_flock_errno))
        return _flock(fd, operation)

    fcntl.flock = flock

if os.environ.get("NB_LINK_ERRNO"):
    _link, _link_errno = os.link, int(os.environ["NB_LINK_ERRNO"])

    def link(src, dst, **kw):
        if _failing():
            raise OSError(_link_errno, os.strerror(_link_errno), src, None, dst)
        return _link(src, dst, **kw)

    os.link = link
'''

# What a user does on the lab's file system: a run with points, an artifact of the run and one
# outside it, finish, then the index (nb.runs) and the artifacts read back.
SCRIPT = f'''
import json, os, warnings
from pathlib import Path
warnings.simplefilter("always")          # every warning shown, so a repeat would be seen
import nuboard as nb

root = Path(os.environ["NUBOARD_DIR"])
weights = root.parent / "weights.bin"
weights.write_bytes(b"w" * 100)
run = nb.init("llm", run_name="lab", config={{"lr": 0.1}}, {QUIET_ARGS})
if os.environ.get("NB_FAULT_AFTER"):
    Path(os.environ["NB_FAULT_AFTER"]).touch()
for step in range(100):
    run.add_scalar("train/loss", 1.0 / (step + 1), step=step)
run.add_artifact("weights", weights, type="model")
nb.add_artifact("datasets", "tokens", weights, type="dataset", description="tokens")
run.finish()
record = nb.runs("llm")[0]
print(json.dumps({{"id": run.id, "status": record.status,
                  "last": record.scalars["train/loss"]["last"],
                  "weights": nb.get_artifact("llm/weights").version,
                  "tokens": nb.get_artifact("datasets/tokens").version}}))
'''


def faulty_env(tmp_path: Path, root: Path, **faults: str) -> dict:
    """The environment of a child whose fcntl.flock / os.link fail as `faults` say."""
    site = tmp_path / "faults"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(FAULTS)
    return {"PYTHONPATH": f"{site}{os.pathsep}{REPO}", "NUBOARD_DIR": str(root), **faults}


def run_script(env: dict, code: str = SCRIPT, timeout: float = 180) -> subprocess.CompletedProcess:
    """Run Python code (the lab's script by default) in a child with env; wait for it."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=child_env(**env),
                          capture_output=True, text=True, timeout=timeout)


def check_lab_run(proc: subprocess.CompletedProcess, root: Path, warning: str) -> dict:
    """The child's run started, logged, finished, was indexed and has its artifacts, with one
    warning containing `warning` and naming a file system; returns what it printed."""
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Errno" not in proc.stderr, proc.stderr
    assert "cannot write" not in proc.stderr, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if warning in line]
    assert len(warned) == 1, proc.stderr
    assert "file system mounted at" in warned[0], warned[0]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["status"] == "finished" and out["last"] == pytest.approx(0.01)
    assert out["weights"] == 1 and out["tokens"] == 1
    folder = root / "llm" / "runs" / out["id"]
    doc = json.loads((folder / "run.json").read_text())
    assert doc["status"] == "finished" and doc["end_time"]
    assert [n for n in os.listdir(folder) if n.startswith(".tmp-") or n.endswith(".claim")] == []
    return out


def check_ls(tmp_path: Path, root: Path, env: dict, run_id: str) -> None:
    """`nuboard ls llm` lists the run as finished, in a child with the same faults."""
    listed = cli(root, "ls", "llm", env={k: v for k, v in env.items() if k != "NUBOARD_DIR"})
    assert listed.returncode == 0, listed.stderr
    assert "Errno" not in listed.stderr and "Traceback" not in listed.stderr, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if run_id in line)
    assert row.split()[0] == "finished", listed.stdout


# -- flock failing ---------------------------------------------------------------------------

@pytest.mark.parametrize("code, after_init", [
    (errno.ENOLCK, False), (errno.ENOSYS, False), (errno.EOPNOTSUPP, False),
    (errno.ENOLCK, True)], ids=["ENOLCK", "ENOSYS", "EOPNOTSUPP", "ENOLCK-after-init"])
def test_a_run_goes_on_where_flock_fails(tmp_path, code, after_init):
    root = tmp_path / "experiments"
    env = faulty_env(tmp_path, root, NB_FLOCK_ERRNO=str(code))
    if after_init:
        env["NB_FAULT_AFTER"] = str(tmp_path / "init-done")
    out = check_lab_run(run_script(env), root, "has no file locks")
    check_ls(tmp_path, root, env, out["id"])


def test_notes_are_edited_and_a_conflict_still_refused_where_flock_fails(tmp_path):
    root = tmp_path / "experiments"
    env = faulty_env(tmp_path, root, NB_FLOCK_ERRNO=str(errno.ENOLCK))
    out = check_lab_run(run_script(env), root, "has no file locks")
    folder = root / "llm" / "runs" / out["id"]
    code = f'''
        import warnings
        warnings.simplefilter("always")
        from nuboard.files.edits import EditConflictError, edit_notes
        edit_notes({str(folder)!r}, "first", base=None)
        try:
            edit_notes({str(folder)!r}, "second", base=None)
        except EditConflictError as exc:
            print("refused:", exc)
    '''
    proc = run_script(env, code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused:"), proc.stdout
    assert json.loads((folder / "run.json").read_text())["notes"] == "first"
    assert proc.stderr.count("has no file locks") == 1, proc.stderr


# -- hard links refused ----------------------------------------------------------------------

def test_a_run_starts_where_hard_links_are_refused(tmp_path):
    root = tmp_path / "experiments"
    env = faulty_env(tmp_path, root, NB_LINK_ERRNO=str(errno.EPERM))
    out = check_lab_run(run_script(env), root, "refuses hard links")
    check_ls(tmp_path, root, env, out["id"])


def test_one_of_many_starts_of_one_run_id_claims_it_without_hard_links(tmp_path):
    """Eight processes start one run id at once where links are refused: exactly one gets it,
    the others are told it was just created, and run.json has the one session."""
    root = tmp_path / "experiments"
    env = faulty_env(tmp_path, root, NB_LINK_ERRNO=str(errno.EPERM))
    go = tmp_path / "go"
    code = f'''
        import os, time
        import nuboard as nb
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        try:
            run = nb.init("llm", run_id="shared", {QUIET_ARGS})
        except nb.RunExistsError as exc:
            print("refused", exc)
        else:
            run.finish()
            print("claimed", os.getpid())
    '''
    children = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=child_env(**env),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(8)]
    time.sleep(1.0)
    go.touch()
    outs = [child.communicate(timeout=180) for child in children]
    assert all(child.returncode == 0 for child in children), "\n".join(err for _, err in outs)
    said = [out.split()[0] for out, _ in outs]
    assert said.count("claimed") == 1, outs
    assert said.count("refused") == 7, outs
    folder = root / "llm" / "runs" / "shared"
    doc = json.loads((folder / "run.json").read_text())
    winner = next(out for out, _ in outs if out.startswith("claimed")).split()[1]
    assert [s["pid"] for s in doc["sessions"]] == [int(winner)]
    assert not (folder / ".run.json.claim").exists()


# -- a real FUSE mount that refuses both -------------------------------------------------------

# A passthrough file system over a folder: link(2) is refused with EPERM (as s3fs, gcsfuse and
# exFAT do) and, with --no-locks, flock with ENOLCK (as NFS without lockd does).
FUSE_FS = '''
import errno, os, sys
import mfusepy as fuse

STAT = ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid")
TIMES = ("st_atime", "st_mtime", "st_ctime")


class NoLinks(fuse.Operations):
    use_ns = True

    def __init__(self, root, no_locks):
        self.root, self.no_locks = os.path.realpath(root), no_locks

    def _p(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def getattr(self, path, fh=None):
        st = os.lstat(self._p(path)) if fh is None else os.fstat(fh)
        return {**{k: getattr(st, k) for k in STAT}, **{k: getattr(st, k + "_ns") for k in TIMES}}

    def readdir(self, path, fh):
        return [".", "..", *os.listdir(self._p(path))]

    def link(self, target, source):
        raise fuse.FuseOSError(errno.EPERM)

    def flock(self, path, fh, op):
        if self.no_locks:
            raise fuse.FuseOSError(errno.ENOLCK)
        return 0

    def mkdir(self, path, mode): return os.mkdir(self._p(path), mode) or 0
    def rmdir(self, path): return os.rmdir(self._p(path)) or 0
    def unlink(self, path): return os.unlink(self._p(path)) or 0
    def rename(self, old, new): return os.rename(self._p(old), self._p(new)) or 0
    def symlink(self, target, source): return os.symlink(source, self._p(target)) or 0
    def readlink(self, path): return os.readlink(self._p(path))
    def chmod(self, path, mode): return os.chmod(self._p(path), mode) or 0
    def chown(self, path, uid, gid): return os.chown(self._p(path), uid, gid) or 0
    def utimens(self, path, times=None): return os.utime(self._p(path), ns=times) or 0
    def truncate(self, path, length, fh=None):
        return os.truncate(self._p(path) if fh is None else fh, length) or 0
    def open(self, path, flags): return os.open(self._p(path), flags)
    def create(self, path, mode, fi=None):
        return os.open(self._p(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    def read(self, path, size, offset, fh): return os.pread(fh, size, offset)
    def write(self, path, data, offset, fh): return os.pwrite(fh, data, offset)
    def fsync(self, path, datasync, fh): return os.fsync(fh) or 0
    def release(self, path, fh): return os.close(fh) or 0
    def statfs(self, path):
        st = os.statvfs(self._p(path))
        return {k: getattr(st, k) for k in dir(st) if k.startswith("f_") and k != "f_fsid"}


if __name__ == "__main__":
    fuse.FUSE(NoLinks(sys.argv[1], "--no-locks" in sys.argv), sys.argv[2], foreground=True)
'''


def fuse_mount(tmp_path: Path, *flags: str):
    """Mount the NoLinks file system over tmp_path/store at tmp_path/mnt; (mount, process).

    Skips the test, saying why, where FUSE cannot mount here."""
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:    # OSError: the module is there, libfuse is not
        pytest.skip(f"no FUSE bindings: {exc} (pip install mfusepy; apt-get install fuse3)")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse in this machine: FUSE cannot mount here")
    store, mnt = tmp_path / "store", tmp_path / "mnt"
    store.mkdir()
    mnt.mkdir()
    (tmp_path / "nolinkfs.py").write_text(FUSE_FS)
    log = open(tmp_path / "fuse.log", "w")
    proc = subprocess.Popen([sys.executable, str(tmp_path / "nolinkfs.py"), str(store), str(mnt),
                             *flags], stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + 30
    while not os.path.ismount(mnt):
        if proc.poll() is not None or time.monotonic() > deadline:
            fuse_unmount(mnt, proc)
            pytest.skip(f"FUSE cannot mount here: {(tmp_path / 'fuse.log').read_text()[-400:]}")
        time.sleep(0.05)
    return mnt, proc


def fuse_unmount(mnt: Path, proc: subprocess.Popen) -> None:
    for command in (["fusermount3", "-u", str(mnt)], ["umount", str(mnt)], ["umount", "-l", str(mnt)]):
        if not os.path.ismount(mnt) or shutil.which(command[0]) is None:
            continue
        subprocess.run(command, capture_output=True, timeout=60)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_a_run_on_a_fuse_mount_without_hard_links_or_locks(tmp_path):
    mnt, proc = fuse_mount(tmp_path, "--no-locks")
    try:
        probe = mnt / "probe"
        probe.write_bytes(b"")
        with pytest.raises(PermissionError):
            os.link(probe, mnt / "probe-link")        # the mount does refuse links
        root = mnt / "experiments"
        env = {"NUBOARD_DIR": str(root), "NUBOARD_CACHE_DIR": str(tmp_path / "cache")}
        proc_run = run_script(env)
        out = check_lab_run(proc_run, root, "refuses hard links")
        locks = [line for line in proc_run.stderr.splitlines() if "has no file locks" in line]
        assert len(locks) == 1 and str(mnt) in locks[0], proc_run.stderr
        check_ls(tmp_path, root, env, out["id"])
    finally:
        fuse_unmount(mnt, proc)


def test_a_link_that_fails_otherwise_leaves_no_half_made_run(tmp_path):
    """link(2) failing for another reason (EIO, a full disk) is one RunFolderError naming the
    folder, and the folder nb.init made for the run is gone: no run without its run.json."""
    root = tmp_path / "experiments"
    env = faulty_env(tmp_path, root, NB_LINK_ERRNO=str(errno.EIO))
    code = f'''
        import nuboard as nb
        for run_id in ("given", None):
            try:
                nb.init("llm", run_id=run_id, {QUIET_ARGS})
            except nb.RunFolderError as exc:
                print("refused", type(exc).__name__, exc)
    '''
    proc = run_script(env, code)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("refused RunFolderError") for line in lines), lines
    assert "cannot create the run folder" in lines[0] and "given" in lines[0], lines
    runs = root / "llm" / "runs"
    assert not runs.exists() or not [p for p in runs.iterdir() if not p.name.startswith(".")], \
        list(runs.iterdir())
