"""Write a 1-D ``.npy`` file whose length is only known at the end (streamed token ids)."""

from __future__ import annotations

import contextlib
import os
import struct
from pathlib import Path

from seqlab.atomic import atomic_path

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
        with contextlib.ExitStack() as stack:  # kept open (pop_all) unless this setup fails
            self._file = stack.enter_context(open(stack.enter_context(atomic_path(self.path)), "wb"))
            self._file.write(_header(self.dtype.str, 0))
            self._stack = stack.pop_all()

    def write(self, array) -> None:
        import numpy as np

        array = np.ascontiguousarray(array, dtype=self.dtype).reshape(-1)
        self._file.write(array.tobytes())
        self.length += array.size

    def __enter__(self) -> NpyStreamWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:  # close and remove the temporary file; the error propagates
            self._stack.__exit__(exc_type, exc, tb)
            return
        with self._stack:  # closes the file, then renames it into place (removes it if this fails)
            self._file.seek(0)
            self._file.write(_header(self.dtype.str, self.length))
