"""examples/python/train_digits.py: the nnops variant (nnops GroupNorm + PowerSign) reaches >= 95% test accuracy."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install .[torch])")
pytest.importorskip("sklearn", reason="scikit-learn is not installed (scripts/install_deps.sh installs it)")
pytest.importorskip("tqdm", reason="tqdm is not installed (scripts/install_deps.sh installs it)")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python"


def test_train_digits_reaches_95_percent():
    sys.path.insert(0, str(EXAMPLE))
    try:
        import train_digits
    finally:
        sys.path.pop(0)
    import torch

    threads = torch.get_num_threads()
    try:  # one thread: on a loaded 2-core machine, 2-thread OpenMP regions of tiny ops wait on each other
        results = train_digits.main(["--epochs", "20", "--variants", "nnops", "--threads", "1"])
    finally:
        torch.set_num_threads(threads)
    acc, times = results["nnops"]
    assert acc >= 0.95, f"test accuracy {acc:.3f}"
    assert len(times) == 20
