"""Placement decisions: estimates, load, calibration, failures, co-execution."""

from __future__ import annotations

import pytest

import hermes_nb as hm
from hermes_nb.scheduler import (
    DeviceRate,
    InputData,
    KernelInfo,
    NoHealthyDevice,
    Scheduler,
    kernel_info,
    kernel_info_of,
    plan_split,
    split_rows,
)
from hermes_nb.scheduler.model import Link

DEVICES = ["cpu:0", "opencl:0", "cuda:0"]
TIMES = {"cpu:0": 9e-3, "opencl:0": 4e-3, "cuda:0": 1e-3}
K = KernelInfo("matmul:float32/2,2#t", "1024x1024", nbytes=12 << 20, flops=2e9,
               in_bytes=(4 << 20, 4 << 20), out_bytes=4 << 20, rows=1024)


def calibrated(times: dict[str, float] = TIMES, kernel: KernelInfo = K) -> Scheduler:
    sched = Scheduler(None)
    for device, t in times.items():
        for _ in range(sched.calibration_runs):
            sched.observe(kernel, device, t)
    return sched


def test_unknown_policy_names_the_choices():
    with pytest.raises(ValueError, match="auto, fastest, round_robin, cpu"):
        calibrated().decide(K, DEVICES, policy="quickest")


def test_auto_chooses_the_fastest_estimate_and_explains_why():
    d = calibrated().decide(K, DEVICES, policy="auto")
    assert d.device == "cuda:0" and d.policy == "auto" and not d.calibrating
    assert "earliest finish: cuda:0" in d.reason
    assert {c.device: c.run_s for c in d.candidates} == TIMES
    assert all(c.source == "history" for c in d.candidates)
    assert d.ranking() == ["cuda:0", "opencl:0", "cpu:0"]
    assert d.estimate_s == 1e-3
    assert "* cuda:0" in d.table() and str(d).startswith("cuda:0 (auto)")


def test_the_current_hm_policy_is_used_by_default():
    sched = calibrated()
    with hm.policy("cpu"):
        assert sched.decide(K, DEVICES).device == "cpu:0"
    assert sched.decide(K, DEVICES).device == "cuda:0"


def test_load_shifts_work_to_an_idle_device():
    sched = calibrated()
    busy = {"cuda:0": 6e-3, "opencl:0": 0.0, "cpu:0": 0.0}
    d = sched.decide(K, DEVICES, policy="auto", wait_s=busy)
    assert d.device == "opencl:0"
    assert "cuda:0 runs faster but loses to busy" in d.reason
    assert sched.decide(K, DEVICES, policy="fastest", wait_s=busy).device == "cuda:0"  # ignores load


def test_copies_count_and_resident_data_is_free():
    sched = calibrated({"cpu:0": 2e-3, "cuda:0": 1e-3})
    sched.transfers.set_link("cuda:0", Link(10e-6, 4e9, 10e-6, 4e9))
    on_host = [InputData(4 << 20, ("cpu:0",)), InputData(4 << 20, ("cpu:0",))]
    d = sched.decide(K, ["cpu:0", "cuda:0"], policy="auto", inputs=on_host)
    assert d.device == "cpu:0"  # 2 ms of copies outweigh the 1 ms saved
    assert d.chosen.transfer_s == 0.0
    on_gpu = [InputData(4 << 20, ("cuda:0",)), InputData(4 << 20, ("cuda:0", "cpu:0"))]
    assert sched.decide(K, ["cpu:0", "cuda:0"], policy="auto", inputs=on_gpu).device == "cuda:0"


def test_round_robin_cycles_and_dry_runs_do_not_take_a_turn():
    sched = calibrated()
    assert sched.decide(K, DEVICES, policy="round_robin", commit=False).device == "cpu:0"
    chosen = [sched.decide(K, DEVICES, policy="round_robin").device for _ in range(4)]
    assert chosen == ["cpu:0", "opencl:0", "cuda:0", "cpu:0"]


def test_cpu_policy_and_pinning():
    sched = calibrated()
    assert sched.decide(K, DEVICES, policy="cpu").device == "cpu:0"
    d = sched.decide(K, DEVICES, policy="auto", pinned="opencl:0")
    assert d.device == "opencl:0" and d.policy == "pinned" and "pinned" in d.reason
    assert len(d.candidates) == 3  # estimates still shown for explain()


def test_calibration_explores_every_device_visibly():
    sched = Scheduler(None)
    seen: dict[str, int] = {}
    for _ in range(3 * sched.calibration_runs):
        d = sched.decide(K, DEVICES, policy="auto")
        assert d.calibrating and d.reason.startswith(f"calibrating: {d.device}")
        seen[d.device] = seen.get(d.device, 0) + 1
        sched.record(d, TIMES[d.device])
    assert seen == dict.fromkeys(DEVICES, sched.calibration_runs)
    d = sched.decide(K, DEVICES, policy="auto")
    assert not d.calibrating and d.device == "cuda:0"


