"""Rules as code: a hard :class:`~models.ground.tree.Tree` as a plain Python function or a SQL expression.

Every function takes a Tree first and only reads it, so any family whose tree routes hard can be
exported: CART, TAO (and each tree of a TAO forest), LapTAO, the tree embedding, and the leaves
that latent trees' hard routing reaches.

* :func:`python_source` writes a module of plain Python (no imports beyond :mod:`math`) with
  ``predict(row)`` (``row`` maps feature names to numbers) and ``predict_by_position(values)``, or
  ``leaf(row)`` / ``leaf_by_position(values)`` for the leaf id.
* :func:`sql_expression` writes one SQL ``CASE`` expression over the features as columns
  (``SELECT <expression> AS prediction FROM t``); :func:`sql_query` a whole ``SELECT`` with a
  header comment, one column per output, after the row key column when one is named (``key="id"``)
  so that the predictions join back onto the table. Each feature is read from the column of its
  name, except where a database would take two names for one column (``A`` and ``a``, ``Ä`` and
  ``ä``, ``x`` and ``X ``): :func:`sql_columns` renames the later ones (``a_2``) and the query's
  header says so (:func:`sql_rename_note`).

What the code returns: the class name (as text) for classification, the arg max of the leaf's
scores with ties to the first class as :func:`numpy.argmax`; the value for one output; a tuple of
values (one SQL column each) for several outputs, such as an embedding's two coordinates; the leaf
id with ``output="leaf"``.

Conventions, as in :class:`~models.ground.tree.Tree`:

* A split goes right iff ``weight @ x + bias > 0`` (0 goes left). A split on one feature is
  written as the threshold with exactly the same effect in float64 (``x <= t`` for the left
  branch), found by stepping through the neighbouring floats; an oblique split as its linear
  expression, the terms summed in feature order and the bias last.
* A missing value (None or NaN in Python, NULL in SQL) in a feature that a split uses sends the row
  the way ``missing_right`` says, whichever other features of the split are present (as
  :meth:`Tree.paths` does). A linear leaf adds ``leaf_weight @ x``: its output is NaN (NULL) when a
  feature with a nonzero leaf weight is missing, and a classification leaf then names no class
  (None / NULL). With ``fill_values`` (the app's preprocessing imputes the training-split medians)
  a missing value is replaced first and nothing is routed as missing.
* Numbers are written exactly: Python literals by :func:`repr`, SQL literals with 17 significant
  digits; both read back as the same float64. The generated code thus repeats the Tree's float64
  arithmetic, and agrees with treeviz's own routing and outputs except for rows within rounding
  error of a split (numpy may sum the terms of an oblique split in another order or with fused
  multiply-adds) and the last bits of linear outputs.

Units: the code reads the features in the units of the Tree it is given. For raw rows in the data's
own units pass ``tree.in_input_units(*prepared.affine_scaling())``
(``RunView.rules_tree(original_units=True)``), and ``fill_values`` in the same units.

Refused with a :class:`~models.ground.errors.TreevizError` sentence: soft trees (Skinny Trees: every
leaf contributes to a prediction) and, for ``output="prediction"``, trees whose model does not
predict from its leaves (``meta["prediction"] != "leaf_value"``: latent trees predict from a
learned head on the inputs and the path); their leaf ids can still be exported.
"""

from treeviz.readers.codegen.plan import OUTPUTS, UNITS
from treeviz.readers.codegen.to_python import python_source
from treeviz.readers.codegen.to_sql import sql_columns, sql_expression, sql_query, sql_rename_note

__all__ = ["OUTPUTS", "UNITS", "python_source", "sql_columns", "sql_expression", "sql_query", "sql_rename_note"]
