"""How a model family describes itself: one :class:`Family` with its hyperparameter schema.

A family declares itself once, in a light module ``models/<family>/family.py`` that imports
nothing heavier than this module and defines ``FAMILIES`` (a tuple of :class:`Family`). The
registry (:mod:`models.registry`) discovers these modules; the app's pages, sweeps, the sidebar,
the run store and model files read only these descriptions. So adding a family means adding its
package, its tests and its docs, and nothing else.

What a Family holds:

* its ``key`` (the one name stored in runs and model files), ``label``, ``description`` and
  ``paper``;
* ``estimators``: for each task it supports, its estimator class as ``"module:Class"`` (imported on
  first use, so listing families does not import torch);
* ``params``: the hyperparameters as one schema of :class:`Param`. The Train page builds its form
  from it, :meth:`Family.make` and model loading validate against it, and every estimator checks
  its own parameters against it once before every fit (:func:`models.base.validated_fit`), in the
  spirit of scikit-learn's ``_fit_context`` and ``_parameter_constraints``;
* ``presets``: named starting points for the form;
* ``lambda_path``: the λ that the "Pruning / λ path" page sweeps (:class:`LambdaPath`), or None;
* ``metrics``: the headline metric of each task (first found is shown);
* ``curves``: which training-history series to plot, in which panels (:class:`Curves`);
* ``views``: the extra views it offers (from :data:`VIEWS`), which pages look for;
* ``comparisons``: for a view that sets the family's models beside others, what that view needs
  (:class:`Comparison`: the reference family, the baselines, the parameters it varies), so the
  services behind the views name no family and import no family package;
* ``feature_selection``: for a family whose models select features (:class:`FeatureSelection`), the
  history keys of the features kept and of the selection strength, and the parameters a
  feature-budget search samples; the Features page is offered for it;
* ``test_params``: small settings under which the contract test (``tests/test_contract.py``,
  scikit-learn's estimator checks among others) runs every estimator quickly;
* ``onnx``: per task, the ``"module:function"`` that writes the fitted model's ONNX graph
  (:mod:`models.onnx`); a task without one is refused by the export with a sentence;
* ``cost``: how long a fit takes, as arithmetic over the family's own loop counts
  (:mod:`models.cost`), so the Train page can warn before a minutes-long fit; None for no estimate.

An estimator class may list scikit-learn checks it cannot pass, with the reason, in a class
attribute ``_expected_failed_checks`` (a dict); the contract test marks them as expected failures.
"""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from models.ground.errors import TreevizError

PARAM_KINDS = ("int", "float", "choice", "bool", "text", "seed")
#: What a model does with a data set. Classification and regression need the data set's task;
#: clustering and embedding run on any data set (its classes, if any, are only used to evaluate).
TASKS = ("classification", "regression", "clustering", "embedding")
#: Tasks a family may run on a data set of any task.
ANY_DATA_TASKS = ("clustering", "embedding")
#: Views a family may offer beyond the common pages (explorer, routing, runs); pages that show a
#: view list only the runs of families offering it. A λ path is offered through ``lambda_path``,
#: the Features page through ``feature_selection``. ``bandit``: estimators that learn online from
#: bandit feedback (``fit(..., comparator=)``, records with ``queries``), compared on the Bandit page.
VIEWS = ("clustering", "embedding", "semi_supervised", "bandit")
#: The figure a λ path is drawn with (names of figures in :mod:`treeviz.plots.sweep`).
PATH_FIGURES = ("activity", "sparsity")
#: How the tree at one λ is drawn: nodes coloured by their activity with pruned nodes dashed, or
#: the structure the path left.
PATH_TREE_VIEWS = ("activity", "structure")
#: Headline metrics per task, best first; each is looked up as test_, then val_, then train_.
DEFAULT_METRICS: Mapping[str, tuple[str, ...]] = {
    "classification": ("accuracy",),
    "regression": ("r2", "rmse"),
    "clustering": ("dendrogram_purity", "ari"),
    "embedding": ("knn_accuracy", "trustworthiness", "objective"),
}


