"""treeviz's LatentTreeClassifier on the same rows as ref_latent.py (an .npz written by
benchmarks.external.data), with the same setting: depth 4, batch 64, λ (prune_strength) 1, QHAdam
(ν = (0.7, 1.0), β = (0.995, 0.998)) at learning rate 1e-2, a linear split with BatchNorm and a linear
(logistic) head on [x; z], a fixed number of epochs (patience above max_epochs, so no early stop),
the best validation epoch kept; on the CPU with one thread.

Per-epoch time: treeviz's whole epoch (the training steps, the frozen pruning vector on the
training rows, the training and validation scores, keeping the best state). Epoch 1 also carries
the bias initialisation and the optimiser's construction.

usage (the project's python, PYTHONPATH=<the treeviz source>):
ours_latent.py --split_file F.npz --epochs N --seed S --out F.json
"""
import shared

shared.one_thread()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from ours_clock import fit_timed, torch_one_thread  # noqa: E402

from models.latent.estimators import LatentTreeClassifier  # noqa: E402


def main() -> None:
    a = shared.latent_options(seed=0).parse_args()
    torch_one_thread()
    d = np.load(a.split_file)
    Xtr, Xva, Xte = (d[k].astype(np.float64) for k in ("x_train", "x_val", "x_test"))
    ytr, yva, yte = d["y_train"], d["y_val"], d["y_test"]
    params = dict(depth=a.depth, prune_strength=a.reg, split="linear", head="linear", optimizer="qhadam",
                  learning_rate=a.lr, batch_size=a.batch, max_epochs=a.epochs, patience=a.epochs + 1, device="cpu",
                  random_state=a.seed)
    model = LatentTreeClassifier(**params)
    clock, fit_s, fit_cpu_s = fit_timed(model, Xtr, ytr, (Xva, yva))
    result = {"impl": "treeviz", "split_file": a.split_file, "params": params, "epochs": a.epochs,
              "n_train": int(Xtr.shape[0]), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
              "n_params": int(model.n_parameters_), "fit_s": fit_s, "fit_cpu_s": fit_cpu_s,
              **shared.epoch_times(clock.marks), "best_epoch": int(model.best_epoch_),
              "test_accuracy": float(model.score(Xte, yte))}
    shared.save(result, a.out, ("fit_s", "best_epoch", "test_accuracy"))


if __name__ == "__main__":
    main()
