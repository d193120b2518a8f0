"""The memory a complete tree of a given depth needs, estimated before it is built, so that a
depth whose arrays would not fit is refused with a sentence instead of exhausting the machine.

A complete tree of depth Δ has 2^(Δ+1) − 1 nodes. Its arrays hold, per node, a split row
(n_features), the leaf values (n_outputs) and, with linear leaves, a weight per output and
feature; the model keeps them and its :class:`models.ground.tree.Tree` copies them. The largest arrays,
though, are per row and node: the decision values and reach probabilities that scoring and the
tree views compute (n_samples × n_nodes). At depth 16 on 10 000 rows that alone is 10.5 GB of
float64.
"""

from __future__ import annotations

import os

from models.ground.errors import TreevizError

#: The share of the machine's physical memory one model may take (two jobs run at once, beside
#: the app and the views' own copies).
MEMORY_SHARE = 0.25
#: Depths tried when looking for the largest one that fits.
MAX_DEPTH = 64


def physical_memory() -> int:
    """Bytes of physical memory of this machine (0 when the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return 0


def memory_budget() -> int:
    """Bytes one model may take: :data:`MEMORY_SHARE` of the physical memory."""
    return int(MEMORY_SHARE * physical_memory())


def tree_bytes(depth: int, n_samples: int, n_features: int, n_outputs: int, *, itemsize: int = 8,
               leaf_weights: bool = False) -> int:
    """Estimated bytes of a complete tree of ``depth`` on ``n_samples`` × ``n_features`` data:
    its node arrays twice (the model and its Tree) and one value per row and node."""
    n_nodes = 2 ** (int(depth) + 1) - 1
    per_node = n_features + n_outputs + 4 + (n_outputs * n_features if leaf_weights else 0)
    return itemsize * n_nodes * (2 * per_node + int(n_samples))


def check_tree_memory(what: str, depth: int, n_samples: int, n_features: int, n_outputs: int, *,
                      itemsize: int = 8, leaf_weights: bool = False, budget: int | None = None) -> None:
    """Raise a TreevizError sentence when a tree of ``depth`` would not fit in ``budget`` bytes
    (default :func:`memory_budget`; nothing is checked when the machine's memory is unknown)."""
    budget = memory_budget() if budget is None else int(budget)
    shape = (n_samples, n_features, n_outputs)
    need = tree_bytes(depth, *shape, itemsize=itemsize, leaf_weights=leaf_weights)
    if budget <= 0 or need <= budget:
        return
    fits = [d for d in range(MAX_DEPTH) if tree_bytes(d, *shape, itemsize=itemsize, leaf_weights=leaf_weights)
            <= budget]
    advice = f"choose a depth of at most {fits[-1]}" if fits else "use fewer rows or features"
    raise TreevizError(f"{what} of depth {depth} on {n_samples} rows × {n_features} features would need about "
                       f"{_size(need)}, more than the {_size(budget)} a model may use here; {advice}.")


def _size(n_bytes: int) -> str:
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 10**8 else f"{n_bytes / 1e6:.1f} MB"
