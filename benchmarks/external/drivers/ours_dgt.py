"""treeviz's DGTRegressor on the rows the reference trains, validates and tests on (an .npz that
export_dgt_split.py wrote from the reference's own loader, before its normalisation, or the
synthetic table), with the reference's setting: L layers, RMSprop at 1e-2, momentum 0, l1 on the
predicates, grad clip 0.01, the best validation epoch kept; on the CPU with one thread.

usage (the project's python, PYTHONPATH=<the treeviz source>):
ours_dgt.py --split_file F.npz --height 6 --n_layers 3 --epochs N --out F.json
"""
import shared

shared.one_thread()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from ours_clock import fit_timed, torch_one_thread  # noqa: E402

from models.dgt.estimators import DGTRegressor  # noqa: E402


def main() -> None:
    ap = shared.dgt_options()
    ap.add_argument("--split_file", required=True)
    ap.add_argument("--n_layers", type=int, default=3)
    a = ap.parse_args()
    torch_one_thread()
    d = np.load(a.split_file)
    Xtr, Xva, Xte = (d[k].astype(np.float64) for k in ("x_train", "x_val", "x_test"))
    ytr, yva, yte = (d[k].astype(np.float64).reshape(-1) for k in ("y_train", "y_val", "y_test"))
    params = dict(depth=a.height, n_layers=a.n_layers, width_multiplier=None, quantizer="scaled", l1_penalty=a.l1,
                  l2_penalty=0.0, learning_rate=1e-2, momentum=0.0, batch_size=a.batch, max_epochs=a.epochs,
                  min_steps=0, grad_clip=0.01, device="cpu", random_state=a.seed)
    model = DGTRegressor(**params)
    clock, fit_s, fit_cpu_s = fit_timed(model, Xtr, ytr, (Xva, yva))
    result = {"impl": "treeviz", "split_file": a.split_file, "params": params, "epochs": a.epochs,
              "n_train": int(Xtr.shape[0]), "n_val": int(Xva.shape[0]), "n_test": int(Xte.shape[0]),
              "n_params": int(sum(p.numel() for p in model._network.parameters())),
              "torch_threads": torch.get_num_threads(), "torch": torch.__version__, "fit_s": fit_s,
              "fit_cpu_s": fit_cpu_s, **shared.epoch_times(clock.marks), "best_epoch": int(model.best_epoch_),
              "test_rmse": float(np.sqrt(np.mean((model.predict(Xte) - yte) ** 2)))}
    shared.save(result, a.out, ("fit_s", "n_params", "best_epoch", "test_rmse"))


if __name__ == "__main__":
    main()
