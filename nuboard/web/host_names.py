"""The names a viewer answers to: which Host headers `nuboard up` accepts for its bind address.

A browser names the server it means in the Host header, so a check of that header is what keeps
a DNS-rebound name (`evil.example` pointed at this machine) from reading the viewer. The names
allowed are the loopback names, the bind address and the names of this machine that lead to it:

- a wildcard bind (`0.0.0.0`, `::`): the machine's host name and fully qualified name, the
  addresses of its interfaces (IPv4 only for `0.0.0.0`) and the names those addresses have in
  DNS or /etc/hosts;
- a concrete address: that address and the names it has; a name: that name and its addresses;
- and every `--allowed-host NAME` (a name a reverse proxy sends, say).

Name lookups run on daemon threads and are given LOOKUP_SECONDS in all, so a slow resolver
delays `nuboard up` by at most that and never hangs it.
"""
from __future__ import annotations

import ipaddress
import socket
import threading
import time
from typing import Iterable, NamedTuple

WILDCARDS = frozenset({"0.0.0.0", "::", ""})
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
LOOKUP_SECONDS = 2.0


class ServedNames(NamedTuple):
    """What a bind address answers to: `names` (canonical, as `canonical` writes a Host) and
    `url_host`, the name to print in the viewer's URL."""
    names: frozenset[str]
    url_host: str


def canonical(host: str) -> str:
    """A Host header's name part as compared: lower case, no port, no trailing dot, and an IP
    address in one spelling ('[FD00:0::2]:80' -> '[fd00::2]', 'VM.lab.:6464' -> 'vm.lab')."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        host = host[1:end] if end > 0 else host[1:]
    elif host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    host = host.rstrip(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def is_loopback(host: str) -> bool:
    """Whether a bind address or name means this machine only."""
    name = canonical(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def served_names(bind_host: str, allowed: Iterable[str] = ()) -> ServedNames:
    """The Host names a viewer bound to `bind_host` accepts, and the name its URL shows."""
    names = set(LOOPBACK_NAMES) | {canonical(name) for name in allowed}
    bind = canonical(bind_host)
    if is_loopback(bind_host):                     # the default: no lookup at all
        return ServedNames(frozenset(names | {bind}), bind)
    wildcard = bind_host in WILDCARDS
    named = not wildcard and not _is_address(bind)
    mine = {canonical(socket.gethostname()), canonical(socket.getfqdn())} - {""}
    if wildcard:
        addresses = machine_addresses(ipv6=bind_host == "::")
    elif named:
        addresses, mine = sorted(look_up([bind], _addresses_of)[bind]), {bind}
    else:
        addresses = [bind]
    outside = [a for a in addresses if not is_loopback(a)]
    reverse = set().union(*look_up(outside, _names_of).values())
    forward = look_up(sorted(mine | reverse), _addresses_of)
    leading_here = sorted(n for n, found in forward.items() if found & set(outside))
    names |= set(addresses) | reverse | set(leading_here)
    if wildcard or named:                          # the machine's names, or the name bound
        names |= mine
    url_host = bind if named else (leading_here + outside + ["127.0.0.1" if wildcard else bind])[0]
    return ServedNames(frozenset(names), url_host)


def machine_addresses(ipv6: bool) -> list[str]:
    """This machine's interface addresses, canonical (IPv6 bracketed), link-local ones left
    out (a Host header cannot carry their zone)."""
    import psutil
    found: list[str] = []
    families = (socket.AF_INET, socket.AF_INET6) if ipv6 else (socket.AF_INET,)
    for addrs in psutil.net_if_addrs().values():
        for addr in addrs:
            if addr.family not in families:
                continue
            text = addr.address.split("%", 1)[0]
            try:
                ip = ipaddress.ip_address(text)
            except ValueError:
                continue
            if ip.is_link_local:
                continue
            name = canonical(text)
            if name not in found:
                found.append(name)
    return found


def look_up(items: list[str], lookup, seconds: float = LOOKUP_SECONDS) -> dict[str, set[str]]:
    """lookup(item) for each item, in parallel on daemon threads, for at most `seconds` in
    all: {item: what it found}; an item whose answer comes later, or fails, finds nothing."""
    found: dict[str, set[str]] = {item: set() for item in items}
    lock = threading.Lock()

    def run(item: str) -> None:
        try:
            answer = lookup(item)
        except (OSError, UnicodeError):
            return
        with lock:
            found[item] = answer

    threads = [threading.Thread(target=run, args=(item,), daemon=True, name="nuboard-host-lookup")
               for item in items]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        return {item: set(answer) for item, answer in found.items()}


def _names_of(address: str) -> set[str]:
    """The names DNS or /etc/hosts gives an address, loopback names left out."""
    name, aliases, _ = socket.gethostbyaddr(address.strip("[]"))
    return {canonical(n) for n in [name, *aliases] if n and not is_loopback(n)}


def _addresses_of(name: str) -> set[str]:
    """The addresses a name resolves to, canonical."""
    infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    return {canonical(info[4][0]) for info in infos}


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False
