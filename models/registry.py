"""Every model family, described once: its estimators per task, hyperparameters and presets.

The Train page's forms, model loading (:mod:`models.persist`), the command line and sweeps are
all generated from this table. Adding a family means writing its package and adding one
:class:`Family` entry to ``FAMILIES`` below.

Estimator classes are named as ``"module:Class"`` strings and imported on first use, so listing
families (app start-up) does not import torch.
"""

from __future__ import annotations

import importlib
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from treeviz.errors import TreevizError

PARAM_KINDS = ("int", "float", "choice", "bool", "text")


@dataclass(frozen=True)
class Param:
    """One hyperparameter: its type, range, default and help text.

    ``optional_label`` set means None is a legal value, shown in forms under that label
    (for example ``max_depth=None`` shown as "unlimited"). ``tasks`` limits the parameter to
    some tasks (empty = all).
    """

    name: str
    kind: str
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()
    optional_label: str | None = None
    tasks: tuple[str, ...] = ()
    label: str | None = None
    advanced: bool = False

    def __post_init__(self) -> None:
        if self.kind not in PARAM_KINDS:
            raise ValueError(f"Param {self.name}: kind must be one of {PARAM_KINDS}.")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"Param {self.name}: a choice needs choices.")

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ")

    def applies_to(self, task: str | None) -> bool:
        return task is None or not self.tasks or task in self.tasks

    def validate(self, value: Any) -> Any:
        """Return ``value`` coerced to this parameter's type, or raise a TreevizError sentence."""
        if value is None:
            if self.optional_label is not None:
                return None
            raise TreevizError(f"Parameter '{self.name}' needs a value.")
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            raise TreevizError(f"Parameter '{self.name}' must be true or false, got {value!r}.")
        if self.kind == "text":
            if not isinstance(value, str):
                raise TreevizError(f"Parameter '{self.name}' must be text, got {value!r}.")
            if len(value) > 1000:
                raise TreevizError(f"Parameter '{self.name}' is too long (at most 1000 characters).")
            return value.strip()
        if self.kind == "choice":
            if value in self.choices:
                return value
            allowed = ", ".join(repr(c) for c in self.choices)
            raise TreevizError(f"Parameter '{self.name}' must be one of {allowed}; got {value!r}.")
        try:
            if isinstance(value, bool):
                raise ValueError
            number = float(value)
            if self.kind == "int":
                if not float(number).is_integer():
                    raise ValueError
                number = int(number)
        except (TypeError, ValueError):
            kind = "a whole number" if self.kind == "int" else "a number"
            raise TreevizError(f"Parameter '{self.name}' must be {kind}, got {value!r}.") from None
        if isinstance(number, float) and not math.isfinite(number):
            raise TreevizError(f"Parameter '{self.name}' must be a finite number, got {value!r}.")
        if self.low is not None and number < self.low:
            raise TreevizError(f"Parameter '{self.name}' must be at least {self.low:g}; got {value!r}.")
        if self.high is not None and number > self.high:
            raise TreevizError(f"Parameter '{self.name}' must be at most {self.high:g}; got {value!r}.")
        return number


