"""Write a 1-D ``.npy`` file whose length is only known at the end (streamed token ids)."""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

from seqlab.tokenizer.files import make_readable

_HEADER_BYTES = 128  # fixed, so the final header (with the real length) overwrites the placeholder


def _header(descr: str, length: int) -> bytes:
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({length},), }}"
    room = _HEADER_BYTES - 10  # magic (6) + version (2) + header length (2)
    text = text.ljust(room - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", room) + text.encode("latin1")


class NpyStreamWriter:
    """``with NpyStreamWriter(path, np.uint16) as out: out.write(array) ...``; renamed into place on success."""

    def __init__(self, path: str | os.PathLike, dtype):
        import numpy as np

        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self.length = 0
        self._file = tempfile.NamedTemporaryFile("wb", dir=self.path.parent, prefix=f".{self.path.name}.", delete=False)
        self._file.write(_header(self.dtype.str, 0))

    def write(self, array) -> None:
        import numpy as np

        array = np.ascontiguousarray(array, dtype=self.dtype).reshape(-1)
        self._file.write(array.tobytes())
        self.length += array.size

    def __enter__(self) -> NpyStreamWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self._file.seek(0)
                self._file.write(_header(self.dtype.str, self.length))
            self._file.close()
            if exc_type is None:
                make_readable(self._file.name)
                os.replace(self._file.name, self.path)
        finally:
            if exc_type is not None or not self.path.exists():
                Path(self._file.name).unlink(missing_ok=True)
