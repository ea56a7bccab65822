#!/usr/bin/env python3
"""NumPy interoperability of `nnops run`: arrays saved by NumPy (every accepted layout) are read, and the
outputs load in NumPy with the reference values — and are byte for byte what np.save writes.

Needs numpy and ml_dtypes (scripts/install_deps.sh installs them); exits 77 — "skipped" for CTest — when
either is missing.

Usage: npy_interop.py --nnops PATH
"""

import argparse
import io
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import ml_dtypes
    import numpy as np
except ImportError as e:  # pragma: no cover - depends on the machine
    print("skipped: %s (run scripts/install_deps.sh to install numpy and ml_dtypes)" % e)
    sys.exit(77)

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyutil as nu  # noqa: E402

NNOPS = None
NP_DTYPE = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def np_save_bytes(a, version=None):
    b = io.BytesIO()
    if version is None:
        np.save(b, a)
    else:
        np.lib.format.write_array(b, a, version=version)
    return b.getvalue()


def load_as(path, dtype):
    """numpy.load, then the bfloat16 view: np.save stores bfloat16 as '<V2', so np.load returns void."""
    a = np.load(path)
    if dtype == "bfloat16":
        assert a.dtype.kind == "V" and a.dtype.itemsize == 2, a.dtype
        return a.view(ml_dtypes.bfloat16)
    assert a.dtype == NP_DTYPE[dtype], a.dtype
    return a


def layouts(a):
    """(label, bytes of a .npy file holding a) for every layout NumPy can write for it."""
    yield "plain", np_save_bytes(a)
    yield "v2.0", np_save_bytes(a, (2, 0))
    yield "v3.0", np_save_bytes(a, (3, 0))
    yield "fortran", np_save_bytes(np.asfortranarray(a))
    swapped = a.astype(a.dtype.newbyteorder(">"))
    yield "big-endian", np_save_bytes(swapped)
    yield "big-endian fortran", np_save_bytes(np.asfortranarray(swapped))


