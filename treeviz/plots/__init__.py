"""Plotly figure builders. Each reads a :class:`models.ground.tree.Tree` (plus numpy data) and returns a
``plotly.graph_objects.Figure``; none imports torch or Streamlit.

==========================  ===================================================================
module                      figures
==========================  ===================================================================
:mod:`.tree_diagram`        :func:`tree_figure` (node-link diagram; :class:`TreeFigureOptions`),
                            :func:`plot_tree` (the same from a fitted model), :func:`node_from_selection`
:mod:`.weights`             :func:`top_weights_figure`, :func:`weights_heatmap`,
                            :func:`weight_image_figure`, :func:`weight_images_grid`
:mod:`.routing`             :func:`class_flow_figure` (Sankey), :func:`class_split_bars`
:mod:`.curves`              :func:`training_curves`
:mod:`.compare`             :func:`pareto_figure` (score against size across runs),
                            :func:`add_reference_line` (a black-box ceiling across it)
:mod:`.row_images`          :func:`row_images_figure` (the rows reaching a node as thumbnails)
:mod:`.sweep`               :func:`sweep_figure` (tree size and scores along a λ path),
                            :func:`lambda_path_figure` (error, nonzeros, nodes, FLOPs vs λ)
:mod:`.forest`              :func:`forest_summary_figure` (size per tree, vote agreement)
:mod:`.split_hist`          :func:`split_histogram` (a decision node's score by class, its threshold drawn)
:mod:`.regions`             :func:`regions_figure` (decision regions over two features),
                            :func:`sample_image_figure` (one row of an image table as its picture)
:mod:`.dendrogram`          :func:`dendrogram_figure` (the hierarchy over the leaves)
:mod:`.embedding`           :func:`embedding_map` (2-D map with leaf regions), :func:`embedding_panels`,
                            :func:`embedding_objective_curve`, :func:`label_fraction_figure`,
                            :func:`labelled_points_figure`, :func:`leaf_class_bars`
                            (embeddings, semi-supervised learning)
:mod:`.features`            :func:`feature_trajectory_figure`, :func:`feature_ranking_figure`,
                            :func:`feature_mask_figure`, :func:`budget_trials_figure`,
                            :func:`selection_comparison_figure` (feature selection)
:mod:`.bandit`              :func:`bandit_score_figure`, :func:`bandit_reward_figure`,
                            :func:`bandit_regret_figure`, :func:`bandit_curve_figure` (curves against
                            loss queries with 95% bands: learning from bandit feedback)
:mod:`.data`                :func:`class_balance_figure`, :func:`target_histogram`,
                            :func:`sample_images_figure` (before any model)
:mod:`.style`               palette, colour scales and shared layout helpers
==========================  ===================================================================
"""

from treeviz.plots.bandit import (
    bandit_curve_figure,
    bandit_regret_figure,
    bandit_reward_figure,
    bandit_score_figure,
)
from treeviz.plots.compare import pareto_figure
from treeviz.plots.curves import training_curves
from treeviz.plots.data import class_balance_figure, sample_images_figure, target_histogram
from treeviz.plots.dendrogram import dendrogram_figure
from treeviz.plots.embedding import (
    embedding_map,
    embedding_objective_curve,
    embedding_panels,
    label_fraction_figure,
    labelled_points_figure,
    leaf_class_bars,
)
from treeviz.plots.features import (
    budget_trials_figure,
    feature_mask_figure,
    feature_ranking_figure,
    feature_trajectory_figure,
    selection_comparison_figure,
)
from treeviz.plots.forest import forest_summary_figure
from treeviz.plots.regions import regions_figure, sample_image_figure
from treeviz.plots.routing import class_flow_figure, class_split_bars
from treeviz.plots.split_hist import split_histogram
from treeviz.plots.style import CLASS_PALETTE, DIVERGING, class_color
from treeviz.plots.sweep import PATH_FIGURES, lambda_path_figure, sweep_figure
from treeviz.plots.tree_diagram import NODE_TRACE_NAME, TreeFigureOptions, node_from_selection, plot_tree, tree_figure
from treeviz.plots.weights import (
    top_weights_figure,
    weight_image_figure,
    weight_images_grid,
    weights_heatmap,
)

__all__ = [
    "CLASS_PALETTE",
    "DIVERGING",
    "NODE_TRACE_NAME",
    "PATH_FIGURES",
    "TreeFigureOptions",
    "bandit_curve_figure",
    "bandit_regret_figure",
    "bandit_reward_figure",
    "bandit_score_figure",
    "budget_trials_figure",
    "class_balance_figure",
    "class_color",
    "class_flow_figure",
    "class_split_bars",
    "dendrogram_figure",
    "embedding_map",
    "embedding_objective_curve",
    "embedding_panels",
    "feature_mask_figure",
    "feature_ranking_figure",
    "feature_trajectory_figure",
    "forest_summary_figure",
    "label_fraction_figure",
    "labelled_points_figure",
    "lambda_path_figure",
    "leaf_class_bars",
    "node_from_selection",
    "pareto_figure",
    "plot_tree",
    "regions_figure",
    "sample_image_figure",
    "sample_images_figure",
    "selection_comparison_figure",
    "split_histogram",
    "sweep_figure",
    "target_histogram",
    "top_weights_figure",
    "training_curves",
    "tree_figure",
    "weight_image_figure",
    "weight_images_grid",
    "weights_heatmap",
]
