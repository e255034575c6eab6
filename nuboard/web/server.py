"""Serving the viewer with waitress: bind, print the URL, stop cleanly on Ctrl-C or SIGTERM."""
from __future__ import annotations

import errno
import ipaddress
import signal
import socket
from pathlib import Path
from typing import Callable

from nuboard.errors import NuBoardError

DEFAULT_PORT = 6464        # TensorBoard 6006, MLflow 5000, Aim 43800 and trackio 7860 differ
THREADS = 8


class PortTakenError(NuBoardError, OSError):
    """The port asked for is in use by another program."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def make_server(app, host: str, port: int):
    """A waitress server bound to host:port, or PortTakenError naming the port."""
    from waitress.server import create_server
    try:
        return create_server(app, host=host, port=port, threads=THREADS, ident="nuboard",
                             clear_untrusted_proxy_headers=True, channel_timeout=60)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortTakenError(
                f"Port {port} on {host} is already in use (another nuboard up, or another "
                f"program); pass --port N to pick another, or --port 0 for any free one.") from None
        if exc.errno == errno.EADDRNOTAVAIL or isinstance(exc, socket.gaierror):
            raise NuBoardError(f"Cannot bind {host!r}: it is not an address of this machine "
                               "(use 127.0.0.1, or 0.0.0.0 for every interface).") from None
        raise


def bound_port(server) -> int:
    return server.socket.getsockname()[1] if hasattr(server, "socket") else server.effective_port


def serve(app, root: Path, host: str, port: int, echo: Callable[[str], None]) -> None:
    """Serve until Ctrl-C or SIGTERM, then close the catalogs and return."""
    from .warmup import prepare
    prepare(app)             # libraries, templates, Arrow's allocator: not in a user's first page
    server = make_server(app, host, port)
    port = bound_port(server)
    shown = f"[{host}]" if ":" in host else host
    echo(f"NuBoard is serving {str(root)!r} at http://{shown}:{port}/  (Ctrl-C to stop)")
    if not is_loopback(host):
        echo(f"Warning: bound to {host}, so anyone who can reach this machine on port {port} can "
             "read every run and file under the folder: NuBoard has no login. Use an SSH tunnel "
             "to 127.0.0.1 instead where you can.")

    def _stop(_signum, _frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
        app.extensions["nuboard_catalogs"].close()
        echo("NuBoard stopped.")
