#!/usr/bin/env python3
"""End-to-end tests of `nnops run` and `nnops check` through the real binary, with plain Python only.

Usage: cli_e2e.py --nnops PATH [--part run|errors|atomic|check] [unittest args]

Inputs are written by the independent writer in npyutil.py; outputs are compared with float64 references
written here in Python under the bounds of docs/semantics.md. Every error case checks the exit status, that stderr is
exactly one line with the expected message, and that the directory (names and bytes) is unchanged.
"""

import argparse
import os
import random
import stat
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyutil as nu  # noqa: E402

NNOPS = None  # set in main()


def run_nnops(args, cwd, env_extra=None):
    env = dict(os.environ)
    env.pop("NNOPS_TEST_CRASH_AFTER_TEMP", None)
    env.setdefault("NNOPS_NUM_THREADS", "2")
    if env_extra:
        env.update(env_extra)
    return subprocess.run([NNOPS] + list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def snapshot(d):
    """{name: bytes} of every file in d (including hidden temporaries)."""
    out = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as f:
                out[name] = f.read()
        else:
            out[name] = None
    return out


def rand_values(rng, n, lo, hi, dtype):
    return [nu.round_to(rng.uniform(lo, hi), dtype) for _ in range(n)]


class Case(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="nnops_cli_")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_ok(self, args, env=None):
        r = run_nnops(args, self.dir, env)
        self.assertEqual(r.returncode, 0, "nnops %s\nstdout: %s\nstderr: %s" % (" ".join(args), r.stdout, r.stderr))
        return r

    def assert_error(self, args, code, pattern, env=None):
        """Runs nnops expecting `code`, one stderr line matching `pattern`, and no file changed."""
        before = snapshot(self.dir)
        r = run_nnops(args, self.dir, env)
        self.assertEqual(r.returncode, code, "nnops %s\nstderr: %s" % (" ".join(args), r.stderr))
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, "expected one line on stderr, got: %r" % r.stderr)
        self.assertRegex(lines[0], pattern)
        self.assertEqual(snapshot(self.dir), before, "files changed by a failed call")
        return lines[0]

    # -- data sets --------------------------------------------------------------------------------------

    def make_gn(self, dtype, shape, stat_dtype="float32", seed=1, **npy_kw):
        """Writes x, dy, gamma, mean, rstd; returns their values."""
        rng = random.Random(seed)
        n = nu.numel(shape)
        groups, m = shape[0] * shape[1], nu.numel(shape[2:])
        x = rand_values(rng, n, -2, 2, dtype)
        dy = rand_values(rng, n, -1, 1, dtype)
        gamma = rand_values(rng, n, 0.5, 1.5, dtype)
        mean, rstd = [], []
        for g in range(groups):
            xs = x[g * m : (g + 1) * m]
            mu = sum(xs) / m
            var = sum((v - mu) ** 2 for v in xs) / m
            mean.append(nu.round_to(mu, stat_dtype))
            rstd.append(nu.round_to(1 / (var + 1e-5) ** 0.5, stat_dtype))
        for name, vals in (("x", x), ("dy", dy), ("gamma", gamma)):
            nu.write_npy(self.path(name + ".npy"), vals, dtype, shape, **npy_kw)
        for name, vals in (("mean", mean), ("rstd", rstd)):
            nu.write_npy(self.path(name + ".npy"), vals, stat_dtype, shape[:2], **npy_kw)
        return x, dy, gamma, mean, rstd

    GN_ARGS = ["run", "group_normalization_grad", "--x", "x.npy", "--dy", "dy.npy", "--gamma", "gamma.npy",
               "--mean", "mean.npy", "--rstd", "rstd.npy", "--dx", "dx.npy"]

    def make_ps(self, dtype, shape, seed=2, **npy_kw):
        rng = random.Random(seed)
        n = nu.numel(shape)
        var = rand_values(rng, n, -1, 1, dtype)
        m = rand_values(rng, n, -1e-2, 1e-2, dtype)
        grad = rand_values(rng, n, -1e-2, 1e-2, dtype)
        # Exercise sign(m_new) = 0 / sign(grad) = 0 too.
        if n > 4:
            grad[1] = 0.0
            m[2] = 0.0
            grad[2] = 0.0
        for name, vals in (("var", var), ("m", m), ("grad", grad)):
            nu.write_npy(self.path(name + ".npy"), vals, dtype, shape, **npy_kw)
        return var, m, grad

    PS_SCALARS = {"lr": 0.001, "logbase": 1.0, "sign_decay": 0.99, "beta": 0.9}
    PS_ARGS = ["run", "inplace_apply_power_sign", "--var", "var.npy", "--m", "m.npy", "--grad", "grad.npy",
               "--lr", "0.001", "--logbase", "1.0", "--sign-decay", "0.99", "--beta", "0.9"]

    def ps_scalars(self, dtype):
        return {k: nu.round_to(v, dtype) for k, v in self.PS_SCALARS.items()}


