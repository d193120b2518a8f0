"""The tree embedding's data-driven defaults: the tree's depth from the rows (and the classes, when
the data has them) and its ℓ1 penalty from the rows. Plain arithmetic, so the family's declaration
and its cost model can use it without loading the estimator.

The thesis (Zharmagambetov 2022, ch. 4) states no depth for its tree embeddings; its figures use
few leaves (about 9 on 20 newsgroups' 6 classes, 2-3 levels on breast cancer). The rule here:

* **rows**: about √N leaves, ``Δ_N = round(½ log2 N)`` (N = 455 gives 4, 1 258 gives 5, 5 000
  gives 6). A linear leaf is a Lasso on all the features, so it needs rows; √N keeps a leaf's
  average share growing with the data.
* **classes**: two linear pieces per class, ``Δ_K = ⌈log2 K⌉ + 1`` (2 classes give 2, 6 give 4, as
  the thesis's 20 newsgroups tree; 10 give 5), never more than the rows allow: ``min(Δ_K, Δ_N)``.
  A class's cluster in the map is bent, and one linear leaf per class folded neighbouring classes
  onto each other.
* both between :data:`AUTO_DEPTH_MIN` and :data:`AUTO_DEPTH_MAX`.

The classes only choose the depth; the embedding never sees them.

The penalty: λ is in sum form (the squared error is summed over the points), so a λ that suits
1 000 points is 10 times too weak for 10 000. ``l1_penalty=None`` gives ``0.08 · N``. Measured on
the direct fit to the free t-SNE embedding (standardised features, the app's 70 % training split,
10-NN accuracy of the mapped test points): digits (N = 1 258) at depth 5 gave 0.59 / 0.67 / 0.86 /
0.92 / 0.89 / 0.87 for λ = 0.1 / 3 / 30 / 100 / 300 / 1000; breast cancer (N = 398) at depth 2
0.90 / 0.90 / 0.93 / 0.92 for λ = 0.1 / 3 / 30 / 100 and at depth 4 0.88 / 0.90 / 0.95 / 0.93; wine
(N = 124) at depth 3 0.86 / 0.86 / 0.89 for λ = 0.1 / 3 / 10. The old fixed default λ = 0.1 let a
deeper tree interpolate the free embedding and map new points badly (digits at depth 5: 0.59).
"""

from __future__ import annotations

import math

#: The shallowest and deepest trees the automatic depth gives.
AUTO_DEPTH_MIN, AUTO_DEPTH_MAX = 2, 8
#: ``l1_penalty=None`` gives this times the number of training points.
AUTO_L1_PER_POINT = 0.08


def auto_depth(n_rows: int, n_classes: int | None = None) -> int:
    """The depth ``depth=None`` gives a tree embedding of ``n_rows`` training points with
    ``n_classes`` classes (None or fewer than 2: no classes), as the module docstring says."""
    by_rows = round(0.5 * math.log2(max(1, int(n_rows))))
    depth = by_rows
    if n_classes is not None and int(n_classes) >= 2:
        depth = min(math.ceil(math.log2(int(n_classes))) + 1, by_rows)
    return int(min(AUTO_DEPTH_MAX, max(AUTO_DEPTH_MIN, depth)))


def auto_l1_penalty(n_rows: int) -> float:
    """The ℓ1 penalty ``l1_penalty=None`` gives a tree embedding of ``n_rows`` training points."""
    return AUTO_L1_PER_POINT * max(1, int(n_rows))
