"""Every ``POST /api/<name>`` the explorer answers, in one table built from each area's own table.

An area keeps its table beside its handlers (``api.ENDPOINTS`` for the labs' widgets,
``model_api.MODEL_ENDPOINTS`` for the panels over the user's runs, ``interpret_api``,
``learn_api``, ``induction_api``); :data:`AREAS` says how the server calls each one, and
:func:`endpoint_table` joins them, refusing a name two areas claim. The server looks up this one
table for POST and for the 405 it answers to another method, so the two cannot disagree.

Example: ``endpoint_table()["lm/next"](data, server)`` runs ``model_api.lm_next`` on the
server's runs; a new area adds its table to :data:`AREAS` and nothing else.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any, Protocol


class ServerState(Protocol):
    """What a handler may read from the server: the user's runs (``--run``, ``--paths``,
    ``--induction``) and the ``--workspace`` folder (None without one)."""

    runs: Any
    workspace: str | None


Handler = Callable[[dict[str, Any], ServerState], Any]  # the request's JSON object -> a dict or an iterator of dicts


def _labs(handler, data, server):
    from seqlab.explorer.api import answer
    return answer(handler, data)


def _over_runs(handler, data, server):
    from seqlab.explorer.model_api import answer
    return answer(handler, data, server.runs)


def _workspace(handler, data, server):
    return handler(data, server.workspace)


# (module, its table's name, how the server calls one of its handlers)
AREAS: tuple[tuple[str, str, Callable[[Callable, dict[str, Any], ServerState], Any]], ...] = (
    ("seqlab.explorer.api", "ENDPOINTS", _labs),
    ("seqlab.explorer.model_api", "MODEL_ENDPOINTS", _over_runs),
    ("seqlab.explorer.interpret_api", "INTERPRET_ENDPOINTS", _over_runs),
    ("seqlab.explorer.induction_api", "INDUCTION_ENDPOINTS", _over_runs),
    ("seqlab.explorer.learn_api", "LEARN_ENDPOINTS", _workspace),
)


def join_tables(areas) -> dict[str, Handler]:
    """One table from ``areas`` ((module, table name, caller) as in :data:`AREAS`); a name that two
    areas serve is a ValueError naming both."""
    table: dict[str, Handler] = {}
    owner: dict[str, str] = {}
    for module_name, table_name, call in areas:
        module = importlib.import_module(module_name)
        for name, handler in getattr(module, table_name).items():
            if name in table:
                raise ValueError(f"/api/{name} is served twice: by {owner[name]} and by {module_name}.{table_name}")
            table[name] = functools.partial(call, handler)
            owner[name] = f"{module_name}.{table_name}"
    return table


@functools.cache
def endpoint_table() -> dict[str, Handler]:
    """name (the path after ``/api/``) -> handler(data, server), for every endpoint of every area."""
    return join_tables(AREAS)
