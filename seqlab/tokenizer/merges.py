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


def merge_word(word: Sequence[int], left: int, right: int, new_id: int) -> list[int]:
    """Replace every ``left, right`` occurrence in ``word`` by ``new_id``, scanning left to right."""
    merged: list[int] = []
    i, n = 0, len(word)
    while i < n:
        if i + 1 < n and word[i] == left and word[i + 1] == right:
            merged.append(new_id)
            i += 2
        else:
            merged.append(word[i])
            i += 1
    return merged


class PairCounts:
    """Adjacent-pair counts over a weighted set of words (each word a list of token ids).

    ``words[i]`` occurs ``word_counts[i]`` times. ``pair_to_words`` indexes which words may
    contain a pair (entries can be stale; merging a stale word is a no-op), so a merge touches
    only those words. The heap holds ``(merge_order_key..., left, right)`` entries with a count
    at least the pair's current count; stale entries are re-pushed when popped.
    """

    def __init__(self, words: list[list[int]], word_counts: list[int], token_bytes: list[bytes]):
        self.words = words
        self.word_counts = word_counts
        self.token_bytes = token_bytes
        self._order_keys = [descending_bytes_key(token) for token in token_bytes]
        self.counts: dict[Pair, int] = defaultdict(int)
        self.pair_to_words: dict[Pair, set[int]] = defaultdict(set)
        for index, (word, count) in enumerate(zip(words, word_counts)):
            for pair in zip(word, word[1:]):
                self.counts[pair] += count
                self.pair_to_words[pair].add(index)
        self._heap = [self._heap_entry(pair, count) for pair, count in self.counts.items()]
        heapq.heapify(self._heap)

    def _heap_entry(self, pair: Pair, count: int) -> tuple:
        keys = self._order_keys
        return (-count, keys[pair[0]], keys[pair[1]], pair[0], pair[1])

    def add_token(self, token: bytes) -> int:
        """Register a new token's bytes; returns its id."""
        self.token_bytes.append(token)
        self._order_keys.append(descending_bytes_key(token))
        return len(self.token_bytes) - 1

    def best_pair(self) -> Pair | None:
        """The next pair to merge (same rule as :func:`choose_merge`), or None when no pair is left."""
        heap, counts = self._heap, self.counts
        while heap:
            entry = heap[0]
            pair = (entry[3], entry[4])
            current = counts.get(pair, 0)
            if current == -entry[0]:
                return pair
            heapq.heappop(heap)  # stale: the pair's count dropped since this entry was pushed
            if current > 0:
                heapq.heappush(heap, self._heap_entry(pair, current))
        return None

    def merge(self, pair: Pair, new_id: int) -> None:
        """Merge ``pair`` into ``new_id`` in every word containing it, updating counts incrementally."""
        left, right = pair
        counts, pair_to_words, words, word_counts = self.counts, self.pair_to_words, self.words, self.word_counts
        grown: set[Pair] = set()
        for index in pair_to_words.pop(pair, ()):
            old = words[index]
            new = merge_word(old, left, right, new_id)
            if len(new) == len(old):
                continue  # stale index entry
            weight = word_counts[index]
            for old_pair in zip(old, old[1:]):
                remaining = counts[old_pair] - weight
                if remaining:
                    counts[old_pair] = remaining
                else:
                    del counts[old_pair]
            for new_pair in zip(new, new[1:]):
                counts[new_pair] += weight
                if new_id in new_pair:
                    # only pairs with the new token can grow; others only lose occurrences
                    pair_to_words[new_pair].add(index)
                    grown.add(new_pair)
            words[index] = new
        counts.pop(pair, None)
        for new_pair in grown:
            if new_pair in counts:
                heapq.heappush(self._heap, self._heap_entry(new_pair, counts[new_pair]))


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
        live = {pair: count for pair, count in state.counts.items() if count > 0}
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
                "words": {name: [_show(token_bytes[t]) for t in word] for name, word in zip(names, state.words)},
            }
        )
    return steps
