"""The CLI on a real terminal (a pty): what a user at a prompt or watching a progress bar sees."""
from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from helpers import child_env


def dialog(root: Path, args: list[str], steps: list[tuple[str, str]], *, cwd: Path | None = None,
           timeout: float = 60) -> tuple[int, str]:
    """Run the CLI on a real pty; at each (prompt, keys) step wait for prompt, then type keys."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    env = child_env(NUBOARD_DIR=str(root), TERM="xterm-256color")
    proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", *args], env=env, cwd=cwd,
                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    out, step, seen = b"", 0, 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            if step < len(steps):
                at = out.find(steps[step][0].encode(), seen)
                if at >= 0:
                    seen = at + len(steps[step][0])
                    time.sleep(0.05)
                    os.write(master, steps[step][1].encode())
                    step += 1
            elif proc.poll() is not None and not ready:
                break
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert step == len(steps), f"stuck before {steps[step]!r}:\n{out.decode(errors='replace')}"
    return proc.returncode, out.decode("utf-8", "replace")