@dataclass(frozen=True)
class Family:
    """A model family: estimator classes per task, hyperparameters, presets and a description."""

    key: str
    label: str
    description: str
    estimators: Mapping[str, str]  # task -> "module:Class"
    params: tuple[Param, ...]
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    paper: str = ""
    uses_torch: bool = False
    path_param: str | None = None  # the λ a "λ path" sweeps (Pruning / λ path page)

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.estimators)

    def params_for(self, task: str | None = None) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.applies_to(task))

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def estimator_class(self, task: str) -> type:
        if task not in self.estimators:
            tasks = ", ".join(self.tasks)
            raise TreevizError(f"{self.label} does not do {task}; it supports {tasks}.")
        module, _, name = self.estimators[task].partition(":")
        return getattr(importlib.import_module(module), name)

    def class_by_name(self, name: str) -> type:
        for task, ref in self.estimators.items():
            if ref.partition(":")[2] == name:
                return self.estimator_class(task)
        raise TreevizError(f"{name!r} is not an estimator of the {self.label} family.")

    def task_of_class(self, cls: type) -> str:
        for task, ref in self.estimators.items():
            if ref.partition(":")[2] == cls.__name__:
                return task
        raise TreevizError(f"{cls.__name__} is not an estimator of the {self.label} family.")

    def defaults(self, task: str | None = None, preset: str | None = None) -> dict[str, Any]:
        values = {p.name: p.default for p in self.params_for(task)}
        if preset is not None:
            if preset not in self.presets:
                raise TreevizError(f"{self.label} has no preset {preset!r}.")
            values.update({k: v for k, v in self.presets[preset].items() if k in values})
        return values

    def validate_params(self, values: Mapping[str, Any], task: str | None = None) -> dict[str, Any]:
        """Check every value against the schema; unknown names are an error."""
        known = {p.name: p for p in self.params_for(task)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise TreevizError(
                f"{self.label} has no parameter(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}."
            )
        return {name: known[name].validate(v) for name, v in values.items()}

    def make(self, task: str, params: Mapping[str, Any] | None = None, **extra: Any) -> Any:
        """An unfitted estimator for ``task`` from defaults updated with validated ``params``."""
        values = self.defaults(task)
        values.update(self.validate_params(params or {}, task))
        values.update(extra)
        return self.estimator_class(task)(**values)


# --------------------------------------------------------------------------- the families
_SEED = Param("random_state", "int", 0, "Seed for every random choice, for reproducible runs.",
              low=0, high=2**31 - 1, optional_label="random", advanced=True)

CART = Family(
    key="cart",
    label="CART (scikit-learn)",
    description=(
        "Greedy axis-aligned decision tree from scikit-learn: the baseline every optimisation-based "
        "tree is compared with. Each split tests one feature against a threshold."
    ),
    estimators={
        "classification": "models.cart:CARTClassifier",
        "regression": "models.cart:CARTRegressor",
    },
    params=(
        Param("max_depth", "int", None, "Deepest level the tree may grow to.", low=1, high=64,
              optional_label="unlimited"),
        Param("min_samples_split", "int", 2, "Fewest samples a node needs to be split.", low=2,
              high=100_000),
        Param("min_samples_leaf", "int", 1, "Fewest samples every leaf must keep.", low=1,
              high=100_000),
        Param("criterion", "choice", "gini", "Impurity measure a split minimises.",
              choices=("gini", "entropy", "log_loss"), tasks=("classification",)),
        Param("criterion", "choice", "squared_error", "Impurity measure a split minimises.",
              choices=("squared_error", "friedman_mse", "absolute_error", "poisson"),
              tasks=("regression",)),
        Param("ccp_alpha", "float", 0.0,
              "Cost-complexity pruning strength: larger values prune more (0 = no pruning).",
              low=0.0, high=1e6, label="pruning strength (ccp_alpha)"),
        Param("max_leaf_nodes", "int", None, "Largest number of leaves (best-first growth).",
              low=2, high=1_000_000, optional_label="unlimited", advanced=True),
        _SEED,
    ),
    presets={"quick": {"max_depth": 4}, "deep": {"max_depth": 8, "min_samples_leaf": 2}},
)

LATENT = Family(
    key="latent",
    label="Latent trees (argmin differentiation)",
    description=(
        "Zantedeschi, Kusner & Niculae (ICML 2021): a complete oblique binary tree whose nodes are "
        "pruned by a quadratic program solved inside the network; predictions come from a learned "
        "predictor on [x; z]. Larger pruning strength λ switches off more nodes."
    ),
    paper="Learning Binary Decision Trees by Argmin Differentiation (ICML 2021)",
    estimators={
        "classification": "models.latent.estimators:LatentTreeClassifier",
        "regression": "models.latent.estimators:LatentTreeRegressor",
        "clustering": "models.latent.estimators:LatentTreeClustering",
    },
    params=(
        Param("depth", "int", 3, "Depth D of the complete tree (2^D − 1 oblique splits).", low=1, high=10),
        Param("prune_strength", "float", 1.0,
              "Pruning strength λ of the QP; it competes with a sum over each batch, so the same λ "
              "prunes more with smaller batches (0 = no pruning).", low=0.0, high=1e4, log=True,
              label="pruning strength λ"),
        Param("split", "choice", "linear", "Split function: linear, or linear followed by ELU.",
              choices=("linear", "elu")),
        Param("head", "choice", "linear", "Predictor on [x; z]: one linear layer or an MLP.",
              choices=("linear", "mlp")),
        Param("head_layers", "int", 2, "Linear layers of the MLP predictor (widths 64, 128, …).",
              low=1, high=8),
        Param("dropout", "float", 0.0, "Dropout between the MLP's layers.", low=0.0, high=0.9),
        Param("target_features", "text", "0",
              "Features to reconstruct from the others (indexes or names, comma-separated); "
              "the tree's leaves are the clusters.", tasks=("clustering",)),
        Param("learning_rate", "float", 1e-2, "Step size of the optimiser.", low=1e-6, high=1.0, log=True),
        Param("batch_size", "int", 64, "Samples per training step (and per pruning QP).", low=2,
              high=1_000_000),
        Param("max_epochs", "int", 100, "Most passes over the training data.", low=1, high=100_000),
        Param("patience", "int", 10,
              "Stop after this many epochs without a better validation loss (best weights kept).",
              low=0, high=100_000),
        Param("optimizer", "choice", "qhadam", "QHAdam (the papers) or Adam.", choices=("qhadam", "adam"),
              advanced=True),
        Param("lr_patience", "int", 2,
              "Epochs without validation improvement before the learning rate is divided by 10 "
              "(0 = never).", low=0, high=100_000, advanced=True),
        Param("readout", "choice", "code",
              "How z is read from the pruning vector: 'code' (hard paths, reproduces the published "
              "numbers) or 'paper' (the exact argmin of the relaxed problem).", choices=("code", "paper"),
              advanced=True),
        Param("formulation", "choice", "icml",
              "ICML 2021 (λ inside the QP) or the 2020 preprint (learned per-node η, penalty λ‖η‖∞).",
              choices=("icml", "preprint"), advanced=True),
        Param("inference", "choice", "frozen",
              "Prediction: 'frozen' solves the pruning once on the training data; 'batch' re-solves it "
              "on every evaluation batch, as the papers do.", choices=("frozen", "batch"), advanced=True),
        Param("eval_batch_size", "int", None, "Rows per evaluation batch with inference='batch'.",
              low=2, high=1_000_000, optional_label="2 × batch size", advanced=True),
        Param("warm_start", "bool", False, "Continue from the current weights when refitted.",
              advanced=True),
        _SEED,
    ),
    presets={
        "quick": {"depth": 3, "max_epochs": 30},
        "paper": {"depth": 4, "batch_size": 512, "learning_rate": 1e-3, "optimizer": "qhadam",
                  "max_epochs": 100, "patience": 10, "lr_patience": 2},
        "clustering (paper)": {"depth": 4, "split": "linear", "head": "linear", "batch_size": 8,
                               "learning_rate": 1e-3, "prune_strength": 10.0},
    },
    uses_torch=True,
    path_param="prune_strength",
)

_TAO_TREE_PARAMS = (
    Param("depth", "int", 4, "Depth Δ of the initial tree; pruning can only shrink it.", low=0, high=16),
    Param("l1_penalty", "float", 0.01,
          "λ of the ℓ1 penalty on node weights, in sum form (the loss is summed over samples, not "
          "averaged): larger λ gives sparser, smaller trees.", low=0.0, high=1e6, log=True,
          label="ℓ1 penalty λ (sum form)"),
    Param("leaf", "choice", "constant",
          "Leaf model: constant (majority class), linear (ℓ1 softmax over the leaf's classes) or softmax "
          "(softmax tree: only the k most populous classes of the leaf).",
          choices=("constant", "linear", "softmax"), tasks=("classification",)),
    Param("leaf", "choice", "constant", "Leaf model: constant (mean) or linear (Lasso).",
          choices=("constant", "linear"), tasks=("regression",)),
    Param("leaf_classes", "int", None, "k: classes a softmax leaf models (the leaf's most populous).",
          low=2, high=100_000, optional_label="all", tasks=("classification",)),
    Param("max_iter", "int", 20, "Most TAO iterations (passes over all nodes).", low=1, high=1000),
    Param("node_type", "choice", "oblique",
          "Decision nodes: sparse oblique hyperplanes (ℓ1 logistic surrogate) or exact axis-aligned splits.",
          choices=("oblique", "axis"), advanced=True),
    Param("guard", "choice", "objective",
          "Keep a node update only if its reduced objective does not increase, so the objective never "
          "increases ('off' = the thesis's unguarded TAO).", choices=("objective", "off"), advanced=True),
    Param("order", "choice", "reverse_bfs", "Visiting order of the depth levels.",
          choices=("reverse_bfs", "bfs"), advanced=True),
    Param("solver", "choice", "auto",
          "Decision-node solver: liblinear per node, or a batched torch proximal-gradient solver per depth "
          "level ('auto': torch on a GPU, scikit-learn on the CPU).", choices=("auto", "sklearn", "torch"),
          advanced=True),
    Param("loss", "choice", "zero_one",
          "Training loss: 0/1, or cross-entropy where a class absent from a leaf costs β.",
          choices=("zero_one", "cross_entropy"), tasks=("classification",), advanced=True),
    Param("beta", "float", 100.0, "β: loss of a sample whose class its leaf does not model.", low=1.0,
          high=1e7, log=True, tasks=("classification",), advanced=True),
    Param("tol", "float", 1e-4, "Stop when the objective changes by less than this fraction.", low=0.0,
          high=1.0, advanced=True),
)
_TAO_PAPER = "Zharmagambetov, Learning Tree-Based Models with Manifold Regularization (PhD thesis, 2022)"

TAO = Family(
    key="tao",
    label="TAO sparse oblique tree",
    description=(
        "Tree Alternating Optimization (Carreira-Perpiñán & Tavallali 2018; Zharmagambetov 2022): a "
        "tree of sparse hyperplanes, optimised node by node on each node's reduced problem. Larger ℓ1 "
        "penalty λ zeroes weights and prunes whole branches."
    ),
    paper=_TAO_PAPER,
    estimators={
        "classification": "models.tao.estimators:TAOClassifier",
        "regression": "models.tao.estimators:TAORegressor",
    },
    params=(
        *_TAO_TREE_PARAMS,
        Param("init", "choice", "auto",
              "Initial tree: 'auto' = CART for depth ≤ 2, random otherwise; 'clustering' groups classes "
              "into leaves (softmax trees).", choices=("auto", "cart", "random", "clustering"),
              tasks=("classification",)),
        Param("init", "choice", "auto", "Initial tree: 'auto' = CART for depth ≤ 2, random otherwise.",
              choices=("auto", "cart", "random"), tasks=("regression",)),
        Param("warm_start", "bool", False, "Continue from the current tree when refitted.", advanced=True),
        _SEED,
    ),
    presets={
        "quick": {"depth": 3, "max_iter": 10},
        "TAO-c (thesis)": {"depth": 8, "l1_penalty": 0.01, "leaf": "constant", "max_iter": 20},
        "TAO-l (thesis)": {"depth": 5, "l1_penalty": 0.01, "leaf": "linear", "max_iter": 20},
        "softmax tree": {"depth": 3, "leaf": "softmax", "leaf_classes": 5, "init": "clustering"},
    },
    uses_torch=True,
    path_param="l1_penalty",
)

TAO_FOREST = Family(
    key="tao_forest",
    label="TAO forest",
    description=(
        "A forest of TAO trees, each trained on its own 90% subsample from its own random tree; constant "
        "leaves vote (TAO-c), linear leaves average probabilities (TAO-l)."
    ),
    paper=_TAO_PAPER,
    estimators={
        "classification": "models.tao.forest:TAOForestClassifier",
        "regression": "models.tao.forest:TAOForestRegressor",
    },
    params=(
        Param("n_trees", "int", 10, "Number of trees.", low=1, high=1000),
        Param("subsample", "float", 0.9, "Fraction of the training set each tree sees (without replacement).",
              low=0.05, high=1.0),
        *tuple(p if p.name != "depth" else Param("depth", "int", 6, p.help, low=0, high=16)
               for p in _TAO_TREE_PARAMS),
        Param("init", "choice", "random", "Initial tree of every member (the thesis: random).",
              choices=("random", "cart"), advanced=True),
        _SEED,
    ),
    presets={"quick": {"n_trees": 5, "depth": 4, "max_iter": 10},
             "TAO-l forest (thesis)": {"n_trees": 30, "depth": 7, "leaf": "linear", "l1_penalty": 0.01}},
    uses_torch=True,
)

FAMILIES: dict[str, Family] = {f.key: f for f in (CART, LATENT, TAO, TAO_FOREST)}


def get_family(key: str) -> Family:
    try:
        return FAMILIES[key]
    except KeyError:
        known = ", ".join(FAMILIES)
        raise TreevizError(f"There is no model family {key!r}; known families: {known}.") from None


def families_for_task(task: str) -> list[Family]:
    return [f for f in FAMILIES.values() if task in f.estimators]


def family_of_class(cls: type) -> Family:
    for fam in FAMILIES.values():
        for ref in fam.estimators.values():
            module, _, name = ref.partition(":")
            if name == cls.__name__ and cls.__module__ == module:
                return fam
    raise TreevizError(f"{cls.__name__} is not a registered treeviz estimator.")


def all_estimator_classes() -> Iterable[tuple[Family, str, type]]:
    """(family, task, class) for every registered estimator (imports them)."""
    for fam in FAMILIES.values():
        for task in fam.estimators:
            yield fam, task, fam.estimator_class(task)


def signature_defaults(cls: type) -> dict[str, Any]:
    """The defaults of ``cls.__init__`` (used to check the registry agrees with the code)."""
    sig = inspect.signature(cls.__init__)
    return {
        name: p.default
        for name, p in sig.parameters.items()
        if name != "self" and p.default is not inspect.Parameter.empty
    }