@dataclass(frozen=True)
class Param:
    """One hyperparameter: its type, range, default and help text.

    ``optional_label`` set means None is a legal value, shown in forms under that label (for
    example ``max_depth=None`` shown as "unlimited"). ``tasks`` limits the parameter to some
    tasks (empty = all). ``form=False`` keeps it out of the Train form because the app sets it
    elsewhere (the device is chosen in the sidebar).

    Kinds: ``int``, ``float``, ``choice`` (one of ``choices``), ``bool``, ``text`` and ``seed``
    (None, an integer, or a numpy RandomState / Generator, as scikit-learn's ``random_state``).
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
    form: bool = True

    def __post_init__(self) -> None:
        if self.kind not in PARAM_KINDS:
            raise ValueError(f"Param {self.name}: kind must be one of {PARAM_KINDS}.")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"Param {self.name}: a choice needs choices.")
        unknown = set(self.tasks) - set(TASKS)
        if unknown:
            raise ValueError(f"Param {self.name}: unknown task(s) {sorted(unknown)}.")

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ")

    def applies_to(self, task: str | None) -> bool:
        return task is None or not self.tasks or task in self.tasks

    def validate(self, value: Any, *, strict: bool = False) -> Any:
        """``value`` checked (and, unless ``strict``, coerced) to this parameter's type.

        Forms and JSON files give ``3.0`` for an integer; that is coerced to ``3``. At ``fit``
        (``strict``) an integer parameter must already be an integer. A bad value raises a
        :class:`TreevizError` sentence naming the parameter.
        """
        if value is None:
            if self.optional_label is not None or self.kind == "seed":
                return None
            raise TreevizError(f"Parameter '{self.name}' needs a value.")
        if self.kind == "seed":
            if type(value).__name__ in ("RandomState", "Generator"):
                return value
            return self._number(value, "int", strict)
        if self.kind == "bool":
            if isinstance(value, bool) or type(value).__name__ == "bool_":
                return bool(value)
            raise TreevizError(f"Parameter '{self.name}' must be true or false, got {value!r}.")
        if self.kind == "text":
            if not isinstance(value, str):
                raise TreevizError(f"Parameter '{self.name}' must be text, got {value!r}.")
            if len(value) > 1000:
                raise TreevizError(f"Parameter '{self.name}' is too long (at most 1000 characters).")
            return value.strip()
        if self.kind == "choice":
            if isinstance(value, str) and value in self.choices:
                return value
            allowed = ", ".join(repr(c) for c in self.choices)
            raise TreevizError(f"Parameter '{self.name}' must be one of {allowed}; got {value!r}.")
        return self._number(value, self.kind, strict)

    def _number(self, value: Any, kind: str, strict: bool) -> int | float:
        whole = "a whole number" if kind == "int" else "a number"
        if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
            raise TreevizError(f"Parameter '{self.name}' must be {whole}, got {value!r}.")
        if strict and kind == "int" and not isinstance(value, numbers.Integral):
            raise TreevizError(f"Parameter '{self.name}' must be {whole}, got {value!r}.")
        try:
            number: int | float = float(value)
        except ValueError:
            raise TreevizError(f"Parameter '{self.name}' must be {whole}, got {value!r}.") from None
        if not math.isfinite(number):
            raise TreevizError(f"Parameter '{self.name}' must be a finite number, got {value!r}.")
        if kind == "int":
            if not float(number).is_integer():
                raise TreevizError(f"Parameter '{self.name}' must be {whole}, got {value!r}.")
            number = int(number)
        if self.low is not None and number < self.low:
            raise TreevizError(f"Parameter '{self.name}' must be at least {self.low:g}; got {value!r}.")
        if self.high is not None and number > self.high:
            raise TreevizError(f"Parameter '{self.name}' must be at most {self.high:g}; got {value!r}.")
        return number


@dataclass(frozen=True)
class LambdaPath:
    """The λ path a family offers: one model per value of ``param``, in increasing order.

    ``low``/``high``/``count`` are the default grid (geometric), ``warm_start`` the default of
    "each fit starts from the previous one's result" (otherwise every λ starts from the same
    initial model). ``figure`` names the figure that draws the path (:data:`PATH_FIGURES`),
    ``sizes`` the per-λ numbers shown beside it (keys of a sweep row, see
    :func:`treeviz.services.experiments.sweep.sweep_table`), ``tree_view`` how the tree at one λ is drawn
    (:data:`PATH_TREE_VIEWS`) and ``note`` the sentence under that tree.
    """

    param: str
    low: float
    high: float
    figure: str
    sizes: tuple[str, ...]
    count: int = 6
    warm_start: bool = False
    tree_view: str = "structure"
    note: str = ""

    def __post_init__(self) -> None:
        if self.figure not in PATH_FIGURES:
            raise ValueError(f"LambdaPath.figure must be one of {PATH_FIGURES}.")
        if self.tree_view not in PATH_TREE_VIEWS:
            raise ValueError(f"LambdaPath.tree_view must be one of {PATH_TREE_VIEWS}.")
        if not 0 < self.low <= self.high or self.count < 2:
            raise ValueError("LambdaPath needs 0 < low <= high and at least 2 points.")


@dataclass(frozen=True)
class SearchRange:
    """How a random search samples one parameter: uniformly between ``low`` and ``high``
    (log-uniformly when ``log``; whole numbers for an integer parameter), or one of ``choices``."""

    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if not self.choices and (self.low is None or self.high is None or not self.low <= self.high
                                 or (self.log and self.low <= 0)):
            raise ValueError("SearchRange needs choices, or low <= high (both positive when log).")


@dataclass(frozen=True)
class FeatureSelection:
    """What a family whose models select features gives the Features page.

    ``count`` is the history key of the number of features kept after each epoch, ``schedule``
    the key of the selection strength (e.g. λ0 of a ramp) with its ``schedule_label``. A
    feature-budget search (:func:`treeviz.services.experiments.sweep.budget_search`) runs ``trials`` fits, each with
    the chosen parameters and the ones in ``search`` drawn at random, and keeps the best on
    validation among those within the budget.
    """

    count: str = "n_features"
    schedule: str | None = None
    schedule_label: str = ""
    search: Mapping[str, SearchRange] = field(default_factory=dict)
    trials: int = 16


@dataclass(frozen=True)
class Panel:
    """One panel of the training curves: a title and the history keys drawn in it."""

    title: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Curves:
    """Which series of ``history_`` are worth plotting: ``x`` is the integer axis (epoch,
    iteration, tree), ``panels`` go losses first, then scores, then counts. Keys a history lacks
    are skipped; bookkeeping fields (timings, learning rate, counters) are simply not listed.
    ``kept`` names the history key whose lowest value marks the record whose weights the model
    keeps (early stopping that restores the best epoch), so the curves can show which record the
    stored model is; empty when the model is the last record's."""

    x: str
    panels: tuple[Panel, ...]
    kept: str = ""


