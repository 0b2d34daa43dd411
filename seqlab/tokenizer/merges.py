"""The BPE merge loop shared by the trainer and the teaching trace.

One rule picks every merge: the most frequent adjacent pair, ties broken by the
lexicographically greater pair of byte strings. :func:`merge_order_key` encodes that rule
once; :class:`PairCounts` keeps pair counts up to date incrementally (only the words that
contain the merged pair are touched) and finds the best pair with a lazily invalidated heap.
:func:`choose_merge` is the same rule as a plain ``min`` over all counts, for teaching
(:func:`merge_trace`) and as the tests' oracle.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Mapping, Sequence

Pair = tuple[int, int]

_MAX_TOKENS = 0x110000  # a word is a str with one code point per token id


# byte b -> byte 255 - b, applied in C by bytes.translate
_REVERSED_BYTES = bytes(range(255, -1, -1))


def descending_bytes_key(token: bytes) -> str:
    """A string whose ordering is the *reverse* of ``token``'s byte-string ordering.

    Byte ``b`` becomes ``chr(255 - b)`` and the end of the token becomes ``chr(256)``, larger than
    any byte, so a prefix (smaller as bytes) sorts after its extensions. Lets a min-heap of plain
    tuples (compared in C) pop the lexicographically greatest pair first.
    """
    return token.translate(_REVERSED_BYTES).decode("latin-1") + "\u0100"


def merge_order_key(count: int, left: bytes, right: bytes) -> tuple[int, str, str]:
    """Sort key of a candidate merge: smaller = merged first (higher count, then greater bytes)."""
    return (-count, descending_bytes_key(left), descending_bytes_key(right))


def choose_merge(pair_counts: Mapping[Pair, int], token_bytes: Sequence[bytes] | Mapping[int, bytes]) -> Pair:
    """The pair to merge next under the shared rule (``pair_counts`` must be non-empty)."""
    return min(
        pair_counts,
        key=lambda pair: merge_order_key(pair_counts[pair], token_bytes[pair[0]], token_bytes[pair[1]]),
    )


class PairCounts:
    """Adjacent-pair counts over a weighted set of words.

    ``words[i]`` occurs ``word_counts[i]`` times. Internally a word is a ``str`` with one
    character ``chr(id)`` per token, so finding and replacing a pair runs in C, and a pair
    ``(a, b)`` is the two-character string ``chr(a) + chr(b)``: built from a word's characters
    with no per-token ``ord`` or arithmetic in Python, and a short string caches its hash.

    ``pair_to_words`` indexes which words may contain a pair (entries can be stale or repeated;
    a word that no longer holds the pair is skipped), so a merge touches only those words.
    ``counts`` may keep pairs whose count fell to 0. A pair's count never grows once it exists
    (a merge only takes occurrences away; what it adds are pairs with the brand-new token), so
    the heap can hold ``merge_order_key(count, left, right) + (pair,)`` entries whose count is at
    least the pair's current count: a stale entry is re-pushed with the current count when it
    reaches the top, and an entry whose count is current is the true best pair.
    """

    def __init__(self, words: Sequence[Sequence[int]] | Sequence[str], word_counts: list[int], token_bytes: list[bytes]):
        """``words``: each a list of token ids, or already a ``str`` of ``chr(id)`` characters."""
        if len(token_bytes) > _MAX_TOKENS:
            raise ValueError(f"at most {_MAX_TOKENS} tokens are supported")
        self.words = [word if isinstance(word, str) else "".join(map(chr, word)) for word in words]
        self.word_counts = word_counts
        self.token_bytes = token_bytes
        self._order_keys = [descending_bytes_key(token) for token in token_bytes]
        self.pair_to_words: dict[str, list[int]] = defaultdict(list)
        for index, word in enumerate(self.words):
            # map(str.__add__, ...) builds the pair strings "ab", "bc", ... in C
            for pair in map(str.__add__, word, word[1:]):
                self.pair_to_words[pair].append(index)
        # the index holds a word once per occurrence, so a pair's count is the sum of their weights
        weight_of = word_counts.__getitem__
        self.counts = {pair: sum(map(weight_of, indices)) for pair, indices in self.pair_to_words.items()}
        self._heap = [self._heap_entry(pair, count) for pair, count in self.counts.items()]
        heapq.heapify(self._heap)

    def _heap_entry(self, pair: str, count: int) -> tuple:
        """``merge_order_key(count, left, right) + (pair,)``, from the cached per-token keys."""
        keys = self._order_keys
        return (-count, keys[ord(pair[0])], keys[ord(pair[1])], pair)

    def segmentation(self, index: int) -> list[int]:
        """The token ids of word ``index`` now."""
        return [ord(char) for char in self.words[index]]

    def pair_counts(self) -> dict[Pair, int]:
        """Current counts of the pairs that occur, as ``{(left id, right id): count}``."""
        return {(ord(pair[0]), ord(pair[1])): count for pair, count in self.counts.items() if count > 0}

    def add_token(self, token: bytes) -> int:
        """Register a new token's bytes; returns its id."""
        if len(self.token_bytes) >= _MAX_TOKENS:
            raise ValueError(f"at most {_MAX_TOKENS} tokens are supported")
        self.token_bytes.append(token)
        self._order_keys.append(descending_bytes_key(token))
        return len(self.token_bytes) - 1

    def best_pair(self) -> Pair | None:
        """The next pair to merge (same rule as :func:`choose_merge`), or None when no pair is left."""
        heap, counts = self._heap, self.counts
        while heap:
            entry = heap[0]
            pair = entry[3]
            current = counts.get(pair, 0)
            if current == -entry[0]:
                return ord(pair[0]), ord(pair[1])
            heapq.heappop(heap)  # stale: the pair's count dropped since this entry was pushed
            if current > 0:
                heapq.heappush(heap, self._heap_entry(pair, current))
        return None

    def merge(self, pair: Pair, new_id: int) -> None:
        """Merge ``pair`` into ``new_id`` in every word containing it, updating counts incrementally.

        Only the pairs next to each merged occurrence change: with ``x a b y`` -> ``x c y``,
        ``(x, a)`` and ``(b, y)`` lose the word's count and ``(x, c)`` and ``(c, y)`` gain it.
        Nearly every word (99% on the Brown corpus) holds the pair once; for those the loop only
        files the word's index under its left neighbour ``x`` and its right neighbour ``y``.
        Afterwards each group moves its total weight at once: ``(x, a)`` loses what ``(x, c)``
        gains, and the group's indices become the index entry of the new pair ``(x, c)`` (every
        pair with the brand-new token ``c`` is new). So the per-word Python work is two appends,
        and the count updates run once per distinct neighbour. Words holding the pair several
        times (``a b a b``, where an occurrence's neighbour is the new token) are recounted whole
        by :meth:`_merge_repeated`.
        """
        counts, words = self.counts, self.words
        weight_of = self.word_counts.__getitem__
        a, b = chr(pair[0]), chr(pair[1])
        target, new = a + b, chr(new_id)
        left_neighbours: defaultdict[str, list[int]] = defaultdict(list)  # x -> words with "x a b"
        right_neighbours: defaultdict[str, list[int]] = defaultdict(list)  # y -> words with "a b y"
        gained: defaultdict[str, list[int]] = defaultdict(list)  # new pair -> word index per occurrence
        for index in self.pair_to_words.pop(target, ()):
            word = words[index]
            merged = word.replace(target, new)  # the same object back when the pair is absent
            removed = len(word) - len(merged)  # how many times the word held the pair
            if removed != 1:
                if removed:
                    self._merge_repeated(index, word, merged, new, gained)
                # else: a stale index entry (an earlier merge took this occurrence away)
                continue
            words[index] = merged
            p = word.find(target)
            if p:
                left_neighbours[word[p - 1]].append(index)
            if p + 2 < len(word):
                right_neighbours[word[p + 2]].append(index)
        for x, indices in left_neighbours.items():
            counts[x + a] -= sum(map(weight_of, indices))
            gained[x + new] += indices
        for y, indices in right_neighbours.items():
            counts[b + y] -= sum(map(weight_of, indices))  # may be the merged pair ("a a a")
            gained[new + y] += indices
        counts.pop(target, None)
        self._add_gained(gained)

    def _merge_repeated(self, index: int, word: str, merged: str, new: str, gained: dict[str, list[int]]) -> None:
        """Merge a word holding the pair more than once by recounting its pairs before and after.

        ``merged`` is ``word.replace(pair, new)``: left to right without overlap, which is BPE's
        rule (``a a a`` -> ``aa a``). Old pairs lose the word's weight (the merged pair too; its
        count is dropped anyway); new pairs without the new token stood at the same place before
        and get it back; new pairs with the new token go to ``gained``, one index per occurrence.
        """
        counts, weight = self.counts, self.word_counts[index]
        for old in map(str.__add__, word, word[1:]):
            counts[old] -= weight
        for pair in map(str.__add__, merged, merged[1:]):
            if new in pair:
                gained[pair].append(index)
            else:
                counts[pair] += weight
        self.words[index] = merged

    def _add_gained(self, gained: dict[str, list[int]]) -> None:
        """Give each new pair its count and index entry, and push it on the heap."""
        counts, pair_to_words, weight_of = self.counts, self.pair_to_words, self.word_counts.__getitem__
        heap, order_keys = self._heap, self._order_keys
        for pair, indices in gained.items():
            count = sum(map(weight_of, indices))
            counts[pair] = count
            pair_to_words[pair] = indices
            # self._heap_entry(pair, count), spelled out: this runs ~10^5 times
            heapq.heappush(heap, (-count, order_keys[ord(pair[0])], order_keys[ord(pair[1])], pair))


