"""Values as plain JSON data, and back into fresh objects of exact types.

What crosses the process boundary: None, bool, int, float (nan and inf included), str, list, tuple,
dict, torch.Tensor, torch.dtype, torch.device, and the dataclasses of `assignment.given`. Decoding
never imports or unpickles anything the other side names: tensors are rebuilt from raw bytes, and a
dataclass only from the allow-list below.
"""

import base64
import dataclasses
import json
import math

import torch

from assignment import given

ALLOWED_DATACLASSES = {
    cls.__name__: cls
    for cls in vars(given).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == given.__name__
}
MAX_TENSOR_BYTES = 32 * 2**20  # the largest tensor the suite passes is the lecture MLP's weights (16 MiB)
MAX_DEPTH = 32  # nesting of the decoded values (a dict is one level)


class CodecError(TypeError):
    """A value that cannot cross the process boundary."""


def _describe(value) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def encode(value):
    """`value` as JSON-compatible data (tagged objects for everything JSON has no type for)."""
    if value is None or type(value) in (bool, int, str):
        return value
    if isinstance(value, float):  # float subclasses (numpy.float64) become plain floats
        return float(value)
    if isinstance(value, int) and not isinstance(value, bool):  # IntEnum and friends
        return int(value)
    if type(value) is list:
        return [encode(v) for v in value]
    if type(value) is tuple:
        return {"$": "tuple", "items": [encode(v) for v in value]}
    if type(value) is dict:
        return {"$": "dict", "items": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, torch.Tensor):
        return _encode_tensor(value)
    if isinstance(value, torch.dtype):
        return {"$": "dtype", "name": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"$": "device", "name": str(value)}
    if dataclasses.is_dataclass(value) and ALLOWED_DATACLASSES.get(type(value).__name__) is type(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"$": "dataclass", "type": type(value).__name__, "fields": encode(fields)}
    raise CodecError(f"a value of type {_describe(value)} cannot be passed between processes")


def _encode_tensor(t: torch.Tensor) -> dict:
    if t.is_sparse or t.layout != torch.strided:
        raise CodecError(f"only strided tensors can be passed between processes, not {t.layout}")
    if type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
        raise CodecError(f"a tensor subclass {_describe(t)} cannot be passed between processes")
    nbytes = t.numel() * t.element_size()
    if nbytes > MAX_TENSOR_BYTES:
        raise CodecError(f"a tensor of {nbytes} bytes is over the {MAX_TENSOR_BYTES}-byte limit")
    flat = t.detach().cpu().contiguous().reshape(-1)
    if flat.numel() == 1 and flat.stride(0) != 1:
        # a one-element slice of a transposed tensor (shape (1,), stride (2,)) counts as contiguous and
        # keeps its stride, which .view(torch.uint8) refuses; longer contiguous tensors have stride 1
        flat = flat.clone(memory_format=torch.contiguous_format)
    raw = flat.view(torch.uint8).numpy().tobytes() if nbytes else b""
    return {
        "$": "tensor",
        "dtype": str(t.dtype).removeprefix("torch."),
        "shape": list(t.shape),
        "requires_grad": t.requires_grad,
        "data": base64.b64encode(raw).decode("ascii"),
    }


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise CodecError(f"unknown dtype {name!r}")
    return dtype


def decode(data, depth: int = 0):
    """The inverse of `encode`: fresh objects, built only from types this module knows. Data that `encode`
    cannot have made raises CodecError."""
    if depth > MAX_DEPTH:
        raise CodecError(f"a value nested deeper than {MAX_DEPTH} levels")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode(v, depth + 1) for v in data]
    if type(data) is not dict:
        raise CodecError(f"malformed data of type {type(data).__name__}")
    try:
        return _decode_tagged(data, depth + 1)
    except CodecError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:  # a field missing or of the wrong type
        raise CodecError(f"malformed {data.get('$')!r} value: {type(exc).__name__}: {exc}") from None


def _decode_tagged(data: dict, depth: int):
    tag = data.get("$")
    if tag == "tuple":
        return tuple(decode(v, depth) for v in data["items"])
    if tag == "dict":
        return {decode(k, depth): decode(v, depth) for k, v in data["items"]}
    if tag == "tensor":
        return _decode_tensor(data)
    if tag == "dtype":
        return _dtype(data["name"])
    if tag == "device":
        return torch.device(data["name"])
    if tag == "dataclass":
        cls = ALLOWED_DATACLASSES.get(data["type"])
        if cls is None:
            raise CodecError(f"unknown dataclass {data['type']!r}")
        return cls(**decode(data["fields"], depth))
    raise CodecError(f"unknown tag {tag!r}")


def _decode_tensor(data: dict) -> torch.Tensor:
    """A tensor whose data is exactly as many bytes as its dtype and shape say."""
    dtype, shape = _dtype(data["dtype"]), data["shape"]
    if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
        raise CodecError(f"a tensor shape must be a list of sizes, not {shape!r}")
    expected = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
    if expected > MAX_TENSOR_BYTES or len(data["data"]) > 4 * (MAX_TENSOR_BYTES // 3 + 1):
        raise CodecError(f"a tensor of {expected} bytes is over the {MAX_TENSOR_BYTES}-byte limit")
    raw = base64.b64decode(data["data"], validate=True)
    if len(raw) != expected:
        raise CodecError(f"a {dtype} tensor of shape {tuple(shape)} has {expected} bytes, not {len(raw)}")
    if not raw:
        t = torch.empty(shape, dtype=dtype)
    else:
        t = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape).clone()
    if type(data["requires_grad"]) is not bool:
        raise CodecError("requires_grad must be true or false")
    return t.requires_grad_(True) if data["requires_grad"] else t


def dumps(value) -> bytes:
    return json.dumps(encode(value), allow_nan=True).encode()


def loads(raw: bytes):
    return decode(json.loads(raw))


def is_nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)
