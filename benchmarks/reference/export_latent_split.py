"""Write the breast_cancer split of the latent_train benchmark (treeviz's prepare: standard
scaling, 20 % test, 10 % validation, stratified, PrepConfig seed) to an .npz that both
ref_latent.py and ours_latent.py read, so the two sides train, stop and test on the same rows.

usage (system python, PYTHONPATH=<the treeviz checkout>): export_latent_split.py SEED OUT.npz
"""
import sys

import numpy as np

from treeviz.services.data import PrepConfig, load_dataset, prepare

seed, out = int(sys.argv[1]), sys.argv[2]
p = prepare(load_dataset("breast_cancer"), PrepConfig(scaling="standard", test_size=0.2, val_size=0.1, seed=seed))
classes = np.unique(p.labels("train"))  # labels as 0 / 1 in sorted order (benign, malignant)
code = {part: np.searchsorted(classes, p.labels(part)).astype(np.int64) for part in ("train", "val", "test")}
np.savez(out, x_train=p.X_train.astype(np.float32), y_train=code["train"], x_val=p.X_val.astype(np.float32),
         y_val=code["val"], x_test=p.X_test.astype(np.float32), y_test=code["test"], classes=classes.astype(str))
print("breast_cancer seed", seed, p.X_train.shape, p.X_val.shape, p.X_test.shape)
