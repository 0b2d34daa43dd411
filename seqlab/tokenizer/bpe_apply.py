"""Apply learned merges to one pre-token: lowest rank first (equal to replaying training order).

The merge table packs everything into ints, which the inner loops hash and compare fastest:
key ``left << ID_BITS | right`` -> value ``rank << ID_BITS | merged id``. Ranks are unique, so the
smallest value is the best-ranked merge and its low bits say what it makes.

Short pre-tokens keep one value per adjacent pair in a list; long ones (``"a" * 100_000``) would
make rescanning that list quadratic, so they use a heap over a doubly linked list: O(n log n).
"""

from __future__ import annotations

import heapq

ID_BITS = 21  # ids below 2,097,152
ID_MASK = (1 << ID_BITS) - 1
MergeTable = dict[int, int]

_LONG = 48
_NEVER = 1 << 62  # value of a pair that has no merge


def build_merge_table(merges: list[tuple[int, int, int]]) -> MergeTable:
    """``[(left id, right id, merged id), ...]`` in rank order -> packed table (first rank wins)."""
    table: MergeTable = {}
    for rank, (left, right, merged) in enumerate(merges):
        for index in (left, right, merged):
            if not 0 <= index <= ID_MASK:
                raise ValueError(f"token id {index} is outside 0..{ID_MASK}")
        table.setdefault(left << ID_BITS | right, rank << ID_BITS | merged)
    return table


def apply_merges(ids: list[int], table: MergeTable) -> list[int]:
    """Merge the token ids of one pre-token by rank.

    Each step finds the lowest value with the C-level ``min``/``index``, merges that (leftmost)
    pair and recomputes only its two neighbours. Merging the leftmost best pair first is the same
    as merging all its occurrences left to right, because a merge never creates a pair of the same
    rank (the new token did not exist before).
    """
    if len(ids) > _LONG:
        return _apply_merges_heap(ids, table)
    get = table.get
    parts = list(ids)
    values = [get(left << ID_BITS | right, _NEVER) for left, right in zip(parts, parts[1:])]
    while values:
        best = min(values)
        if best == _NEVER:
            break
        i = values.index(best)
        parts[i] = best & ID_MASK
        del parts[i + 1]
        del values[i]
        if i:
            values[i - 1] = get(parts[i - 1] << ID_BITS | parts[i], _NEVER)
        if i < len(values):
            values[i] = get(parts[i] << ID_BITS | parts[i + 1], _NEVER)
    return parts


def _apply_merges_heap(ids: list[int], table: MergeTable) -> list[int]:
    """Same result as :func:`apply_merges`, in O(n log n) for n tokens (no quadratic rescans).

    The heap holds ints ``rank * n + position``, so equal ranks pop left to right, which matches
    merging all occurrences of a pair left to right. Tokens form a doubly linked list; merges keep
    the left node. An entry is stale when its node died or the pair now starting there has another
    rank; stale entries are skipped.
    """
    n = len(ids)
    tokens = list(ids)
    nxt = list(range(1, n + 1))  # n = end of list
    prev = list(range(-1, n - 1))
    alive = [True] * n
    get = table.get
    heap = []
    for position in range(n - 1):
        value = get(tokens[position] << ID_BITS | tokens[position + 1])
        if value is not None:
            heap.append((value >> ID_BITS) * n + position)
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        rank, position = divmod(pop(heap), n)
        if not alive[position]:
            continue
        following = nxt[position]
        if following >= n:
            continue
        value = get(tokens[position] << ID_BITS | tokens[following])
        if value is None or value >> ID_BITS != rank:
            continue
        merged = value & ID_MASK
        tokens[position] = merged
        alive[following] = False
        after = nxt[following]
        nxt[position] = after
        if after < n:
            prev[after] = position
            value = get(merged << ID_BITS | tokens[after])
            if value is not None:
                push(heap, (value >> ID_BITS) * n + position)
        before = prev[position]
        if before >= 0:
            value = get(tokens[before] << ID_BITS | merged)
            if value is not None:
                push(heap, (value >> ID_BITS) * n + before)
    result = []
    position = 0
    while position < n:
        result.append(tokens[position])
        position = nxt[position]
    return result
