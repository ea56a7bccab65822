#!/usr/bin/env python3
"""Writes the committed seed corpora of the fuzz targets (fuzz/corpus/<target>/). Run from anywhere:
    python3 fuzz/make_seeds.py
The seeds are small, valid (or nearly valid) inputs that reach deep into each parser; the fuzzers mutate
them. The input formats are described at the top of each fuzz_*.cpp."""
import base64
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- fuzz_npy: .npy files ---------------------------------------------------------------------------
def npy(descr, fortran, shape, data=b"", major=1, pad_to=64, tail=""):
    tup = "(" + ", ".join(str(d) + tail for d in shape) + ("," if len(shape) == 1 else "") + ")"
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if fortran else "False", tup)
    fixed = 10 if major == 1 else 12
    h = d + " " * ((pad_to - (fixed + len(d) + 1) % pad_to) % pad_to) + "\n"
    pre = b"\x93NUMPY" + bytes([major, 0])
    pre += struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    return pre + h.encode("latin1") + data


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


write("fuzz_npy", "f4_vector", npy("<f4", False, [3], f32(1, 2, 3)))
write("fuzz_npy", "f4_scalar", npy("<f4", False, [], f32(0.5)))
write("fuzz_npy", "f4_empty", npy("<f4", False, [0, 3]))
write("fuzz_npy", "f2_fortran", npy("<f2", True, [2, 3], bytes(range(12))))
write("fuzz_npy", "bf16_v2", npy("<V2", False, [2, 2], bytes(range(8))))
write("fuzz_npy", "bf16_pipe_v2", npy("|V2", False, [1], b"\x80\x3f"))
write("fuzz_npy", "f4_big_endian_fortran", npy(">f4", True, [2, 2, 2], struct.pack(">8f", *range(8))))
write("fuzz_npy", "v2_header", npy("<f4", False, [2], f32(1, 2), major=2))
write("fuzz_npy", "v3_header", npy(">V2", False, [1, 1, 1, 1, 1, 1, 1, 2], bytes(4), major=3))
write("fuzz_npy", "py2_long_dims", npy("<f2", False, [2, 1], bytes(4), tail="L"))
write("fuzz_npy", "double_quotes",
      b"\x93NUMPY\x01\x00" + struct.pack("<H", 54) +
      b'{"descr": "<f4", "fortran_order": False, "shape": (1,)}\n'[:54] + f32(7))

# ---- fuzz_cli_args: argv[1..] joined by NUL ---------------------------------------------------------
cli = {
    "demo_quick": ["demo", "--quick", "--iters", "1", "--threads", "2"],
    "info": ["info"],
    "help": ["--help"],
    "version": ["--version"],
    "bench": ["bench", "--op", "group_normalization_grad", "--dtype", "float16", "--threads", "1", "--size",
              "l2", "--reps", "3", "--json"],
    "bench_layouts": ["bench", "--op", "inplace_apply_power_sign", "--layout", "adjacent", "offset", "--shape",
                      "33554432", "--threads", "1", "2"],
    "bench_workload": ["bench", "--workload", "resnet50", "--workload", "unet", "--layout", "huge", "--dtype",
                       "float32", "--reps", "5"],
    "bench_sweep": ["bench", "--sweep", "--op", "group_norm", "--threads", "2", "--json"],
    "run_gn": ["run", "group_normalization_grad", "--x", "x.npy", "--dy", "dy.npy", "--gamma", "g.npy", "--mean",
               "m.npy", "--rstd", "r.npy", "--dx", "dx.npy", "--force", "--threads", "3"],
    "run_ps": ["run", "inplace_apply_power_sign", "--var", "v.npy", "--m", "m.npy", "--grad", "g.npy", "--lr",
               "0.001", "--logbase", "1.0", "--sign_decay", "0.99", "--beta", "0.9", "--steps", "10",
               "--use-locking"],
    "run_help": ["run", "inplace_apply_power_sign", "--help"],
    "check_gn": ["check", "group_normalization_grad", "--dtype", "float32,bfloat16", "--shape", "2,32,8,64",
                 "--seed", "7"],
    "check_ps": ["check", "inplace_apply_power_sign", "--dtype", "bfloat16", "--shape", "1000000", "--threads", "2"],
    "usage_error": ["run", "group_normalization_grad", "--gama", "g.npy"],
}
for name, args in cli.items():
    write("fuzz_cli_args", name, b"\0".join(a.encode() for a in args))


# ---- fuzz_aclnn: operator, flags, dtype, shape byte, dims, then mutation records ----------------------
def rec(tensor, field, value, index=0):
    """A mutation record with an 8-byte value."""
    return bytes([tensor, (index << 4) | field]) + struct.pack("<q", value)


def rec1(tensor, field, value, index=0):
    """A mutation record with a one-byte signed value."""
    return bytes([tensor, 0x80 | (index << 4) | field, value & 0xff])


def alias(tensor, other, delta=0):
    return rec(tensor, 8, 3 | (other << 8) | ((delta + 128) << 16))


