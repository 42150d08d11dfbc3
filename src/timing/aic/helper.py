# dynosim's AIConfigurator compile step, run as `python3 -c <this file> probe|compile|serve|list`.
# It needs the Python package aiconfigurator-core, 0.12.0 (PyPI) or 0.11.0 (DynoSim 1.4.2's);
# `probe` says which is installed (its spec schema picks the Rust estimator that loads the specs). Reads one
# JSON request on stdin, writes one JSON answer on stdout ({"ok": true, ...} or
# {"ok": false, "kind": ..., "message": ..., "available": [...]}); AIC's own log lines go to stderr.
# `serve` answers one request per stdin line until stdin closes (the perf data the first compile
# reads stays loaded for the next ones).
import sys

# `python -c` puts the working directory first on sys.path, so a user's `json.py`, `random.py`
# or `grp.py` in the folder dynosim runs from would shadow the standard library and AIC's
# imports (and surface as a misleading "package missing"). Nothing here is meant to come from
# there: drop it before any other import.
if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]

import functools
import json
import os


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
    sys.exit(0)


def fail(kind, message, available=None):
    obj = {"ok": False, "kind": kind, "message": message, "available": available or []}
    if "native" in globals():  # the package is there: say which (dynosim's hints depend on it)
        obj["aic_version"], obj["schema"] = VERSION, quick_schema()
    answer(obj)


def package_version():
    """The installed distribution's version, or None for a copy without metadata (e.g. the
    aiconfigurator_core folder of a DynoSim kit)."""
    try:
        import importlib.metadata as md

        return md.version("aiconfigurator-core")
    except Exception:
        return None


def import_failed(exc):
    """Answers that the package is not installed (`missing_package`) or is there but fails to
    import (`broken_package`: a dependency missing, a native part built for another Python)."""
    missing = isinstance(exc, ModuleNotFoundError) and exc.name == "aiconfigurator_core"
    fail("missing_package" if missing else "broken_package", f"{type(exc).__name__}: {exc}")


try:
    import aiconfigurator_core
    import aiconfigurator_core._aiconfigurator_core as native
except Exception as exc:
    import_failed(exc)

VERSION = package_version()
PACKAGE_DIR = os.path.dirname(aiconfigurator_core.__file__)


def sdk():
    """The SDK modules a compile needs (0.11.0 and 0.12.0 have the same names and keywords)."""
    try:
        from aiconfigurator_core.sdk import engine, memory, perf_database

        return engine, memory, perf_database
    except Exception as exc:
        import_failed(exc)


def quick_schema():
    """The EngineSpec schema the installed package compiles, without importing the SDK (about
    0.5 s): 0.12.0's native module says it; 0.11.0's has no such function and states it as a
    constant in sdk/engine.py, read as text. None if neither says."""
    try:
        if hasattr(native, "engine_spec_schema_version"):
            return int(native.engine_spec_schema_version())
        import re

        with open(os.path.join(PACKAGE_DIR, "sdk", "engine.py"), encoding="utf-8") as f:
            m = re.search(r"^ENGINE_SPEC_SCHEMA_VERSION = (\d+)\s*$", f.read(), re.M)
        return int(m.group(1)) if m else None
    except Exception:
        return None


def spec_schema():
    schema = quick_schema()
    return schema if schema is not None else int(sdk()[0].ENGINE_SPEC_SCHEMA_VERSION)


def fingerprint():
    """What identifies the installed package's code: a reinstall or another version changes it."""
    parts = [os.path.realpath(PACKAGE_DIR), VERSION]
    for f in (native.__file__, os.path.join(PACKAGE_DIR, "sdk", "engine.py")):
        st = os.stat(os.path.realpath(f))
        parts.append([os.path.realpath(f), st.st_size, st.st_mtime_ns])
    return json.dumps(parts)


PACKAGE_SYSTEMS = os.path.join(os.path.dirname(aiconfigurator_core.__file__), "systems")
MODEL_CONFIGS = os.path.join(os.path.dirname(aiconfigurator_core.__file__), "model_configs")


def bundled_models():
    names = []
    for f in sorted(os.listdir(MODEL_CONFIGS)):
        if f.endswith("_config.json") and not f.endswith("_hf_quant_config.json"):
            names.append(f[: -len("_config.json")].replace("--", "/", 1))
    return names


