"""CART: scikit-learn's greedy decision tree, the baseline every family is compared with."""