class RunTests(Case):
    """Round trips against float64 references, each dtype; multi-step; formats."""

    def check_gn(self, dtype, shape, stat_dtype="float32"):
        x, dy, gamma, mean, rstd = self.make_gn(dtype, shape, stat_dtype)
        r = self.run_ok(self.GN_ARGS)
        self.assertIn("wrote dx.npy", r.stdout)
        odt, oshape, dx, header = nu.read_npy(self.path("dx.npy"))
        self.assertEqual((odt, oshape), (dtype, tuple(shape)))
        ref, scale = nu.gn_grad_reference(x, dy, gamma, mean, rstd, shape)
        bad = nu.gn_grad_within_bound(dx, ref, scale, dtype)
        if bad is not None:
            self.fail("dx[%d] = %r, reference %r" % (bad, dx[bad], ref[bad]))

    def test_gn_each_dtype(self):
        for dtype in nu.DTYPES:
            with self.subTest(dtype=dtype):
                self.check_gn(dtype, [2, 3, 4, 37])
                os.remove(self.path("dx.npy"))

    def test_gn_stats_in_x_dtype_and_two_blocks(self):
        # M = 2100 > 2048 elements per reduction block: the sums span two blocks.
        self.check_gn("bfloat16", [1, 2, 2100], stat_dtype="bfloat16")

    def test_gn_threads_do_not_change_result(self):
        self.make_gn("float16", [2, 4, 600])
        self.run_ok(self.GN_ARGS + ["--threads", "1"])
        with open(self.path("dx.npy"), "rb") as f:
            one = f.read()
        self.run_ok(self.GN_ARGS + ["--threads", "3", "--force"])
        with open(self.path("dx.npy"), "rb") as f:
            self.assertEqual(f.read(), one)

    def test_gn_in_place_over_dy(self):
        x, dy, gamma, mean, rstd = self.make_gn("float32", [1, 2, 3, 5])
        args = list(self.GN_ARGS)
        args[args.index("dx.npy")] = "dy.npy"
        self.run_ok(args + ["--force"])
        _, _, dx, _ = nu.read_npy(self.path("dy.npy"))
        ref, scale = nu.gn_grad_reference(x, dy, gamma, mean, rstd, [1, 2, 3, 5])
        self.assertIsNone(nu.gn_grad_within_bound(dx, ref, scale, "float32"))

    def test_ps_each_dtype(self):
        for dtype in nu.DTYPES:
            with self.subTest(dtype=dtype):
                var, m, grad = self.make_ps(dtype, [7, 149])
                r = self.run_ok(self.PS_ARGS)
                self.assertIn("updated var.npy and m.npy", r.stdout)
                s = self.ps_scalars(dtype)
                var_ref, m_ref = nu.power_sign_reference(var, m, grad, s["lr"], s["logbase"], s["sign_decay"],
                                                         s["beta"])
                for name, ref in (("var", var_ref), ("m", m_ref)):
                    odt, oshape, out, _ = nu.read_npy(self.path(name + ".npy"))
                    self.assertEqual((odt, oshape), (dtype, (7, 149)))
                    bad = nu.within_one_ulp(out, ref, dtype)
                    if bad is not None:
                        self.fail("%s[%d] = %r, reference %r" % (name, bad, out[bad], ref[bad]))

    def test_ps_multi_step_equals_repeated_single_steps(self):
        for dtype in nu.DTYPES:
            with self.subTest(dtype=dtype):
                self.make_ps(dtype, [1001])
                for _ in range(3):
                    self.run_ok(self.PS_ARGS)
                single = snapshot(self.dir)
                self.make_ps(dtype, [1001])
                self.run_ok(self.PS_ARGS + ["--steps", "3"])
                self.assertEqual(snapshot(self.dir), single)

    def test_ps_scalars_from_files_equal_numbers(self):
        for shape in ([], [1]):
            with self.subTest(scalar_shape=shape):
                self.make_ps("float16", [300])
                self.run_ok(self.PS_ARGS)
                by_number = snapshot(self.dir)
                self.make_ps("float16", [300])
                s = self.ps_scalars("float16")
                args = self.PS_ARGS[:8]
                for opt, key in (("--lr", "lr"), ("--logbase", "logbase"), ("--sign-decay", "sign_decay"),
                                 ("--beta", "beta")):
                    nu.write_npy(self.path(key + ".npy"), [s[key]], "float16", shape)
                    args += [opt, key + ".npy"]
                self.run_ok(args)
                after = snapshot(self.dir)
                for name in ("var.npy", "m.npy"):
                    self.assertEqual(after[name], by_number[name])
                for key in s:
                    os.remove(self.path(key + ".npy"))

    def test_ps_rank0_and_empty(self):
        self.make_ps("float32", [])
        self.run_ok(self.PS_ARGS)
        self.assertEqual(nu.read_npy(self.path("var.npy"))[1], ())
        self.make_ps("float32", [0, 3])
        before = snapshot(self.dir)
        r = self.run_ok(self.PS_ARGS)
        self.assertIn("nothing to update", r.stdout)
        self.assertEqual(snapshot(self.dir), before)

    def test_group_norm_and_backward_round_trip(self):
        # Forward on .npy files, then the backward on the forward's outputs, both against float64 references
        # in Python (bound: one ulp of T plus 8 * 2^-24 of the terms, docs/semantics.md).
        shape, groups = [2, 6, 5], 3
        for dtype in ("float32", "float16", "bfloat16"):
            with self.subTest(dtype=dtype):
                rng = random.Random(3)
                n = nu.numel(shape)
                x = rand_values(rng, n, -2, 3, dtype)
                gamma = rand_values(rng, 6, -1.5, 1.5, "float32")
                beta = rand_values(rng, 6, -0.5, 0.5, "float32")
                dy = rand_values(rng, n, -1, 1, dtype)
                nu.write_npy(self.path("x.npy"), x, dtype, shape)
                nu.write_npy(self.path("dy.npy"), dy, dtype, shape)
                nu.write_npy(self.path("g.npy"), gamma, "float32", [6])
                nu.write_npy(self.path("b.npy"), beta, "float32", [6])
                r = self.run_ok(["run", "group_norm", "--x", "x.npy", "--gamma", "g.npy", "--beta", "b.npy",
                                 "--num-groups", str(groups), "--out", "out.npy", "--mean", "mean.npy",
                                 "--rstd", "rstd.npy", "--float32-stats", "--force"])
                self.assertIn("group_norm: wrote out.npy (%s [2, 6, 5]), mean.npy (float32 [2, 3]) and rstd.npy" %
                              dtype, r.stdout)
                out, scale, mean, rstd = nu.group_norm_reference(x, gamma, beta, shape, groups)
                got_dt, got_shape, got, _ = nu.read_npy(self.path("out.npy"))
                self.assertEqual((got_dt, got_shape), (dtype, tuple(shape)))
                self.assertIsNone(nu.gn_grad_within_bound(got, out, scale, dtype))
                got_mean = nu.read_npy(self.path("mean.npy"))[2]
                for a, b in zip(got_mean, mean):
                    self.assertLessEqual(abs(a - b), nu.ulp(b, "float32") + 1e-6)
                mean32 = nu.read_npy(self.path("mean.npy"))[2]
                rstd32 = nu.read_npy(self.path("rstd.npy"))[2]
                # Only dgamma and dbeta: the outputs given are the ones computed.
                r = self.run_ok(["run", "group_norm_backward", "--dy", "dy.npy", "--x", "x.npy", "--mean", "mean.npy",
                                 "--rstd", "rstd.npy", "--gamma", "g.npy", "--num-groups", str(groups),
                                 "--dgamma", "dg.npy", "--dbeta", "db.npy", "--force"])
                self.assertFalse(os.path.exists(self.path("dx.npy")))
                dx, dx_scale, dgamma, dbeta = nu.group_norm_backward_reference(dy, x, mean32, rstd32, gamma, shape,
                                                                               groups)
                for name, ref in (("dg.npy", dgamma), ("db.npy", dbeta)):
                    got = nu.read_npy(self.path(name))[2]
                    for a, b in zip(got, ref):
                        self.assertLessEqual(abs(a - b), nu.ulp(b, "float32") + 8 * 2.0 ** -24 * (1 + abs(b)) * 32)
                # dx written over dy (its declared alias).
                self.run_ok(["run", "group_norm_backward", "--dy", "dy.npy", "--x", "x.npy", "--mean", "mean.npy",
                             "--rstd", "rstd.npy", "--gamma", "g.npy", "--num-groups", str(groups), "--dx", "dy.npy",
                             "--force"])
                self.assertIsNone(nu.gn_grad_within_bound(nu.read_npy(self.path("dy.npy"))[2], dx, dx_scale, dtype))

    def test_formats_versions_big_endian_fortran(self):
        shape = [2, 3, 4, 5]
        self.make_gn("float32", shape)
        self.run_ok(self.GN_ARGS)
        with open(self.path("dx.npy"), "rb") as f:
            expected = f.read()
        variants = [
            ({"version": (2, 0)}, None),
            ({"version": (3, 0)}, None),
            ({"big_endian": True}, "big-endian '>f4' converted to little-endian"),
            ({"fortran": True}, "Fortran-order array converted to C order"),
            ({"big_endian": True, "fortran": True, "version": (2, 0)}, "Fortran-order"),
        ]
        for kw, note in variants:
            with self.subTest(**{k: str(v) for k, v in kw.items()}):
                os.remove(self.path("dx.npy"))
                self.make_gn("float32", shape, **kw)
                r = self.run_ok(self.GN_ARGS)
                with open(self.path("dx.npy"), "rb") as f:
                    self.assertEqual(f.read(), expected)
                if note:
                    self.assertIn("nnops: note: --x x.npy: ", r.stderr)
                    self.assertIn(note, r.stderr)
                else:
                    self.assertEqual(r.stderr, "")

    def test_big_endian_half_and_bfloat16_in_place(self):
        for dtype in ("float16", "bfloat16"):
            with self.subTest(dtype=dtype):
                self.make_ps(dtype, [5, 33])
                self.run_ok(self.PS_ARGS)
                expected = snapshot(self.dir)
                self.make_ps(dtype, [5, 33], big_endian=True, fortran=True)
                r = self.run_ok(self.PS_ARGS)
                self.assertIn("big-endian '>%s'" % nu.DESCR[dtype], r.stderr)
                got = snapshot(self.dir)
                # Rewritten little-endian, C order: the very bytes of the plain run.
                self.assertEqual(got["var.npy"], expected["var.npy"])
                self.assertEqual(got["m.npy"], expected["m.npy"])

    def test_output_header_is_numpy_style(self):
        self.make_gn("bfloat16", [1, 2, 3])
        self.run_ok(self.GN_ARGS)
        with open(self.path("dx.npy"), "rb") as f:
            raw = f.read()
        # np.save's layout: 1.0, '<V2' for bfloat16, the data at a multiple of 64 bytes.
        self.assertEqual(raw[:8], b"\x93NUMPY\x01\x00")
        hlen = raw[8] | raw[9] << 8
        self.assertEqual((10 + hlen) % 64, 0)
        expected = b"{'descr': '<V2', 'fortran_order': False, 'shape': (1, 2, 3), }"
        self.assertTrue(raw[10 : 10 + hlen].startswith(expected))
        self.assertEqual(len(raw), 10 + hlen + 6 * 2)


