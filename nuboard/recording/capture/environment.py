"""What a run records of where it ran: git state, installed packages, the command line.

Best effort and bounded: every part that fails is left out, and the subprocesses (git) share
one deadline, so a hanging git cannot hold nb.init for long.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

MAX_PATCH_BYTES = 16 * 1024 * 1024
_CREDENTIALS = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", re.IGNORECASE)


class Deadline:
    """Seconds left of a shared budget."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())


def default_code_dir() -> list[Path]:
    """Where to look for the training code's repository: the script's folder, then the cwd."""
    places = []
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if script:
        places.append(Path(script).resolve().parent)
    try:
        places.append(Path.cwd())
    except OSError:
        pass
    return places


def _git(args: list[str], cwd: Path, deadline: Deadline) -> str | None:
    """Run one git command; its stdout, or None when it fails, is missing or runs out of time."""
    left = deadline.left()
    if left <= 0.01:
        return None
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        out = subprocess.run(["git", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=left)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.decode("utf-8", "replace")


def strip_credentials(url: str) -> str:
    """https://user:token@host/x -> https://host/x: a remote's password never lands in run.json."""
    return _CREDENTIALS.sub(r"\1", url)


def capture_git(places: list[Path], deadline: Deadline) -> tuple[dict | None, bytes | None]:
    """The repository of the first place inside one: ({commit, branch, remote, dirty, root}, patch)."""
    for place in places:
        head = _git(["rev-parse", "--show-toplevel", "HEAD"], place, deadline)
        if head is None:
            continue
        lines = head.split("\n")
        if len(lines) < 2 or not lines[1].strip():
            continue
        top, commit = Path(lines[0].strip()), lines[1].strip()
        info: dict = {"root": str(top), "commit": commit}
        branch = _git(["rev-parse", "--abbrev-ref", "HEAD"], top, deadline)
        if branch is not None:
            info["branch"] = branch.strip()
        remote = _git(["config", "--get", "remote.origin.url"], top, deadline)
        if remote is None:
            names = (_git(["remote"], top, deadline) or "").split()
            if names:
                remote = _git(["config", "--get", f"remote.{names[0]}.url"], top, deadline)
        if remote:
            info["remote"] = strip_credentials(remote.strip())
        status = _git(["status", "--porcelain", "--untracked-files=no"], top, deadline)
        if status is not None:
            info["dirty"] = bool(status.strip())
        patch = None
        if info.get("dirty"):
            text = _git(["diff", "HEAD", "--no-color", "--no-ext-diff"], top, deadline)
            if text:
                patch = text.encode("utf-8", "replace")[:MAX_PATCH_BYTES]
        return info, patch
    return None, None


def installed_packages() -> str:
    """'name==version' of every installed distribution, sorted, from package metadata."""
    from importlib import metadata
    seen = {}
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"]
            version = dist.version
        except Exception:
            continue
        if name and name.lower() not in seen:
            seen[name.lower()] = f"{name}=={version}"
    return "\n".join(seen[k] for k in sorted(seen)) + "\n"


def command_line() -> str:
    """The command that started this process, as a shell would take it."""
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    return shlex.join(argv) + "\n"


def write_files(files_dir: Path, parts: dict[str, bytes]) -> None:
    """Write the captured files under files/; a part that cannot be written is left out."""
    try:
        files_dir.mkdir(exist_ok=True)
    except OSError:
        return
    for name, data in parts.items():
        try:
            (files_dir / name).write_bytes(data)
        except OSError:
            pass
