"""Who is asking: a visitor identity a client cannot choose, and the address range it sits in.

The per-visitor and per-range limits of public mode (`ui.public.RunGate`) key on this.
`X-Forwarded-For` is written by whoever sends the request, so it is read only as far as
the operator says proxies of their own append to it:

- `TRUSTED_PROXY_HOPS` (default 1 on Hugging Face Spaces, else 0): how many proxies in
  front of the app each append one hop. The client is the hop the outermost of them
  appended, counted from the right (`hops[-N]`); whatever the client wrote stands left of
  it and is never read. 0 = the socket address only.
- `TRUSTED_PROXIES` (optional, comma-separated addresses or networks): forwarded hops are
  read only when the socket peer is one of them.

A header that holds fewer hops than configured, or a hop that is not an IP address,
falls back to the socket address. Without any address (a direct function call) the
browser session stands in. Knows nothing of Gradio beyond reading `request.headers`,
`request.client.host` and `request.session_hash`.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SPACES_VARS = ("SPACE_ID", "SPACE_HOST", "SPACE_REPO_NAME")
IPV4_RANGE_BITS = 24  # one /24 per range: a NAT'd office or a cloud tenant's neighbours
IPV6_RANGE_BITS = 64  # one /64: what a single IPv6 subscriber is usually given

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class ProxyTrust:
    """The operator's proxies: how many hops they append, and (optionally) which peers they are."""

    hops: int = 0
    proxies: tuple[Network, ...] = ()  # () = any peer may be the proxy (Spaces: addresses unknown)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ProxyTrust:
        env = os.environ if env is None else env
        on_spaces = any(env.get(v) for v in SPACES_VARS)
        raw = env.get("TRUSTED_PROXY_HOPS", "").strip()
        try:
            hops = int(raw) if raw else (1 if on_spaces else 0)
        except ValueError:
            raise ValueError(f"TRUSTED_PROXY_HOPS must be a whole number, got {raw!r}") from None
        if not 0 <= hops <= 16:
            raise ValueError(f"TRUSTED_PROXY_HOPS must be in 0..16, got {hops}")
        proxies = []
        for item in env.get("TRUSTED_PROXIES", "").split(","):
            if item.strip():
                try:
                    proxies.append(ipaddress.ip_network(item.strip(), strict=False))
                except ValueError:
                    raise ValueError(
                        f"TRUSTED_PROXIES: {item.strip()!r} is not an address or network"
                    ) from None
        return cls(hops=hops, proxies=tuple(proxies))

    def trusts(self, peer: str | None) -> bool:
        if self.hops == 0:
            return False
        if not self.proxies:
            return True
        address = parse_ip(peer)
        return address is not None and any(address in net for net in self.proxies)


def parse_ip(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP address (IPv4-mapped IPv6 as IPv4), or None for anything else."""
    try:
        address = ipaddress.ip_address(str(text or "").strip().strip("[]"))
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def client_address(request: Any, trust: ProxyTrust) -> str | None:
    """The client's IP address as the operator's proxies saw it; None if there is none."""
    peer = getattr(getattr(request, "client", None), "host", None)
    if trust.trusts(peer):
        headers = getattr(request, "headers", None) or {}
        hops = [h.strip() for h in str(headers.get("x-forwarded-for", "") or "").split(",") if h.strip()]
        if len(hops) >= trust.hops:
            forwarded = parse_ip(hops[-trust.hops])
            if forwarded is not None:
                return str(forwarded)
    address = parse_ip(peer)
    return str(address) if address is not None else None


def address_range(address: str) -> str:
    """The range an address counts in for the per-range limit: its /24 (IPv4) or /64 (IPv6)."""
    ip = parse_ip(address)
    if ip is None:
        return address  # a session stand-in is a range of its own
    bits = IPV4_RANGE_BITS if ip.version == 4 else IPV6_RANGE_BITS
    return str(ipaddress.ip_network(f"{ip}/{bits}", strict=False))


@dataclass(frozen=True)
class Visitor:
    key: str  # the client address, or "session:<hash>" without one
    range: str  # the address range (`address_range`)
    session: str  # the browser session (a place is held by one session)


def visitor_of(request: Any, trust: ProxyTrust, session: str) -> Visitor:
    address = client_address(request, trust)
    key = address if address is not None else f"session:{session}"
    return Visitor(key=key, range=address_range(key), session=session)