class ErrorTests(Case):
    """Every bad input: exit status, one line, nothing written."""

    def setUp(self):
        super().setUp()
        self.make_gn("float32", [2, 3, 4])

    def corrupt_x(self, data):
        with open(self.path("x.npy"), "wb") as f:
            f.write(data)

    def x_bytes(self):
        with open(self.path("x.npy"), "rb") as f:
            return f.read()

    def test_missing_file(self):
        args = list(self.GN_ARGS)
        args[args.index("x.npy")] = "nope.npy"
        self.assert_error(args, 1, r"^nnops: error: --x nope\.npy: No such file or directory$")

    def test_directory_as_input(self):
        os.mkdir(self.path("sub"))
        args = list(self.GN_ARGS)
        args[args.index("gamma.npy")] = "sub"
        self.assert_error(args, 1, r"^nnops: error: --gamma sub: is a directory")

    def test_not_npy(self):
        self.corrupt_x(b"x,y\n1,2\n")
        self.assert_error(self.GN_ARGS, 1, r"^nnops: error: --x x\.npy: not an \.npy file")
        self.corrupt_x(b"")
        self.assert_error(self.GN_ARGS, 1, r"--x x\.npy: not an \.npy file")

    def test_truncated_header(self):
        good = self.x_bytes()
        for cut in (3, 9, 40):
            with self.subTest(cut=cut):
                self.corrupt_x(good[:cut])
                self.assert_error(self.GN_ARGS, 1, r"^nnops: error: --x x\.npy: truncated \.npy header")

    def test_truncated_data(self):
        self.corrupt_x(self.x_bytes()[:-3])
        self.assert_error(self.GN_ARGS, 1,
                          r"^nnops: error: --x x\.npy: truncated data: shape \[2, 3, 4\] of '<f4' needs 96 bytes "
                          r"of data; the file has 93$")

    def test_header_shape_does_not_match_file_size(self):
        self.corrupt_x(self.x_bytes() + b"\0\0\0\0")
        self.assert_error(self.GN_ARGS, 1, r"--x x\.npy: the header does not match the file size: .* needs 96 bytes "
                                           r"of data; the file has 100 \(4 too many\)$")

    def test_element_count_overflow(self):
        self.corrupt_x(nu.header_bytes("<f4", [2**40, 2**40, 2**40]))
        self.assert_error(self.GN_ARGS, 1,
                          r"--x x\.npy: shape \[1099511627776, .*\] has more elements than fit in 64 bits")
        self.corrupt_x(nu.header_bytes("<f4", [2**61, 3]))  # elements fit, bytes do not
        self.assert_error(self.GN_ARGS, 1, r"--x x\.npy: shape .* has more bytes than fit in 64 bits")
        self.corrupt_x(nu.header_bytes("<f4", [2**64, 1]))
        self.assert_error(self.GN_ARGS, 1, r"--x x\.npy: the header's shape has a dimension that does not fit")

    def test_wrong_dtype(self):
        for descr in ("<f8", "<i4", "|u1", "<c8"):
            with self.subTest(descr=descr):
                self.corrupt_x(nu.header_bytes(descr, [2, 3, 4]) + b"\0" * 24 * 8)
                self.assert_error(self.GN_ARGS, 1,
                                  r"--x x\.npy: dtype '%s' is not supported; expected float32 '<f4'" % descr)
        structured = "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"
        self.corrupt_x(nu.header_bytes(None, [1], dict_text=structured))
        self.assert_error(self.GN_ARGS, 1, r"--x x\.npy: structured dtype")

    def test_malformed_header_and_version(self):
        def dict_file(text):
            return nu.header_bytes(None, [], dict_text=text)

        bad = [
            (dict_file("{'descr': '<f4', 'shape': (2, 3, 4), }"), r"malformed .* no 'fortran_order'"),
            (dict_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), 'x': 1}"),
             r"malformed .*unexpected key 'x'"),
            (dict_file("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}"), r"malformed .*True or False"),
            (dict_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3, 4), }"), r"negative dimension"),
            (dict_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), } trailing"),
             r"malformed .*after the closing"),
            (dict_file("__import__('os')"), r"malformed"),
            (b"\x93NUMPY\x04\x00" + b"\0" * 60, r"unsupported \.npy format version 4\.0"),
            (nu.header_bytes("<f4", [1] * 9) + b"\0" * 4, r"has rank 9; nnops supports at most 8"),
        ]
        for data, pattern in bad:
            with self.subTest(pattern=pattern):
                self.corrupt_x(data)
                self.assert_error(self.GN_ARGS, 1, r"^nnops: error: --x x\.npy: .*" + pattern)

    def test_shape_mismatch_between_arguments(self):
        nu.write_npy(self.path("dy.npy"), [0.0] * 20, "float32", [2, 2, 5])
        self.assert_error(self.GN_ARGS, 1,
                          r"^nnops: error: group_normalization_grad: dy has shape \[2, 2, 5\]; "
                          r"expected the shape of x \[2, 3, 4\]$")

    def test_group_norm_errors(self):
        nu.write_npy(self.path("x.npy"), [1.0] * 24, "float32", [2, 4, 3])
        base = ["run", "group_norm", "--x", "x.npy", "--out", "o.npy", "--mean", "m.npy", "--rstd", "r.npy"]
        self.assert_error(base, 2, r"^nnops: usage error: --num-groups is required")
        self.assert_error(base + ["--num-groups", "3"], 1,
                          r"^nnops: error: group_norm: num_groups is 3; expected a positive divisor of C = 4$")
        self.assert_error(base + ["--num-groups", "2", "--eps", "0"], 1,
                          r"^nnops: error: group_norm: eps is 0; expected a finite value > 0$")
        self.assert_error(base[:-2] + ["--rstd", "x.npy", "--num-groups", "2", "--force"], 1,
                          r"--rstd x\.npy is the same file as --x; an output may not replace an input")

    def test_stat_shape_mismatch(self):
        nu.write_npy(self.path("mean.npy"), [0.0] * 6, "float32", [3, 2])
        self.assert_error(self.GN_ARGS, 1,
                          r"group_normalization_grad: mean has shape \[3, 2\]; expected \[N, G\] = \[2, 3\]")

    def test_dtype_mismatch_between_arguments(self):
        nu.write_npy(self.path("gamma.npy"), [1.0] * 24, "float16", [2, 3, 4])
        self.assert_error(self.GN_ARGS, 1,
                          r"^nnops: error: group_normalization_grad: gamma has dtype float16; expected float32")

    def test_rank_too_small(self):
        for name in ("x", "dy", "gamma"):
            nu.write_npy(self.path(name + ".npy"), [1.0] * 6, "float32", [6])
        self.assert_error(self.GN_ARGS, 1,
                          r"group_normalization_grad: x has shape \[6\] \(rank 1\); expected rank >= 3")

    def test_unknown_option(self):
        self.assert_error(self.GN_ARGS + ["--bogus"], 2,
                          r"^nnops: usage error: The following argument was not expected: --bogus "
                          r"\(see 'nnops run group_normalization_grad --help'\)$")
        # A misspelt required option is reported as unknown, not as a missing --gamma.
        args = list(self.GN_ARGS)
        args[args.index("--gamma")] = "--gama"
        self.assert_error(args, 2, r"not expected: --gama")
        self.assert_error(["run", "no_such_op"], 2, r"^nnops: usage error: .*no_such_op")
        self.assert_error(["frobnicate"], 2, r"^nnops: usage error: ")

    def test_usage_errors(self):
        self.assert_error(self.GN_ARGS[:-2], 2, r"^nnops: usage error: --dx is required")
        self.assert_error(self.GN_ARGS + ["--threads", "-1"], 2, r"^nnops: usage error: --threads")
        self.assert_error(["run"], 2, r"A subcommand is required")
        self.make_ps("float32", [4])
        self.assert_error(self.PS_ARGS + ["--steps", "0"], 2, r"^nnops: usage error: --steps")

    def test_output_exists_without_force(self):
        with open(self.path("dx.npy"), "wb") as f:
            f.write(b"precious")
        self.assert_error(self.GN_ARGS, 1, r"^nnops: error: --dx dx\.npy: the file exists; pass --force to replace it$")

    def test_output_is_an_input(self):
        args = list(self.GN_ARGS)
        args[args.index("dx.npy")] = "x.npy"
        self.assert_error(args + ["--force"], 1, r"--dx x\.npy is the same file as --x; only --dy may be replaced")

    def test_output_directory_missing(self):
        args = list(self.GN_ARGS)
        args[args.index("dx.npy")] = "no/such/dir/dx.npy"
        self.assert_error(args, 1, r"^nnops: error: --dx cannot create a temporary file in no/such/dir: No such file")

    def test_power_sign_bad_values_leave_files(self):
        self.make_ps("float32", [10])
        for opt, value, pattern in (
            ("--beta", "1.0", r"beta is 1; expected a value in \[0, 1\)$"),
            ("--beta", "-0.5", r"beta is -0.5"),
            ("--lr", "nan", r"lr is nan; expected a finite value"),
            ("--logbase", "inf", r"logbase is inf; expected a finite value"),
            ("--sign-decay", "1e39", r"sign_decay is inf"),  # overflows float32
        ):
            with self.subTest(opt=opt, value=value):
                args = list(self.PS_ARGS)
                args[args.index(opt) + 1] = value
                self.assert_error(args, 1, r"^nnops: error: inplace_apply_power_sign: " + pattern)

    def test_power_sign_rounding_explained(self):
        self.make_ps("bfloat16", [10])
        args = list(self.PS_ARGS)
        args[args.index("--beta") + 1] = "0.9999"
        self.assert_error(args, 1,
                          r"beta is 1; expected a value in \[0, 1\) \(--beta 0\.9999 rounds to 1 in bfloat16\)$")

    def test_power_sign_mismatches(self):
        self.make_ps("float32", [10])
        nu.write_npy(self.path("grad.npy"), [0.0] * 11, "float32", [11])
        self.assert_error(self.PS_ARGS, 1, r"^nnops: error: inplace_apply_power_sign: grad has shape \[11\]; "
                                           r"expected the shape of var \[10\]$")
        self.make_ps("float32", [10])
        nu.write_npy(self.path("m.npy"), [0.0] * 10, "float16", [10])
        self.assert_error(self.PS_ARGS, 1, r"inplace_apply_power_sign: m has dtype float16; expected float32")
        self.make_ps("float32", [10])
        nu.write_npy(self.path("lr.npy"), [0.1, 0.2], "float32", [2])
        args = list(self.PS_ARGS)
        args[args.index("--lr") + 1] = "lr.npy"
        self.assert_error(args, 1, r"inplace_apply_power_sign: lr has shape \[2\]; expected \[\] or \[1\]")
        nu.write_npy(self.path("lr.npy"), [0.1], "float16", [1])
        self.assert_error(args, 1, r"inplace_apply_power_sign: lr has dtype float16; expected float32")
        args[args.index("--lr") + 1] = "lr_missing.npy"
        self.assert_error(args, 1, r"^nnops: error: --lr lr_missing\.npy: No such file or directory$")

    def test_power_sign_same_files(self):
        self.make_ps("float32", [10])
        args = list(self.PS_ARGS)
        args[args.index("m.npy")] = "var.npy"
        self.assert_error(args, 1, r"--var var\.npy and --m var\.npy are the same file")
        os.link(self.path("var.npy"), self.path("hard.npy"))
        args = list(self.PS_ARGS)
        args[args.index("grad.npy")] = "hard.npy"
        self.assert_error(args, 1, r"--var var\.npy and --grad hard\.npy are the same file")

    def test_power_sign_bad_later_file(self):
        self.make_ps("float32", [10])
        with open(self.path("grad.npy"), "r+b") as f:
            f.truncate(50)
        self.assert_error(self.PS_ARGS, 1, r"^nnops: error: --grad grad\.npy: truncated")


