"""treeviz's SkinnyTreesClassifier on the same data as ref_skinny.py (the notebook's breast_cancer
split, or the same .npz), with the notebook's setting: sigmoid routing (the authors' code), the
L0 penalty annealed from dense to sparse, SGD at a constant rate; on the CPU with one thread.

usage (the project's python, PYTHONPATH=<the treeviz source>):
ours_skinny.py --epochs N --seed S [--data F.npz --trees ...] --out F.json
"""
import shared

shared.one_thread()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from ours_clock import fit_timed, torch_one_thread  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.metrics import accuracy_score, roc_auc_score  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from models.skinny.estimators import SkinnyTreesClassifier  # noqa: E402


def notebook_data(data: str):
    """ref_skinny.py's rows: the notebook's breast_cancer split, or the three parts of an .npz."""
    if data != "breast_cancer":
        d = np.load(data)
        return d["x_train"], d["y_train"], d["x_val"], d["y_val"], d["x_test"], d["y_test"]
    X, y = load_breast_cancer(return_X_y=True)
    Xtv, Xte, ytv, yte = train_test_split(X, y, test_size=0.2, stratify=y, random_state=8)
    Xtr, Xva, ytr, yva = train_test_split(Xtv, ytv, test_size=0.2, stratify=ytv, random_state=8)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), ytr, scaler.transform(Xva), yva, scaler.transform(Xte), yte


def main() -> None:
    a = shared.skinny_options().parse_args()
    torch_one_thread()
    Xtr, ytr, Xva, yva, Xte, yte = notebook_data(a.data)
    params = dict(n_trees=a.trees, depth=a.depth, activation="sigmoid", lambda0=a.lam0, lambda2=a.l2,
                  temperature=a.temperature, learning_rate=a.lr, batch_size=a.batch, max_epochs=a.epochs,
                  schedule="dense_to_sparse", penalty="l0", device="cpu", random_state=a.seed)
    model = SkinnyTreesClassifier(**params)
    clock, fit_s, fit_cpu_s = fit_timed(model, Xtr, ytr, (Xva, yva))
    proba = model.predict_proba(Xte)
    auc = roc_auc_score(yte, proba[:, 1]) if proba.shape[1] == 2 else roc_auc_score(yte, proba, multi_class="ovo")
    result = {"impl": "treeviz", "data": a.data, "params": params, "epochs": a.epochs, "n_train": int(Xtr.shape[0]),
              "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "fit_s": fit_s,
              "fit_cpu_s": fit_cpu_s, **shared.epoch_times(clock.marks),
              "features_kept": int(model.selected_features_.size),
              "test_accuracy": float(accuracy_score(yte, model.predict(Xte))), "test_auc": float(auc)}
    shared.save(result, a.out, ("fit_s", "features_kept", "test_accuracy", "test_auc"))


if __name__ == "__main__":
    main()
