#!/usr/bin/env python3
"""AIConfigurator's own static estimate of every row of a measured table, against the measurement.

For each row of a CSV with the columns of AIConfigurator's measured table
(`aiconfigurator_core/systems/silicon_sample.csv`, e.g. validation/*.csv), this calls
`aiconfigurator.cli.api.cli_estimate` (the `aiconfigurator` package, 0.12.0) with the row's
deployment and workload, and writes one output row per input row (none dropped):

    id, system, backend, model, mode,              the group is (system, backend, model, mode)
    backend_version, backend_version_used, aic_model, isl, osl, batch_size,
    tp, pp, attention_dp, moe_tp, moe_ep, gemm_quant, moe_quant, static_kvcache_quant,
    measured_ttft_ms, static_ttft_ms, ttft_error_pct,
    measured_tpot_ms, static_tpot_ms, tpot_error_pct,
    status (ok | failed | unsupported), reason

error_pct = 100 * (static - measured) / measured. It then prints, per group, the row count, how
many were estimated, and for TTFT and TPOT the mean absolute, median absolute and signed median
% error (`--markdown` prints the same as a Markdown table).

What is passed to cli_estimate, per row:
  - model: the row's Hugging Face name if AIConfigurator bundles its config, else the bundled
    model with the same repository name (optionally prefixed `Meta-`) under another organisation
    (meta-llama/Llama-3.1-70B -> meta-llama/Meta-Llama-3.1-70B, zhipuai/GLM-5 -> zai-org/GLM-5);
    no match -> unsupported (cli_estimate would try to download the config).
  - system, backend, mode (agg | disagg), isl, osl, gemm_quant_mode, moe_quant_mode from the row
    (but an `int4_wo` GEMM mode, whose checkpoint quantises only the routed experts, is left for
    cli_estimate to infer, as `dynosim validate` does); the KV-cache and attention quantisation
    are left for cli_estimate to infer (`--kvcache-quant` sets the KV cache's for every row
    instead).
  - backend version: the row's if installed; empty -> AIConfigurator's default for the system and
    backend (what cli_estimate itself picks); not installed -> the newest installed version not
    newer than it, else the oldest installed (a version that does not parse, e.g. `nightly-dev`,
    -> the default). The version used is in backend_version_used.
  - agg: batch_size (the benchmark's concurrency; per attention-DP rank where the table says so),
    tp/pp/attention_dp/moe_tp/moe_ep sizes, with the InferenceX batches' tpN-epN storage quirk
    undone as `dynosim validate` does (docs/validation.md): a `source_file=2026-` row with MoE
    TP x EP = TP x DP = N^2 stored as MoE TP = EP = N (TP or DP N^2), or as TP = DP = N with
    EP N^2, is N GPUs with MoE TP 1 and EP N; batch_size scales by the attention DP removed; disagg: the prefill_* and decode_* sizes, batch sizes
    and worker counts (a disagg row without batch sizes or worker counts is unsupported:
    cli_estimate requires them).
  - database_mode SILICON (cli_estimate's default).
Identical estimates are computed once.

    /opt/dynosim-aiconf-venv/bin/python scripts/aic_static_estimate.py MEASURED.csv -o OUT.csv \
        [--source-prefix source_file=2026-] [--jobs N] [--markdown]
    python3 scripts/aic_static_estimate.py --summarize OUT.csv [--markdown]

The second form only prints the summary of a results CSV (standard library only).

Needs `pip install aiconfigurator==0.12.0` (it pulls aiconfigurator-core 0.12.0) in the Python
that runs it. See docs/accuracy.md.
"""

import argparse
import contextlib
import csv
import io
import logging
import math
import statistics
import sys
from pathlib import Path