class AtomicTests(Case):
    """In-place updates: simulated crashes, permissions, symlinks, no leftovers."""

    def test_crash_before_rename_leaves_old_files(self):
        var, m, grad = self.make_ps("float32", [4, 50])
        before = snapshot(self.dir)
        r = run_nnops(self.PS_ARGS, self.dir, {"NNOPS_TEST_CRASH_AFTER_TEMP": "1"})
        self.assertEqual(r.returncode, 9, r.stderr)
        after = snapshot(self.dir)
        for name in ("var.npy", "m.npy", "grad.npy"):
            self.assertEqual(after[name], before[name])
        self.assertEqual(nu.read_npy(self.path("var.npy"))[2], var)  # readable, the old values
        # The killed run left its two temporaries, each a complete file with the new values.
        temps = sorted(n for n in after if ".nnops-tmp-" in n)
        self.assertEqual([t.split(".nnops-tmp-")[0] for t in temps], [".m.npy", ".var.npy"])
        new_var = nu.read_npy(self.path(temps[1]))[2]
        for t in temps:
            os.remove(self.path(t))
        self.run_ok(self.PS_ARGS)
        self.assertEqual(nu.read_npy(self.path("var.npy"))[2], new_var)
        self.assertEqual([n for n in os.listdir(self.dir) if "nnops-tmp" in n], [])

    def test_crash_between_renames_leaves_whole_files(self):
        self.make_ps("bfloat16", [300])
        self.run_ok(self.PS_ARGS)
        new = snapshot(self.dir)
        self.make_ps("bfloat16", [300])
        old = snapshot(self.dir)
        r = run_nnops(self.PS_ARGS, self.dir, {"NNOPS_TEST_CRASH_AFTER_TEMP": "2"})
        self.assertEqual(r.returncode, 9, r.stderr)
        after = snapshot(self.dir)
        # Each file is atomic on its own: var is the new file, m still the old one; both readable.
        self.assertEqual(after["var.npy"], new["var.npy"])
        self.assertEqual(after["m.npy"], old["m.npy"])
        nu.read_npy(self.path("var.npy"))
        nu.read_npy(self.path("m.npy"))

    def test_crash_before_dx_rename(self):
        self.make_gn("float16", [1, 2, 8])
        with open(self.path("dx.npy"), "wb") as f:
            f.write(b"old")
        r = run_nnops(self.GN_ARGS + ["--force"], self.dir, {"NNOPS_TEST_CRASH_AFTER_TEMP": "1"})
        self.assertEqual(r.returncode, 9)
        with open(self.path("dx.npy"), "rb") as f:
            self.assertEqual(f.read(), b"old")

    def test_permissions_and_symlinks_kept(self):
        self.make_ps("float32", [20])
        os.chmod(self.path("var.npy"), 0o640)
        os.mkdir(self.path("real"))
        os.rename(self.path("m.npy"), self.path("real/m.npy"))
        os.symlink("real/m.npy", self.path("m.npy"))
        self.run_ok(self.PS_ARGS)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("var.npy")).st_mode), 0o640)
        self.assertTrue(os.path.islink(self.path("m.npy")))
        self.assertEqual(nu.read_npy(self.path("real/m.npy"))[1], (20,))
        self.assertEqual([n for n in os.listdir(self.path("real")) if "nnops-tmp" in n], [])

    def test_force_replaces_and_no_leftovers(self):
        self.make_gn("float32", [1, 2, 3])
        with open(self.path("dx.npy"), "wb") as f:
            f.write(b"old")
        self.run_ok(self.GN_ARGS + ["--force"])
        self.assertEqual(nu.read_npy(self.path("dx.npy"))[1], (1, 2, 3))
        self.assertEqual(sorted(os.listdir(self.dir)),
                         ["dx.npy", "dy.npy", "gamma.npy", "mean.npy", "rstd.npy", "x.npy"])


