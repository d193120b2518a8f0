"""ONNX export of fitted estimators (models.onnx): onnxruntime's outputs equal the estimators'.

Every family and leaf kind is fitted on a real data set and exported with ``to_onnx``; the graph
must give ``predict``'s labels on every row (training and test split, the test rows unseen by the
fit) and ``predict_proba`` / ``predict`` / ``transform`` within 1e-5. Hard trees are checked
further on rows placed on their split boundaries, where a graph that summed a split value in
another order than the estimator would send some rows to the other side.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from models.ground.errors import TreevizError  # noqa: E402
from models.onnx import estimator_graph, to_onnx  # noqa: E402
from models.onnx.graph import Graph  # noqa: E402
from models.onnx.trees import EINSUM_IN_ORDER  # noqa: E402
from models.registry import families  # noqa: E402
from treeviz.services.data import load_dataset, prepare  # noqa: E402

ATOL = 1e-5


@pytest.fixture(scope="module")
def data(cancer):
    """name -> (X_train, y_train, X_test): catalogue tables prepared as the app prepares them, and
    breast cancer (class names, scaled) split in two."""
    out = {}
    for name in ("iris", "wine", "diabetes", "cars"):
        p = prepare(load_dataset(name))
        out[name] = (p.X_train, p.labels("train"), p.X_test)
    X, y = cancer
    out["cancer"] = (X[:400], y[:400], X[400:])
    Xc, yc, Xc_test = out["cars"]
    out["cars2"] = (Xc, np.column_stack([yc, np.log(yc)]), Xc_test)  # two targets
    Xi, yi, Xi_test = out["iris"]
    out["iris_int"] = (Xi, np.unique(yi, return_inverse=True)[1].astype(np.int64), Xi_test)  # integer classes
    return out


def make(key: str, task: str, **params):
    return families()[key].estimator_class(task)(**params)


def run(model, X: np.ndarray) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(to_onnx(model).SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {"X": np.ascontiguousarray(X, dtype=np.float64)})))


TAO = {"depth": 3, "max_iter": 5}
DGT = {"depth": 3, "max_epochs": 15, "min_steps": 0, "batch_size": 64, "learning_rate": 0.05}
SKINNY = {"n_trees": 4, "depth": 3, "max_epochs": 5, "batch_size": 32, "learning_rate": 0.2, "lambda0": 10.0}
LATENT = {"depth": 2, "max_epochs": 8, "learning_rate": 0.05, "batch_size": 32}

CASES = [
    # (id, family, task, data set, parameters)
    ("cart-clf", "cart", "classification", "wine", {"max_depth": 4}),
    ("cart-clf-int", "cart", "classification", "iris_int", {"max_depth": 3}),
    ("cart-reg", "cart", "regression", "diabetes", {"max_depth": 5}),
    ("cart-reg-2d", "cart", "regression", "cars2", {"max_depth": 4}),
    ("tao-constant", "tao", "classification", "cancer", TAO),
    ("tao-softmax", "tao", "classification", "wine", {**TAO, "leaf": "softmax", "leaf_classes": 2}),
    ("tao-linear-clf", "tao", "classification", "iris", {**TAO, "leaf": "linear"}),
    ("tao-axis", "tao", "classification", "iris_int", {**TAO, "node_type": "axis"}),
    ("tao-reg-constant", "tao", "regression", "diabetes", TAO),
    ("tao-reg-linear", "tao", "regression", "cars2", {**TAO, "leaf": "linear"}),
    ("tao-forest-vote", "tao_forest", "classification", "wine", {"n_trees": 3, "n_jobs": 1, **TAO}),
    ("tao-forest-linear", "tao_forest", "classification", "iris", {"n_trees": 3, "n_jobs": 1, "leaf": "linear", **TAO}),
    ("tao-forest-reg", "tao_forest", "regression", "diabetes", {"n_trees": 3, "n_jobs": 1, **TAO}),
    ("dgt-clf", "dgt", "classification", "wine", DGT),
    ("dgt-reg", "dgt", "regression", "diabetes", DGT),
    ("dgt-forest-clf", "dgt_forest", "classification", "iris", {"n_trees": 3, "n_jobs": 1, **DGT}),
    ("dgt-forest-reg", "dgt_forest", "regression", "cars", {"n_trees": 3, "n_jobs": 1, **DGT}),
    ("dgt-bandit-clf", "dgt_bandit", "classification", "iris", {"depth": 3, "n_rounds": 300, "learning_rate": 0.01}),
    ("dgt-bandit-reg", "dgt_bandit", "regression", "diabetes", {"depth": 2, "n_rounds": 300, "learning_rate": 0.01}),
    ("skinny-clf", "skinny", "classification", "cancer", SKINNY),
    ("skinny-smoothstep", "skinny", "classification", "wine", {**SKINNY, "activation": "smoothstep"}),
    ("skinny-reg", "skinny", "regression", "diabetes", SKINNY),
    ("latent-binary", "latent", "classification", "cancer", LATENT),
    ("latent-mlp-elu", "latent", "classification", "wine",
     {**LATENT, "head": "mlp", "head_layers": 2, "split": "elu"}),
    ("latent-preprint-paper", "latent", "classification", "iris",
     {**LATENT, "formulation": "preprint", "readout": "paper"}),
    ("latent-reg", "latent", "regression", "diabetes", LATENT),
    ("latent-clustering", "latent", "clustering", "wine", {**LATENT, "target_features": "0,1"}),
    ("laptao-clf", "laptao", "classification", "iris",
     {"labelled_fraction": 1.0, "depth": 3, "perplexity": 5.0, "n_mu": 3, "tao_iter": 3}),
    ("laptao-reg", "laptao", "regression", "diabetes",
     {"labelled_fraction": 1.0, "depth": 2, "perplexity": 5.0, "n_mu": 3, "tao_iter": 3}),
    ("tree-embedding", "tree_embedding", "embedding", "iris",
     {"depth": 2, "perplexity": 5.0, "n_mu": 2, "free_iter": 60, "z_iter": 10, "tao_iter": 3}),
]


@pytest.fixture(scope="module")
def fitted(data):
    cache: dict[str, object] = {}

    def get(case_id: str):
        if case_id not in cache:
            _, key, task, name, params = next(c for c in CASES if c[0] == case_id)
            X, y, _ = data[name]
            model = make(key, task, **params)
            cache[case_id] = model.fit(X) if task in ("clustering", "embedding") else model.fit(X, y)
        return cache[case_id]

    return get


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_onnxruntime_equals_the_estimator_on_every_row(case, data, fitted):
    case_id, _, task, name, _ = case
    model = fitted(case_id)
    X_train, _, X_test = data[name]
    for X in (X_train, X_test):
        out = run(model, X)
        if task == "classification":
            expected = model.predict(X)
            assert out["label"].shape == expected.shape
            assert [str(v) for v in out["label"]] == [str(v) for v in expected]  # every row
            if np.asarray(model.classes_).dtype.kind in "iu":
                assert out["label"].dtype == np.int64
                np.testing.assert_array_equal(out["label"], expected)
            else:
                assert out["label"].dtype == object
            proba = model.predict_proba(X)
            assert out["probabilities"].shape == proba.shape
            np.testing.assert_allclose(out["probabilities"], proba, rtol=0, atol=ATOL)
        elif task == "regression":
            expected = model.predict(X)
            assert out["prediction"].shape == expected.shape
            np.testing.assert_allclose(out["prediction"], expected, rtol=0, atol=ATOL)
        elif task == "clustering":
            assert out["cluster"].dtype == np.int64
            np.testing.assert_array_equal(out["cluster"], model.predict(X))
        else:
            np.testing.assert_allclose(out["embedding"], model.transform(X), rtol=0, atol=ATOL)


@pytest.mark.parametrize("case_id", ["cart-clf", "tao-constant", "tao-axis", "tao-forest-vote", "dgt-forest-clf"])
def test_hard_trees_with_constant_leaves_give_the_estimators_probabilities_bit_for_bit(case_id, data, fitted):
    model = fitted(case_id)
    X = data[next(c[3] for c in CASES if c[0] == case_id)][2]
    out = run(model, X)
    np.testing.assert_array_equal(out["probabilities"], model.predict_proba(X))


def _on_boundaries(W: np.ndarray, b: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Each row of X moved onto each hyperplane w·x + b = 0 (up to rounding), so the split values
    are within rounding of 0 and their sign depends on the order of the sum."""
    rows = []
    for w, c in zip(W, b):
        norm = float(w @ w)
        if norm > 0:
            rows.append(X - np.outer((X @ w + c) / norm, w))
    return np.concatenate(rows)


