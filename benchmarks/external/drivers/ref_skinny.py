"""mazumder-lab/SkinnyTrees' own model code, set up as its scripts/ToyExample.ipynb (cell 6) does:
models.create_model + sparse_soft_trees.TreeEnsembleWithGroupSparsity, ProximalGroupL0 with
annealing (lam = lambda0 / number of features, temperature), an L2 kernel regulariser
l2 / (trees * (2**depth - 1)), plain SGD at a constant learning rate, Keras fit with shuffle=True,
validation_data and the callbacks [TerminateOnNaN, SparsityHistory]. On the CPU with one TF
intra-op and one inter-op thread; verbose=0 (a progress bar only adds time to the reference).

Per-epoch time: between consecutive on_epoch_end calls of a callback placed last (an epoch holds
the training steps, the validation pass and the SparsityHistory counts); epoch 1 is timed from
on_train_begin and carries tf.function tracing.

usage (the Skinny environment's python): ref_skinny.py --epochs N --seed S [--data F.npz --trees ...] --out F.json
"""
import os
import sys
import time

import shared

shared.one_thread()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.metrics import accuracy_score, roc_auc_score  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

sys.path.insert(0, os.path.join(os.environ["REF_HOME"], "skinny"))
from src import models, sparse_soft_trees, utils  # noqa: E402


def notebook_data(data: str):
    """The notebook's breast_cancer split (its cell 3: seed 8, 20 % test, then 20 % validation,
    standard scaling), or the three parts of an .npz."""
    if data != "breast_cancer":
        d = np.load(data)
        return d["x_train"], d["y_train"], d["x_val"], d["y_val"], d["x_test"], d["y_test"]
    x, y = load_breast_cancer(return_X_y=True)
    x_tv, x_test, y_tv, y_test = train_test_split(x, y, test_size=0.2, stratify=y, random_state=8)
    x_train, x_val, y_train, y_val = train_test_split(x_tv, y_tv, test_size=0.2, stratify=y_tv, random_state=8)
    scaler = StandardScaler().fit(x_train)
    return scaler.transform(x_train), y_train, scaler.transform(x_val), y_val, scaler.transform(x_test), y_test


class EpochTimer(tf.keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.marks = [(time.perf_counter(), time.process_time())]

    def on_epoch_end(self, epoch, logs=None):
        self.marks.append((time.perf_counter(), time.process_time()))


def build(a, n_features: int, n_classes: int) -> tuple[tf.keras.Model, object]:
    """The notebook's model (cell 6) and its SparsityHistory callback."""
    schedule = utils.ConstantLearningRate(a.lr)
    regulariser = tf.keras.regularizers.L2(a.l2 / (a.trees * (2 ** a.depth - 1)))
    constraint = sparse_soft_trees.ProximalGroupL0(lr=schedule, lam=a.lam0 / n_features, temperature=a.temperature,
                                                   use_annealing=True, name="ProximalGroupL0")
    x = tf.keras.layers.Input(name="input", shape=(n_features,))
    submodel = models.create_model(x, a.trees, a.depth, (n_classes,), activation=tf.keras.activations.sigmoid,
                                   kernel_regularizer=regulariser, kernel_constraint=constraint)
    outputs = tf.keras.layers.Activation("linear")(submodel(submodel.input))
    model = tf.keras.Model(inputs=submodel.input, outputs=outputs)
    model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=tf.keras.optimizers.SGD(schedule), metrics=["accuracy"])
    return model, sparse_soft_trees.SparsityHistory()


def main() -> None:
    a = shared.skinny_options().parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.keras.utils.set_random_seed(a.seed)
    x_train, y_train, x_val, y_val, x_test, y_test = notebook_data(a.data)
    n_classes = int(max(y_train.max(), y_val.max(), y_test.max())) + 1
    model, sparsity = build(a, x_train.shape[1], n_classes)
    timer = EpochTimer()
    start, start_cpu = time.perf_counter(), time.process_time()
    model.fit(x=x_train, y=y_train, epochs=a.epochs, batch_size=a.batch, shuffle=True,
              callbacks=[tf.keras.callbacks.TerminateOnNaN(), sparsity, timer], validation_data=(x_val, y_val),
              verbose=0)
    fit_s, fit_cpu_s = time.perf_counter() - start, time.process_time() - start_cpu
    proba = tf.nn.softmax(model.predict(x_test, verbose=0), axis=1).numpy()
    auc = roc_auc_score(y_test, proba[:, 1]) if n_classes == 2 else roc_auc_score(y_test, proba, multi_class="ovo")
    result = {"impl": "ref", "data": a.data, "trees": a.trees, "depth": a.depth, "epochs": a.epochs, "seed": a.seed,
              "batch": a.batch, "n_train": int(x_train.shape[0]), "tf": tf.__version__,
              "intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
              "inter_op": tf.config.threading.get_inter_op_parallelism_threads(), "fit_s": fit_s,
              "fit_cpu_s": fit_cpu_s, **shared.epoch_times(timer.marks),
              "features_kept": int(sparsity.selected_features[-1]),
              "test_accuracy": float(accuracy_score(y_test, proba.argmax(1))), "test_auc": float(auc)}
    shared.save(result, a.out, ("fit_s", "features_kept", "test_accuracy", "test_auc"))


if __name__ == "__main__":
    main()
