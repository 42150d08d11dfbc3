"""Writes the NPZ profiles used by dynosim's tests (run from this folder with numpy installed).

own_profile.npz: a made-up profile with other grid sizes than Dynamo's example (13 prefill points,
a 7 x 4 decode grid), written compressed, with a Fortran-ordered decode_itl and a big-endian
context axis, to check that dynosim reads what numpy writes the way DynoSim does.
bad_*.npz: one defect each, which DynoSim 1.4.2 answers by silently falling back to its
polynomial model and dynosim refuses (perf_bad_int.npz, an int64 prefill_isl, comes from the
shared breadth examples).
"""
import numpy as np

prefill_isl = np.array([64, 192, 256, 640, 1000, 1800, 3000, 4096, 6000, 9000, 12000, 20000, 32768], dtype=np.float64)
prefill_ttft_ms = 9.0 + 0.021 * prefill_isl + 3.1e-7 * prefill_isl**2
kv = np.array([0, 8192, 40000, 131072, 300000, 700000, 2000000], dtype=np.float64)
ctx = np.array([256, 2000, 9000, 50000], dtype=np.float64)
K, C = np.meshgrid(kv, ctx, indexing="ij")
itl = 4.5 + 1.3e-5 * K + 0.9 * np.log1p(C / 1000.0) + 2.0e-11 * K * C

np.savez_compressed(
    "own_profile.npz",
    prefill_isl=prefill_isl,
    prefill_ttft_ms=prefill_ttft_ms,
    decode_active_kv_tokens=kv,
    decode_context_length=ctx.astype(">f8"),
    decode_itl=np.asfortranarray(itl),
)

good = dict(
    prefill_isl=prefill_isl,
    prefill_ttft_ms=prefill_ttft_ms,
    decode_active_kv_tokens=kv,
    decode_context_length=ctx,
    decode_itl=itl,
)


def bad(name, **changes):
    arrays = {k: v for k, v in {**good, **changes}.items() if v is not None}
    np.savez(name, **arrays)


bad("bad_f32_itl.npz", decode_itl=itl.astype(np.float32))
bad("bad_lengths.npz", prefill_ttft_ms=prefill_ttft_ms[:-1])
bad("bad_not_increasing.npz", prefill_isl=prefill_isl[[0, 1, 3, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12]])
bad("bad_itl_shape.npz", decode_itl=itl[:, :3])
bad("bad_missing.npz", decode_context_length=None)
with open("bad_not_a_zip.npz", "w") as f:
    f.write("prefill_isl,prefill_ttft_ms\n128,20\n")
