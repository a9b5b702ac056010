"""A ``dask.distributed`` Client reached through an SSH tunnel (asyncssh).

Clusters people debug often sit behind SSH: the scheduler listens on the remote machine's
127.0.0.1 only. :func:`connect` forwards a local port on this machine's 127.0.0.1 to the
remote scheduler (and optionally its dashboard) and connects a Client through it, so
Hermes graphs run on the remote workers.

asyncssh is async and the user's notebook may run its own event loop, so each tunnel owns
an asyncio loop in a daemon thread; the tunnel lives until :meth:`SSHConnection.close`
(idempotent) or interpreter exit. ``asyncssh`` and ``distributed`` are imported on the
first call, so ``import hermes_nb`` needs neither.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import importlib.util
import os
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from hermes_nb.errors import ClusterError

LOCALHOST = "127.0.0.1"  # forwarded ports never listen on another interface
KeyPaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]

_open: set[SSHConnection] = set()  # held until closed: a dropped connection stays up


@dataclass(frozen=True)
class SSHTarget:
    """Where to log in, parsed from ``ssh://user@host[:port]`` (never holds a secret)."""

    host: str
    port: int = 22
    user: str | None = None

    @property
    def url(self) -> str:
        """The URL as errors print it: no password, ever."""
        user = f"{self.user}@" if self.user else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ssh://{user}{host}:{self.port}"


def parse_url(url: str) -> SSHTarget:
    """``ssh://user@host[:port]`` as an :class:`SSHTarget`; a password in the URL is refused
    (it would end up in notebooks, shell history and logs) without repeating it."""
    parts = urlsplit(url)
    if parts.scheme != "ssh" or not parts.hostname:
        raise ClusterError(f"expected a URL like ssh://user@host[:port], got {url.split('@')[-1]!r}")
    if parts.password is not None:
        where = f"ssh://{parts.username}@{parts.hostname}"
        raise ClusterError(
            f"{where}: a password in the URL is not accepted; log in with a key (your SSH "
            "agent, ~/.ssh, or client_keys=)")
    try:
        port = parts.port or 22
    except ValueError as exc:
        raise ClusterError(f"ssh://…@{parts.hostname}: the port is not a number") from exc
    return SSHTarget(host=parts.hostname, port=port, user=parts.username or None)


class _LoopThread:
    """An asyncio loop in a daemon thread: the tunnel's coroutines run there, whatever loop
    the caller's thread has (a Jupyter kernel runs one)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="hermes-ssh-tunnel",
                                       daemon=True)
        self.thread.start()

    def run(self, coro: Any, timeout: float | None = None) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


class SSHConnection:
    """A Client on a remote scheduler and the SSH tunnel it goes through; closing closes both.

    ``with hm.cluster.connect(...) as client:`` yields the Client. Attributes: ``client``,
    ``target`` (:class:`SSHTarget`), ``scheduler_address`` (the local end), ``local_ports``
    (remote port -> local port, all on 127.0.0.1) and ``dashboard_link`` (or None).
    """

    def __init__(self, target: SSHTarget, loop: _LoopThread, ssh: Any,
                 listeners: dict[int, Any]) -> None:
        self.target = target
        self.client: Any = None
        self._loop = loop
        self._ssh = ssh
        self._listeners = listeners
        self.local_ports = {remote: lst.get_port() for remote, lst in listeners.items()}
        self.scheduler_address = ""
        self.dashboard_link: str | None = None
        self._lock = threading.Lock()
        self.closed = False
        _open.add(self)

    def close(self) -> None:
        """Close the Client, then the forwarded ports and the SSH connection. Idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        _open.discard(self)
        try:
            if self.client is not None:
                self.client.close()
        finally:
            # the tunnel is going away either way; a dead link may refuse a clean close
            with contextlib.suppress(Exception):
                self._loop.run(self._close_ssh(), timeout=10)
            self._loop.stop()

    async def _close_ssh(self) -> None:
        for listener in self._listeners.values():
            listener.close()
        self._ssh.close()
        await self._ssh.wait_closed()

    def __enter__(self) -> Any:
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"scheduler at {self.scheduler_address}"
        return f"<SSHConnection {self.target.url} ({state})>"


