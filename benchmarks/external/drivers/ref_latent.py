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
  benchmarks.external.data), so that both sides see the same rows; the script's data sets are not
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

usage (the latent environment's python, from $REF_HOME; --src is the checkout with the compiled src/qp_fast):
ref_latent.py --split_file F.npz --epochs N --out F.json
"""
import os
import sys
import tempfile
import time

import shared

shared.one_thread()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.nn import BCELoss  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

SOURCE = os.path.join(os.environ.get("REF_HOME", "."), "latent")  # the checkout with the compiled src/qp_fast
sys.path.insert(0, SOURCE)
from qhoptim.pyt import QHAdam  # noqa: E402
from src.datasets import TorchDataset  # noqa: E402
from src.LT_models import LTBinaryClassifier  # noqa: E402
from src.optimization import evaluate, train_stochastic  # noqa: E402
from src.utils import deterministic  # noqa: E402


def loaders(split_file: str, batch: int) -> tuple[DataLoader, DataLoader, DataLoader]:
    """The script's loaders of the three parts: its TorchDataset, shuffled training batches."""
    d = np.load(split_file)
    parts = [(d[f"x_{p}"].astype(np.float32), d[f"y_{p}"].astype(np.int64)) for p in ("train", "val", "test")]
    return (DataLoader(TorchDataset(*parts[0]), batch_size=batch, num_workers=0, shuffle=True),
            DataLoader(TorchDataset(*parts[1]), batch_size=batch * 2, num_workers=0, shuffle=False),
            DataLoader(TorchDataset(*parts[2]), batch_size=batch * 2, num_workers=0, shuffle=False))


def main() -> None:
    a = shared.latent_options(seed=1225).parse_args()
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    deterministic(a.seed)
    train, val, test = loaders(a.split_file, a.batch)
    model = LTBinaryClassifier(a.depth, train.dataset.data[0].shape[1], reg=a.reg)
    optimizer = QHAdam(model.parameters(), lr=a.lr, nus=(0.7, 1.0), betas=(0.995, 0.998))
    loss = BCELoss(reduction="sum")

    def criterion(x, y):
        return loss(x.float(), y.float())

    def error_rate(x, y):
        return (x != y).sum()

    save_dir = tempfile.mkdtemp(prefix="reflatent_", dir=os.path.join(os.environ.get("REF_HOME", "."), "tmp"))
    state = {"batch-size": a.batch, "loss-function": "BCE", "learning-rate": a.lr, "seed": a.seed,
             "dataset": "breast_cancer", "reg": a.reg}
    best_val, best_epoch = float("inf"), -1
    marks = [(time.perf_counter(), time.process_time())]
    for e in range(a.epochs):
        train_stochastic(train, model, optimizer, criterion, epoch=e, monitor=None, prog_bar=False)
        val_er = evaluate(val, model, {"ER": error_rate}, epoch=e, monitor=None)["ER"]
        if val_er < best_val:
            best_val, best_epoch = val_er, e
            LTBinaryClassifier.save_model(model, optimizer, state, save_dir, epoch=e, val_er=best_val)
        marks.append((time.perf_counter(), time.process_time()))
    best = LTBinaryClassifier.load_model(save_dir)
    test_er = float(evaluate(test, best, {"ER": error_rate})["ER"])
    result = {"impl": "ref", "split_file": a.split_file, "depth": a.depth, "reg": a.reg, "lr": a.lr, "batch": a.batch,
              "epochs": a.epochs, "seed": a.seed, "n_train": len(train.dataset), "torch": torch.__version__,
              "torch_threads": torch.get_num_threads(), "n_params": int(sum(p.numel() for p in model.parameters())),
              "train_s": marks[-1][0] - marks[0][0], "train_cpu_s": marks[-1][1] - marks[0][1],
              **shared.epoch_times(marks), "best_epoch": best_epoch + 1, "val_error_rate": float(best_val),
              "test_accuracy": 1.0 - test_er}
    shared.save(result, a.out, ("train_s", "best_epoch", "test_accuracy"))


if __name__ == "__main__":
    main()