@functools.lru_cache(maxsize=None)
def bundled_config(name):
    """A bundled model's config.json as a dict (read once per name, not to be mutated), or
    None."""
    path = os.path.join(MODEL_CONFIGS, name.replace("/", "--", 1) + "_config.json")
    try:
        with open(path) as f:
            raw = json.load(f)
    except Exception:
        return None
    return raw if isinstance(raw, dict) else None


@functools.lru_cache(maxsize=None)
def parsed_config(name):
    """What AIC's model parser reads from a bundled config (layers, sizes, experts), or None
    when the config is missing or the parser cannot read it."""
    raw = bundled_config(name)
    if raw is None:
        return None
    try:
        from aiconfigurator_core.sdk.utils import _parse_hf_config_json

        info = _parse_hf_config_json(raw)
    except Exception:
        return None
    return info if isinstance(info, dict) else None


def model_layers(name):
    """The layer count AIC's model parser gives a bundled config (what its vLLM backend's
    dispatch overhead counts), else the config's own num_hidden_layers; None if neither says."""
    raw = bundled_config(name)
    if raw is None:
        return None
    n = (parsed_config(name) or {}).get("layers")
    if isinstance(n, int) and n > 0:
        return n
    for src in (raw, raw.get("text_config") or {}):
        n = src.get("num_hidden_layers")
        if isinstance(n, int) and n > 0:
            return n
    return None


def model_moe_inter_size(name):
    """The routed experts' intermediate size AIC's model parser gives a bundled MoE config,
    or None (a dense model, or a config the parser cannot read)."""
    info = parsed_config(name)
    if info is None:
        return None
    n = info.get("moe_inter_size")
    if info.get("num_experts") and isinstance(n, int) and n > 0:
        return n
    return None


def moe_layers_of(info):
    """How many of a model's layers route to experts, from AIC's `_get_model_info`: its
    `num_moe_layers` (aiconfigurator-core 0.12); 0.11 has none, and it is derived here as the
    layers after DeepSeek's `first_k_dense_replace` dense ones. 0 for a dense model."""
    layers = int(info["layers"])
    moe_layers = info.get("num_moe_layers")
    if moe_layers is None and info.get("num_experts"):
        raw = info.get("raw_config") or {}
        raw = raw.get("text_config") or raw
        if int(raw.get("moe_layer_freq") or 1) == 1:
            moe_layers = layers - int(raw.get("first_k_dense_replace") or 0)
    return int(moe_layers or 0)


def model_moe_layers(name):
    """How many of a bundled model's layers route to experts ([`moe_layers_of`]); None for a
    dense model or one AIC cannot describe."""
    try:
        from aiconfigurator_core.sdk.models.helpers import _get_model_info

        return moe_layers_of(_get_model_info(name)) or None
    except Exception:
        return None


def model_quant_method(name):
    """The quantisation a bundled config declares for its checkpoint: its
    `quantization_config.quant_method` (`mxfp4` for gpt-oss), `fp8_block` for FP8 in weight
    blocks (DeepSeek-R1's 128 x 128), or None."""
    raw = bundled_config(name)
    if raw is None:
        return None
    for src in (raw, raw.get("text_config") or {}):
        q = src.get("quantization_config")
        if isinstance(q, dict) and isinstance(q.get("quant_method"), str):
            method = q["quant_method"].lower()
            if method == "fp8" and q.get("weight_block_size"):
                return "fp8_block"
            return method
    return None


def databases(systems_path):
    paths = [systems_path] if systems_path else None
    return {s: dict(b) for s, b in sdk()[2].get_supported_databases(paths).items()}


