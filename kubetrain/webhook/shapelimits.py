"""Shape limits of an admitted object: how deep it nests and how many fields one map has.

An object nested deeper than MAX_NESTING_DEPTH, or with a map of more than MAX_OBJECT_MEMBERS
fields, is refused as a field error naming the path (`shape_problem`; `decider.decide_guarded`
says when the check runs): deep nesting overflows recursive walkers, and the schema library's
cost grows with the number of unknown fields.
"""

from __future__ import annotations

from typing import Any

# Objects nested deeper than this are refused (a pod template needs about 15 levels).
MAX_NESTING_DEPTH = 64
# Objects (maps) with more members than this are refused before any schema check: the schema
# library's cost grows with unknown fields (it sorts and lists them all in one step).
MAX_OBJECT_MEMBERS = 10_000


def shape_problem(
    value: Any, max_depth: int = MAX_NESTING_DEPTH, max_members: int = MAX_OBJECT_MEMBERS
) -> tuple[str, str] | None:
    """(path, problem) of the first object nested more than `max_depth` objects/lists deep or
    with more than `max_members` fields, or None. The path reads `spec.a.b[0].c`. Iterative:
    safe on input that would overflow a recursive walk. The common case (no problem) is one
    pass without building paths; only a problem found costs a second pass that names it."""
    if _shape_ok(value, max_depth, max_members):
        return None
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict):
            if len(node) > max_members:
                return path or "<root>", f"has {len(node)} fields; at most {max_members} are accepted"
            items: Any = ((f"{path}.{k}" if path else str(k), v) for k, v in node.items())
        elif isinstance(node, list):
            items = ((f"{path}[{i}]", v) for i, v in enumerate(node))
        else:
            continue
        if depth >= max_depth:
            return path or "<root>", f"nested more than {max_depth} objects or lists deep"
        stack.extend((v, p, depth + 1) for p, v in items if isinstance(v, dict | list))
    return None


def _shape_ok(value: Any, max_depth: int, max_members: int) -> bool:
    """One level at a time (the object itself is level 0): no map over `max_members` and no
    object or list at level `max_depth`. A list comprehension per level, no generator per node."""
    level: list[Any] = [value]
    for _ in range(max_depth):
        for node in level:
            if type(node) is dict and len(node) > max_members:
                return False
        level = [
            v
            for node in level
            for v in (node.values() if type(node) is dict else node)
            if type(v) is dict or type(v) is list
        ]
        if not level:
            return True
    return False
