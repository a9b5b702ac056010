"""Two client processes share one scheduler, sending different work under the same op names
at the same time: each gets its own results (task keys are derived from the work, or unique
for a borrowed array, never from a per-process counter)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

distributed = pytest.importorskip("distributed")

#: no dashboard, and the scheduler's HTTP server (started regardless) on a free loopback
#: port: by default it tries 8787 first, and when another process holds that port the
#: failed bind leaves an unclosed socket, a ResourceWarning (an error in this suite)
QUIET_HTTP = {"dashboard_address": "127.0.0.1:0", "scheduler_kwargs": {"dashboard": False}}

# each client builds the same graph shapes and op names over its own data, many times over;
# ``same`` is work both clients send identically, which may share keys and must stay right
CLIENT = textwrap.dedent("""
    import sys
    import numpy as np
    import distributed
    import hermes_nb as hm

    address, factor = sys.argv[1], float(sys.argv[2])
    wrong = 0
    with distributed.Client(address):
        for round_ in range(8):
            data = np.arange(4096, dtype=np.float32).reshape(64, 64) * factor + round_
            same = np.linspace(0, 1, 4096, dtype=np.float32).reshape(64, 64)
            for copy in (True, None):
                x = hm.asarray(data, copy=copy)
                s = hm.asarray(same, copy=copy)
                got = hm.compute(((x * 2.0 + 1.0) ** 2).sum(axis=1), hm.exp(s) + x)
                want = (((data * 2 + 1) ** 2).sum(axis=1), np.exp(same) + data)
                wrong += sum(not np.allclose(g.numpy(), w, rtol=1e-5) for g, w in zip(got, want))
    print("wrong", wrong)
    sys.exit(1 if wrong else 0)
""")


@pytest.fixture(scope="module")
def scheduler_address() -> Iterator[str]:
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", **QUIET_HTTP)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def test_two_clients_with_different_work_both_get_theirs(scheduler_address: str) -> None:
    clients = [subprocess.Popen([sys.executable, "-c", CLIENT, scheduler_address, factor],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for factor in ("1.0", "-3.0")]
    outcomes = [c.communicate(timeout=300) for c in clients]
    for client, (out, err) in zip(clients, outcomes):
        assert client.returncode == 0, f"a client got wrong results or failed:\n{out}\n{err[-3000:]}"
        assert "wrong 0" in out
