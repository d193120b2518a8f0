"""vzantedeschi/LatentTrees' own code (the ICML 2021 latent tree), trained the way its
tabular_classification.py trains a binary classifier, on the CPU with one thread, timing every epoch.

What is the authors' code here: the model (src.LT_models.LTBinaryClassifier: their LatentTree layer
with a linear split + BatchNorm, their C++ pruning QP src.qp_fast and its backward, the logistic
predictor on [x; z]), their data wrapper (src.datasets.TorchDataset in a torch DataLoader,
shuffle=True), their per-epoch steps (src.optimization.train_stochastic, then
src.optimization.evaluate on the validation rows with the error rate), their optimiser (QHAdam from
qhoptim with the script's nus=(0.7, 1.0), betas=(0.995, 0.998)), their loss (BCELoss(sum) / batch)
and their model selection (save_model to disk whenever the validation error improves, reload the
best for the test error).

What differs from the script, and why:
* the data: breast_cancer with treeviz's split of the latent_train benchmark (an .npz written by
  export_latent_split.py), so that both sides see the same rows; the script's data sets are not
  available offline;
* depth 4, batch 64, reg (λ) 1 and learning rate 1e-2 (treeviz's defaults and the latent_train
  benchmark's setting; the script uses batch 512 and lr 1e-3 for its large tables);
* no progress bar (prog_bar=False) and no tensorboard monitor (monitor=None): logging only, so the
  reference's epoch is its arithmetic and its own loop, not console output;
* DataLoader num_workers=0 (the script asks for 16 worker processes; one thread here);
* a fixed number of epochs (no early stop), so both sides time the same number of epochs.

Per-epoch time: process CPU time (and wall time) of train_stochastic + evaluate(validation) + the
best-model save, i.e. one pass of the script's epoch loop. Epoch 1 also carries the data-dependent
bias initialisation of the first batch.

Run with the latent venv's python from $REF_HOME (the scratch copy with the compiled src/qp_fast).
"""
import json
import os
import sys
import tempfile
import time

for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[v] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
from latent_args import arguments, epoch_times  # noqa: E402

torch.set_num_threads(1)
torch.set_num_interop_threads(1)

ap = arguments(seed=1225)
ap.add_argument("--src", default=os.environ.get("REF_HOME", ".") + "/latent_run")
a = ap.parse_args()

sys.path.insert(0, a.src)
from qhoptim.pyt import QHAdam  # noqa: E402
from src.datasets import TorchDataset  # noqa: E402
from src.LT_models import LTBinaryClassifier  # noqa: E402
from src.optimization import evaluate, train_stochastic  # noqa: E402
from src.utils import deterministic  # noqa: E402
from torch.nn import BCELoss  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

d = np.load(a.split_file)
X_train, y_train = d["x_train"].astype(np.float32), d["y_train"].astype(np.int64)
X_valid, y_valid = d["x_val"].astype(np.float32), d["y_val"].astype(np.int64)
X_test, y_test = d["x_test"].astype(np.float32), d["y_test"].astype(np.int64)

deterministic(a.seed)
trainloader = DataLoader(TorchDataset(X_train, y_train), batch_size=a.batch, num_workers=0, shuffle=True)
valloader = DataLoader(TorchDataset(X_valid, y_valid), batch_size=a.batch * 2, num_workers=0, shuffle=False)
testloader = DataLoader(TorchDataset(X_test, y_test), batch_size=a.batch * 2, num_workers=0, shuffle=False)

model = LTBinaryClassifier(a.depth, X_train.shape[1], reg=a.reg)
optimizer = QHAdam(model.parameters(), lr=a.lr, nus=(0.7, 1.0), betas=(0.995, 0.998))
loss = BCELoss(reduction="sum")


def criterion(x, y):
    return loss(x.float(), y.float())


def eval_criterion(x, y):  # error rate
    return (x != y).sum()


save_dir = tempfile.mkdtemp(prefix="reflatent_", dir=os.environ.get("REF_HOME", ".") + "/tmp")
state = {"batch-size": a.batch, "loss-function": "BCE", "learning-rate": a.lr, "seed": a.seed,
         "dataset": "breast_cancer", "reg": a.reg}
best_val, best_e = float("inf"), -1
marks = [(time.perf_counter(), time.process_time())]
val_curve = []
t0, c0 = time.perf_counter(), time.process_time()
for e in range(a.epochs):
    train_stochastic(trainloader, model, optimizer, criterion, epoch=e, monitor=None, prog_bar=False)
    val_loss = evaluate(valloader, model, {"ER": eval_criterion}, epoch=e, monitor=None)
    val_curve.append(float(val_loss["ER"]))
    if val_loss["ER"] < best_val:
        best_val, best_e = val_loss["ER"], e
        LTBinaryClassifier.save_model(model, optimizer, state, save_dir, epoch=e, val_er=best_val)
    marks.append((time.perf_counter(), time.process_time()))
train_s, train_cpu_s = time.perf_counter() - t0, time.process_time() - c0

best = LTBinaryClassifier.load_model(save_dir)
test_er = float(evaluate(testloader, best, {"ER": eval_criterion})["ER"])
last_test_er = float(evaluate(testloader, model, {"ER": eval_criterion})["ER"])
res = {"impl": "ref", "split_file": a.split_file, "depth": a.depth, "reg": a.reg, "lr": a.lr, "batch": a.batch,
       "epochs": a.epochs, "seed": a.seed, "n_train": int(X_train.shape[0]), "n_val": int(X_valid.shape[0]),
       "n_test": int(X_test.shape[0]), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
       "n_params": int(sum(p.numel() for p in model.parameters())),
       "train_s": train_s, "train_cpu_s": train_cpu_s, **epoch_times(marks),
       "best_epoch": best_e + 1, "val_error_rate": float(best_val),
       "test_accuracy": 1.0 - test_er, "test_accuracy_last_epoch": 1.0 - last_test_er,
       "curve": {"val_error_rate": val_curve}}
json.dump(res, open(a.out, "w"), indent=1)
print(json.dumps({k: res[k] for k in ("impl", "epochs", "median_epoch_s", "median_epoch_cpu_s", "train_s", "best_epoch",
                                      "test_accuracy")}))
