"""torch.distributed: DistributedDataParallel on 2 processes (gloo, loopback) training with nnops GroupNorm and
PowerSign ends with identical parameters on both ranks, equal within bounds to one process on the whole batch."""

from __future__ import annotations

import math
import socket
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install .[torch])")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("this torch build has no gloo backend", allow_module_level=True)

SCRIPT = Path(__file__).with_name("ddp_train.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_two_processes(tmp_path):
    for args in (["ddp", str(free_port())], ["single"]):
        r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)] + args, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
    p0, p1, single = (torch.load(tmp_path / f"params_{k}.pt") for k in ("0", "1", "single"))
    # Both ranks applied the same all-reduced gradients with the same (deterministic) kernel.
    assert all(torch.equal(a, b) for a, b in zip(p0, p1))
    # Against one process on the whole batch: the averaged gradients differ from the whole-batch gradient only
    # by float32 rounding (relative ~1e-6), so each of the 6 steps moves a parameter by lr * e^(+-1) * g with
    # g equal to ~1e-6 relative, unless sign(m) * sign(g) differs, which takes a gradient within that rounding
    # of zero, where the step itself is that small. Bound: 6 steps * lr * e * 1e-5 (10x that relative error).
    bound = 6 * 0.01 * math.e * 1e-5
    worst = max((a - b).abs().max().item() for a, b in zip(p0, single))
    moved = max((a - b).abs().max().item() for a, b in zip(single, _initial()))
    assert worst <= bound, f"DDP and single-process parameters differ by {worst:.3g} (bound {bound:.3g})"
    assert moved > 100 * bound  # training really moved the parameters


def _initial():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import ddp_train

        return [p.detach() for p in ddp_train.make_model().parameters()]
    finally:
        sys.path.pop(0)
