"""microsoft/DGT's own training code (DGTPredictor.train) for one configuration, on the CPU with one
thread, timing every epoch.

The configuration is built by the reference's own argument parser (xparser.Opts) and
hyper-parameter expander (xhp.HpUtils), as its main.py does, with the flags of the authors' run.sh
(ScaleBinarizer1 / SoftSparser1, RMSprop, CosineWarm, l1 on the predicate layers, grad clip 0.01,
best validation model kept (--ulm f)), but a single grid point (one l1 value, the "default" RMSprop
keywords: eps 1e-5, momentum 0), so that one model is trained.

Timing: DGTPredictor.train calls self._set_sigslope_and_threshold(0) before its loop and again at
the top of epoch 0, then (i + 1) at the very end of epoch i (after the training steps, the
every-10-epochs progress log, the validation loss and the best-model torch.save). The driver wraps
that method on the instance (the reference's code is unchanged) and times consecutive calls: one
whole epoch of the reference's loop.

usage (the DGT environment's python, from $REF_HOME/dgt/src, where the reference reads relative paths):
ref_dgt.py --dataset abalone --split S --height 6 --over_param '[[16,16]]' --epochs N --out F.json
"""
import os
import sys
import tempfile
import time

import shared

shared.one_thread()

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.getcwd())
from models.xdgt import DGTPredictor  # noqa: E402
from xcommon import Logger, Utils  # noqa: E402
from xdata import DataLoader  # noqa: E402
from xhp import HpUtils  # noqa: E402
from xparser import Opts  # noqa: E402


def reference_flags(a) -> list[str]:
    """The reference's command line for one grid point."""
    return ["main.py", "--dataset", a.dataset, "--height", str(a.height),
            "--sigslope_routine", "constant", "--sigquant", "ScaleBinarizer1",
            "--softslope_routine", "constant", "--softquant", "SoftSparser1",
            "--optimizer", "RMS", "--optimizer_kw", "default",
            "--lr1", "1e-2", "--lr_sched", "CosineWarm", "--batch_sizes", str(a.batch),
            "--reglist", repr(a.l1), "--use_l1_reg", "t", "--use_l2_reg", "f", "--use_no_reg", "f",
            "--grad_clip", "0.01", "--pred_reg", "t", "--ulm", "f",
            "--over_param", a.over_param, "--ndshuffles", "1", "--epochs", str(a.epochs),
            "--proc_per_gpu", "1", "--num_gpu", "-1", "--compute_mstd", "f", "--seed", str(a.seed)]


def main() -> None:
    ap = shared.dgt_options()
    ap.add_argument("--dataset", default="abalone")
    ap.add_argument("--split", type=int, default=0, help="0-based: the reference's shuffle_seed is split + 1")
    ap.add_argument("--over_param", default="[[16,16]]")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)

    sys.argv = reference_flags(a)
    args = Opts()
    is_reg = DataLoader.stats[a.dataset]["n_classes"] <= 0
    train, validn, test = DataLoader.get_dataset(
        dataset_name=a.dataset, normalize_x_kwargs={"category": "zscore"},
        normalize_y_kwargs={"category": "minmax", "interval": (0, 1)} if is_reg else None, shuffle_seed=a.split + 1)
    args.train_size = train._x.shape[0]
    mss = HpUtils.get_model_search_set(DGTPredictor, a.dataset, args)
    assert len(mss.hps) == 1, len(mss.hps)
    train, validn, test = train.to_tensor(), validn.to_tensor(), test.to_tensor()

    hp = mss.hps[0].copy()
    seed = hp.pop("seed")
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = DGTPredictor(**hp, device_ids=None)
    model._use_lforb = mss.use_lforb
    scratch = tempfile.mkdtemp(prefix="refdgt_", dir=os.path.join(os.environ["REF_HOME"], "tmp"))
    for sub in ("logs", "plots"):
        os.makedirs(f"{scratch}/{sub}")
    model.log_f = Logger(f"{scratch}/logs/progress.log").log
    model.logs_dir, model.plots_dir = f"{scratch}/logs", f"{scratch}/plots"
    model.acc_func, model.acc_func_type = Utils.get_acc_def(DataLoader.is_classification(a.dataset),
                                                            hp.get("criterion"))

    marks = []  # (epoch argument, wall, cpu) at every call
    original = model._set_sigslope_and_threshold

    def timed(epoch):
        marks.append((epoch, time.perf_counter(), time.process_time()))
        return original(epoch)

    model._set_sigslope_and_threshold = timed
    start, start_cpu = time.perf_counter(), time.process_time()
    model.train(train, validn, test)
    train_s, train_cpu_s = time.perf_counter() - start, time.process_time() - start_cpu
    assert [m[0] for m in marks] == [0, 0, *range(1, a.epochs + 1)], [m[0] for m in marks]

    result = {"impl": "ref", "dataset": a.dataset, "split": a.split, "height": a.height, "over_param": a.over_param,
              "epochs": a.epochs, "batch": a.batch, "l1": a.l1, "seed": seed, "n_train": int(train._x.shape[0]),
              "n_val": int(validn._x.shape[0]), "n_test": int(test._x.shape[0]),
              "n_params": int(sum(p.numel() for p in model._model.parameters())),
              "torch_threads": torch.get_num_threads(), "torch": torch.__version__, "train_s": train_s,
              "train_cpu_s": train_cpu_s, **shared.epoch_times([(w, c) for _, w, c in marks[1:]])}
    # what the reference's process_model() reports: acc() denormalised (RMSE in the target's units)
    key = "test_rmse" if is_reg else "test_accuracy"
    result[key] = float(model.acc(test, denormalize=True))
    shared.save(result, a.out, ("train_s", "n_params", key))


if __name__ == "__main__":
    main()