def default_versions(dbs, systems_path):
    """AIC's default perf-data version per system and backend: what it queries when asked for
    none (0.12.0's `current` slot, its newest maintainer-completed collection; `next`, a
    development drop for new models, is never the implicit default). Read from the slots file
    alone (`get_version_slots`): `get_latest_database_version` gives the same but rescans the
    whole perf-data tree for each pair (9 s of `list`). A package without slots (0.11.0) has no
    defaults, and dynosim takes the newest version, as that package's own default does."""
    slots = getattr(sdk()[2], "get_version_slots", None)
    if slots is None:
        return {}
    paths = [systems_path] if systems_path else None
    out = {}
    for s, backends in dbs.items():
        for b in backends:
            try:
                v = (slots(s, b, paths) or {}).get("current")
            except Exception:
                v = None
            if isinstance(v, str) and v:
                out.setdefault(s, {})[b] = v
    return out


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
    engine, memory, _ = sdk()
    fmha_fallback = resolve_fmha(req, parallel, quant)
    try:
        # nextn: AIC times each decode step at nextn + 1 tokens per sequence (MTP verification).
        extra = {"nextn": req["nextn"]} if req.get("nextn") else {}
        spec = engine.compile_engine(model, req["system"], req["backend"], req["backend_version"], systems_path=sp, **parallel, **quant, **extra)
    except Exception as exc:
        fail("compile_failed", f"{type(exc).__name__}: {exc}")
    blocks = None
    weights_overcount = None
    kv = req.get("kv")
    if kv is not None and kv.get("checkpoint_weights"):
        weights_overcount = checkpoint_weights_overcount(model, req["backend"], parallel, quant)
    if kv is not None and (kv["memory_fraction_kind"] == "of_static" or weights_overcount):
        blocks = breakdown_blocks(memory, model, req, kv, parallel, quant, weights_overcount or 0.0)
    elif kv is not None:
        try:
            blocks = int(
                memory.estimate_num_gpu_blocks(
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
    answer({"ok": True, "aic_version": VERSION, "schema": int(engine.ENGINE_SPEC_SCHEMA_VERSION), "spec_hex": bytes(spec).hex(), "systems_root": systems_root(sp), "num_gpu_blocks": blocks, "fmha_fallback": fmha_fallback})


def breakdown_blocks(memory, model, req, kv, parallel, quant, weights_overcount):
    """KV blocks from AIC's memory breakdown, for the two rules AIC's own estimate does not have:
    SGLang's static fraction (`of_static`: `mem_fraction_static` of the GPU holds the weights and
    the KV pool, and activations and CUDA graphs live in the rest, SGLang's `rest_memory = free
    after loading - total * (1 - fraction)`, where AIC's `of_total`, vLLM's accounting, also
    takes the activations out of the fraction), and weights counted as the checkpoint holds them
    (`weights_overcount` bytes fewer per GPU than AIC's; `of_total`/`of_free` then as AIC's
    `kv_cache_budget_bytes`)."""
    try:
        estimator = memory.KVCacheEstimator.from_request(
            model, req["system"], req["backend"], req["backend_version"],
            max_num_tokens=kv["max_num_batched_tokens"],
            max_batch_size=1,
            systems_path=req.get("systems_path"),
            **parallel, **quant,
        )
        b = estimator.breakdown
        kind = kv["memory_fraction_kind"]
        non_kv = float(b["non_kv_bytes"]) - weights_overcount
        if kind == "of_static":  # the fraction holds no activations
            non_kv -= float(b["activations_bytes"])
        budget = memory.kv_cache_budget_bytes(
            capacity=float(b["gpu_memory_capacity_bytes"]),
            non_kv=non_kv,
            fraction=float(kv["memory_fraction_value"]),
            of_free=kind == "of_free",
        )
        if budget <= 0.0:
            raise ValueError(f"no KV budget: the weights and runtime buffers ({int(non_kv)} bytes) fill the fraction")
        return int(b["tokens_from_kv_bytes"](budget)) // int(kv["block_size"])
    except Exception as exc:
        fail("kv_estimate_failed", f"{type(exc).__name__}: {exc}")


def model_config(parallel, quant):
    """AIC's ModelConfig for the request's parallelism and dtypes (no pipeline parallelism; an
    unset MoE TP or EP size is 1)."""
    from aiconfigurator_core.sdk.config_builders import build_model_config

    return build_model_config(
        pp_size=1,
        **dict(parallel, moe_tp_size=parallel["moe_tp_size"] or 1, moe_ep_size=parallel["moe_ep_size"] or 1),
        **quant,
    )


def checkpoint_weights_overcount(model_path, backend, parallel, quant):
    """How many bytes per GPU AIC's weight count exceeds the checkpoint's, for a model whose AIC
    class counts weights another way than its servers load them (0.0 for the others). AIC's
    DeepSeek class (DeepSeek-V3/R1, Kimi-K2.x) takes every layer as an MoE layer, where the
    config's `first_k_dense_replace` first layers have a dense MLP instead (3 of DeepSeek-R1's 61,
    1 of Kimi-K2.5's), and keeps the whole embedding table on every GPU, where vLLM, SGLang and
    TRT-LLM split it over the attention TP ranks. None when AIC's model cannot be built here
    (the compile step reports that itself)."""
    try:
        from aiconfigurator_core.sdk import operations as ops
        from aiconfigurator_core.sdk.models import get_model
        from aiconfigurator_core.sdk.models.helpers import _get_model_info

        built = get_model(model_path, model_config(parallel, quant), backend)
        info = _get_model_info(model_path)
    except Exception:
        return None
    layers = int(info["layers"])
    moe_layers = moe_layers_of(info)
    tp, adp = int(parallel["tp_size"]), int(parallel["attention_dp_size"] or 1)
    over, dense_quant = 0.0, None
    for op in built.context_ops:
        w = float(op.get_weights())
        if w <= 0.0:
            continue
        kind, name = type(op).__name__, str(op._name)
        if kind == "Embedding" and tp > 1 and adp == 1 and int(op._row_size) == int(info["vocab"]):
            over += w * (1.0 - 1.0 / tp)
        in_moe_block = kind == "MoE" or "shared" in name or "router" in name
        if in_moe_block and 0 < moe_layers < layers and float(op._scale_factor) == layers:
            over += w * (1.0 - moe_layers / layers)
            if "shared_gate_up" in name:
                dense_quant = op._quant_mode
    if dense_quant is not None:  # the dense layers' MLP, quantised as the shared expert
        dense, inter, h = layers - moe_layers, int(info["inter_size"]), int(info["hidden_size"])
        for n, k in ((2 * inter // tp, h), (h, inter // tp)):
            over -= float(ops.GEMM("dense_mlp", dense, n, k, dense_quant).get_weights())
    return over


def resolve_fmha(req, parallel, quant):
    """AIConfigurator's estimate path (cli_estimate) picks the context-attention (FMHA) dtype from
    the perf data when none is given: an fp8 inferred from the checkpoint, with no fp8 context
    attention data for the KV dtype but bfloat16 data, becomes bfloat16. `compile_engine` skips
    that step, and the estimator then cannot answer a prefill. Applies AIC's own rule (both 0.11.0
    and 0.12.0 have it) to `quant`; returns the dtype it chose when it changed one, else None."""
    if quant["fmha_quant_mode"] is not None:
        return None
    try:
        from aiconfigurator_core.sdk.models.helpers import resolve_context_fmha_by_data
        from aiconfigurator_core.sdk.perf_database import get_database
    except ImportError:
        return None
    try:
        database = get_database(req["system"], req["backend"], req["backend_version"], systems_paths=req.get("systems_path"))
        if database is None:
            return None
        cfg = model_config(parallel, quant)
        resolve_context_fmha_by_data(cfg, req["model_path"], database, req["backend"], is_context_role=True)
    except Exception:
        return None  # no rule applies; the compile step reports any real problem itself
    if cfg.fmha_quant_mode is None:
        return None
    quant["fmha_quant_mode"] = cfg.fmha_quant_mode.name
    return cfg.fmha_quant_mode.name


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "list":
        sp = os.environ.get("AICONFIGURATOR_SYSTEMS_PATH") or None
        models = bundled_models()
        dbs = databases(sp)
        answer({"ok": True, "aic_version": VERSION, "schema": spec_schema(), "systems_root": systems_root(sp), "databases": dbs, "defaults": default_versions(dbs, sp), "models": models, "layers": {m: n for m in models if (n := model_layers(m))}, "checkpoint_quant": {m: q for m in models if (q := model_quant_method(m))}, "moe_inter_size": {m: n for m in models if (n := model_moe_inter_size(m))}, "moe_layers": {m: n for m in models if (n := model_moe_layers(m))}})
    if cmd == "probe":
        answer({"ok": True, "aic_version": VERSION, "schema": spec_schema(), "fingerprint": fingerprint()})
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
