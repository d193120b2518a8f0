"""Model files: config.json + weights.safetensors, folder or zip; no code runs on load."""

import io
import json
import pickle
import zipfile

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes

from models.cart.estimators import CARTClassifier, CARTRegressor
from models.ground.errors import TreevizError
from models.persist import load_model, model_bytes, read_config, save_model, zip_bytes


@pytest.fixture(scope="module")
def fitted():
    X, y = load_breast_cancer(return_X_y=True)
    names = np.array(["malignant", "benign"], dtype=object)[y]
    return CARTClassifier(max_depth=6, min_samples_leaf=2).fit(X, names), X


@pytest.mark.parametrize("suffix", ["", ".zip"])
def test_round_trip_gives_identical_predictions(tmp_path, fitted, suffix):
    est, X = fitted
    path = save_model(est, tmp_path / f"model{suffix}", context={"fingerprint": "abc"})
    back = load_model(path)
    Xt = X * 1.001
    np.testing.assert_array_equal(back.predict_proba(Xt), est.predict_proba(Xt))
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))
    assert back.get_params() == est.get_params()
    assert back.history_ == est.history_
    assert back.model_context_ == {"fingerprint": "abc"}
    assert back.to_tree().equals(est.to_tree())
    cfg = read_config(path)
    assert cfg["family"] == "cart" and cfg["estimator"] == "CARTClassifier"


def test_regressor_round_trip_from_bytes():
    X, y = load_diabetes(return_X_y=True)
    est = CARTRegressor(max_depth=4).fit(X, y)
    back = load_model(zip_bytes(model_bytes(est)))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_files_are_json_and_safetensors_only(tmp_path, fitted):
    est, _ = fitted
    path = save_model(est, tmp_path / "m")
    files = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert files == ["config.json", "weights.safetensors"]
    json.loads((tmp_path / "m" / "config.json").read_text())
    assert path.endswith("m")


def _zip(files):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_malicious_or_foreign_files_are_refused_with_sentences(fitted):
    est, _ = fitted
    good = model_bytes(est)

    class Boom:
        def __reduce__(self):
            return (print, ("pwned",))

    with pytest.raises(TreevizError, match=r"lacks config\.json, weights\.safetensors"):
        load_model(_zip({"model.pkl": pickle.dumps(Boom())}))
    with pytest.raises(TreevizError, match="not a zip"):
        load_model(b"hello world")
    cfg = json.loads(good["config.json"])
    cfg["estimator"] = "os.system"
    with pytest.raises(TreevizError, match="not an estimator of the CART"):
        load_model(_zip({"config.json": json.dumps(cfg), "weights.safetensors": good["weights.safetensors"]}))
    cfg = json.loads(good["config.json"])
    cfg["family"] = "evil"
    with pytest.raises(TreevizError, match="no model family"):
        load_model(_zip({"config.json": json.dumps(cfg), "weights.safetensors": good["weights.safetensors"]}))
    cfg = json.loads(good["config.json"])
    cfg["params"]["max_depth"] = "import os"
    with pytest.raises(TreevizError, match="whole number"):
        load_model(_zip({"config.json": json.dumps(cfg), "weights.safetensors": good["weights.safetensors"]}))
    with pytest.raises(TreevizError, match="damaged"):
        load_model(_zip({"config.json": good["config.json"], "weights.safetensors": b"\x00" * 40}))
    with pytest.raises(TreevizError, match="not valid JSON"):
        load_model(_zip({"config.json": b"{", "weights.safetensors": good["weights.safetensors"]}))
    with pytest.raises(TreevizError, match="no model file"):
        load_model("/nonexistent/model.zip")


def _patched(data: bytes, offsets: dict[bytes, int], value: bytes) -> bytes:
    """``data`` with ``value`` written at ``offsets[signature]`` into every local and central header."""
    out = bytearray(data)
    for signature, offset in offsets.items():
        at = 0
        while (at := out.find(signature, at)) >= 0:
            out[at + offset:at + offset + len(value)] = value
            at += 4
    return bytes(out)


