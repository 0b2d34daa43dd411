"""Apply learned merges to one pre-token: lowest rank first (equal to replaying training order).

Short pre-tokens use the textbook loop (find the best-ranked adjacent pair, merge it everywhere,
repeat). Long ones (``"a" * 100_000``) would make that loop quadratic, so they use a heap of
candidate pairs over a doubly linked list of tokens: O(n log n).
"""

from __future__ import annotations

import heapq


# pair of ids -> (rank, id of the merged token)
MergeTable = dict[tuple[int, int], tuple[int, int]]

_LONG = 48
_NEVER = 1 << 62  # rank of a pair that has no merge
_NO_MERGE = (_NEVER, -1)


def apply_merges(ids: list[int], table: MergeTable) -> list[int]:
    """Merge the token ids of one pre-token by rank.

    Keeps the rank of every adjacent pair in a list: each step finds the lowest rank with the
    C-level ``min``/``index``, merges that (leftmost) pair and recomputes only its two neighbours.
    Merging the leftmost best pair first is the same as merging all its occurrences left to right,
    because a merge never creates a pair of the same rank.
    """
    if len(ids) > _LONG:
        return _apply_merges_heap(ids, table)
    parts = list(ids)
    ranks = [table.get(pair, _NO_MERGE)[0] for pair in zip(parts, parts[1:])]
    while ranks:
        best = min(ranks)
        if best == _NEVER:
            break
        i = ranks.index(best)
        parts[i] = table[(parts[i], parts[i + 1])][1]
        del parts[i + 1]
        del ranks[i]
        if i > 0:
            ranks[i - 1] = table.get((parts[i - 1], parts[i]), _NO_MERGE)[0]
        if i < len(ranks):
            ranks[i] = table.get((parts[i], parts[i + 1]), _NO_MERGE)[0]
    return parts


def _apply_merges_heap(ids: list[int], table: MergeTable) -> list[int]:
    """Same result as :func:`apply_merges`, in O(n log n) for n tokens (no quadratic rescans).

    The heap holds ints ``rank * n + position`` (plain ints compare fastest), so equal ranks pop
    left to right, which matches merging all occurrences of a pair left to right. Tokens form a
    doubly linked list; merges keep the left node. An entry is stale when its node died or the
    pair now starting there has another rank; stale entries are skipped.
    """
    n = len(ids)
    tokens = list(ids)
    nxt = list(range(1, n + 1))  # n = end of list
    prev = list(range(-1, n - 1))
    alive = [True] * n
    get = table.get
    heap = []
    for position in range(n - 1):
        entry = get((tokens[position], tokens[position + 1]))
        if entry is not None:
            heap.append(entry[0] * n + position)
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        rank, position = divmod(pop(heap), n)
        if not alive[position]:
            continue
        following = nxt[position]
        if following >= n:
            continue
        entry = get((tokens[position], tokens[following]))
        if entry is None or entry[0] != rank:
            continue
        merged = entry[1]
        tokens[position] = merged
        alive[following] = False
        after = nxt[following]
        nxt[position] = after
        if after < n:
            prev[after] = position
            entry = get((merged, tokens[after]))
            if entry is not None:
                push(heap, entry[0] * n + position)
        before = prev[position]
        if before >= 0:
            entry = get((tokens[before], merged))
            if entry is not None:
                push(heap, entry[0] * n + before)
    result = []
    position = 0
    while position < n:
        result.append(tokens[position])
        position = nxt[position]
    return result
