"""TAO's settings: the allowed choices and :class:`TAOConfig`, everything the training loop needs
besides the data and the initial tree."""

from __future__ import annotations

from dataclasses import dataclass

from models.ground.errors import TreevizError

TASKS = ("classification", "regression")
LEAVES = ("constant", "linear", "softmax")
ORDERS = ("reverse_bfs", "bfs")
GUARDS = ("objective", "off", "node")
SOLVERS = ("cd", "sklearn", "torch")
NODE_TYPES = ("oblique", "axis")
LOSSES = ("zero_one", "cross_entropy")


@dataclass(frozen=True)
class TAOConfig:
    """Everything the training loop needs besides data and the initial tree.

    ``n_outputs`` is the number of classes K (classification) or target dimensions (regression).
    ``solver_tol`` / ``solver_max_iter`` go to the node solvers. ``min_leaf_samples`` is the
    fewest samples a linear leaf is fitted on; below it the leaf stays constant, since a linear
    model on one or two points only interpolates them.
    """

    task: str
    n_outputs: int
    l1_penalty: float = 0.01
    leaf: str = "constant"
    leaf_classes: int | None = None
    node_type: str = "oblique"
    max_iter: int = 20
    tol: float = 1e-4
    order: str = "reverse_bfs"
    guard: str = "objective"
    solver: str = "cd"
    device: str = "cpu"
    loss: str = "zero_one"
    beta: float = 100.0
    solver_tol: float = 1e-4
    solver_max_iter: int = 200
    min_leaf_samples: int = 2

    def __post_init__(self) -> None:
        for name, allowed in (("task", TASKS), ("leaf", LEAVES), ("order", ORDERS), ("guard", GUARDS),
                              ("solver", SOLVERS), ("node_type", NODE_TYPES), ("loss", LOSSES)):
            if getattr(self, name) not in allowed:
                raise TreevizError(f"TAO: {name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}.")
        if self.l1_penalty < 0:
            raise TreevizError("TAO: the ℓ1 penalty λ must be zero or positive.")
        if self.leaf == "softmax" and self.task != "classification":
            raise TreevizError("Softmax leaves are for classification; use constant or linear leaves for regression.")

    @property
    def linear_leaves(self) -> bool:
        return self.leaf != "constant"