def _show(token: bytes) -> str:
    return token.decode("utf-8", errors="backslashreplace")


def merge_trace(word_counts: Mapping[str, int], num_merges: int) -> list[dict]:
    """Step-by-step BPE on a small word-count table, for teaching and the explorer.

    Words are split into UTF-8 bytes (no pre-tokenization; the keys *are* the pre-tokens).
    Each step is a dict:
      - ``pair_counts``: ``[[left, right, count], ...]`` before the merge, most frequent first
        (ties in merge order),
      - ``best_count``: the highest count, ``tied``: all pairs ``[left, right]`` with that count,
      - ``chosen``: ``[left, right]`` (the lexicographically greatest of ``tied``),
      - ``words``: ``{word: [segment, ...]}`` after the merge.
    Stops early when no pair is left. Uses :func:`choose_merge`, the trainer's rule.
    """
    if num_merges < 0:
        raise ValueError(f"num_merges must be >= 0, got {num_merges}")
    token_bytes = [bytes([byte]) for byte in range(256)]
    names = list(word_counts)
    words = [list(name.encode("utf-8")) for name in names]
    for name, count in word_counts.items():
        if not isinstance(count, int) or count < 0:
            raise ValueError(f"count of word {name!r} must be a non-negative int, got {count!r}")
    weights = [word_counts[name] for name in names]
    state = PairCounts(words, weights, token_bytes)
    steps: list[dict] = []
    for _ in range(num_merges):
        live = state.pair_counts()
        if not live:
            break
        chosen = choose_merge(live, token_bytes)
        ordered = sorted(live, key=lambda p: merge_order_key(live[p], token_bytes[p[0]], token_bytes[p[1]]))
        best_count = live[chosen]
        new_id = state.add_token(token_bytes[chosen[0]] + token_bytes[chosen[1]])
        state.merge(chosen, new_id)
        steps.append(
            {
                "pair_counts": [[_show(token_bytes[a]), _show(token_bytes[b]), live[(a, b)]] for a, b in ordered],
                "best_count": best_count,
                "tied": [[_show(token_bytes[a]), _show(token_bytes[b])] for a, b in ordered if live[(a, b)] == best_count],
                "chosen": [_show(token_bytes[chosen[0]]), _show(token_bytes[chosen[1]])],
                "words": {name: [_show(token_bytes[t]) for t in state.segmentation(i)] for i, name in enumerate(names)},
            }
        )
    return steps
