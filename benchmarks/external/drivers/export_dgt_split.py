"""Export the train / validation / test rows that microsoft/DGT's own DataLoader gives for a data set
and split (its shuffle seed is split + 1), before its normalisation, so that treeviz trains on the
same rows.

usage (the DGT environment's python, from $REF_HOME/dgt/src): export_dgt_split.py NAME SPLIT OUT.npz
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.getcwd())  # the reference's modules, read with paths relative to src/
from xdata import DataLoader


def main() -> None:
    name, split, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    tr, va, te = DataLoader.get_dataset(dataset_name=name, normalize_x_kwargs=None, normalize_y_kwargs=None,
                                        shuffle_seed=split + 1)
    np.savez(out, x_train=tr._x, y_train=tr._y, x_val=va._x, y_val=va._y, x_test=te._x, y_test=te._y)
    print(name, split, tr._x.shape, va._x.shape, te._x.shape)


if __name__ == "__main__":
    main()
