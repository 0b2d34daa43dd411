"""GPT-2's reversible map between the 256 byte values and printable Unicode characters.

GPT-2's ``vocab.json`` and ``merges.txt`` store tokens as text, so every byte needs a visible,
non-whitespace character: printable Latin-1 bytes stand for themselves and the other 68 bytes
(control characters, space, ...) are shifted to U+0100 and above (a space becomes ``Ġ``).
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=None)
def bytes_to_unicode() -> dict[int, str]:
    """byte value -> the character GPT-2 writes for it, in GPT-2's order (printable bytes first)."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    mapping = {byte: chr(byte) for byte in printable}
    shifted = 0
    for byte in range(256):
        if byte not in mapping:
            mapping[byte] = chr(256 + shifted)
            shifted += 1
    return mapping


@lru_cache(maxsize=None)
def unicode_to_bytes() -> dict[str, int]:
    """The inverse of :func:`bytes_to_unicode`."""
    return {char: byte for byte, char in bytes_to_unicode().items()}


def gpt2_byte_order() -> list[int]:
    """The 256 byte values in the order GPT-2 numbers them (``!`` is id 0 in GPT-2's vocab)."""
    return list(bytes_to_unicode())


def token_to_text(token: bytes) -> str:
    """Token bytes -> the string written in vocab.json / merges.txt (e.g. b" the" -> "Ġthe")."""
    table = bytes_to_unicode()
    return "".join(table[byte] for byte in token)


def text_to_token(text: str) -> bytes:
    """Inverse of :func:`token_to_text`; raises ``KeyError`` naming the first unmapped character."""
    table = unicode_to_bytes()
    try:
        return bytes(table[char] for char in text)
    except KeyError as error:
        raise KeyError(f"character {error.args[0]!r} is not in GPT-2's byte-to-unicode map") from None
