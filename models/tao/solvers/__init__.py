"""Node solvers of TAO: the weighted binary problem of one decision node.

Fixing every node but one decision node turns the tree objective into a weighted binary problem
over the node's care points: label ``y_n = +1`` (the right child is the better one) or ``-1``
(left), weight ``v_n > 0``. An oblique node fits the convex surrogate, in **sum form** (λ is on an
absolute scale; it is *not* divided by the number of points)::

    min_{w, b}  Σ_n v_n · log(1 + exp(−y_n (w·x_n + b)))  +  λ ‖w‖₁          (b is NOT penalised)

and an axis-aligned node minimises the weighted 0/1 loss exactly by enumeration.

Routing follows the project's one rule: a node sends ``x`` RIGHT iff ``w·x + b > 0`` (strictly),
left otherwise. (The thesis writes ``≥``; the two agree on every training point for the
thresholds produced here, see :func:`models.tao.solvers.axis.best_axis_split`.)

Modules, one back-end each:

* :mod:`.objectives` — input checks shared by the back-ends, the ℓ1-logistic objective and the
  weighted 0/1 loss;
* :mod:`.liblinear` — scikit-learn's liblinear, one node per call, as in the thesis (its bias
  carries a small penalty ``λ|b|/intercept_scaling``);
* :mod:`.fista` — our batched proximal-gradient solver for the nodes of one depth level at once,
  on CPU or GPU, with the bias exactly unpenalised;
* :mod:`.axis` — exact axis-aligned splits.

Degenerate care sets never reach a solver from the training loop: one class only gives
``w = 0, b = ±1`` toward that class; no care point gives ``w = 0``. Called directly, the
back-ends answer the one-class case the same way without iterating. Everything is float64 unless
the torch solver is asked for another dtype.
"""
