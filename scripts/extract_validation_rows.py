#!/usr/bin/env python3
"""Write validation/llama-3.1-70b-fp8-vllm-h100-h200.csv from AIConfigurator's measured table.

The table is `aiconfigurator_core/systems/silicon_sample.csv` in the `aiconfigurator-core` Python
package (0.12.0; Apache-2.0, NVIDIA, ai-dynamo/aiconfigurator). The rows kept are the vLLM
Llama-3.1-70B FP8 deployments measured on H200 and H100 in the 2026-04-06 benchmark batch:

    silicon_data_source starts with "source_file=2026-04-06.csv"
    system in {h200_sxm, h100_sxm}, backend = vllm, model_path = meta-llama/Llama-3.1-70B,
    precision = fp8

Header and kept lines are copied byte for byte, in the table's order, so the output can be
checked against the package with grep. Standard library only.

    scripts/extract_validation_rows.py [TABLE] [-o OUT]

TABLE defaults to the table of the aiconfigurator-core installed for $DYNOSIM_PYTHON (else
python3); OUT defaults to validation/llama-3.1-70b-fp8-vllm-h100-h200.csv beside this script.
"""

import argparse
import csv
import os
import subprocess
import sys
from pathlib import Path

SOURCE_PREFIX = "source_file=2026-04-06.csv"
SYSTEMS = ("h200_sxm", "h100_sxm")
BACKEND = "vllm"
MODEL = "meta-llama/Llama-3.1-70B"
PRECISION = "fp8"
EXPECTED_ROWS = 105
OUT_NAME = "llama-3.1-70b-fp8-vllm-h100-h200.csv"


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, nothing written."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def installed_table() -> Path:
    """The measured table of the aiconfigurator-core that $DYNOSIM_PYTHON (or python3) imports."""
    python = os.environ.get("DYNOSIM_PYTHON", "python3")
    code = "import aiconfigurator_core, os; print(os.path.dirname(aiconfigurator_core.__file__))"
    try:
        out = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"cannot import aiconfigurator_core with {python} ({e}); give the table path")
    return Path(out.stdout.strip()) / "systems" / "silicon_sample.csv"


def keep(row: dict) -> bool:
    return (
        row["silicon_data_source"].startswith(SOURCE_PREFIX)
        and row["system"] in SYSTEMS
        and row["backend"] == BACKEND
        and row["model_path"] == MODEL
        and row["precision"] == PRECISION
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", nargs="?", type=Path, help="silicon_sample.csv (default: the installed one)")
    ap.add_argument("-o", "--output", type=Path, default=Path(__file__).resolve().parent.parent / "validation" / OUT_NAME)
    args = ap.parse_args()
    table = args.table or installed_table()
    try:
        lines = table.read_text(encoding="utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{table}: cannot read ({e})")
    if not lines:
        fail(f"{table}: empty file")
    header = next(csv.reader([lines[0]]))
    for col in ("silicon_data_source", "system", "backend", "model_path", "precision"):
        if col not in header:
            fail(f"{table}:1: no column {col!r} (is this AIConfigurator's silicon_sample.csv?)")
    kept = [lines[0]]
    for lineno, line in enumerate(lines[1:], start=2):
        fields = next(csv.reader([line]))
        if len(fields) != len(header):
            fail(f"{table}:{lineno}: {len(fields)} fields, the header has {len(header)}")
        if keep(dict(zip(header, fields))):
            kept.append(line)
    n = len(kept) - 1
    if n != EXPECTED_ROWS:
        print(f"warning: {n} rows kept, {EXPECTED_ROWS} expected (aiconfigurator-core 0.12.0)", file=sys.stderr)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_suffix(".tmp")
    tmp.write_text("".join(kept), encoding="utf-8")
    tmp.replace(args.output)
    print(f"{args.output}: {n} rows from {table}")


if __name__ == "__main__":
    main()
