"""safetensors files of a transformers folder: one ``model.safetensors``, or shards listed by
``model.safetensors.index.json`` (``{"weight_map": {tensor name: shard file}}``).

:class:`WeightFiles` answers where each tensor is, its shape and dtype (from the file headers,
reading no weights), and reads one tensor at a time. Each read opens its shard, copies that tensor
out and closes the shard again, so a memory-mapped file never stays resident: a reader that
converts tensor by tensor holds one converted model plus one tensor, never two models.

    files = WeightFiles("SmolLM-135M/")
    files.names()                                    # ["lm_head.weight", "model.embed_tokens.weight", ...]
    files.shape("model.norm.weight")                 # (576,)
    norm = files.tensor("model.norm.weight")         # a torch tensor in the file's dtype
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from seqlab.jsonfile import read_json

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


def _safetensors() -> Any:
    try:
        import safetensors
        import safetensors.torch  # noqa: F401
    except ImportError:
        raise ModuleNotFoundError("reading and writing Hugging Face weights needs the safetensors package: "
                                  "pip install safetensors (or pip install 'seqlab[hf]')") from None
    return safetensors


def save_safetensors(tensors: dict[str, torch.Tensor], path: str | os.PathLike) -> None:
    """Write ``tensors`` (contiguous, none sharing memory) to one ``.safetensors`` file, with the
    ``{"format": "pt"}`` metadata transformers expects."""
    _safetensors().torch.save_file(tensors, os.fspath(path), metadata={"format": "pt"})


class WeightFiles:
    """The safetensors weights of the folder ``folder``; errors name the file (and tensor)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self._where: dict[str, Path] = {}
        self._headers: dict[str, tuple[tuple[int, ...], str]] = {}
        index = self.folder / INDEX_FILE
        if index.is_file():
            self._read_index(index)
        elif (self.folder / SINGLE_FILE).is_file():
            self._read_header(self.folder / SINGLE_FILE)
        else:
            others = sorted(p.name for p in self.folder.glob("*.bin")) + sorted(p.name for p in self.folder.glob("*.pth"))
            hint = (f"; it holds {', '.join(others[:3])} (pickled weights): load the model in transformers and "
                    f"save it again with save_pretrained(..., safe_serialization=True)") if others else ""
            raise FileNotFoundError(f"{self.folder} has neither {SINGLE_FILE} nor {INDEX_FILE}{hint}")

    def _read_index(self, index: Path) -> None:
        table = read_json(index, expected=dict, expected_text="a JSON index object ({\"weight_map\": ...})")
        weight_map = table.get("weight_map")
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise ValueError(f"{index}: weight_map must map tensor names to shard file names")
        for shard in sorted(set(weight_map.values())):
            path = self.folder / shard
            if Path(shard).name != shard:
                raise ValueError(f"{index}: weight_map names the shard {shard!r} outside the folder")
            if not path.is_file():
                owners = [name for name, file in weight_map.items() if file == shard]
                raise FileNotFoundError(f"{index}: weight_map names the shard {shard} (for {owners[0]} and "
                                        f"{len(owners) - 1} more tensors), which is missing from {self.folder}")
            self._read_header(path)
        for name, shard in weight_map.items():
            if self._where.get(name) != self.folder / shard:
                raise ValueError(f"{index}: weight_map puts {name} in {shard}, which does not hold it")

    def _read_header(self, path: Path) -> None:
        safetensors = _safetensors()
        try:
            with safetensors.safe_open(os.fspath(path), framework="pt") as handle:
                for name in handle.keys():
                    piece = handle.get_slice(name)
                    self._headers[name] = (tuple(piece.get_shape()), piece.get_dtype())
                    if name in self._where:
                        raise ValueError(f"{path}: tensor {name} is also in {self._where[name].name}")
                    self._where[name] = path
        except (OSError, ValueError):
            raise
        except Exception as error:  # safetensors' own errors (a truncated or foreign file)
            raise ValueError(f"{path} is not a readable safetensors file: {error}") from None

    def names(self) -> list[str]:
        return sorted(self._where)

    def file_of(self, name: str) -> Path:
        return self._where[name]

    def shape(self, name: str) -> tuple[int, ...]:
        return self._headers[name][0]

    def dtype(self, name: str) -> str:
        """The safetensors dtype name: "F32", "BF16", "F16", ..."""
        return self._headers[name][1]

    def tensor(self, name: str) -> torch.Tensor:
        """Tensor ``name`` in its stored dtype, read alone (the shard is closed again)."""
        with _safetensors().safe_open(os.fspath(self._where[name]), framework="pt") as handle:
            return handle.get_tensor(name)