class CheckTests(Case):
    """`nnops check` and --help at every level."""

    def test_check_each_operator(self):
        for args in (
            ["check", "group_normalization_grad", "--shape", "2,4,3,40", "--seed", "5"],
            ["check", "group_normalization_grad", "--shape", "1", "2", "2100", "--stats-like-x", "--dtype", "bf16"],
            ["check", "inplace_apply_power_sign", "--shape", "3,1001", "--threads", "2"],
            ["check", "inplace_apply_power_sign", "--dtype", "float16,bfloat16", "--shape", "5000", "--beta", "0"],
        ):
            with self.subTest(args=" ".join(args)):
                r = self.run_ok(args)
                self.assertRegex(r.stdout, r"max \|err\|")
                self.assertRegex(r.stdout, r"\nPASS: (\d) of \1 passed\n$")
                self.assertNotIn("FAIL", r.stdout)

    def test_check_usage_errors(self):
        self.assert_error(["check", "group_normalization_grad", "--dtype", "float64"], 2, r"unknown dtype 'float64'")
        self.assert_error(["check", "group_normalization_grad", "--shape", "4,4"], 2, r"has rank 2; expected 3 to 8")
        self.assert_error(["check", "inplace_apply_power_sign", "--shape", "4000000000,4000000000,4000000000"], 2,
                          r"too large")
        self.assert_error(["check"], 2, r"A subcommand is required")

    def test_check_operator_error_is_a_fail(self):
        r = run_nnops(["check", "inplace_apply_power_sign", "--shape", "10", "--beta", "1", "--dtype", "f32"], self.dir)
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL: inplace_apply_power_sign: beta is 1", r.stdout)

    def test_help_everywhere(self):
        for args, must in (
            ([], "nnops run inplace_apply_power_sign"),
            (["run"], "nnops run group_normalization_grad --x x.npy"),
            (["run", "group_normalization_grad"], "Example:\n  nnops run group_normalization_grad"),
            (["run", "inplace_apply_power_sign"], "Example:\n  nnops run inplace_apply_power_sign"),
            (["check"], "nnops check"),
            (["check", "group_normalization_grad"], "Example:\n  nnops check group_normalization_grad"),
            (["check", "inplace_apply_power_sign"], "Example:\n  nnops check inplace_apply_power_sign"),
            (["info"], "Usage: nnops info"),
            (["demo"], "--quick"),
        ):
            with self.subTest(args=args):
                r = self.run_ok(args + ["--help"])
                self.assertIn(must, r.stdout)
                self.assertEqual(r.stderr, "")


PARTS = {"run": RunTests, "errors": ErrorTests, "atomic": AtomicTests, "check": CheckTests}


def main():
    global NNOPS
    ap = argparse.ArgumentParser()
    ap.add_argument("--nnops", required=True)
    ap.add_argument("--part", choices=sorted(PARTS), action="append")
    args, rest = ap.parse_known_args()
    NNOPS = os.path.abspath(args.nnops)
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for part in args.part or sorted(PARTS):
        suite.addTests(loader.loadTestsFromTestCase(PARTS[part]))
    if rest:  # e.g. -k pattern: filter by name
        names = [a for a in rest if not a.startswith("-")]
        suite = unittest.TestSuite(t for t in _flatten(suite) if any(n in t.id() for n in names))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


def _flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flatten(t)
        else:
            yield t


if __name__ == "__main__":
    sys.exit(main())
