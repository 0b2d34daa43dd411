"""Values as plain data, between the checker and the child (the cases one way, the answers back).

:class:`Encoder` turns a value into a JSON tree of ``[tag, payload]`` nodes (None,
bool, int, float, str, bytes, list, tuple, dict with its keys kept) and its numpy arrays, numpy
scalars and torch tensors into ``.npy`` bytes written with ``allow_pickle=False``, tagged so that
each comes back as itself (dtype and shape kept; a bfloat16 tensor travels as the int16 of its
bits). Two values that are not plain data are named and rebuilt on the other side: a
``numpy.random.Generator`` (its bit generator's name and state) and an :class:`InputFile` (a path
in the parent, its file copied into the child's inputs folder, where the child's ``decode`` gives
the path of the copy). Anything else raises :class:`Unsendable` with a message for the student:
"returned a helper.Weird (a subclass of numpy.ndarray) as output['weights'], expected a plain
numpy.ndarray". :func:`decode` reads such a tree back with ``json`` and ``np.load(allow_pickle=False)``
only, and raises ValueError on anything not of this form: nothing the child sends runs code here.

    encoder = Encoder()
    tree = encoder.encode({"w": np.eye(2), (1, 2): b"ab"})      # JSON-able
    decode(json.loads(json.dumps(tree)), encoder.blobs)         # the same dict back
"""

from __future__ import annotations

import io
import os
import sys

RESULT_LIMIT = 64 * 2**20   # bytes one check may send back
DEPTH_LIMIT = 40            # nesting of lists, tuples and dicts in a returned value
PLAIN = "plain data: numbers, strings, bytes, lists, tuples, dicts, numpy arrays or torch tensors"
NUMERIC = "biufc"           # the array dtypes that travel: bool, integers, floats, complex


class InputFile(str):
    """The path of a file a function reads (train_bpe's text). In the parent it is the path itself;
    it is sent as ``["file", NAME]``, the file copied to ``INPUTS/NAME`` for the child (``Encoder.files``)."""


# the bit generators a numpy.random.Generator may be rebuilt from
GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")


class Unsendable(Exception):
    """A value that is not plain data; the message says what it is and where."""


def type_name(value) -> str:
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


# torch dtypes numpy has no type for, sent as the integers of their bits
_BITS_AS = {"bfloat16": "int16"}


class Encoder:
    """A value -> a JSON tree of [tag, payload] nodes, and its arrays as .npy bytes (``blobs``)."""

    def __init__(self):
        self.blobs: list[bytes] = []
        self.files: list[tuple[str, str]] = []      # (NAME in the inputs folder, the parent's path)
        self.size = 0

    def _count(self, n: int, where: str) -> None:
        self.size += n
        if self.size > RESULT_LIMIT:
            raise Unsendable(f"returned more than {RESULT_LIMIT // 2**20} MB of data (at {where}); "
                             "return what the exercise asks for, not more")

    def _blob(self, array, where: str) -> int:
        import numpy as np
        if array.dtype.kind not in NUMERIC:
            what = ("Python objects (dtype object)" if array.dtype.hasobject else
                    f"records (a structured dtype {array.dtype.descr!r:.80})" if array.dtype.names else
                    f"strings (dtype {array.dtype.str})" if array.dtype.kind in "SU" else f"dtype {array.dtype.str}")
            raise Unsendable(f"returned an array of {what} as {where}, expected an array of numbers "
                             "(bool, integer, float or complex)")
        self._count(array.nbytes, where)
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        self.blobs.append(buffer.getvalue())
        return len(self.blobs) - 1

    def encode(self, value, where: str = "output", depth: int = 0) -> list:
        if depth > DEPTH_LIMIT:
            raise Unsendable(f"returned a value nested more than {DEPTH_LIMIT} levels deep (at {where})")
        kind = type(value)
        if kind is InputFile:
            name = f"{len(self.files)}-{os.path.basename(value)}"
            self.files.append((name, str(value)))
            return ["file", name]
        if value is None:
            return ["none"]
        if kind is bool:
            return ["bool", value]
        if kind is int:
            if value.bit_length() > 4096:
                raise Unsendable(f"returned an int of {value.bit_length()} bits as {where}")
            return ["int", value]
        if kind is float:
            return ["float", value]
        if kind is str:
            self._count(len(value), where)
            return ["str", value]
        if kind is bytes:
            self._count(len(value), where)
            return ["bytes", value.hex()]
        if kind is list or kind is tuple:
            self._count(8 * len(value), where)          # about what each item costs as JSON
            return [kind.__name__, [self.encode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]]
        if kind is dict:
            self._count(16 * len(value), where)
            return ["dict", [[self.encode(k, f"a key of {where}", depth + 1), self.encode(v, f"{where}[{k!r}]", depth + 1)]
                             for k, v in value.items()]]
        at = "" if where == "output" else f" as {where}"
        np = sys.modules.get("numpy")
        if np is not None:
            if kind is np.ndarray:
                return ["ndarray", self._blob(value, where)]
            if isinstance(value, np.generic) and kind.__module__ == "numpy":
                return ["npscalar", self._blob(np.asarray(value), where)]
            if kind is np.random.Generator:
                bits = type(value.bit_generator).__name__
                if bits not in GENERATORS:
                    raise Unsendable(f"a numpy.random.Generator over {bits}{at}; seqlab sends {', '.join(GENERATORS)}")
                return ["generator", bits, self.encode(value.bit_generator.state, where, depth + 1)]
            if isinstance(value, (np.ndarray, np.generic)):
                base = "numpy.ndarray" if isinstance(value, np.ndarray) else "numpy scalar"
                raise Unsendable(f"returned a {type_name(value)} (a subclass of {base}){at}, expected a plain "
                                 f"{base}: return np.asarray(...) of it")
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.Tensor):
            if kind is not torch.Tensor and kind is not torch.nn.Parameter:
                raise Unsendable(f"returned a {type_name(value)} (a subclass of torch.Tensor){at}, expected a "
                                 "plain torch.Tensor: return torch.as_tensor(...) of it")
            return self._tensor(value, where, at)
        raise Unsendable(f"returned a {type_name(value)}{at}, expected {PLAIN}")

    def _tensor(self, value, where: str, at: str) -> list:
        import torch
        if value.layout != torch.strided:
            raise Unsendable(f"returned a {value.layout} tensor{at}, expected a dense one (.to_dense())")
        tensor = value.detach()
        if tensor.device.type != "cpu":
            tensor = tensor.cpu()
        tensor = tensor.resolve_conj().resolve_neg()
        name = str(tensor.dtype).removeprefix("torch.")
        if name in _BITS_AS:
            tensor = tensor.view(getattr(torch, _BITS_AS[name]))
        try:
            array = tensor.numpy()
        except (TypeError, RuntimeError):
            raise Unsendable(f"returned a tensor of dtype torch.{name}{at}, which seqlab cannot check") from None
        return ["tensor", self._blob(array, where), name]


