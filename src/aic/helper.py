# dynosim's AIConfigurator compile step, run as `python3 -c <this file> compile|serve|list`.
# It needs the PyPI package aiconfigurator-core (the version dynosim's Cargo.toml pins). Reads one
# JSON request on stdin, writes one JSON answer on stdout ({"ok": true, ...} or
# {"ok": false, "kind": ..., "message": ..., "available": [...]}); AIC's own log lines go to stderr.
# `serve` answers one request per stdin line until stdin closes (the perf data the first compile
# reads stays loaded for the next ones).
import json
import os
import sys


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
    sys.exit(0)


def fail(kind, message, available=None):
    answer({"ok": False, "kind": kind, "message": message, "available": available or []})


try:
    import importlib.metadata as md

    VERSION = md.version("aiconfigurator-core")
    import aiconfigurator_core
    from aiconfigurator_core.sdk import perf_database
    from aiconfigurator_core.sdk.engine import compile_engine
    from aiconfigurator_core.sdk.memory import estimate_num_gpu_blocks
except Exception as exc:  # package missing or broken
    fail("missing_package", f"{type(exc).__name__}: {exc}")

PACKAGE_SYSTEMS = os.path.join(os.path.dirname(aiconfigurator_core.__file__), "systems")
MODEL_CONFIGS = os.path.join(os.path.dirname(aiconfigurator_core.__file__), "model_configs")


def bundled_models():
    names = []
    for f in sorted(os.listdir(MODEL_CONFIGS)):
        if f.endswith("_config.json") and not f.endswith("_hf_quant_config.json"):
            names.append(f[: -len("_config.json")].replace("--", "/", 1))
    return names


def databases(systems_path):
    paths = [systems_path] if systems_path else None
    return {s: dict(b) for s, b in perf_database.get_supported_databases(paths).items()}


def systems_root(systems_path):
    if systems_path:
        return systems_path
    return os.environ.get("AICONFIGURATOR_SYSTEMS_PATH") or PACKAGE_SYSTEMS


def check_database(req):
    dbs = databases(req.get("systems_path"))
    system, backend, version = req["system"], req["backend"], req["backend_version"]
    if system not in dbs:
        fail("unknown_system", f"aic_system {system!r} has no perf data", sorted(dbs))
    if backend not in dbs[system]:
        fail("unknown_backend", f"aic_backend {backend!r} has no perf data on {system}", sorted(dbs[system]))
    if version not in dbs[system][backend]:
        fail(
            "unknown_version",
            f"aic_backend_version {version!r} has no perf data for {backend} on {system}",
            list(dbs[system][backend]),
        )


def compile_request(req):
    check_database(req)
    model = req["model_path"]
    local = os.path.exists(model)
    if not local and model not in bundled_models():
        fail("unknown_model", f"aic_model_path {model!r} is neither a local model folder nor a bundled model config", bundled_models())
    parallel = dict(
        tp_size=req["tp_size"],
        attention_dp_size=req["attention_dp_size"],
        moe_tp_size=req.get("moe_tp_size"),
        moe_ep_size=req.get("moe_ep_size"),
    )
    quant = {f"{k}_quant_mode": req.get(f"{k}_dtype") for k in ("gemm", "moe", "fmha", "comm")}
    quant["kvcache_quant_mode"] = req.get("kv_cache_dtype")
    sp = req.get("systems_path")
    try:
        spec = compile_engine(model, req["system"], req["backend"], req["backend_version"], systems_path=sp, **parallel, **quant)
    except Exception as exc:
        fail("compile_failed", f"{type(exc).__name__}: {exc}")
    blocks = None
    kv = req.get("kv")
    if kv is not None:
        try:
            blocks = int(
                estimate_num_gpu_blocks(
                    model, req["system"], req["backend"], req["backend_version"],
                    scheduler_block_size=kv["block_size"],
                    max_num_tokens=kv["max_num_batched_tokens"],
                    max_batch_size=1,
                    memory_fraction_kind=kv["memory_fraction_kind"],
                    memory_fraction_value=kv["memory_fraction_value"],
                    systems_path=sp,
                    **parallel, **quant,
                )
            )
        except Exception as exc:
            fail("kv_estimate_failed", f"{type(exc).__name__}: {exc}")
    answer({"ok": True, "aic_version": VERSION, "spec_hex": bytes(spec).hex(), "systems_root": systems_root(sp), "num_gpu_blocks": blocks})


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "list":
        sp = os.environ.get("AICONFIGURATOR_SYSTEMS_PATH") or None
        answer({"ok": True, "aic_version": VERSION, "systems_root": systems_root(sp), "databases": databases(sp), "models": bundled_models()})
    if cmd == "compile":
        compile_request(json.loads(sys.stdin.read()))
    if cmd == "serve":
        for line in sys.stdin:
            try:
                compile_request(json.loads(line))
            except SystemExit:  # `answer` ends a one-shot run; here it ends one request
                continue
        sys.exit(0)
    fail("usage", f"unknown command {cmd!r}")


main()
