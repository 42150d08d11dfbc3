#!/usr/bin/env python3
"""How close any straight-line correction of simulated TTFTs (or TPOTs) could come to measured ones.

`dynosim calibrate` corrects simulated times with a few numbers per family and per deployment
shape, fitted on a third of the measured points. When a group stays off after calibration, is
that the correction's fault or the measurements' scatter? This script answers it from outside
the simulator: per deployment shape it fits the measured mean TTFT as a straight line of the
simulated one,

    measured ≈ a · predicted + b                                     (always)
    measured ≈ a · predicted + b + c · concurrency                     (--with-concurrency)
    measured ≈ a · predicted + b + c · predicted · log2(concurrency)   (--with-batch-growth)

by least squares on relative errors, and scores each point on a fit that did not see it (leave
one point out; a point's repeats, the rows of one shape with the same isl, osl and concurrency,
are left out together). That is about what a prefill scale and a request overhead per shape
could do if they moved the whole simulated TTFT, fitted on all but one point where `calibrate`
sees a third: a group whose figure here is well above 10 % has measurements that scatter more
around any such line than issue 23's calibrated TTFT target allows. It is no bound on
`calibrate`, whose corrections act inside the simulation (a prefill scale also changes how long
prompts queue), and calibrated figures can come out below it.

With --metric tpot the same is done for the mean TPOT: a straight line is what a decode scale
and a decode pass overhead per shape could do, and the two extra terms are the ways a decode
step could grow with the batch beyond that (a cost per running request, or a factor growing
with the batch's doublings), to see whether a correction of that growth would pay.

Inputs:
  MEASURED    the measured table's rows (columns of aiconfigurator-core's silicon_sample.csv)
  VALIDATION  `dynosim validate MEASURED --dispatch-overhead none -o DIR`'s DIR/validation.csv

A deployment shape is one (backend_version, gemm_quant_mode, moe_quant_mode, tp_size,
attention_dp_size, moe_tp_size, moe_ep_size) within a group (system, backend, model); shapes
with fewer than --min-points distinct points (default 6, as `calibrate`'s entries per shape)
are left out, and the output says how many rows the figures cover. The table has no column
for the decoding mode, so rows of one shape served plainly and with multi-token prediction are
fitted together.

Prints a Markdown table: group, rows simulated, rows covered, the engine-only mean absolute %
error of the covered rows, and the corrected one (and with each extra term asked for). Needs
numpy (installed with aiconfigurator-core).
"""

import argparse
import collections
import csv
import sys

import numpy as np

SHAPE = (
    "backend_version",
    "gemm_quant_mode",
    "moe_quant_mode",
    "tp_size",
    "attention_dp_size",
    "moe_tp_size",
    "moe_ep_size",
)


def read_points(measured_path, validation_path, metric):
    """(group, shape) -> list of (point key, measured ms, predicted ms, concurrency)."""
    with open(measured_path, newline="") as f:
        measured = {r["id"]: r for r in csv.DictReader(f)}
    shapes = collections.defaultdict(list)
    simulated = collections.Counter()
    with open(validation_path, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok" or r["id"] not in measured:
                continue
            try:
                m = float(r[f"measured_{metric}_ms"])
                p = float(r[f"predicted_{metric}_ms"])
                c = float(r["concurrency"])
            except ValueError:
                continue
            if not (m > 0 and p > 0):
                continue
            row = measured[r["id"]]
            group = (r["system"], r["backend"], r["model"])
            simulated[group] += 1
            shape = tuple(row.get(k, "") for k in SHAPE)
            point = (r["isl"], r["osl"], r["concurrency"])
            shapes[(group, shape)].append((point, m, p, c))
    return shapes, simulated


# The extra term of each fit beyond a · predicted + b, from (predicted, concurrency).
EXTRA = {
    "line": None,
    "concurrency": lambda p, c: c,
    "batch_growth": lambda p, c: p * np.log2(c),
}


def leave_point_out_errors(rows, extra):
    """Absolute relative errors (%) of each row, predicted by a fit on the other points."""
    points = sorted({r[0] for r in rows})
    term = EXTRA[extra]
    x = np.array([[p, 1.0] + ([term(p, c)] if term else []) for _, _, p, c in rows])
    y = np.array([m for _, m, _, _ in rows])
    keys = [r[0] for r in rows]
    errors = []
    for held in points:
        test = np.array([k == held for k in keys])
        train = ~test
        # Least squares on relative errors: rows scaled by 1 / measured, target 1.
        w, *_ = np.linalg.lstsq(x[train] / y[train, None], np.ones(train.sum()), rcond=None)
        errors.extend(100.0 * np.abs(x[test] @ w / y[test] - 1.0))
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measured")
    ap.add_argument("validation")
    ap.add_argument("--min-points", type=int, default=6)
    ap.add_argument("--metric", choices=["ttft", "tpot"], default="ttft")
    ap.add_argument("--with-concurrency", action="store_true")
    ap.add_argument("--with-batch-growth", action="store_true")
    args = ap.parse_args()
    fits = ["line"]
    head = "| system | backend | model | rows | covered | engine only | a·predicted + b |"
    if args.with_concurrency:
        fits.append("concurrency")
        head += " + c·concurrency |"
    if args.with_batch_growth:
        fits.append("batch_growth")
        head += " + c·predicted·log2(concurrency) |"
    shapes, simulated = read_points(args.measured, args.validation, args.metric)
    covered = collections.defaultdict(list)
    for (group, _), rows in sorted(shapes.items()):
        if len({r[0] for r in rows}) < args.min_points:
            continue
        raw = [100.0 * abs(p / m - 1.0) for _, m, p, _ in rows]
        covered[group].append([raw] + [leave_point_out_errors(rows, f) for f in fits])
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for group in sorted(simulated):
        parts = covered.get(group, [])
        n = sum(len(part[0]) for part in parts)
        cells = [*group, str(simulated[group]), str(n)]
        for i in range(1 + len(fits)):
            values = [e for part in parts for e in part[i]]
            cells.append(f"{np.mean(values):.1f}" if values else "–")
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