@pytest.mark.parametrize(("what", "offsets", "value"), [
    ("encrypted", {b"PK\x03\x04": 6, b"PK\x01\x02": 8}, b"\x01\x00"),        # RuntimeError before
    ("unknown compression", {b"PK\x03\x04": 8, b"PK\x01\x02": 10}, b"\x63\x00"),  # NotImplementedError
    ("version needed 7.0", {b"PK\x01\x02": 6}, b"\x46\x00"),                 # NotImplementedError
])
def test_odd_zip_headers_are_refused_with_sentences(tmp_path, fitted, what, offsets, value):
    est, _ = fitted
    data = _patched(zip_bytes(model_bytes(est)), offsets, value)
    (tmp_path / "m.zip").write_bytes(data)
    for source in (data, tmp_path / "m.zip"):
        with pytest.raises(TreevizError, match="damaged") as info:
            load_model(source)
        assert str(info.value).endswith(".")
        with pytest.raises(TreevizError):
            read_config(source)


def test_truncated_deflate_data_is_refused(fitted):
    est, _ = fitted
    good = model_bytes(est)
    info = zipfile.ZipInfo("config.json")
    info.compress_type = zipfile.ZIP_DEFLATED
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(info, good["config.json"])
        zf.writestr("weights.safetensors", good["weights.safetensors"])
    data = bytearray(buf.getvalue())
    at = 30 + len("config.json")
    data[at + 40:at + 400] = bytes(360)  # zeroed deflate data: zlib.error or a bad CRC
    with pytest.raises(TreevizError, match="damaged"):
        load_model(bytes(data))


@pytest.mark.parametrize("change", [
    {"learned": []}, {"history": {"a": 1}}, {"context": [1, 2]}, {"version": "1"}, {"params": [3]},
])
def test_malformed_config_fields_are_refused(fitted, change):
    est, _ = fitted
    good = model_bytes(est)
    cfg = {**json.loads(good["config.json"]), **change}
    with pytest.raises(TreevizError):
        load_model(_zip({"config.json": json.dumps(cfg), "weights.safetensors": good["weights.safetensors"]}))


@pytest.mark.parametrize(("array", "value"), [("weight", np.nan), ("weight", np.inf), ("bias", np.nan)])
def test_non_finite_split_weights_are_refused(fitted, array, value):
    from safetensors.numpy import load as st_load
    from safetensors.numpy import save as st_save

    est, _ = fitted
    good = model_bytes(est)
    arrays = st_load(good["weights.safetensors"])
    arrays[array] = arrays[array].copy()
    arrays[array][0] = value  # the root's split: every row would take one path
    with pytest.raises(TreevizError, match="not all finite"):
        load_model(_zip({"config.json": good["config.json"], "weights.safetensors": st_save(arrays)}))


def test_a_model_zip_with_config_twice_is_refused(fitted):
    est, _ = fitted
    good = model_bytes(est)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, pytest.warns(UserWarning, match="Duplicate"):
        zf.writestr("config.json", good["config.json"])
        zf.writestr("weights.safetensors", good["weights.safetensors"])
        zf.writestr("config.json", b"{}")
    with pytest.raises(TreevizError, match="twice"):
        load_model(buf.getvalue())


def test_a_model_file_whose_parts_do_not_fit_is_refused(fitted):
    """Found by the fuzz test: a damaged key left a classifier without classes_, which loaded and
    then failed at the first prediction."""
    est, _ = fitted
    good = model_bytes(est)
    cfg = json.loads(good["config.json"])
    del cfg["learned"]["classes_"]
    with pytest.raises(TreevizError, match=r"not a treeviz model|do not"):
        load_model(_zip({"config.json": json.dumps(cfg), "weights.safetensors": good["weights.safetensors"]}))
    cfg = json.loads(good["config.json"])
    cfg["learned"]["classes_"] = cfg["learned"]["classes_"] + ["extra"]
    with pytest.raises(TreevizError, match="classes do not match"):
        load_model(_zip({"config.json": json.dumps(cfg), "weights.safetensors": good["weights.safetensors"]}))