def resolve_ref(ref: str) -> Any:
    """The object a ``"module:name"`` reference names (imported on first use)."""
    module, _, name = ref.partition(":")
    if not module or not name:
        raise ValueError(f"{ref!r} is not a 'module:name' reference.")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Comparison:
    """What a view with comparisons needs from the family offering it, declared by the family so
    that the view's service names no family and imports no family package.

    * ``view``: the view (one of :data:`VIEWS`, and one the family offers);
    * ``reference``: the key of the family whose model is the view's reference ("" for none), and
      ``reference_label`` its name in the view's rows and text;
    * ``shared``: reference parameter -> this family's parameter whose effective value it takes
      (the same depth, penalty, ...);
    * ``reference_values``: ``"module:function"`` completing the reference's values from the shared
      ones and the training targets, ``f(values, y) -> values`` (e.g. an automatic depth); "" keeps
      the shared values as they are;
    * ``baselines``: label -> ``"module:function"`` building a baseline; how it is called is the
      view's protocol (documented with the view's service);
    * ``params``: role -> this family's parameter the view varies or reads under that role (for
      example ``{"labelled_fraction": "labelled_fraction"}``);
    * ``plan``: ``"module:function"`` saying in sentences what one run of the view will do with this
      family's form values on a training split of ``n_rows`` rows, ``f(task, values, n_rows) -> str``
      (the bandit's rounds and loss queries); "" for nothing to say. The view's page shows it.
    """

    view: str
    reference: str = ""
    reference_label: str = ""
    shared: Mapping[str, str] = field(default_factory=dict)
    reference_values: str = ""
    baselines: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    plan: str = ""

    def __post_init__(self) -> None:
        if self.view not in VIEWS:
            raise ValueError(f"Comparison.view must be one of {VIEWS}.")
        if self.reference and not self.reference_label:
            raise ValueError("A Comparison with a reference family needs its reference_label.")
        for ref in (*self.baselines.values(), *(r for r in (self.reference_values, self.plan) if r)):
            if ":" not in ref:
                raise ValueError(f"Comparison of {self.view}: {ref!r} is not a 'module:function' reference.")

    def baseline(self, label: str) -> Callable[..., Any]:
        """The builder of the baseline called ``label``."""
        if label not in self.baselines:
            raise TreevizError(f"The {self.view} view declares no baseline {label!r}; it has "
                               f"{', '.join(self.baselines) or 'none'}.")
        return resolve_ref(self.baselines[label])

    def param(self, role: str) -> str:
        """This family's parameter playing ``role`` in the view."""
        if role not in self.params:
            raise TreevizError(f"The {self.view} view needs a parameter for {role!r}; the family declares none.")
        return self.params[role]

    def run_plan(self, task: str, values: Mapping[str, Any], n_rows: int) -> str | None:
        """What one run of the view will do with ``values`` on ``n_rows`` training rows (``plan``'s
        sentences), or None when the family declares no plan."""
        return str(resolve_ref(self.plan)(task, values, int(n_rows))) if self.plan else None

    def reference_params(self, values: Mapping[str, Any], y: Any = None) -> dict[str, Any]:
        """The reference's parameters from this family's effective ``values`` (the shared ones,
        completed by ``reference_values`` with the training targets ``y``)."""
        out = {ref: values[own] for ref, own in self.shared.items() if own in values}
        if self.reference_values:
            out = dict(resolve_ref(self.reference_values)(out, y))
        return out