class Interop(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="nnops_interop_")
        self.dir = self._tmp.name
        self.rng = np.random.default_rng(11)

    def tearDown(self):
        self._tmp.cleanup()

    def p(self, name):
        return os.path.join(self.dir, name)

    def nnops(self, *args):
        r = subprocess.run([NNOPS] + list(args), cwd=self.dir, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def write(self, name, data):
        with open(self.p(name), "wb") as f:
            f.write(data)

    def gn_inputs(self, dtype, shape):
        t = NP_DTYPE[dtype]
        x = self.rng.uniform(-2, 2, shape).astype(t)
        dy = self.rng.uniform(-1, 1, shape).astype(t)
        gamma = self.rng.uniform(0.5, 1.5, shape).astype(t)
        xg = x.astype(np.float64).reshape(shape[0], shape[1], -1)
        mean = xg.mean(-1).astype(np.float32)
        rstd = (1 / np.sqrt(xg.var(-1) + 1e-5)).astype(np.float32)
        return x, dy, gamma, mean, rstd

    def gn_reference(self, x, dy, gamma, mean, rstd):
        n, g = mean.shape
        X, DY, G = (a.astype(np.float64).reshape(n * g, -1) for a in (x, dy, gamma))
        mu, rs = mean.astype(np.float64).reshape(-1, 1), rstd.astype(np.float64).reshape(-1, 1)
        m = X.shape[1]
        xhat = (X - mu) * rs
        s1 = (DY * G).sum(1, keepdims=True)
        s2 = (DY * G * xhat).sum(1, keepdims=True)
        ref = (rs / m) * G * (m * DY - s1 - xhat * s2)
        scale = (rs / m) * np.abs(G) * (m * np.abs(DY) + np.abs(s1) + np.abs(xhat * s2))
        return ref.reshape(x.shape), scale.reshape(x.shape)

    def test_group_normalization_grad_reads_numpy_and_writes_numpy(self):
        shape = (2, 3, 4, 9)
        for dtype in nu.DTYPES:
            x, dy, gamma, mean, rstd = self.gn_inputs(dtype, shape)
            ref, scale = self.gn_reference(x, dy, gamma, mean, rstd)
            ulp = np.vectorize(lambda v: nu.ulp(v, dtype))(ref)
            bound = ulp + nu.GN_BOUND_C * 2.0**-24 * scale
            for name, a in (("mean", mean), ("rstd", rstd)):
                np.save(self.p(name + ".npy"), a)
            for label, _ in layouts(x):
                with self.subTest(dtype=dtype, layout=label):
                    for name, a in (("x", x), ("dy", dy), ("gamma", gamma)):
                        self.write(name + ".npy", dict(layouts(a))[label])
                    self.nnops("run", "group_normalization_grad", "--x", "x.npy", "--dy", "dy.npy", "--gamma",
                               "gamma.npy", "--mean", "mean.npy", "--rstd", "rstd.npy", "--dx", "dx.npy", "--force")
                    dx = load_as(self.p("dx.npy"), dtype)
                    self.assertEqual(dx.shape, shape)
                    err = np.abs(dx.astype(np.float64) - ref)
                    self.assertTrue(np.all(err <= bound), "max err/bound %g" % np.max(err / bound))
                    # The file is exactly what np.save writes for the array.
                    with open(self.p("dx.npy"), "rb") as f:
                        self.assertEqual(f.read(), np_save_bytes(dx))

    def test_power_sign_in_place_round_trip(self):
        shape = (3, 257)
        lr, logbase, sign_decay, beta = 0.001, 1.0, 0.99, 0.9
        for dtype in nu.DTYPES:
            t = NP_DTYPE[dtype]
            var = self.rng.uniform(-1, 1, shape).astype(t)
            m = self.rng.uniform(-1e-2, 1e-2, shape).astype(t)
            grad = self.rng.uniform(-1e-2, 1e-2, shape).astype(t)
            for label, _ in layouts(var):
                with self.subTest(dtype=dtype, layout=label):
                    for name, a in (("var", var), ("m", m), ("grad", grad)):
                        self.write(name + ".npy", dict(layouts(a))[label])
                    # Scalars as NumPy 0-d and 1-element files.
                    np.save(self.p("lr.npy"), np.array(lr, dtype=t))
                    np.save(self.p("beta.npy"), np.array([beta], dtype=t))
                    self.nnops("run", "inplace_apply_power_sign", "--var", "var.npy", "--m", "m.npy", "--grad",
                               "grad.npy", "--lr", "lr.npy", "--logbase", str(logbase), "--sign-decay",
                               str(sign_decay), "--beta", "beta.npy")
                    s = [float(np.array(v, dtype=t).astype(np.float64)) for v in (lr, logbase, sign_decay, beta)]
                    v_ref, m_ref = nu.power_sign_reference(var.astype(np.float64).ravel().tolist(),
                                                           m.astype(np.float64).ravel().tolist(),
                                                           grad.astype(np.float64).ravel().tolist(), *s)
                    for name, ref in (("var", v_ref), ("m", m_ref)):
                        out = load_as(self.p(name + ".npy"), dtype)
                        self.assertEqual(out.shape, shape)
                        bad = nu.within_one_ulp(out.astype(np.float64).ravel().tolist(), ref, dtype)
                        self.assertIsNone(bad, "%s element %s" % (name, bad))
                        with open(self.p(name + ".npy"), "rb") as f:
                            self.assertEqual(f.read(), np_save_bytes(out))

    def test_power_sign_single_step_exact_bound(self):
        for dtype in nu.DTYPES:
            with self.subTest(dtype=dtype):
                t = NP_DTYPE[dtype]
                shape = (1000,)
                var = self.rng.uniform(-1, 1, shape).astype(t)
                m = self.rng.uniform(-1e-2, 1e-2, shape).astype(t)
                grad = self.rng.uniform(-1e-2, 1e-2, shape).astype(t)
                for name, a in (("var", var), ("m", m), ("grad", grad)):
                    np.save(self.p(name + ".npy"), a)
                self.nnops("run", "inplace_apply_power_sign", "--var", "var.npy", "--m", "m.npy", "--grad", "grad.npy",
                           "--lr", "0.01", "--logbase", "2", "--sign-decay", "0.5", "--beta", "0.8")
                s = [float(np.array(v, dtype=t).astype(np.float64)) for v in (0.01, 2, 0.5, 0.8)]
                v_ref, m_ref = nu.power_sign_reference(var.astype(np.float64).tolist(), m.astype(np.float64).tolist(),
                                                       grad.astype(np.float64).tolist(), *s)
                for name, ref in (("var", v_ref), ("m", m_ref)):
                    out = load_as(self.p(name + ".npy"), dtype).astype(np.float64).tolist()
                    self.assertIsNone(nu.within_one_ulp(out, ref, dtype), name)

    def test_bfloat16_header_as_numpy_writes_it(self):
        # The finding the reader is built on: np.save writes ml_dtypes.bfloat16 as descr '<V2'.
        raw = np_save_bytes(np.ones(3, dtype=ml_dtypes.bfloat16))
        self.assertIn(b"'descr': '<V2'", raw)


def main():
    global NNOPS
    ap = argparse.ArgumentParser()
    ap.add_argument("--nnops", required=True)
    args, rest = ap.parse_known_args()
    NNOPS = os.path.abspath(args.nnops)
    print("numpy %s, ml_dtypes %s" % (np.__version__, ml_dtypes.__version__))
    prog = unittest.main(argv=[sys.argv[0], "-v"] + rest, exit=False)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
