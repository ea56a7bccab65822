#!/usr/bin/env python3
"""Compares the output hashes of nnops_isa_hashes (tests/cross_isa_hashes.cpp) across SIMD targets and machines.

Usage: cross_isa_report.py [--check] LABEL=FILE [LABEL=FILE ...]

Each FILE holds the lines one run of nnops_isa_hashes printed; LABEL names the machine or emulated
configuration (x86, arm-neon, arm-sve-512, ...). For every operator, dtype and case set the report lists
the classes of targets whose outputs are bitwise identical, first counting NaN sign and payload bits
("raw"), then counting every NaN alike ("NaN-agnostic"; docs/semantics.md leaves a NaN's sign and payload open).

--check also asserts what the kernels' design promises (docs/reliability.md, "Cross-ISA agreement"), and
exits 1 if a promise is broken:
  - InplaceApplyPowerSign float32 runs the float64 path everywhere: one NaN-agnostic class.
  - InplaceApplyPowerSign float16/bfloat16: every target with fused multiply-add runs the same per-lane
    float32 path, every other target the float64 path: one NaN-agnostic class each.
  - GroupNorm and GroupNormBackward use no fused multiply-add (but fma(t, 1, acc), exactly an add) and
    canonical 16-lane float64 sums: one NaN-agnostic class on every target and vector length.
  - GroupNormalizationGrad sums its blocks in 16 float64 lanes fixed by the element index (any vector width)
    and uses fused multiply-add in pass 2 where the target has it: one NaN-agnostic class among the targets
    with FMA, one among the others.
"""

import collections
import sys

# Targets whose Highway MulAdd is one fused instruction (HWY_NATIVE_FMA) on the machines nnops builds for.
FMA_TARGETS = {"avx2", "avx3", "avx3_dl", "avx3_zen4", "avx3_spr", "neon", "sve", "sve2", "sve_256", "sve2_128"}


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    rows = collections.defaultdict(list)  # (op, dtype, set) -> [(who, isa, raw, nan)]
    for arg in args:
        label, _, path = arg.partition("=")
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) != 7 or not parts[5].startswith("raw="):
                    continue
                op, dtype, case_set, isa, bits, raw, nan = parts
                who = "%s:%s@%s" % (label, isa, bits if isa != "scalar" else "-")
                rows[(op, dtype, case_set)].append((who, isa, raw[4:], nan[4:]))
    if not rows:
        print("cross_isa_report: no hashes in the input files", file=sys.stderr)
        return 2

    def classes(entries, field):
        by = collections.OrderedDict()
        for e in entries:
            by.setdefault(e[field], []).append(e[0])
        return list(by.values())

    problems = []
    for key in sorted(rows):
        entries = rows[key]
        raw, nan = classes(entries, 2), classes(entries, 3)
        print("%s %s %s: %d raw class%s, %d NaN-agnostic" %
              (key[0], key[1], key[2], len(raw), "" if len(raw) == 1 else "es", len(nan)))
        for i, c in enumerate(raw):
            print("  raw %c: %s" % (chr(ord("A") + i), " ".join(c)))
        if len(nan) != len(raw):
            for i, c in enumerate(nan):
                print("  NaN-agnostic %c: %s" % (chr(ord("A") + i), " ".join(c)))
        if key[0] in ("group_norm", "group_norm_backward") and len(nan) > 1:
            problems.append("%s %s %s: targets disagree: %s" %
                            (key[0], key[1], key[2], "; ".join(" ".join(c) for c in nan)))
        if key[0] in ("inplace_apply_power_sign", "group_normalization_grad"):
            if key[:2] == ("inplace_apply_power_sign", "float32"):
                groups = {"all targets": entries}
            else:
                groups = {"targets with FMA": [e for e in entries if e[1] in FMA_TARGETS],
                          "targets without FMA": [e for e in entries if e[1] not in FMA_TARGETS]}
            for name, group in groups.items():
                if len({e[3] for e in group}) > 1:
                    problems.append("%s %s %s: %s disagree: %s" %
                                    (key[0], key[1], key[2], name, "; ".join(" ".join(c) for c in classes(group, 3))))
    if check:
        for p in problems:
            print("cross_isa_report: FAILED: " + p, file=sys.stderr)
        if problems:
            return 1
        print("cross_isa_report: every operator agrees across targets wherever its design says it must")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
