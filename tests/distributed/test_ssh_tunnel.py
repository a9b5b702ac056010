"""``hm.cluster.connect("ssh://...")`` against a real sshd and a Dask scheduler on this machine.

The fixtures start Debian's OpenSSH server on 127.0.0.1 (its own config, host key and a
throw-away ed25519 key pair in tmp, keys only) and a ``distributed.LocalCluster`` with one
worker process; the "remote" side is this machine, reached only through the tunnel's
forwarded port. Without ``/usr/sbin/sshd`` (``apt-get install openssh-server``) or asyncssh
the tests are skipped with the reason; with ``CI`` set they fail instead, because CI
installs both.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import importlib.util
import os
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.errors import ClusterError

distributed = pytest.importorskip("distributed")
SSHD = "/usr/sbin/sshd"  # sshd refuses to start from a relative path


def _require() -> None:
    if not os.path.exists(SSHD):
        reason = f"{SSHD} is missing (apt-get install openssh-server)"
    elif importlib.util.find_spec("asyncssh") is None:
        reason = "asyncssh is not installed (pip install asyncssh)"
    else:
        return
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"CI runs the SSH tunnel tests, but {reason}", pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "hermes-test", "-f",
                    str(path)], check=True)
    return path


@dataclass
class SSHServer:
    port: int
    user: str
    key: Path  # listed in authorized_keys
    wrong_key: Path  # not listed
    known_hosts: Path  # holds the server's host key for [127.0.0.1]:port
    other_known_hosts: Path  # holds some other host's key for the same name

    @property
    def url(self) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}"


def _wait_for_banner(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited: {log.read_text()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1) as s:
            if s.recv(8).startswith(b"SSH-"):
                return
        time.sleep(0.1)
    raise RuntimeError(f"sshd did not answer on port {port}: {log.read_text()}")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    _require()
    tmp = tmp_path_factory.mktemp("sshd")
    host_key, key, wrong = _keygen(tmp / "host_key"), _keygen(tmp / "id_ok"), _keygen(tmp / "id_wrong")
    other_host = _keygen(tmp / "other_host_key")
    (tmp / "authorized_keys").write_text((tmp / "id_ok.pub").read_text())
    port = _free_port()
    for name, pub in (("known_hosts", host_key), ("other_known_hosts", other_host)):
        kind, blob = Path(f"{pub}.pub").read_text().split()[:2]
        (tmp / name).write_text(f"[127.0.0.1]:{port} {kind} {blob}\n")
    (tmp / "sshd_config").write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}",
        f"AuthorizedKeysFile {tmp / 'authorized_keys'}", f"PidFile {tmp / 'sshd.pid'}",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
        "PermitRootLogin prohibit-password", "StrictModes no", "AllowTcpForwarding local",
        "LogLevel VERBOSE", ""]))
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # the privilege-separation directory
    log = tmp / "sshd.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(tmp / "sshd_config")],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for_banner(port, proc, log)
        yield SSHServer(port, getpass.getuser(), key, wrong, tmp / "known_hosts",
                        tmp / "other_known_hosts")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def dask_cluster() -> Iterator[distributed.LocalCluster]:
    with distributed.LocalCluster(host="127.0.0.1", processes=True, n_workers=1,
                                  threads_per_worker=1, scheduler_port=_free_port(),
                                  dashboard_address="127.0.0.1:0") as cluster:
        yield cluster


def _scheduler_port(cluster: distributed.LocalCluster) -> int:
    return int(cluster.scheduler_address.rsplit(":", 1)[1])


def test_graph_runs_on_the_remote_worker_through_the_tunnel(sshd: SSHServer, dask_cluster) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with hm.cluster.connect(sshd.url, _scheduler_port(dask_cluster), client_keys=sshd.key,
                            known_hosts=sshd.known_hosts) as client:
        assert distributed.default_client() is client
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
        assert client.scheduler.address != dask_cluster.scheduler_address  # the local end
        with distributed.get_task_stream(client=client) as stream:
            result = (hm.asarray(x) * 2 + 1).numpy()
        np.testing.assert_array_equal(result, x * 2 + 1)
        workers = set(dask_cluster.scheduler_info["workers"])
        assert stream.data and {task["worker"] for task in stream.data} <= workers
        assert set(client.run(os.getpid)) == workers
        remote = hm.devices(cluster=True)  # the remote workers' devices, asked through the tunnel
        assert {d.worker for d in remote} == workers and "cpu:0" in {d.id for d in remote}
        # only the scheduler is forwarded: a large input and its result go through it
        assert client.direct_to_workers is False
        big = np.random.default_rng(3).random((512, 1024), dtype=np.float32)  # 2 MiB
        np.testing.assert_array_equal((hm.asarray(big) - 0.5).numpy(), big - np.float32(0.5))
    with pytest.raises(ValueError):
        distributed.default_client()  # closing the connection closed its client


def test_forwarded_ports_bind_loopback_and_close_twice(sshd: SSHServer, dask_cluster) -> None:
    psutil = pytest.importorskip("psutil")
    dashboard = dask_cluster.scheduler.http_server.port
    connection = hm.cluster.connect(sshd.url, _scheduler_port(dask_cluster),
                                    dashboard_port=dashboard, client_keys=[sshd.key],
                                    known_hosts=None)  # the documented, unsafe opt-out
    try:
        local = set(connection.local_ports.values())
        assert len(local) == 2
        listening = [c.laddr for c in psutil.net_connections("tcp")
                     if c.status == psutil.CONN_LISTEN and c.laddr.port in local]
        assert listening and {addr.ip for addr in listening} == {"127.0.0.1"}
        health = connection.dashboard_link.replace("/status", "/health")
        with urllib.request.urlopen(health, timeout=10) as reply:
            assert reply.read() == b"ok"
    finally:
        connection.close()
    connection.close()
    assert connection.closed and connection.client.status == "closed"
    with socket.socket() as s:  # the forwarded port is gone with the tunnel
        assert s.connect_ex(("127.0.0.1", connection.local_ports[_scheduler_port(dask_cluster)])) != 0


def test_connect_from_inside_a_running_event_loop(sshd: SSHServer, dask_cluster) -> None:
    """A notebook's kernel runs its own asyncio loop; the tunnel's loop is its own thread's."""
    async def in_a_notebook() -> np.ndarray:
        with hm.cluster.connect(sshd.url, _scheduler_port(dask_cluster), client_keys=sshd.key,
                                known_hosts=sshd.known_hosts):
            return (hm.asarray(np.ones(5, np.float32)) + 1).numpy()

    # on a thread of its own: the loop this test starts is the only one running there,
    # whatever loop an earlier test left set on the main thread
    results: list[np.ndarray] = []
    runner = threading.Thread(target=lambda: results.append(asyncio.run(in_a_notebook())))
    runner.start()
    runner.join(timeout=120)
    assert results, "the tunnel did not answer from inside a running event loop"
    np.testing.assert_array_equal(results[0], np.full(5, 2, np.float32))


