"""treeviz's LatentTreeClassifier on the same rows as ref_latent.py (an .npz from
export_latent_split.py), with the same setting: depth 4, batch 64, λ (prune_strength) 1, QHAdam
(ν = (0.7, 1.0), β = (0.995, 0.998)) at learning rate 1e-2, a linear split with BatchNorm and a linear
(logistic) head on [x; z], a fixed number of epochs (patience above max_epochs, so no early stop),
the best validation epoch kept; on the CPU with one thread.

Per-epoch time: process CPU time (and wall time) between consecutive on_epoch_end callbacks, i.e.
treeviz's whole epoch (the training steps, the frozen pruning vector on the training rows, the
training and validation scores, keeping the best state). Epoch 1 also carries the bias
initialisation and the optimiser's construction.

Run with the system python and PYTHONPATH=<the treeviz checkout>.
"""
import json
import os
import time

for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[v] = "1"
os.environ["TREEVIZ_THREADS"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
from latent_args import arguments, epoch_times  # noqa: E402

torch.set_num_threads(1)
torch.set_num_interop_threads(1)

from models.base import Callback  # noqa: E402
from models.ground import threads  # noqa: E402
from models.latent.estimators import LatentTreeClassifier  # noqa: E402

threads.apply_budget(1)

a = arguments(seed=0).parse_args()

d = np.load(a.split_file)
Xtr, ytr, Xva, yva, Xte, yte = (d[k] for k in ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test"))
Xtr, Xva, Xte = (x.astype(np.float64) for x in (Xtr, Xva, Xte))
params = dict(depth=a.depth, prune_strength=a.reg, split="linear", head="linear", optimizer="qhadam",
              learning_rate=a.lr, batch_size=a.batch, max_epochs=a.epochs, patience=a.epochs + 1, device="cpu",
              random_state=a.seed)


class Clock(Callback):
    """Wall and process-CPU time at the start of training and at the end of every epoch."""

    def on_train_begin(self, estimator, **kw):
        self.marks = [(time.perf_counter(), time.process_time())]

    def on_epoch_end(self, estimator, **kw):
        self.marks.append((time.perf_counter(), time.process_time()))


clock = Clock()
model = LatentTreeClassifier(**params)
t0, c0 = time.perf_counter(), time.process_time()
model.fit(Xtr, ytr, eval_set=(Xva, yva), callbacks=[clock])
fit_s, fit_cpu_s = time.perf_counter() - t0, time.process_time() - c0
res = {"impl": "treeviz", "split_file": a.split_file, "params": params, "epochs": a.epochs,
       "n_train": int(Xtr.shape[0]), "n_val": int(Xva.shape[0]), "n_test": int(Xte.shape[0]),
       "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
       "n_params": int(model.n_parameters_), "fit_s": fit_s, "fit_cpu_s": fit_cpu_s,
       **epoch_times(clock.marks), "best_epoch": int(model.best_epoch_), "test_accuracy": float(model.score(Xte, yte)),
       "curve": {"val_loss": [r.get("val_loss") for r in model.history_],
                 "val_score": [r.get("val_score") for r in model.history_]}}
json.dump(res, open(a.out, "w"), indent=1)
print(json.dumps({k: res[k] for k in ("impl", "epochs", "median_epoch_s", "median_epoch_cpu_s", "fit_s", "best_epoch",
                                      "test_accuracy")}))