@dataclass(frozen=True)
class Family:
    """A model family: estimator classes per task, hyperparameter schema, presets and views."""

    key: str
    label: str
    description: str
    estimators: Mapping[str, str]  # task -> "module:Class"
    params: tuple[Param, ...]
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    paper: str = ""
    lambda_path: LambdaPath | None = None
    metrics: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_METRICS))
    curves: Curves | None = None
    views: tuple[str, ...] = ()
    comparisons: tuple[Comparison, ...] = ()
    feature_selection: FeatureSelection | None = None
    #: task -> ``"module:function"`` writing the fitted model's ONNX graph (models.onnx); none: refused
    onnx: Mapping[str, str] = field(default_factory=dict)
    test_params: Mapping[str, Any] = field(default_factory=dict)
    order: int = 100  # position in family lists (smaller first)
    #: ``cost(params, n_rows, n_features) -> models.cost.TimeEstimate``: the fit's seconds, from the
    #: family's own loop counts (the Train page warns before a long fit); None: no estimate.
    cost: Callable[[Mapping[str, Any], float, float], Any] | None = None

    def __post_init__(self) -> None:
        unknown = set(self.estimators) - set(TASKS)
        if unknown:
            raise ValueError(f"Family {self.key}: unknown task(s) {sorted(unknown)}.")
        if set(self.views) - set(VIEWS):
            raise ValueError(f"Family {self.key}: unknown view(s) {sorted(set(self.views) - set(VIEWS))}.")
        names = [p.name for p in self.params]
        for comparison in self.comparisons:
            if comparison.view not in self.views:
                raise ValueError(f"Family {self.key}: a comparison for the {comparison.view} view, which it does "
                                 "not offer.")
            unknown = (set(comparison.params.values()) | set(comparison.shared.values())) - set(names)
            if unknown:
                raise ValueError(f"Family {self.key}: the {comparison.view} comparison names unknown parameters "
                                 f"{sorted(unknown)}.")
        for task in self.estimators:
            per_task = [p.name for p in self.params if p.applies_to(task)]
            if len(per_task) != len(set(per_task)):
                raise ValueError(f"Family {self.key}: a parameter is declared twice for {task}.")
        if set(self.onnx) - set(self.estimators) or not all(":" in ref for ref in self.onnx.values()):
            raise ValueError(f"Family {self.key}: its ONNX converters name an unknown task or are not "
                             "'module:function' references.")
        if self.lambda_path is not None and self.lambda_path.param not in names:
            raise ValueError(f"Family {self.key}: the λ path sweeps an unknown parameter.")
        if self.feature_selection is not None and set(self.feature_selection.search) - set(names):
            raise ValueError(f"Family {self.key}: the feature-budget search samples unknown parameters.")
        for preset, values in (*self.presets.items(), ("test_params", self.test_params)):
            if set(values) - set(names):
                raise ValueError(f"Family {self.key}: preset {preset!r} names unknown parameters.")

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.estimators)

    @property
    def short_label(self) -> str:
        """The label without its parenthesised note: "CART (scikit-learn)" -> "CART"."""
        return self.label.split(" (")[0]

    def offers(self, view: str) -> bool:
        """Whether runs of this family have something to show in ``view`` ("lambda_path",
        "features" or one of :data:`VIEWS`)."""
        if view == "lambda_path":
            return self.lambda_path is not None
        if view == "features":
            return self.feature_selection is not None
        return view in self.views

    def comparison(self, view: str) -> Comparison:
        """What ``view`` needs from this family (its reference, baselines and parameters)."""
        for comparison in self.comparisons:
            if comparison.view == view:
                return comparison
        raise TreevizError(f"{self.label} declares nothing to compare in the {view} view.")

    def headline_metrics(self, task: str) -> tuple[str, ...]:
        return tuple(self.metrics.get(task, DEFAULT_METRICS.get(task, ())))

    def params_for(self, task: str | None = None, *, form_only: bool = False) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.applies_to(task) and (p.form or not form_only))

    def param(self, name: str, task: str | None = None) -> Param:
        for p in self.params_for(task):
            if p.name == name:
                return p
        raise KeyError(name)

    def estimator_class(self, task: str) -> type:
        if task not in self.estimators:
            raise TreevizError(f"{self.label} does not do {task}; it supports {', '.join(self.tasks)}.")
        return resolve_ref(self.estimators[task])

    def class_by_name(self, name: str) -> type:
        for task, ref in self.estimators.items():
            if ref.partition(":")[2] == name:
                return self.estimator_class(task)
        raise TreevizError(f"{name!r} is not an estimator of the {self.label} family.")

    def task_of_class(self, cls: type) -> str:
        """The task of an estimator class of this family, or of the family class it derives from."""
        known = {ref: task for task, ref in self.estimators.items()}
        for base in getattr(cls, "__mro__", (cls,)):
            task = known.get(f"{base.__module__}:{base.__name__}")
            if task is not None:
                return task
        raise TreevizError(f"{cls.__name__} is not an estimator of the {self.label} family.")

    def presets_for(self, task: str) -> list[str]:
        """The presets whose values are valid for ``task`` (a softmax-leaf preset is not offered
        for regression)."""
        out = []
        for name, values in self.presets.items():
            try:
                self.validate_params(values, task)
            except TreevizError:
                continue
            out.append(name)
        return out

    def defaults(self, task: str | None = None, preset: str | None = None) -> dict[str, Any]:
        """Default values of the form's parameters for ``task``, updated by ``preset``."""
        values = {p.name: p.default for p in self.params_for(task, form_only=True)}
        if preset is not None:
            if preset not in self.presets:
                raise TreevizError(f"{self.label} has no preset {preset!r}.")
            values.update({k: v for k, v in self.presets[preset].items() if k in values})
        return values

    def validate_params(self, values: Mapping[str, Any], task: str | None = None, *,
                        strict: bool = False) -> dict[str, Any]:
        """Check every value against the schema (unknown names are an error); coerced copies."""
        known = {p.name: p for p in self.params_for(task)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise TreevizError(
                f"{self.label} has no parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}."
            )
        return {name: known[name].validate(v, strict=strict) for name, v in values.items()}

    def make(self, task: str, params: Mapping[str, Any] | None = None, **extra: Any) -> Any:
        """An unfitted estimator for ``task``: defaults updated with validated ``params`` and
        ``extra`` (values the app sets outside the form, such as the device)."""
        values = self.defaults(task)
        values.update(self.validate_params({**dict(params or {}), **extra}, task))
        return self.estimator_class(task)(**values)


def seed_param(**overrides: Any) -> Param:
    """The ``random_state`` parameter every family shares."""
    values = {"name": "random_state", "kind": "seed", "default": 0,
                  "help": "Seed for every random choice, for reproducible runs.", "low": 0, "high": 2**31 - 1,
                  "optional_label": "random", "advanced": True}
    values.update(overrides)
    return Param(**values)


def n_jobs_param() -> Param:
    """The ``n_jobs`` parameter of families that train independent trees (forests): scikit-learn's
    meaning, -1 capped by the process's thread budget (:func:`models.ground.threads.worker_count`). The
    schema admits 0, which the estimators refuse at ``fit`` with a sentence."""
    return Param("n_jobs", "int", -1,
                 "Trees trained at once, each in its own process on one thread: -1 = as many as the cores this "
                 "run may use, 1 = one after another, k = k processes. The forest is the same for every value.",
                 low=-1, high=1024, label="parallel jobs", advanced=True)


def device_param() -> Param:
    """The ``device`` parameter of torch families (chosen in the app's sidebar, not the form)."""
    return Param("device", "text", "auto",
                 "Where to train: 'auto' (a CUDA GPU when one is visible), 'cpu', 'cuda' or 'cuda:N'.",
                 form=False)