@pytest.mark.parametrize("case_id", ["tao-constant", "tao-softmax", "tao-forest-vote"])
def test_tao_routes_rows_on_its_split_boundaries_as_the_estimator(case_id, data, fitted):
    model = fitted(case_id)
    trees = model.trees_ if hasattr(model, "trees_") else [model.tao_tree_]
    X = data[next(c[3] for c in CASES if c[0] == case_id)][2][:40]
    near = np.concatenate([_on_boundaries(t.weight[t.left >= 0], t.bias[t.left >= 0], X) for t in trees])
    out = run(model, near)
    np.testing.assert_array_equal(out["label"], model.predict(near))
    np.testing.assert_allclose(out["probabilities"], model.predict_proba(near), rtol=0, atol=ATOL)


def test_cart_routes_rows_on_its_thresholds_as_the_estimator(data, fitted):
    """A value equal to a threshold goes left; the float64 boundary of scikit-learn's float32
    comparison and its neighbours go to the sides the Tree sends them."""
    model = fitted("cart-clf")
    tree = model.to_tree()
    X = data["wine"][2][:10]
    rows = []
    for node in tree.decision_nodes:
        f = int(np.flatnonzero(tree.weight[node])[0])
        t = -tree.bias[node]
        for v in (t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf)):
            Z = X.copy()
            Z[:, f] = v
            rows.append(Z)
    near = np.concatenate(rows)
    out = run(model, near)
    np.testing.assert_array_equal(out["label"], model.predict(near))
    np.testing.assert_array_equal(out["probabilities"], model.predict_proba(near))


