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
    """Same result as the loop in :func:`apply_merges`, in O(n log n) for n tokens.

    Heap entries are ``(rank, position, left id, right id)``; equal ranks pop left to right,
    which matches merging all occurrences of a pair in one left-to-right pass. Merges keep the
    left node, so an entry is valid exactly when its position still holds ``left`` followed by
    ``right``.
    """
    n = len(ids)
    tokens = list(ids)
    nxt = list(range(1, n + 1))  # n = end of list
    prev = list(range(-1, n - 1))
    alive = [True] * n
    heap = []
    for position in range(n - 1):
        entry = table.get((tokens[position], tokens[position + 1]))
        if entry is not None:
            heap.append((entry[0], position, tokens[position], tokens[position + 1]))
    heapq.heapify(heap)
    while heap:
        rank, position, left, right = heapq.heappop(heap)
        if not alive[position] or tokens[position] != left:
            continue
        following = nxt[position]
        if following >= n or tokens[following] != right:
            continue
        tokens[position] = table[(left, right)][1]
        alive[following] = False
        after = nxt[following]
        nxt[position] = after
        if after < n:
            prev[after] = position
            entry = table.get((tokens[position], tokens[after]))
            if entry is not None:
                heapq.heappush(heap, (entry[0], position, tokens[position], tokens[after]))
        before = prev[position]
        if before >= 0:
            entry = table.get((tokens[before], tokens[position]))
            if entry is not None:
                heapq.heappush(heap, (entry[0], before, tokens[before], tokens[position]))
    result = []
    position = 0
    while position < n:
        result.append(tokens[position])
        position = nxt[position]
    return result
