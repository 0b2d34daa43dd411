"""The BPE merge loop shared by the trainer and the teaching trace.

One rule picks every merge: the most frequent adjacent pair, ties broken by the
lexicographically greater pair of byte strings. :func:`merge_order_key` encodes that rule
once; :class:`PairCounts` keeps pair counts up to date incrementally (only the words that
contain the merged pair are touched) and finds the best pair with a lazily invalidated heap.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Mapping, Sequence

Pair = tuple[int, int]

# Inside PairCounts a pair (a, b) is the int a << PAIR_SHIFT | b: hashing an int is cheaper
# than building and hashing a tuple, and the merge loop does that millions of times.
PAIR_SHIFT = 24
_LOW = (1 << PAIR_SHIFT) - 1
_MAX_TOKENS = 0x110000  # a word is a str with one code point per token id


def pair_key(pair: Pair) -> int:
    return pair[0] << PAIR_SHIFT | pair[1]


def key_pair(key: int) -> Pair:
    return key >> PAIR_SHIFT, key & _LOW


def descending_bytes_key(token: bytes) -> str:
    """A string whose ordering is the *reverse* of ``token``'s byte-string ordering.

    Byte ``b`` becomes ``chr(256 - b)`` and the end of the token becomes ``chr(257)``, larger than
    any byte, so a prefix (smaller as bytes) sorts after its extensions. Lets a min-heap of plain
    tuples (compared in C) pop the lexicographically greatest pair first.
    """
    return "".join([chr(256 - byte) for byte in token]) + chr(257)


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
    """Adjacent-pair counts over a weighted set of words (each word a list of token ids).

    ``words[i]`` occurs ``word_counts[i]`` times; internally a word is a ``str`` with one
    character ``chr(id)`` per token, so finding and replacing a pair runs in C. ``pair_to_words`` indexes which words may
    contain a pair (entries can be stale; merging a stale word is a no-op), so a merge touches
    only those words; ``counts`` may keep pairs whose count fell to 0. The heap holds ``(merge_order_key..., left, right)`` entries with a count
    at least the pair's current count; stale entries are re-pushed when popped.
    """

    def __init__(self, words: list[list[int]], word_counts: list[int], token_bytes: list[bytes]):
        self.words = ["".join(map(chr, word)) for word in words]
        self.word_counts = word_counts
        self.token_bytes = token_bytes
        self._order_keys = [descending_bytes_key(token) for token in token_bytes]
        if len(token_bytes) > _MAX_TOKENS:
            raise ValueError(f"at most {_MAX_TOKENS} tokens are supported")
        self.counts: dict[int, int] = defaultdict(int)  # pair_key -> count
        self.pair_to_words: dict[int, set[int]] = defaultdict(set)
        for index, (word, count) in enumerate(zip(words, word_counts)):
            for a, b in zip(word, word[1:]):
                key = a << PAIR_SHIFT | b
                self.counts[key] += count
                self.pair_to_words[key].add(index)
        self._heap = [self._heap_entry(key, count) for key, count in self.counts.items()]
        heapq.heapify(self._heap)

    def _heap_entry(self, key: int, count: int) -> tuple:
        """``merge_order_key(count, left, right) + (key,)``, from the cached per-token keys."""
        keys = self._order_keys
        return (-count, keys[key >> PAIR_SHIFT], keys[key & _LOW], key)

    def segmentation(self, index: int) -> list[int]:
        """The token ids of word ``index`` now."""
        return [ord(char) for char in self.words[index]]

    def pair_counts(self) -> dict[Pair, int]:
        """Current counts of the pairs that occur, as ``{(left id, right id): count}``."""
        return {key_pair(key): count for key, count in self.counts.items() if count > 0}

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
            key = entry[3]
            current = counts.get(key, 0)
            if current == -entry[0]:
                return key_pair(key)
            heapq.heappop(heap)  # stale: the pair's count dropped since this entry was pushed
            if current > 0:
                heapq.heappush(heap, self._heap_entry(key, current))
        return None

    def merge(self, pair: Pair, new_id: int) -> None:
        """Merge ``pair`` into ``new_id`` in every word containing it, updating counts incrementally.

        Only the pairs next to each merged occurrence change: with ``x a b y`` -> ``x c y``,
        ``(x, a)`` and ``(b, y)`` lose the word's count and ``(x, c)`` and ``(c, y)`` gain it. In
        ``a b a b`` the second occurrence's left neighbour is the new token from the first.
        Occurrences are found with ``str.find`` and merged with ``str.replace`` (left to right,
        non-overlapping: exactly BPE's rule).
        """
        left, right = pair
        counts, pair_to_words, words, word_counts = self.counts, self.pair_to_words, self.words, self.word_counts
        shift = PAIR_SHIFT
        new_left, right_high = new_id << shift, right << shift
        target = chr(left) + chr(right)
        replacement = chr(new_id)
        grown = set()
        for index in pair_to_words.pop(pair_key(pair), ()):
            word = words[index]
            p = word.find(target)
            if p < 0:
                continue
            weight = word_counts[index]
            n = len(word)
            last_end = -1
            while p >= 0:
                if p:
                    before = (new_id if p == last_end else ord(word[p - 1])) << shift
                    counts[before | left] -= weight
                    gained = before | new_id
                    counts[gained] += weight
                    grown.add(gained)
                    pair_to_words[gained].add(index)
                last_end = p + 2
                if last_end < n:
                    after = ord(word[last_end])
                    counts[right_high | after] -= weight
                    gained = new_left | after
                    counts[gained] += weight
                    grown.add(gained)
                    pair_to_words[gained].add(index)
                p = word.find(target, last_end)
            words[index] = word.replace(target, replacement)
        counts.pop(pair_key(pair), None)
        for gained in grown:
            count = counts[gained]
            if count > 0:
                heapq.heappush(self._heap, self._heap_entry(gained, count))


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