def test_wrong_key_is_an_authentication_error(sshd: SSHServer, dask_cluster) -> None:
    with pytest.raises(ClusterError, match="authentication") as info:
        hm.cluster.connect(sshd.url, _scheduler_port(dask_cluster), client_keys=sshd.wrong_key,
                           known_hosts=sshd.known_hosts)
    assert sshd.url in str(info.value)


def test_unknown_host_key_is_refused(sshd: SSHServer, dask_cluster) -> None:
    with pytest.raises(ClusterError, match="host key"):
        hm.cluster.connect(sshd.url, _scheduler_port(dask_cluster), client_keys=sshd.key,
                           known_hosts=sshd.other_known_hosts)


def test_no_scheduler_on_the_remote_port(sshd: SSHServer) -> None:
    port = _free_port()
    with pytest.raises(ClusterError, match=f"nothing accepts connections.*127.0.0.1:{port}") as info:
        hm.cluster.connect(sshd.url, port, client_keys=sshd.key, known_hosts=sshd.known_hosts)
    assert sshd.url in str(info.value)


def test_a_silent_service_on_the_remote_port_is_not_a_scheduler(sshd: SSHServer) -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        port = silent.getsockname()[1]
        with pytest.raises(ClusterError, match=f"remote port {port} .* not a Dask scheduler"):
            hm.cluster.connect(sshd.url, port, client_keys=sshd.key, known_hosts=sshd.known_hosts,
                               timeout=2)


def test_unreachable_host(sshd: SSHServer) -> None:
    url = f"ssh://{sshd.user}@127.0.0.1:{_free_port()}"
    with pytest.raises(ClusterError, match="cannot reach the SSH server") as info:
        hm.cluster.connect(url, client_keys=sshd.key, known_hosts=sshd.known_hosts, timeout=5)
    assert url in str(info.value)


def test_a_password_in_the_url_is_refused_and_never_repeated() -> None:
    with pytest.raises(ClusterError, match="password") as info:
        hm.cluster.connect("ssh://me:hunter2@example.invalid")
    assert "hunter2" not in str(info.value)
