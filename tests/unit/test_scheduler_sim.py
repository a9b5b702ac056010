"""The simulator, its DAGs and lower bound, and the quick benchmark's figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_nb.scheduler import Decision, Scheduler
from hermes_nb.scheduler.sim import (
    CPU,
    DAG,
    GPU,
    SimDevice,
    Task,
    cholesky_dag,
    image_pipelines,
    lower_bound,
    mix,
    random_layered_dag,
    simulate,
)

REPO = Path(__file__).resolve().parents[2]


def chain(works: list[float], kind: str = "matmul") -> DAG:
    tasks = [Task(f"t{i}", kind, kind, w, 1024, (i - 1,) if i else ()) for i, w in enumerate(works)]
    return DAG.build("chain", tasks)


def test_cholesky_has_the_textbook_task_counts():
    n = 5
    dag = cholesky_dag(n, tile=256)
    kinds = [t.kind for t in dag.tasks]
    assert kinds.count("potrf") == n
    assert kinds.count("trsm") == kinds.count("syrk") == n * (n - 1) // 2
    assert kinds.count("gemm") == n * (n - 1) * (n - 2) // 6
    gemm = next(t for t in dag.tasks if t.kind == "gemm")
    assert len(gemm.deps) + len(gemm.host_bytes) == 3  # C(i,j) and A(i,k), A(j,k)
    assert dag.successors[0]  # potrf(0) feeds the first column's trsm


def test_generators_are_deterministic_dags():
    assert random_layered_dag(6, 8, seed=4) == random_layered_dag(6, 8, seed=4)
    assert random_layered_dag(6, 8, seed=4) != random_layered_dag(6, 8, seed=5)
    images = image_pipelines(3)
    assert len(images) == 15 and images.tasks[0].kind == "decode"
    with pytest.raises(ValueError, match="topological"):
        DAG.build("bad", [Task("a", "x", "x", 1.0, 1, (1,)), Task("b", "x", "x", 1.0, 1)])


def test_lower_bound_critical_path_and_area():
    fast = SimDevice("gpu", {"matmul": 4.0}, link_gbps=16)
    devices = mix(CPU, fast)
    lb = lower_bound(chain([1.0, 2.0, 3.0]), devices)
    assert lb.critical_path_s == pytest.approx(6.0 / 4)  # each task at its fastest device
    wide = DAG.build("wide", [Task(f"t{i}", "matmul", "matmul", 1.0, 8) for i in range(10)])
    lb = lower_bound(wide, devices)
    # LP: the devices together do 1 + 4 = 5 units of work per second → 10 / 5
    assert lb.area_s == pytest.approx(2.0) and lb.value == pytest.approx(2.0)
    assert lb.area_s >= sum(0.25 for _ in range(10)) / 2  # never weaker than sum(min)/devices
    with pytest.raises(ValueError, match="no device can run"):
        lower_bound(chain([1.0], kind="decode"), [SimDevice("gpu", {"matmul": 1.0})])


def test_single_device_makespan_is_the_total_work():
    dag = chain([0.5, 0.25, 0.25])
    res = simulate(dag, [CPU], "auto", noise=0.0)
    assert res.makespan == pytest.approx(1.0)
    assert res.tasks_per_device["cpu:0"] == 3


def test_simulator_places_with_the_policy_code_and_calibrates_visibly():
    dag = cholesky_dag(6)
    devices = mix(CPU, GPU)
    sched = Scheduler(None, overlap_copies=True)
    first = simulate(dag, devices, "auto", scheduler=sched, outliers=0.05, seed=1, keep_decisions=True)
    assert all(isinstance(d, Decision) for d in first.decisions)
    explored = {(d.kernel.signature, d.device) for d in first.decisions if d.calibrating}
    assert explored == {(f"sim:{k}", dev.id) for k in ("potrf", "trsm", "syrk", "gemm") for dev in devices}
    second = simulate(dag, devices, "auto", scheduler=sched, seed=2)
    assert second.calibrating == 0 and second.makespan < first.makespan
    # the model learnt the GPU's speed-up on gemm despite 5% of runs being 10× slow
    gemm = next(d for d in first.decisions if d.kernel.signature == "sim:gemm").kernel
    cpu, gpu = (sched.model.estimate(gemm, d.id).seconds for d in devices)
    assert cpu / gpu == pytest.approx(30, rel=0.15)  # type: ignore[operator]


def test_auto_beats_round_robin_on_a_heterogeneous_mix():
    dag = random_layered_dag(6, 8, seed=7)
    devices = mix(CPU, GPU)
    results = {}
    for policy in ("auto", "round_robin"):
        sched = Scheduler(None, overlap_copies=True)
        simulate(dag, devices, policy, scheduler=sched, seed=1)
        results[policy] = simulate(dag, devices, policy, scheduler=sched, seed=2).makespan
    assert results["round_robin"] > 1.5 * results["auto"]
    assert results["auto"] <= 1.25 * lower_bound(dag, devices).value


@pytest.mark.timeout(300)
def test_quick_benchmark_meets_the_figures(tmp_path):
    out = tmp_path / "sim.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.scheduler_sim", "--quick", "--check", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "figures: all met" in proc.stdout
    data = json.loads(out.read_text())
    rows = data["rows"]
    assert {r["policy"] for r in rows} == {"auto", "fastest", "round_robin", "cpu"}
    by_key = {(r["dag"], r["mix"], r["policy"]): r for r in rows}
    assert data["overhead_us"] <= 100
    for r in rows:
        if r["policy"] != "auto":
            continue
        assert r["ratio"] <= 1.25, r
        if r["heterogeneous"]:
            assert by_key[(r["dag"], r["mix"], "round_robin")]["makespan_s"] >= 1.5 * r["makespan_s"], r
