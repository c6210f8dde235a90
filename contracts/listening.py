"""Where a server of this project listens: whether an address is loopback only, and the one line each
server prints on stderr when it is bound beyond it (the codec server, the reviewer console, the
worker's metrics endpoint). Each one's default is ``127.0.0.1``; another address is allowed (a
container publishes its port through its own network), but never without a word."""

from __future__ import annotations

import ipaddress
import socket


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def is_loopback_address(host: str) -> bool:
    """Whether ``host`` is a loopback IP address (``127.0.0.0/8``, ``::1``, ``::ffff:127.0.0.1``, with or
    without an IPv6 scope id). ``0.0.0.0`` and ``::`` are every address, not loopback; a name is not an
    address (see :func:`is_loopback_host`)."""
    address = _ip(host)
    if address is None:
        return False
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return (mapped or address).is_loopback


def is_loopback_host(host: str) -> bool:
    """Whether listening on ``host`` (an address, or a name such as ``localhost``) listens on loopback
    only: an address is judged as it is; a name by every address it resolves to (one that does not
    resolve is not loopback: the caller cannot bind it anyway)."""
    if _ip(host) is not None:
        return is_loopback_address(host)
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return False
    return bool(infos) and all(is_loopback_address(str(info[4][0])) for info in infos)


def shown_host(host: str) -> str:
    """``host`` as it is written before ``:port`` (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def beyond_loopback_warning(program: str, where: str, exposed: str, advice: str) -> str:
    """The one line a server prints on stderr when it listens on ``where`` beyond loopback: what whoever
    reaches it gets (``exposed``) and what to do instead (``advice``)."""
    return f"{program}: warning: listening on {where}, not only on loopback: {exposed}; {advice}"
