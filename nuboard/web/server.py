"""Serving the viewer with waitress: bind, print the URL, stop cleanly on Ctrl-C or SIGTERM.

Waitress's defaults suit one user: 100 connections at most (the 101st waits while idle ones are
held open for a minute or two) and 4 threads. A lab's viewer gets the limits below, and a
request that trickles in (headers or body sent a little at a time) is closed once it has taken
REQUEST_SECONDS, which waitress's own idle timeout, reset by every byte, never does.
"""
from __future__ import annotations

import errno
import signal
import socket
import weakref
from pathlib import Path
from typing import Callable

from nuboard.errors import NuBoardError

from .host_names import ServedNames, is_loopback

DEFAULT_PORT = 6464        # TensorBoard 6006, MLflow 5000, Aim 43800 and trackio 7860 differ
THREADS = 16               # more than a browser's 6 parallel fetches, for a few users at once
CONNECTION_LIMIT = 1000    # open connections, idle ones included (fewer if the fd limit is low)
IDLE_SECONDS = 5           # an idle keep-alive connection, or a request that stopped, is closed
REQUEST_SECONDS = 10       # a request's headers and body must arrive within this, in all
BACKLOG = 1024             # connections the kernel queues before the server accepts them
FD_RESERVE = 128           # descriptors kept for files, catalogs and logs


class PortTakenError(NuBoardError, OSError):
    """The port asked for is in use by another program."""


def connection_limit() -> int:
    """CONNECTION_LIMIT, after raising the soft limit on open files towards it (a soft limit
    of 1024 is common); less when the hard limit leaves no room."""
    try:
        import resource
    except ImportError:                        # pragma: no cover - not on Linux/macOS
        return CONNECTION_LIMIT
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = CONNECTION_LIMIT + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            soft = new
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return CONNECTION_LIMIT
    return max(16, min(CONNECTION_LIMIT, soft - FD_RESERVE))


def make_server(app, host: str, port: int):
    """A waitress server bound to host:port with a lab's limits, or PortTakenError."""
    from waitress.server import create_server
    try:
        server = create_server(
            app, host=host, port=port, threads=THREADS, ident="nuboard",
            clear_untrusted_proxy_headers=True, connection_limit=connection_limit(),
            channel_timeout=IDLE_SECONDS, cleanup_interval=1, backlog=BACKLOG,
            asyncore_use_poll=True)            # select() fails past descriptor 1024
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortTakenError(
                f"Port {port} on {host} is already in use (another nuboard up, or another "
                f"program); pass --port N to pick another, or --port 0 for any free one.") from None
        if exc.errno == errno.EADDRNOTAVAIL or isinstance(exc, socket.gaierror):
            raise NuBoardError(f"Cannot bind {host!r}: it is not an address of this machine "
                               "(use 127.0.0.1, or 0.0.0.0 for every interface).") from None
        raise
    for listener in _listeners(server):
        close_slow_requests(listener)
    return server


def _listeners(server) -> list:
    """The listening servers: waitress returns one, or a MultiSocketServer over several."""
    from waitress.server import BaseWSGIServer
    found = getattr(server, "map", None)
    if found is None:
        return [server]
    return [d for d in found.values() if isinstance(d, BaseWSGIServer)]


def close_slow_requests(listener, limit: float = REQUEST_SECONDS) -> None:
    """Also close, at each of waitress's maintenance passes (every second), a connection whose
    request has been arriving for longer than `limit` seconds."""
    maintenance = listener.maintenance
    started: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # channel: (request, since)

    def maintain(now: float) -> None:
        maintenance(now)
        for channel in list(listener.active_channels.values()):
            partial = channel.request                  # a request not yet whole, or None
            if partial is None or channel.requests:
                started.pop(channel, None)
                continue
            seen = started.get(channel)
            if seen is None or seen[0] is not partial:
                started[channel] = (partial, now)
            elif now - seen[1] > limit:
                channel.will_close = True

    listener.maintenance = maintain


def bound_port(server) -> int:
    return server.socket.getsockname()[1] if hasattr(server, "socket") else server.effective_port


def serve(app, root: "Path | str", host: str, port: int, echo: Callable[[str], None],
          note: Callable[[str], None] | None = None) -> None:
    """Bind, open every project's catalog, print the URL, and serve until Ctrl-C or SIGTERM
    (either, at any point after binding, stops it cleanly); then close the catalogs and return.

    echo: the lines a user reads (the URL first); note: how far the opening got and what the
    edit flags turned on (default: echo). The URL is printed last, once the catalogs are open,
    so that no first page waits for one; the port is bound first, so that a taken port is
    said at once.
    """
    from .warmup import open_catalogs, prepare
    note = note or echo
    prepare(app)             # libraries, templates, Arrow's allocator: not in a user's first page
    server = make_server(app, host, port)

    def _stop(_signum, _frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        open_catalogs(app, note)
        for line in edit_lines(app.config):
            note(line)
        announce(app.config["NUBOARD_SERVED"], root, host, bound_port(server), echo)
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
        app.extensions["nuboard_catalogs"].close()
        echo("NuBoard stopped.")


def announce(served: ServedNames, root: "Path | str", host: str, port: int,
             echo: Callable[[str], None]) -> None:
    """The URL, and for a public bind the names it answers to and a warning."""
    echo(f"NuBoard is serving {str(root)!r} at http://{served.url_host}:{port}/  (Ctrl-C to stop)")
    if not is_loopback(host):
        echo(f"It answers to {', '.join(names_shown(served))} (the Host a browser sends); "
             "any other name is refused. Add one with --allowed-host NAME.")
        echo(f"Warning: bound to {host or '0.0.0.0'}, so anyone who can reach this machine on "
             f"port {port} can read every run and file under the folder: NuBoard has no login. "
             "Use an SSH tunnel to 127.0.0.1 instead where you can.")


def edit_lines(config) -> list[str]:
    """What the edit flags of `nuboard up` turned on or off, one line each (none without)."""
    lines = []
    if config.get("NUBOARD_EDIT_ARTIFACTS"):
        lines.append("Artifact editing is on (--edit-artifacts): the Artifacts pages add new "
                     "versions and unlink them, for anyone who can open this viewer.")
    if config.get("NUBOARD_EDIT_RUNS"):
        lines.append("Run editing is on (--edit-runs): run pages hide runs and delete them to "
                     "runs/.trash/ (the Trash page restores them), for anyone who can open this "
                     "viewer.")
    if config.get("NUBOARD_MIRROR_URL"):
        lines.append(f"Read-only: this viewer serves a mirror of {config['NUBOARD_MIRROR_URL']}, "
                     "pulled again in the background; notes, saved views, run colours, artifacts "
                     "and runs cannot be edited from it.")
    elif config.get("NUBOARD_READ_ONLY"):
        lines.append("Read-only (--read-only): notes, saved views, run colours and artifacts "
                     "cannot be edited from this viewer.")
    return lines


def names_shown(served: ServedNames) -> list[str]:
    """The names a viewer answers to, in the order a user looks for them: the URL's, then
    other names, then addresses, loopback last."""
    def order(name: str) -> tuple:
        return (name != served.url_host, is_loopback(name), name[:1].isdigit() or name[:1] == "[",
                name)
    return sorted(served.names, key=order)
