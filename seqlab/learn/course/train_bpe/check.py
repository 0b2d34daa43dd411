"""train_bpe: the cases (text files, sent to the child as InputFile), the checks of its sentences, its mutants
and recognisers (the words, the packages and the helper module allowed are in step.toml)."""

from __future__ import annotations

from seqlab.learn import diagnosis as D
from seqlab.learn.child.plain_data import InputFile
from seqlab.learn.exercise import Case, Check, same_values
from seqlab.learn.kit import SINGLE_BYTES, rng
from seqlab.learn.words import said, speaker

say = speaker(__file__)

# the worked corpus (the lesson and its figures use it too)
CORPUS = ("low low low low low lower lower widest widest widest newest newest newest newest newest newest"
          "<|endoftext|>") * 3 + "".join(f"ab<|endoftext|>cd{i % 3}<|endoftext|>" for i in range(20))
_FILES: dict[str, str] = {}


def _file(name: str, text: str) -> str:
    """A corpus file for the cases, written once per process into a folder removed at exit."""
    if name not in _FILES:
        import atexit
        import shutil
        import tempfile
        from pathlib import Path
        if "" not in _FILES:
            _FILES[""] = tempfile.mkdtemp(prefix="seqlab-learn-bpe-")
            atexit.register(shutil.rmtree, _FILES[""], ignore_errors=True)
        path = Path(_FILES[""]) / f"{name}.txt"
        path.write_text(text, encoding="utf-8")
        _FILES[name] = str(path)
    return InputFile(_FILES[name])          # copied into the child's inputs folder


def cases() -> list[Case]:
    r = rng(6)
    words = ["the", "cat", "sat", "on", "mat", "a", "hat"]
    other = "<|endoftext|>".join(" ".join(r.choice(words, 8)) for _ in range(30))
    return [Case(said("cases.worked"), (_file("worked", CORPUS), 256 + 1 + 12, ["<|endoftext|>"])),
            Case(said("cases.random", k=1), (_file("random", other), 256 + 1 + 10, ["<|endoftext|>"]))]


def compared(out):
    vocab, merges = out
    specials = [vocab[i] for i in range(len(vocab) - 256 - len(merges))]
    return {"first ids (special tokens)": specials, "tokens": sorted(vocab.values()),
            "merges": [tuple(m) for m in merges]}


def _vocab_order(case, out, ref, extra):
    vocab, merges = out
    specials = [s.encode("utf-8") for s in case.args[2]]
    k = len(specials)
    if [vocab.get(i) for i in range(k)] != specials:
        return say("first_ids", last=k - 1, got=str([vocab.get(i) for i in range(k)]), specials=str(specials))
    if sorted(vocab.get(i, b"") for i in range(k, k + 256)) != SINGLE_BYTES:
        return say("not_bytes", first=k, last=k + 255)
    joined = [vocab.get(k + 256 + n) for n in range(len(merges))]
    if joined != [bytes(a) + bytes(b) for a, b in merges]:
        return say("not_merged", joined=str(joined[:4]))
    return None


def _size(case, out, ref, extra):
    size = case.args[1]
    return None if len(out[0]) == size else say("size", n=len(out[0]), size=size)


CHECKS = {
    "special tokens split": Check(lambda: [Case(say("short_documents"), (
        _file("specials", "hi<|endoftext|>" * 40 + "hello hill"), 256 + 2 + 6, ["<|endoftext|>", "<pad>"]))]),
    "pre-tokenized": Check(lambda: [Case(say("same_words"), (
        _file("words", "ab ab ab ab ab ab cd cd"), 256 + 1 + 5, ["<|endoftext|>"]))]),
    "ties": Check(lambda: [Case(say("equal_pairs"), (_file("ties", "ab xy ab xy cd ab cd xy"), 256 + 0 + 4, [])),
                           # after (a, a): (aa, a), (a, z) and (' ', aa) tie; the pair (aa, a) is the greatest,
                           # the joined bytes b"az" are
                           Case(say("tie_apart"), (
                               _file("joined ties", "az aaa"), 256 + 0 + 3, []))]),
    "vocab size": Check(verify=_size),
    "no special tokens": Check(lambda: [Case(say("no_specials"), (
        _file("plain", "the cat sat on the mat; the hat sat on the cat"), 256 + 8, []))]),
    "vocab order": Check(verify=_vocab_order),
    "merges in order": Check(verify=same_values("merges", part=compared))}


# --- mistakes -----------------------------------------------------------------------------------------
def merges_across_special_tokens(input_path, vocab_size, special_tokens):
    from collections import Counter

    from seqlab.tokenizer.pretokenize import gpt2_pretokenize
    from seqlab.tokenizer.trainer import train_bpe_from_counts
    with open(input_path, encoding="utf-8") as f:
        text = f.read()
    return train_bpe_from_counts(Counter(gpt2_pretokenize(text)), vocab_size, special_tokens)


def _pretoken_counts(input_path, special_tokens, *, pretokenize=True):
    """{pre-token: count} after splitting on the special tokens (or the whole pieces, without pre-tokenizing)."""
    import re
    from collections import Counter

    from seqlab.tokenizer.pretokenize import gpt2_pretokenize
    with open(input_path, encoding="utf-8") as f:
        text = f.read()
    pattern = "|".join(re.escape(s) for s in sorted(special_tokens, key=len, reverse=True))
    pieces = re.split(pattern, text) if special_tokens else [text]
    return Counter(t for piece in pieces for t in (gpt2_pretokenize(piece) if pretokenize else [piece]) if t)


def no_pretokenization(input_path, vocab_size, special_tokens):
    from seqlab.tokenizer.trainer import train_bpe_from_counts
    return train_bpe_from_counts(_pretoken_counts(input_path, special_tokens, pretokenize=False), vocab_size,
                                 special_tokens)