@atexit.register
def _close_all() -> None:
    """Interpreter exit closes every tunnel still open (their threads are daemons)."""
    for connection in list(_open):
        connection.close()


@functools.cache  # the warning filters are process-wide: changed once, at the import
def _asyncssh() -> Any:
    """asyncssh, imported without the deprecation warning cryptography 51 gives when
    asyncssh's import names its DSA classes (nothing Hermes does uses DSA)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="DSA is deprecated", category=UserWarning)
        import asyncssh
    return asyncssh


def _ssh_error(target: SSHTarget, exc: BaseException, known_hosts: Any) -> ClusterError:
    """asyncssh's and the OS's connect errors as one ClusterError naming what to check."""
    asyncssh = _asyncssh()

    name = type(exc).__name__
    if isinstance(exc, asyncssh.PermissionDenied):
        what = ("authentication failed: no key was accepted (check that your SSH agent or "
                "~/.ssh, or client_keys=, holds a key listed in the remote user's "
                "authorized_keys, and the user name)")
    elif isinstance(exc, asyncssh.HostKeyNotVerifiable):
        where = "~/.ssh/known_hosts" if known_hosts == () else f"known_hosts={known_hosts!r}"
        what = (f"the host key could not be verified against {where} ({exc.reason}): add the "
                "host's key there (e.g. log in once with ssh) or pass the right known_hosts=")
    elif isinstance(exc, asyncssh.DisconnectError):
        what = f"the SSH server closed the connection ({name}: {exc.reason})"
    elif isinstance(exc, (OSError, asyncio.TimeoutError)):
        what = (f"cannot reach the SSH server ({name}: {exc}): check the host name, the port "
                "and that sshd runs there and a firewall lets you in")
    else:
        what = f"the SSH connection failed ({name}: {exc})"
    return ClusterError(f"{target.url}: {what}")


async def _open_tunnel(target: SSHTarget, ports: Sequence[int], options: dict[str, Any]) -> Any:
    """Log in, check the scheduler port answers on the remote side, forward each port."""
    asyncssh = _asyncssh()

    try:
        ssh = await asyncssh.connect(target.host, port=target.port, username=target.user,
                                     password_auth=False, kbdint_auth=False, **options)
    except (OSError, asyncio.TimeoutError, asyncssh.Error) as exc:
        raise _ssh_error(target, exc, options.get("known_hosts", ())) from None
    try:
        listeners = {}
        for i, port in enumerate(ports):
            if i == 0:  # the scheduler: refuse early, with a clear message, if none listens
                await _probe(ssh, target, port)
            listeners[port] = await ssh.forward_local_port(LOCALHOST, 0, LOCALHOST, port)
    except BaseException:
        ssh.close()
        raise
    return ssh, listeners


async def _probe(ssh: Any, target: SSHTarget, port: int) -> None:
    asyncssh = _asyncssh()

    try:
        _, writer = await ssh.open_connection(LOCALHOST, port)
    except asyncssh.ChannelOpenError as exc:
        raise ClusterError(
            f"{target.url}: nothing accepts connections on the remote side's {LOCALHOST}:{port} "
            f"({exc.reason}): check that the Dask scheduler runs there (dask scheduler "
            f"--host {LOCALHOST} --port {port}) and scheduler_port=; the SSH server may also "
            "forbid port forwarding (AllowTcpForwarding)") from None
    writer.close()


def connect(url: str, scheduler_port: int = 8786, *, dashboard_port: int | None = None,
            client_keys: KeyPaths | None = None, known_hosts: Any = (),
            timeout: float = 20.0, **client_kwargs: Any) -> SSHConnection:
    """Open an SSH tunnel to a remote Dask scheduler and connect a ``distributed.Client``.

    ``url`` is ``ssh://user@host[:port]`` (no password: keys from your SSH agent, ``~/.ssh``
    or ``client_keys=`` paths; ``~/.ssh/config`` applies). The scheduler (and, if given,
    ``dashboard_port``) is reached at the remote machine's 127.0.0.1 through ports forwarded
    from this machine's 127.0.0.1. Host keys are checked against ``~/.ssh/known_hosts`` or
    ``known_hosts=`` (a path); ``known_hosts=None`` turns the check off, which lets anyone
    on the network path impersonate the host — for throw-away test machines only.
    ``client_kwargs`` go to ``distributed.Client`` (it becomes the default client, so Hermes
    graphs run on the remote workers). Only the scheduler is forwarded, so data moves
    through it (``direct_to_workers=False`` unless given). Failures raise ``ClusterError``
    naming the URL.
    """
    target = parse_url(url)
    for module in ("distributed", "asyncssh"):  # fail here, before logging in
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"hm.cluster.connect needs {module}: pip install "
                                      "'hermes_nb[distributed]'", name=module)
    if isinstance(known_hosts, os.PathLike):  # asyncssh takes str paths, not Path
        known_hosts = os.fspath(known_hosts)
    # keep-alives: an idle tunnel through a NAT or firewall is not dropped silently
    options: dict[str, Any] = {"known_hosts": known_hosts, "connect_timeout": timeout,
                               "keepalive_interval": 30, "keepalive_count_max": 4}
    if client_keys is not None:
        keys = [client_keys] if isinstance(client_keys, (str, os.PathLike)) else client_keys
        options["client_keys"] = [os.fspath(k) for k in keys]
    ports = [scheduler_port] + ([dashboard_port] if dashboard_port is not None else [])
    loop = _LoopThread()
    try:
        ssh, listeners = loop.run(_open_tunnel(target, ports, options), timeout=timeout + 10)
    except concurrent.futures.TimeoutError:
        loop.stop()
        raise ClusterError(f"{target.url}: no SSH login within {timeout + 10:.0f} s: check the "
                           "host, the port and the network (timeout=)") from None
    except BaseException:
        loop.stop()
        raise
    connection = SSHConnection(target, loop, ssh, listeners)
    # the workers' own addresses are the remote network's, which the tunnel does not reach
    client_kwargs.setdefault("direct_to_workers", False)
    try:
        _connect_client(connection, scheduler_port, dashboard_port, timeout, client_kwargs)
    except BaseException:
        connection.close()
        raise
    return connection


def _connect_client(connection: SSHConnection, scheduler_port: int, dashboard_port: int | None,
                    timeout: float, client_kwargs: dict[str, Any]) -> None:
    from distributed import Client

    local = connection.local_ports[scheduler_port]
    connection.scheduler_address = f"tcp://{LOCALHOST}:{local}"
    if dashboard_port is not None:
        connection.dashboard_link = f"http://{LOCALHOST}:{connection.local_ports[dashboard_port]}/status"
    # a Client waits without limit for a listener that accepts but never answers: ask first
    try:
        kind = connection._loop.run(_identity(connection.scheduler_address, timeout), timeout + 5)
    except (OSError, asyncio.TimeoutError, concurrent.futures.TimeoutError) as exc:
        kind = f"no Dask answer within {timeout:.0f} s: {type(exc).__name__} {exc}".rstrip()
    if kind != "Scheduler":
        raise ClusterError(
            f"{connection.target.url}: the remote port {scheduler_port} accepts connections but "
            f"it is not a Dask scheduler ({kind}): check scheduler_port= and that the "
            "scheduler's Dask version matches this one")
    connection.client = Client(connection.scheduler_address, timeout=timeout, **client_kwargs)


async def _identity(address: str, timeout: float) -> str:
    """What answers at ``address`` within ``timeout``: ``"Scheduler"`` for a Dask scheduler."""
    from distributed.comm import connect

    async def ask() -> Any:
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    reply = await asyncio.wait_for(ask(), timeout)  # connect alone may retry past timeout
    return str(reply.get("type")) if isinstance(reply, dict) else repr(reply)[:80]