# Operators by their index in src/ops/op_list.inc.
GNG, PS, GN, GNB = 0, 1, 2, 3
F32, F16, BF16 = 0, 1, 2
AUX_F32, STREAM, LOCK, LAUNCH_TWICE = 64, 1, 2, 16


def main(op, flags, dtype, dims, min_rank):
    """Header bytes: operator, flags, dtype, rank selector, then one byte per dim (1 + b)."""
    return bytes([op, flags, dtype, len(dims) - min_rank] + [d - 1 for d in dims])


acl = {
    "gn_f32_default": b"",
    "gn_f16_stream": main(GNG, STREAM, F16, [2, 3, 7, 9], 3),
    "gn_bf16_stats_f32": main(GNG, AUX_F32 | LAUNCH_TWICE, BF16, [3, 2, 3, 5, 2], 3),
    "gn_in_place_dx_is_dy": main(GNG, 0, F32, [2, 2, 30], 3) + alias(5, 1),
    # [1, 1, 128, 256] float16 with dx = dy: 2^15 elements, the multi-threaded plan with a workspace.
    "gn_f16_parallel_workspace": main(GNG, STREAM, F16, [1, 1, 128, 256], 3) + alias(5, 1),
    "gn_strided_offset": main(GNG, 0, F32, [1, 1, 3], 3) + rec(0, 1, 2, 2) + rec(0, 2, 8) + rec1(5, 3, 1),
    # A transposed (strided) x: the dense-copy path and its workspace.
    "gn_transposed_x": main(GNG, 0, F32, [2, 2, 4], 3) + rec(0, 1, 1, 0) + rec(0, 1, 2, 1) + rec(0, 1, 4, 2),
    "gn_huge_dims": main(GNG, 0, F32, [1, 1, 3], 3) + rec(0, 0, (1 << 31) + 1, 2) + rec(1, 0, -1, 0),
    "gn_host_arena": main(GNG, 0, F16, [1, 2, 9], 3) + rec(0, 8, 2 | (64 << 8)) + rec(5, 8, 2 | (4096 << 8)),
    "ps_f32_vector": main(PS, 0, F32, [200], 0),
    "ps_bf16_lock_stream": main(PS, STREAM | LOCK, BF16, [10, 32], 0),
    "ps_f16_scalar_values": main(PS, 0, F16, [16], 0) + rec(5, 9, 0x3b00) + rec(2, 9, 0x2e66),
    # [128, 256] float16: 2^15 elements, two threads.
    "ps_f16_parallel": main(PS, 0, F16, [128, 256], 0),
    "ps_rank0_empty": main(PS, 0, F32, [1, 256, 5], 0) + rec(0, 0, 0, 1) + rec(1, 0, 0, 1) + rec(6, 0, 0, 1),
    "ps_overlap_var_m": main(PS, 0, F32, [64], 0) + alias(1, 0, 8),
    # var [4, 8] with rows 16 elements apart, placed away from the other tensors.
    "ps_strided_var": main(PS, 0, F32, [4, 8], 0) + rec(0, 1, 16, 0) + rec(0, 2, 64, 0) + rec(0, 8, 1 | (100000 << 8)),
    "ps_bad_dtype": main(PS, 0, 3 + 11, [4], 0),
    # GroupNorm [2, 8, 3, 5] (4 groups), float32; channels-last x and out; a bad group argument; bfloat16.
    "gn_fwd_f32": main(GN, 0, F32, [2, 8, 3, 5], 2),
    "gn_fwd_channels_last": main(GN, STREAM, F16, [2, 8, 3, 5], 2) + rec(0, 1, 1, 1) + rec(0, 1, 40, 2) +
                            rec(0, 1, 8, 3) + rec(0, 1, 120, 0) + rec(3, 11, 0),
    "gn_fwd_bad_group": main(GN, 0, F32, [2, 8, 3], 2) + rec(0, 12, 3, 3),
    "gn_fwd_bf16_f32_gamma": main(GN, AUX_F32, BF16, [1, 4, 7], 2),
    "gn_fwd_no_gamma_beta": main(GN, 0, BF16, [1, 4, 7], 2) + rec(1, 8, 8) + rec(2, 8, 8),
    # GroupNormBackward: all outputs, in place over dy, only dgamma (others null), a bad mask length.
    "gnb_all": main(GNB, LAUNCH_TWICE, F32, [2, 8, 3, 5], 2),
    "gnb_in_place": main(GNB, 0, F16, [2, 8, 9], 2) + alias(5, 0),
    "gnb_dgamma_only": main(GNB, 0, F32, [2, 4, 6], 2) + rec(0, 15, 0x2 << 8 | 3) + rec(5, 8, 8) + rec(7, 8, 8),
    "gnb_bad_mask": main(GNB, 0, F32, [2, 4, 6], 2) + rec(0, 15, 2),
    # Found by CI's fuzz run: N, C, HxW whose product overflows int64 (UBSan caught an unchecked N * C * HxW).
    "gnb_overflow_dims": base64.b64decode("AwABAQH9BwUIAwCAAAAAAgAAHAAAAPDw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8AAAAAAAAA=="),
}
for name, data in acl.items():
    write("fuzz_aclnn", name, data)
print("seeds written to", os.path.join(HERE, "corpus"))