def test_calibration_counts_runs_in_flight():
    sched = Scheduler(None, calibration_runs=2)
    placed = [sched.decide(K, DEVICES, policy="fastest") for _ in range(6)]  # none finished yet
    assert sorted(d.device for d in placed) == sorted(DEVICES * 2)
    d = sched.decide(K, DEVICES, policy="auto")
    assert d.calibrating and "no estimate yet" in d.reason


def test_a_failing_pair_becomes_unhealthy_and_the_next_best_runs():
    sched = calibrated()
    first = sched.decide(K, DEVICES, policy="auto")
    assert first.device == "cuda:0"
    retry = sched.failed(first, RuntimeError("CUDA_ERROR_OUT_OF_MEMORY"))
    assert retry is not None and retry.device == "opencl:0" and retry.policy == "fallback"
    assert "cuda:0 failed" in retry.reason
    assert not sched.health.healthy(K.signature, "cuda:0")
    again = sched.decide(K, DEVICES, policy="auto")
    assert again.device == "opencl:0"
    assert not next(c for c in again.candidates if c.device == "cuda:0").healthy
    other = KernelInfo("add:float32/1,1#x", "10", 80)  # only the pair is unhealthy
    assert sched.health.healthy(other.signature, "cuda:0")
    assert sched.failed(again, "build failed").device == "cpu:0"  # type: ignore[union-attr]
    last = sched.decide(K, DEVICES, policy="round_robin")
    assert sched.failed(last) is None
    with pytest.raises(NoHealthyDevice, match="OUT_OF_MEMORY"):
        sched.decide(K, DEVICES, policy="auto")


def test_split_rows_follows_throughput():
    plan = split_rows(1000, [DeviceRate("cpu:0", 3e-6), DeviceRate("cuda:0", 1e-6)])
    assert plan.ranges == [("cpu:0", 0, 250), ("cuda:0", 250, 1000)]
    assert plan.coexecute and plan.gain == pytest.approx(4 / 3)
    three = split_rows(700, [DeviceRate("a:0", 1e-3), DeviceRate("b:0", 2e-3), DeviceRate("c:0", 4e-3)])
    assert [s.rows for s in three.shares] == [400, 200, 100]
    assert max(s.est_s for s in three.shares) == pytest.approx(0.4)


def test_split_accounts_for_fixed_costs_alignment_and_small_gains():
    plan = split_rows(1024, [DeviceRate("cpu:0", 2e-6), DeviceRate("cuda:0", 1e-6, fixed_s=0.5e-3)], align=64)
    assert all(s.start % 64 == 0 for s in plan.shares) and plan.shares[-1].stop == 1024
    # equal finish: 2e-6·c = 0.5e-3 + 1e-6·(1024 − c) → c ≈ 508 rows on the cpu
    assert plan.shares[0].rows == 512
    lopsided = split_rows(1000, [DeviceRate("cpu:0", 100e-6), DeviceRate("cuda:0", 1e-6)])
    assert not lopsided.coexecute and lopsided.ranges == [("cuda:0", 0, 1000)]
    assert "gain only" in lopsided.reason
    late = split_rows(1000, [DeviceRate("cpu:0", 1e-6), DeviceRate("cuda:0", 1e-6, fixed_s=5e-3)])
    assert late.ranges == [("cpu:0", 0, 1000)]  # cuda's fixed cost exceeds the whole run


def test_plan_split_uses_estimates_and_transfer_costs():
    times = {"cpu:0": 8e-3, "cuda:0": 4e-3}
    sched = calibrated(times)
    plan = plan_split(sched, K, ["cpu:0", "cuda:0"], inputs=[InputData(8 << 20, ("cpu:0",))])
    assert plan.coexecute
    cpu_rows = plan.shares[0].rows
    sched.transfers.set_link("cuda:0", Link(10e-6, 1e9, 10e-6, 1e9))  # a slow link: fewer rows to cuda
    slow = plan_split(sched, K, ["cpu:0", "cuda:0"], inputs=[InputData(8 << 20, ("cpu:0",))])
    assert slow.ranges[0][0] == "cpu:0" and slow.shares[0].rows > cpu_rows
    with pytest.raises(ValueError, match="no calibrated"):
        plan_split(Scheduler(None), K, ["cpu:0", "cuda:0"])


def test_kernel_info_is_size_free_in_its_signature():
    a = kernel_info("add", (64, 64), "float32", [(64, 64), (64, 64)])
    b = kernel_info("add", (128, 128), "float32", [(128, 128), (128, 128)])
    c = kernel_info("add", (64, 64), "float64", [(64, 64), (64, 64)])
    assert a.signature == b.signature != c.signature and a.size_key != b.size_key
    assert a.nbytes == 3 * 64 * 64 * 4 and a.rows == 64
    node = (hm.ones((8, 4)) @ hm.ones((4, 2))).node
    info = kernel_info_of(node)
    assert info.signature.startswith("matmul:float") and info.flops == 2 * 8 * 2 * 4
