# SPDX-License-Identifier: MIT
"""Model hyper-parameters, read from tools/models/<name>.json (or any path) and checked strictly."""

import difflib
import json
import os

from .errors import UsageError

MODELS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")

_TOP_KEYS = {
    "name": str, "description": str, "sources": list, "hidden": int, "layers": int,
    "dense_layers": int, "dense_ffn": int, "experts": int, "top_k": int, "expert_ffn": int,
    "shared_experts": int, "vocab": int, "attention": dict,
}
_ATTN_KEYS = {
    "gqa": {"type": str, "heads": int, "kv_heads": int, "head_dim": int},
    "mla": {"type": str, "heads": int, "q_lora_rank": int, "kv_lora_rank": int,
            "qk_nope_head_dim": int, "qk_rope_head_dim": int, "v_head_dim": int},
}
# Keys that may be 0; every other integer must be >= 1.
_MAY_BE_ZERO = {"dense_layers", "dense_ffn", "shared_experts"}


def builtin_models():
    """Names of the bundled model files, sorted."""
    return sorted(f[:-5] for f in os.listdir(MODELS_DIR) if f.endswith(".json"))


def _check_keys(obj, schema, where, arg):
    for key in sorted(obj):
        if key not in schema:
            near = difflib.get_close_matches(key, list(schema), n=1)
            hint = f" (did you mean \"{near[0]}\"?)" if near else ""
            raise UsageError(arg, f"{where}/{key}: unknown key{hint}")
    for key, typ in schema.items():
        if key not in obj:
            raise UsageError(arg, f"{where}/{key}: missing (expected {typ.__name__})")
        val = obj[key]
        # bool is an int subclass in Python; a JSON true is not a size.
        if not isinstance(val, typ) or (typ is int and isinstance(val, bool)):
            raise UsageError(arg, f"{where}/{key}: expected {typ.__name__}, got {json.dumps(val)}")
        if typ is int and val < (0 if key in _MAY_BE_ZERO else 1):
            raise UsageError(arg, f"{where}/{key}: expected an integer >= "
                                  f"{0 if key in _MAY_BE_ZERO else 1}, got {val}")


def load_model(spec):
    """spec: a bundled model name or a path to a model JSON file. Returns the checked dict."""
    if os.sep in spec or spec.endswith(".json"):
        path = spec
    else:
        path = os.path.join(MODELS_DIR, spec + ".json")
        if not os.path.exists(path):
            raise UsageError("--model", f"unknown model \"{spec}\" (expected one of "
                                        f"{', '.join(builtin_models())} or a path to a .json file)")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise UsageError("--model", f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise UsageError("--model", f"{path}: invalid JSON: {e}") from None
    if not isinstance(data, dict):
        raise UsageError("--model", f"{path}: expected a JSON object")
    _check_keys(data, _TOP_KEYS, path + ":", "--model")
    attn = data["attention"]
    kind = attn.get("type")
    if kind not in _ATTN_KEYS:
        raise UsageError("--model", f"{path}:/attention/type: expected \"gqa\" or \"mla\", "
                                    f"got {json.dumps(kind)}")
    _check_keys(attn, _ATTN_KEYS[kind], path + ":/attention", "--model")
    if data["top_k"] > data["experts"]:
        raise UsageError("--model", f"{path}:/top_k: {data['top_k']} > experts {data['experts']} "
                                    "(a token picks top_k distinct experts)")
    if data["dense_layers"] > data["layers"]:
        raise UsageError("--model", f"{path}:/dense_layers: {data['dense_layers']} > layers "
                                    f"{data['layers']}")
    if data["dense_layers"] > 0 and data["dense_ffn"] == 0:
        raise UsageError("--model", f"{path}:/dense_ffn: must be >= 1 when dense_layers > 0")
    return data


def shared_ffn(model):
    """Total width of the shared expert(s): n_shared x expert_ffn (DeepSeek's convention)."""
    return model["shared_experts"] * model["expert_ffn"]