def decode(node, blobs: list[bytes], depth: int = 0, inputs: str | None = None):
    """:class:`Encoder`'s tree and .npy bytes -> the value. Anything that is not of this form raises
    ValueError; no code of the sender's runs here. ``inputs``: the folder holding the request's input
    files (the child's side); without it a ``["file", NAME]`` node is refused."""
    import numpy as np
    if depth > DEPTH_LIMIT + 2 or not isinstance(node, list) or not node or not isinstance(node[0], str):
        raise ValueError("not a tagged value")
    tag, payload = node[0], node[1:]
    simple = {"bool": bool, "int": int, "float": float, "str": str}
    if tag == "none" and not payload:
        return None
    if tag in simple and len(payload) == 1 and type(payload[0]) is simple[tag]:
        return payload[0]
    if tag == "float" and len(payload) == 1 and type(payload[0]) is int:
        return float(payload[0])
    if tag == "bytes" and len(payload) == 1 and isinstance(payload[0], str):
        return bytes.fromhex(payload[0])
    if tag in ("list", "tuple") and len(payload) == 1 and isinstance(payload[0], list):
        items = [decode(v, blobs, depth + 1, inputs) for v in payload[0]]
        return items if tag == "list" else tuple(items)
    if tag == "dict" and len(payload) == 1 and isinstance(payload[0], list):
        out = {}
        for pair in payload[0]:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ValueError("not a dict item")
            key = decode(pair[0], blobs, depth + 1, inputs)
            try:
                out[key] = decode(pair[1], blobs, depth + 1, inputs)
            except TypeError:
                raise ValueError("a dict key that cannot be a key") from None
        return out
    if tag == "file" and inputs is not None and len(payload) == 1 and isinstance(payload[0], str) \
            and payload[0] == os.path.basename(payload[0]) and payload[0] not in ("", ".", ".."):
        return os.path.join(inputs, payload[0])
    if tag == "generator" and len(payload) == 2 and payload[0] in GENERATORS:
        state = decode(payload[1], blobs, depth + 1)
        generator = np.random.Generator(getattr(np.random, payload[0])())
        try:
            generator.bit_generator.state = state
        except (TypeError, ValueError, KeyError, OverflowError) as error:
            raise ValueError(f"not the state of a {payload[0]} generator ({type(error).__name__})") from None
        return generator
    if tag in ("ndarray", "npscalar", "tensor") and payload and type(payload[0]) is int and 0 <= payload[0] < len(blobs):
        array = np.load(io.BytesIO(blobs[payload[0]]), allow_pickle=False)
        if not isinstance(array, np.ndarray) or array.dtype.kind not in NUMERIC or array.dtype.names:
            raise ValueError(f"not an array of numbers (dtype {getattr(array, 'dtype', None)!s:.40})")
        if tag == "ndarray" and len(payload) == 1:
            return array
        if tag == "npscalar" and len(payload) == 1 and array.ndim == 0:
            return array[()]
        if tag == "tensor" and len(payload) == 2 and isinstance(payload[1], str):
            import torch
            name = payload[1]
            dtype = getattr(torch, name, None)
            if not isinstance(dtype, torch.dtype):
                raise ValueError(f"no torch dtype {name[:40]!r}")
            if name in _BITS_AS:
                if array.dtype != np.dtype(_BITS_AS[name]):
                    raise ValueError("a tensor's bits of another width")
                return torch.from_numpy(array.copy()).view(dtype)
            tensor = torch.from_numpy(array.copy())
            if tensor.dtype != dtype:
                raise ValueError("a tensor whose dtype is not its name")
            return tensor
    raise ValueError(f"not a value of the form seqlab sends ({tag[:20]!r})")
