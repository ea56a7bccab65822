"""Runs TensorFlow's tf.raw_ops.ResourceApplyPowerSign for the optimizer test, in a process of its own (so
TensorFlow and torch never share one): reads IN.npz with the states var[k], m[k], grad[k] and sign_decay[k]
of K steps and the scalars lr, logbase, beta; applies one TensorFlow step to each state; writes OUT.npz with
var[k], m[k] after it. Exit status 77 when tensorflow cannot be imported.

usage: python tf_power_sign.py IN.npz OUT.npz
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

try:
    import tensorflow as tf
except Exception as e:  # noqa: BLE001 - any import failure means "not available here"
    print(f"tensorflow not importable: {e}", file=sys.stderr)
    sys.exit(77)

import numpy as np

src = np.load(sys.argv[1])
dt = src["var"].dtype
out_v, out_m = [], []
for k in range(src["var"].shape[0]):
    var = tf.Variable(src["var"][k])
    m = tf.Variable(src["m"][k])
    tf.raw_ops.ResourceApplyPowerSign(var=var.handle, m=m.handle, lr=np.asarray(src["lr"], dt),
                                      logbase=np.asarray(src["logbase"], dt),
                                      sign_decay=np.asarray(src["sign_decay"][k], dt),
                                      beta=np.asarray(src["beta"], dt), grad=src["grad"][k], use_locking=False)
    out_v.append(var.numpy())
    out_m.append(m.numpy())
np.savez(sys.argv[2], var=np.stack(out_v), m=np.stack(out_m), version=tf.__version__)