def counts_not_weighted(input_path, vocab_size, special_tokens):
    from seqlab.tokenizer.trainer import train_bpe_from_counts
    return train_bpe_from_counts(dict.fromkeys(_pretoken_counts(input_path, special_tokens), 1), vocab_size,
                                 special_tokens)


def _merged(word: tuple, pair: tuple) -> tuple:
    out, k = [], 0
    while k < len(word):
        if word[k:k + 2] == pair:
            out.append(pair[0] + pair[1])
            k += 2
        else:
            out.append(word[k])
            k += 1
    return tuple(out)


def ties_to_smaller(input_path, vocab_size, special_tokens):
    """The merge loop with the other tie rule (seqlab's trainer has the course's rule built in)."""
    return _merge_loop(input_path, vocab_size, special_tokens, lambda tied: min(tied))


def ties_by_joined_bytes(input_path, vocab_size, special_tokens):
    """Ties broken by the greater joined bytes left + right instead of the pair (left, right)."""
    return _merge_loop(input_path, vocab_size, special_tokens, lambda tied: max(tied, key=lambda p: (p[0] + p[1], p)))


def _merge_loop(input_path, vocab_size, special_tokens, choose):
    """The merge loop; ``choose(tied)`` picks among the most frequent pairs."""
    words = {tuple(bytes([b]) for b in w.encode("utf-8")): c for w, c in _pretoken_counts(input_path, special_tokens).items()}
    vocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}
    vocab.update({len(special_tokens) + b: bytes([b]) for b in range(256)})
    merges = []
    while len(vocab) < vocab_size:
        pairs = {}
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] = pairs.get(pair, 0) + count
        if not pairs:
            break
        top = max(pairs.values())
        best = choose([p for p, c in pairs.items() if c == top])
        merges.append(best)
        vocab[len(vocab)] = best[0] + best[1]
        words = {_merged(word, best): count for word, count in words.items()}
    return vocab, merges


def special_tokens_after_bytes(input_path, vocab_size, special_tokens):
    from seqlab.tokenizer import train_bpe
    vocab, merges = train_bpe(input_path, vocab_size, special_tokens)
    n = len(special_tokens)
    order = list(range(n, 256 + n)) + list(range(n)) + list(range(256 + n, len(vocab)))
    return {i: vocab[j] for i, j in enumerate(order)}, merges


def _learned(ev, i):
    """The student's merged tokens on case i (bytes), or None."""
    try:
        return [bytes(a) + bytes(b) for a, b in ev.raw[i][1]]
    except (TypeError, IndexError, ValueError):
        return None


def _merged_inside_special_tokens(ev):
    """Recognises tokens learned from the special tokens' own text (found nowhere else in the corpus)."""
    for i in ev.usable("all"):
        path, _, specials = ev.cases[i].args
        text = open(path, encoding="utf-8").read()
        rest = text
        for special in specials:
            rest = rest.replace(special, "\x00")
        inside = [t for t in _learned(ev, i) or () if len(t) > 1 and t.decode("utf-8", "replace") not in rest
                  and any(t.decode("utf-8", "replace") in s for s in specials)]
        if inside:
            return say("inside_special", case=ev.cases[i].label, token=repr(inside[0]))
    return None


def _spans_pretokens(ev):
    """Recognises tokens that GPT-2's pre-tokenizer would cut in two (a merge across words)."""
    from seqlab.tokenizer import gpt2_pretokenize
    for i in ev.usable("all"):
        crossing = [t for t in _learned(ev, i) or () if len(gpt2_pretokenize(t.decode("utf-8", "replace"))) > 1]
        if crossing:
            return say("spans", case=ev.cases[i].label, token=repr(crossing[0]))
    return None


def _vocab_size_off(ev):
    """Recognises a merge list that is the reference's with a few merges more or fewer."""
    off = []
    for i in ev.own():
        learned = _learned(ev, i)
        if learned is None:
            return None
        expected = [a + b for a, b in ev.expected[i]["merges"]]
        short, long_ = sorted((learned, expected), key=len)
        if long_[:len(short)] != short or len(long_) - len(short) > 3:
            return None
        if len(learned) != len(expected):
            off.append(i)
    if not off:
        return None
    return say("size_off", case=ev.cases[off[0]].label, n=len(ev.raw[off[0]][0]), size=ev.cases[off[0]].args[1])


def _specials_not_first(ev):
    """Recognises the special tokens present in the vocabulary but not at ids 0..k-1."""
    for i in ev.own():
        specials = [t.encode("utf-8") for t in ev.cases[i].args[2]]
        try:
            vocab = dict(ev.raw[i][0])
        except (TypeError, ValueError, IndexError):
            return None
        where = {t: i for i, t in vocab.items()}
        if specials and all(t in where for t in specials) and [where[t] for t in specials] != list(range(len(specials))):
            return say("specials_at", ids=str([where[t] for t in specials]), case=ev.cases[i].label)
    return None


MUTANTS = {"merges_across_special_tokens": merges_across_special_tokens, "no_pretokenization": no_pretokenization,
           "special_tokens_after_bytes": special_tokens_after_bytes, "ties_to_smaller": ties_to_smaller,
           "ties_by_joined_bytes": ties_by_joined_bytes,
           "counts_not_weighted": counts_not_weighted}
RECOGNISERS = {"merges_across_special_tokens": _merged_inside_special_tokens, "no_pretokenization": _spans_pretokens,
               "special_tokens_after_bytes": _specials_not_first, "vocab_size_miscounted": _vocab_size_off,
               "no_special_tokens_fails": D.failed_check("no special tokens", raises=True)}