PARALLEL = ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
DISAGG_REQUIRED = ("prefill_batch_size", "prefill_num_workers", "decode_batch_size", "decode_num_workers")
NEEDED_COLUMNS = (
    "id", "backend", "backend_version", "model_path", "system", "mode", "isl", "osl",
    "gemm_quant_mode", "moe_quant_mode", "batch_size", *PARALLEL,
    "silicon_ttft_ms", "silicon_tpot_ms",
)  # fmt: skip
OUT_COLUMNS = (
    "id", "system", "backend", "model", "mode",
    "backend_version", "backend_version_used", "aic_model", "isl", "osl", "batch_size",
    "tp", "pp", "attention_dp", "moe_tp", "moe_ep", "gemm_quant", "moe_quant", "static_kvcache_quant",
    "measured_ttft_ms", "static_ttft_ms", "ttft_error_pct",
    "measured_tpot_ms", "static_tpot_ms", "tpot_error_pct",
    "status", "reason",
)  # fmt: skip


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, nothing written."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


class Unsupported(Exception):
    """The row cannot be given to cli_estimate as it stands."""


def as_int(row: dict, col: str) -> int | None:
    """The integer in a cell ("16" or "16.0"), None when empty."""
    text = (row.get(col) or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise Unsupported(f"{col} {text!r} is not a number") from None
    if not value.is_integer():
        raise Unsupported(f"{col} {text!r} is not an integer")
    return int(value)


def as_float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


class Resolver:
    """Model names and backend versions, from what the installed AIConfigurator bundles."""

    def __init__(self):
        from aiconfigurator.sdk.common import DefaultHFModels
        from aiconfigurator.sdk.perf_database import get_latest_database_version, get_supported_databases

        self.models = set(DefaultHFModels)
        self.databases = get_supported_databases()
        self.default_version = get_latest_database_version
        self.model_cache: dict[str, str | None] = {}
        self.defaults: dict[tuple[str, str], str] = {}

    def model(self, name: str) -> str:
        if name not in self.model_cache:
            self.model_cache[name] = self._model(name)
        found = self.model_cache[name]
        if found is None:
            raise Unsupported(f"model {name} has no config bundled with AIConfigurator (by name or alias)")
        return found

    def _model(self, name: str) -> str | None:
        if name in self.models:
            return name
        repo = name.rsplit("/", 1)[-1].lower()
        matches = sorted(m for m in self.models if m.rsplit("/", 1)[-1].lower() in (repo, f"meta-{repo}"))
        return matches[0] if len(matches) == 1 else None

    def version(self, system: str, backend: str, wanted: str) -> tuple[str, str]:
        """(version to use, note for the reason column or "")."""
        from packaging.version import InvalidVersion, Version

        installed = self.databases.get(system, {}).get(backend, [])
        if not installed:
            raise Unsupported(f"no {backend} performance database for {system} in AIConfigurator")
        if (system, backend) not in self.defaults:  # each call rescans the systems folder
            self.defaults[system, backend] = self.default_version(system=system, backend=backend)
        default = self.defaults[system, backend]
        if not wanted:
            return default, ""
        if wanted in installed:
            return wanted, ""
        try:
            want = Version(wanted)
            parsed = sorted((Version(v), v) for v in installed)
        except InvalidVersion:
            return default, f"{backend} {wanted} not installed and not a release number; used the default {default}"
        older = [v for pv, v in parsed if pv <= want]
        used = older[-1] if older else parsed[0][1]
        return used, f"{backend} {wanted} not installed; used the nearest installed {used}"


def undo_ep_quirk(sizes: dict, inferencex: bool) -> dict:
    """An agg row's sizes with the tpN-epN storage quirk undone (dynosim's Parallel::normalised;
    rows from elsewhere only when N^2 is more than an 8-GPU node)."""
    tp, dp = sizes.get("tp_size") or 1, sizes.get("attention_dp_size") or 1
    mtp, mep = sizes.get("moe_tp_size"), sizes.get("moe_ep_size")
    if mtp is None or mep is None or mtp * mep != tp * dp or (not inferencex and tp * dp <= 8):
        return sizes
    new = None
    if mtp >= 2 and mep == mtp:
        n = mtp
        if tp >= n and tp % n == 0:
            new = (tp // n, dp, n)
        elif dp % n == 0:
            new = (tp, dp // n, n)
    elif mtp == 1 and tp >= 2 and dp == tp and mep == tp * tp:
        new = (tp, 1, tp)
    if new is None:
        return sizes
    out = dict(sizes)
    out["tp_size"], out["attention_dp_size"], out["moe_tp_size"], out["moe_ep_size"] = new[0], new[1], 1, new[2]
    if out.get("batch_size") is not None:
        out["batch_size"] = sizes["batch_size"] * dp // new[1]
    return out


def estimate_args(row: dict, resolver: Resolver, kvcache_quant: str | None) -> tuple[dict, dict]:
    """cli_estimate's keyword arguments for a row, and the columns describing them."""
    mode = row["mode"]
    if mode not in ("agg", "disagg"):
        raise Unsupported(f"mode {mode!r} (expected agg or disagg)")
    model = resolver.model(row["model_path"])
    version, note = resolver.version(row["system"], row["backend"], row["backend_version"].strip())
    isl, osl = as_int(row, "isl"), as_int(row, "osl")
    if not isl or not osl:
        raise Unsupported("isl or osl missing")
    args = dict(
        model_path=model,
        system_name=row["system"],
        mode=mode,
        backend_name=row["backend"],
        backend_version=version,
        isl=isl,
        osl=osl,
        # `int4_wo` rows ran a checkpoint whose INT4 covers its routed experts only (Kimi-K2.5's
        # compressed-tensors config leaves the other GEMMs in BF16): as `dynosim validate`, the
        # GEMMs are left for cli_estimate to infer from the checkpoint.
        gemm_quant_mode=row["gemm_quant_mode"] if row["gemm_quant_mode"] not in ("", "int4_wo") else None,
        moe_quant_mode=row["moe_quant_mode"] or None,
    )
    if kvcache_quant:
        args["kvcache_quant_mode"] = kvcache_quant
    if mode == "agg":
        sizes = {col: as_int(row, col) for col in ("batch_size", *PARALLEL)}
        if sizes["batch_size"] is None or sizes["tp_size"] is None:
            raise Unsupported("agg row without batch_size or tp_size")
        sizes = undo_ep_quirk(sizes, (row.get("silicon_data_source") or "").startswith("source_file=2026-"))
    else:
        stage_cols = [f"{s}_{c}" for s in ("prefill", "decode") for c in PARALLEL] + list(DISAGG_REQUIRED)
        sizes = {col: as_int(row, col) for col in stage_cols}
        missing = [c for c in DISAGG_REQUIRED if sizes[c] is None]
        if missing:
            raise Unsupported(
                "disagg row without " + ", ".join(missing) + " (cli_estimate needs per-pool batch sizes and worker counts)"
            )
    args.update({k: v for k, v in sizes.items() if v is not None})
    prefix = "" if mode == "agg" else "decode_"
    info = {
        "backend_version_used": version,
        "aic_model": model,
        "batch_size": sizes.get(f"{prefix}batch_size", ""),
        "tp": sizes.get(f"{prefix}tp_size", ""),
        "pp": sizes.get(f"{prefix}pp_size", ""),
        "attention_dp": sizes.get(f"{prefix}attention_dp_size", ""),
        "moe_tp": sizes.get(f"{prefix}moe_tp_size", ""),
        "moe_ep": sizes.get(f"{prefix}moe_ep_size", ""),
        "note": note,
    }
    return args, info


def quiet_aic() -> None:
    logging.disable(logging.WARNING)


def run_estimate(key: tuple) -> tuple:
    """("ok", ttft_ms, tpot_ms, kv quant) or ("failed", reason); cli_estimate's prints are dropped."""
    from aiconfigurator.cli.api import cli_estimate

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            result = cli_estimate(**dict(key))
        ttft, tpot = float(result.ttft), float(result.tpot)
    except Exception as e:  # cli_estimate raises many kinds; each becomes the row's reason
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return ("failed", f"cli_estimate: {type(e).__name__}: {first}"[:300])
    if not (math.isfinite(ttft) and math.isfinite(tpot)):
        return ("failed", f"cli_estimate returned ttft={ttft} tpot={tpot}")
    raw = result.raw if isinstance(result.raw, dict) else {}
    return ("ok", ttft, tpot, str(raw.get("kvcache", "")))


def pct(static: float, measured: float | None) -> float | None:
    return None if measured is None else 100.0 * (static - measured) / measured


def fmt(value, digits: int) -> str:
    return "" if value is None or value == "" else f"{value:.{digits}f}"


def estimate_rows(rows: list[dict], jobs: int, kvcache_quant: str | None) -> list[dict]:
    resolver = Resolver()
    prepared, keys = [], {}
    for row in rows:
        try:
            args, info = estimate_args(row, resolver, kvcache_quant)
        except Unsupported as e:
            prepared.append((row, None, {"status": "unsupported", "reason": str(e)}))
            continue
        key = tuple(sorted(args.items()))
        keys.setdefault(key, len(keys))
        prepared.append((row, key, info))
    ordered = sorted(keys, key=keys.get)
    print(f"{len(rows)} rows, {len(ordered)} distinct estimates, {jobs} process(es)", file=sys.stderr)
    pool = None
    if jobs > 1 and len(ordered) > 1:
        import multiprocessing

        pool = multiprocessing.get_context("fork").Pool(jobs, initializer=quiet_aic)
    with pool or contextlib.nullcontext():
        done = pool.imap(run_estimate, ordered, chunksize=1) if pool else map(run_estimate, ordered)
        results = {}
        for i, (key, result) in enumerate(zip(ordered, done), 1):
            results[key] = result
            if i % 50 == 0:
                print(f"  {i}/{len(ordered)} estimates", file=sys.stderr)
    return [out_row(row, info, results.get(key)) for row, key, info in prepared]


def out_row(row: dict, info: dict, result: tuple | None) -> dict:
    out = {
        "id": row["id"], "system": row["system"], "backend": row["backend"], "model": row["model_path"],
        "mode": row["mode"], "backend_version": row["backend_version"], "isl": row["isl"], "osl": row["osl"],
        "gemm_quant": row["gemm_quant_mode"], "moe_quant": row["moe_quant_mode"],
        "measured_ttft_ms": row["silicon_ttft_ms"], "measured_tpot_ms": row["silicon_tpot_ms"],
    }  # fmt: skip
    if result is None:  # unsupported before any estimate
        out.update(status=info["status"], reason=info["reason"])
        return out
    note = info.pop("note")
    out.update(info)
    if result[0] != "ok":
        out.update(status="failed", reason="; ".join(r for r in (result[1], note) if r))
        return out
    _, ttft, tpot, kv = result
    reasons = [note] if note else []
    m_ttft, m_tpot = as_float(row["silicon_ttft_ms"]), as_float(row["silicon_tpot_ms"])
    if m_ttft is None or m_tpot is None:
        reasons.append("measured TTFT or TPOT missing or not positive: no error computed")
    out.update(
        static_kvcache_quant=kv,
        static_ttft_ms=fmt(ttft, 3),
        ttft_error_pct=fmt(pct(ttft, m_ttft), 2),
        static_tpot_ms=fmt(tpot, 3),
        tpot_error_pct=fmt(pct(tpot, m_tpot), 2),
        status="ok",
        reason="; ".join(reasons),
    )
    return out


def stats(values: list[float]) -> tuple[str, str, str]:
    if not values:
        return ("", "", "")
    absolute = [abs(v) for v in values]
    return (f"{statistics.fmean(absolute):.1f}", f"{statistics.median(absolute):.1f}", f"{statistics.median(values):+.1f}")


def summary(results: list[dict]) -> list[list[str]]:
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault((r["system"], r["backend"], r["model"], r["mode"]), []).append(r)
    table = []
    for group in sorted(groups):
        rows = groups[group]
        ok = [r for r in rows if r["status"] == "ok"]
        ttft = [float(r["ttft_error_pct"]) for r in ok if r["ttft_error_pct"] != ""]
        tpot = [float(r["tpot_error_pct"]) for r in ok if r["tpot_error_pct"] != ""]
        table.append([*group, str(len(rows)), str(len(ttft)), *stats(ttft), *stats(tpot)])
    return table


SUMMARY_HEADER = [
    "system", "backend", "model", "mode", "rows", "n",
    "ttft_mean_abs_%", "ttft_median_abs_%", "ttft_signed_median_%",
    "tpot_mean_abs_%", "tpot_median_abs_%", "tpot_signed_median_%",
]  # fmt: skip


def print_summary(table: list[list[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(SUMMARY_HEADER) + " |")
        print("|" + "---|" * len(SUMMARY_HEADER))
        for line in table:
            print("| " + " | ".join(c or "–" for c in line) + " |")
        return
    widths = [max(len(h), *(len(line[i]) for line in table)) for i, h in enumerate(SUMMARY_HEADER)]
    for line in [SUMMARY_HEADER, *table]:
        print("  ".join(c.ljust(w) if i < 4 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))


def read_csv(path: Path) -> tuple[list[str], list[dict]]:
    """(header, rows) of a CSV; an unreadable file is bad input."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            return list(reader.fieldnames or []), list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        fail(f"{path}: cannot read ({e})")


def summarize(path: Path, markdown: bool) -> None:
    """The summary of a results CSV this script wrote (standard library only)."""
    header, results = read_csv(path)
    if tuple(header) != OUT_COLUMNS:
        fail(f"{path}:1: not a results CSV of this script (expected the columns {', '.join(OUT_COLUMNS)})")
    print_summary(summary(results), markdown)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("measured", type=Path, nargs="?", help="CSV with the columns of AIConfigurator's silicon_sample.csv")
    ap.add_argument("-o", "--output", type=Path, help="per-row results CSV (required with MEASURED)")
    ap.add_argument("--source-prefix", default="", help="keep only rows whose silicon_data_source starts so")
    ap.add_argument("--jobs", type=int, default=1, help="estimate processes (default 1)")
    ap.add_argument(
        "--kvcache-quant",
        metavar="MODE",
        help="KV-cache quantisation for every row (e.g. fp8, bfloat16; default: cli_estimate infers it)",
    )
    ap.add_argument("--markdown", action="store_true", help="print the summary as a Markdown table")
    ap.add_argument("--summarize", type=Path, metavar="RESULTS", help="only print the summary of a results CSV")
    args = ap.parse_args()
    if args.summarize:
        if args.measured or args.output:
            fail("--summarize takes no MEASURED or --output")
        summarize(args.summarize, args.markdown)
        return
    if not args.measured or not args.output:
        fail("expected MEASURED.csv and -o OUT.csv (or --summarize RESULTS.csv)")
    if args.jobs < 1:
        fail("--jobs: expected a whole number >= 1")
    header, rows = read_csv(args.measured)
    missing = [c for c in NEEDED_COLUMNS if c not in header]
    if missing:
        fail(f"{args.measured}:1: missing column(s) {', '.join(missing)} (AIConfigurator's table expected)")
    rows = [r for r in rows if (r.get("silicon_data_source") or "").startswith(args.source_prefix)]
    if not rows:
        fail(f"{args.measured}: no rows" + (f" with source {args.source_prefix!r}" if args.source_prefix else ""))
    quiet_aic()
    results = estimate_rows(rows, args.jobs, args.kvcache_quant)
    tmp = args.output.with_name(args.output.name + ".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=OUT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(results)
    tmp.replace(args.output)
    counts = {s: sum(r["status"] == s for r in results) for s in ("ok", "failed", "unsupported")}
    print(f"{args.output}: {len(results)} rows: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    print_summary(summary(results), args.markdown)


if __name__ == "__main__":
    main()