def test_short_einsum_sums_add_in_order():
    """The Tree routes with np.einsum; the graph sums nodes of at most EINSUM_IN_ORDER nonzero
    weights term by term, which is exact only while einsum adds such short sums in order."""
    rng = np.random.default_rng(0)
    for width in range(1, EINSUM_IN_ORDER + 1):
        A, B = rng.normal(size=(5000, width)), rng.normal(size=(5000, width))
        in_order = A[:, 0] * B[:, 0]
        for k in range(1, width):
            in_order = in_order + A[:, k] * B[:, k]
        np.testing.assert_array_equal(np.einsum("ij,ij->i", A, B), in_order)


def test_estimator_graph_writes_into_a_graph_fed_by_another_tensor(data, fitted):
    """The preprocessing front's use: its own graph and input, the estimator's nodes behind them."""
    model = fitted("tao-reg-constant")
    X = data["diabetes"][2]
    g = Graph()
    raw = g.input("raw", np.float64, [None, X.shape[1]])
    x = g.node("Mul", [raw, g.const(np.ones(X.shape[1]), "unit")], "scaled")
    names = estimator_graph(model, g, x)
    assert set(names) == {"prediction"}
    g.output(names["prediction"], "prediction", np.float64, [None])
    session = ort.InferenceSession(g.model().SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"raw": X})[0], model.predict(X), rtol=0, atol=ATOL)


def test_metadata_names_the_estimator_version_and_features(fitted):
    model = fitted("cart-clf")
    meta = {p.key: p.value for p in to_onnx(model).metadata_props}
    assert meta["treeviz.estimator"] == "CARTClassifier"
    assert meta["treeviz.family"] == "cart"
    assert meta["treeviz.version"]
    assert json.loads(meta["treeviz.feature_names"]) == list(model.feature_names_)
    assert json.loads(meta["treeviz.classes"]) == [str(c) for c in model.classes_]


def test_batch_inference_of_latent_trees_is_refused_with_a_sentence(data, fitted):
    model = fitted("latent-binary")
    model.set_params(inference="batch")
    try:
        with pytest.raises(TreevizError, match=r"inference='batch'.*depends on the other rows.*inference='frozen'"):
            to_onnx(model)
    finally:
        model.set_params(inference="frozen")


def test_a_family_without_a_graph_is_refused_with_a_sentence(data):
    X, y, _ = data["iris"]
    model = make("stump", "classification").fit(X, y)  # the test-only family registered by tests/conftest.py
    with pytest.raises(TreevizError, match=r"Decision stump \(test family\) family's classification models cannot "
                                           r"be exported to ONNX"):
        to_onnx(model)


def test_an_unfitted_model_or_a_foreign_object_is_refused_with_a_sentence():
    with pytest.raises(TreevizError, match="not fitted yet"):
        to_onnx(make("cart", "classification"))
    with pytest.raises(TreevizError, match="not a treeviz estimator"):
        to_onnx(object())


def test_a_tree_that_is_one_leaf_gives_its_value_to_every_row(data):
    X, y, X_test = data["diabetes"]
    model = make("cart", "regression", min_samples_split=10_000).fit(X, y)
    assert model.to_tree().n_nodes == 1
    np.testing.assert_array_equal(run(model, X_test)["prediction"], model.predict(X_test))
