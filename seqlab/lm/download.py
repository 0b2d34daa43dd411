"""Resumable downloads of the TinyStoriesV2-GPT4 text files.

A partial download is kept as ``NAME.part``; the next attempt asks the server for the rest with an
HTTP ``Range`` header (starting over when the server ignores it), and the file is renamed to its
final name only when complete. Without a network the error says how to use local files instead.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

from seqlab.atomic import link_or_copy

TINYSTORIES_BASE_URL = "https://huggingface.co/datasets/roneneldan/TinyStories/resolve/main"
TINYSTORIES_FILES = {
    "train": "TinyStoriesV2-GPT4-train.txt",
    "valid": "TinyStoriesV2-GPT4-valid.txt",
}
CHUNK_BYTES = 1 << 20


class DownloadError(RuntimeError):
    """A download failed; the message says why and what to do instead."""


def download_file(url: str, dest: str | Path, *, progress: bool = True, timeout: float = 30.0) -> Path:
    """Download ``url`` to ``dest``, resuming from ``dest.part`` if an earlier attempt stopped.

    Returns the final path. An existing complete ``dest`` is kept as is.
    """
    from seqlab.progressbar import progress_bar as tqdm

    dest = Path(dest)
    if dest.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "seqlab"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # the .part file already holds everything
            os.replace(part, dest)
            return dest
        raise DownloadError(f"download of {url} failed: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(
            f"cannot reach {url} ({reason}). If this machine is offline, download the files elsewhere "
            f"and pass them with --input (e.g. seqlab data tinystories --input TRAIN.txt VALID.txt --out DIR)."
        ) from None
    with response:
        resumed = response.status == 206
        if have and not resumed:
            have = 0  # the server sent the whole file: start over
        length = response.headers.get("Content-Length")
        total = have + int(length) if length is not None else None
        mode = "ab" if resumed else "wb"
        with part.open(mode) as out, tqdm(total=total, initial=have, unit="B", unit_scale=True,
                                          unit_divisor=1024, desc=dest.name, disable=not progress) as bar:
            while True:
                try:
                    chunk = response.read(CHUNK_BYTES)
                except OSError as exc:
                    raise DownloadError(
                        f"download of {url} stopped after {out.tell()} bytes ({exc}); run the same "
                        f"command again to resume from {part}") from None
                if not chunk:
                    break
                out.write(chunk)
                bar.update(len(chunk))
            got = out.tell()
    if total is not None and got != total:
        raise DownloadError(f"download of {url} ended early ({got} of {total} bytes); run again to resume")
    os.replace(part, dest)
    return dest


def download_tinystories(out_dir: str | Path, *, base_url: str = TINYSTORIES_BASE_URL,
                         splits: tuple[str, ...] = ("train", "valid"), progress: bool = True) -> dict[str, Path]:
    """Download the TinyStoriesV2-GPT4 splits into ``out_dir``; returns {split: path}."""
    out_dir = Path(out_dir)
    paths = {}
    for split in splits:
        name = TINYSTORIES_FILES[split]
        paths[split] = download_file(f"{base_url.rstrip('/')}/{name}", out_dir / name, progress=progress)
    return paths


def link_local_files(inputs: list[str], out_dir: str | Path) -> dict[str, Path]:
    """Use local copies instead of downloading: a directory holding the two files, or TRAIN VALID paths.

    The files are hard-linked (copied when linking is impossible) under their standard names.
    """
    out_dir = Path(out_dir)
    if len(inputs) == 1 and Path(inputs[0]).is_dir():
        sources = {split: Path(inputs[0]) / name for split, name in TINYSTORIES_FILES.items()}
    elif len(inputs) == 2:
        sources = {"train": Path(inputs[0]), "valid": Path(inputs[1])}
    else:
        raise ValueError("--input takes a directory holding the TinyStories files, or two files: TRAIN VALID")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, source in sources.items():
        if not source.is_file():
            raise FileNotFoundError(f"--input: {split} file {source} does not exist")
        dest = out_dir / TINYSTORIES_FILES[split]
        if dest.exists() and dest.samefile(source):
            paths[split] = dest
            continue
        paths[split] = link_or_copy(source, dest)
    return paths
