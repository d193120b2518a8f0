"""Tidy tree layout: the drawing rules on hand-made and random trees."""

from __future__ import annotations

import numpy as np
import pytest

from models.ground.errors import TreevizError
from treeviz.readers.layout import layout_arrays, naive_layout_width, tidy_layout

# --------------------------------------------------------------------------- tree builders


def random_tree(n_splits: int, seed: int, deep: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Grow a random binary tree by splitting leaves; ``deep`` biases splits to the deepest leaf."""
    rng = np.random.default_rng(seed)
    left, right, depth, leaves = [-1], [-1], [0], [0]
    for _ in range(n_splits):
        if rng.random() < deep:
            i = int(np.argmax([depth[v] for v in leaves]))
        else:
            i = int(rng.integers(len(leaves)))
        v = leaves.pop(i)
        a = len(left)
        left += [-1, -1]
        right += [-1, -1]
        depth += [depth[v] + 1] * 2
        left[v], right[v] = a, a + 1
        leaves += [a, a + 1]
    return np.array(left), np.array(right)


def caterpillar(n_splits: int, zigzag: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A spine of decision nodes, each with one leaf child (spine goes right, or alternates)."""
    left, right = [-1], [-1]
    spine = 0
    for i in range(n_splits):
        a = len(left)
        left += [-1, -1]
        right += [-1, -1]
        left[spine], right[spine] = a, a + 1
        spine = a if (zigzag and i % 2) else a + 1
    return np.array(left), np.array(right)


def complete(depth: int) -> tuple[np.ndarray, np.ndarray]:
    n = 2 ** (depth + 1) - 1
    idx = np.arange(n)
    internal = idx < 2**depth - 1
    return np.where(internal, 2 * idx + 1, -1), np.where(internal, 2 * idx + 2, -1)


def mirror(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return right.copy(), left.copy()


def join(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A new root (node 0) with subtree ``a`` on the left and ``b`` on the right."""
    la, ra = a
    lb, rb = b
    na = la.size
    def sh_a(c):
        return np.where(c >= 0, c + 1, -1)
    def sh_b(c):
        return np.where(c >= 0, c + 1 + na, -1)
    left = np.concatenate([[1], sh_a(la), sh_b(lb)])
    right = np.concatenate([[1 + na], sh_a(ra), sh_b(rb)])
    return left, right


# --------------------------------------------------------------------------- property checker


def subtree(left: np.ndarray, right: np.ndarray, v: int, shown: dict) -> list[int]:
    out, stack = [], [v]
    while stack:
        u = stack.pop()
        if u in shown:
            out.append(u)
            if left[u] >= 0:
                stack += [int(left[u]), int(right[u])]
    return out


def check_tidy(left: np.ndarray, right: np.ndarray, pos: dict, sep: float = 1.0) -> None:
    tol = 1e-9 * max(1.0, max(abs(x) for x, _ in pos.values()))
    # parent centred over its two children, children one level down
    for v, (x, y) in pos.items():
        if left[v] >= 0 and left[v] in pos and right[v] in pos:
            xl, yl = pos[int(left[v])]
            xr, yr = pos[int(right[v])]
            assert abs(x - (xl + xr) / 2) <= tol
            assert yl == yr == y - 1
            assert xl < xr
    # no two nodes of a level closer than sep
    by_level: dict[float, list[float]] = {}
    for x, y in pos.values():
        by_level.setdefault(y, []).append(x)
    for xs in by_level.values():
        xs = np.sort(xs)
        if xs.size > 1:
            assert np.min(np.diff(xs)) >= sep - tol
    # sibling subtrees never overlap: on every shared level left subtree is left of right subtree
    for v in pos:
        if left[v] < 0 or left[v] not in pos or right[v] not in pos:
            continue
        ext: list[dict[float, list[float]]] = []
        for c in (int(left[v]), int(right[v])):
            levels: dict[float, list[float]] = {}
            for u in subtree(left, right, c, pos):
                x, y = pos[u]
                lo, hi = levels.get(y, [np.inf, -np.inf])
                levels[y] = [min(lo, x), max(hi, x)]
            ext.append(levels)
        for y in set(ext[0]) & set(ext[1]):
            assert ext[0][y][1] + sep <= ext[1][y][0] + tol


# --------------------------------------------------------------------------- hand-made trees


def test_single_node():
    assert tidy_layout((np.array([-1]), np.array([-1]))) == {0: (0.0, 0.0)}


def test_three_nodes_children_at_half_sep():
    pos = tidy_layout((np.array([1, -1, -1]), np.array([2, -1, -1])), sibling_sep=2.0)
    assert pos == {0: (0.0, 0.0), 1: (-1.0, -1.0), 2: (1.0, -1.0)}


def test_complete_tree_depth2_exact_positions():
    pos = tidy_layout(complete(2))
    assert [pos[v][0] for v in (3, 4, 5, 6)] == [-1.5, -0.5, 0.5, 1.5]
    assert [pos[v][0] for v in (1, 2)] == [-1.0, 1.0]
    assert all(pos[v][1] == -2 for v in (3, 4, 5, 6))


@pytest.mark.parametrize("depth", [1, 3, 6])
def test_complete_tree_is_tidy_and_centred(depth):
    left, right = complete(depth)
    pos = tidy_layout((left, right))
    check_tidy(left, right, pos)
    assert pos[0] == (0.0, 0.0)
    leaves = sorted(x for x, y in pos.values() if y == -depth)
    assert np.allclose(np.diff(leaves), 1.0)  # a complete tree packs its leaves at exactly sep


def test_inner_subtrees_are_pushed_apart_at_depth():
    # Left subtree grows a long right-going chain, right subtree a long left-going chain: they
    # only meet deep down, so the separation must come from the deep levels.
    a = caterpillar(6)  # spine to the right
    b = mirror(*caterpillar(6))  # spine to the left
    left, right = join(a, b)
    pos = tidy_layout((left, right))
    check_tidy(left, right, pos)


def test_caterpillar_is_much_narrower_than_naive():
    left, right = caterpillar(200)
    pos = tidy_layout((left, right))
    check_tidy(left, right, pos)
    xs = [x for x, _ in pos.values()]
    width = max(xs) - min(xs)
    assert width <= 0.55 * naive_layout_width((left, right))


def test_zigzag_caterpillar_has_bounded_width():
    left, right = caterpillar(300, zigzag=True)
    pos = tidy_layout((left, right))
    check_tidy(left, right, pos)
    xs = [x for x, _ in pos.values()]
    assert max(xs) - min(xs) <= 2.0
    assert naive_layout_width((left, right)) == 300


# --------------------------------------------------------------------------- random trees


@pytest.mark.parametrize("seed,deep", [(0, 0.0), (1, 0.0), (2, 0.5), (3, 0.9), (4, 0.3)])
def test_random_trees_are_tidy(seed, deep):
    left, right = random_tree(120, seed, deep)
    for sep in (1.0, 0.5):
        check_tidy(left, right, tidy_layout((left, right), sibling_sep=sep), sep)


@pytest.mark.parametrize("seed", range(5))
def test_mirrored_tree_gives_mirrored_layout(seed):
    left, right = random_tree(150, seed, deep=0.4)
    pos = tidy_layout((left, right))
    mpos = tidy_layout(mirror(left, right))
    for v, (x, y) in pos.items():
        assert mpos[v][1] == y
        assert mpos[v][0] == pytest.approx(-x, abs=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_symmetric_tree_has_symmetric_layout(seed):
    a = random_tree(60, seed, deep=0.3)
    left, right = join(a, mirror(*a))
    pos = tidy_layout((left, right))
    check_tidy(left, right, pos)
    na = a[0].size
    assert pos[0][0] == 0.0
    for u in range(na):  # node u of a is node 1+u; its mirror image is node 1+na+u
        (xl, yl), (xr, yr) = pos[1 + u], pos[1 + na + u]
        assert yl == yr
        assert xl == pytest.approx(-xr, abs=1e-9)


def test_same_subtree_drawn_the_same_everywhere():
    a = random_tree(40, 7, deep=0.3)
    left, right = join(a, a)
    pos = tidy_layout((left, right))
    na = a[0].size
    dx = pos[1 + na][0] - pos[1][0]
    for u in range(na):
        assert pos[1 + na + u][0] - pos[1 + u][0] == pytest.approx(dx)


# --------------------------------------------------------------------------- windows and options


def test_window_root_and_max_levels():
    left, right = random_tree(200, 11, deep=0.3)
    sub = int(left[left[0]])  # a grandchild
    assert left[sub] >= 0
    pos = tidy_layout((left, right), root=sub, max_levels=3)
    assert pos[sub] == (0.0, 0.0)
    assert min(yy for _, yy in pos.values()) >= -3
    stack, within = [(sub, 0)], set()  # the subtree's nodes at most 3 levels below it
    while stack:
        u, d = stack.pop()
        within.add(u)
        if left[u] >= 0 and d < 3:
            stack += [(int(left[u]), d + 1), (int(right[u]), d + 1)]
    assert set(pos) == within
    check_tidy(left, right, pos)
    # max_levels=0: the root alone
    assert tidy_layout((left, right), root=sub, max_levels=0) == {sub: (0.0, 0.0)}


def test_window_nodes_are_laid_out_as_leaves():
    left, right = complete(5)
    pos = tidy_layout((left, right), max_levels=2)
    assert sorted(x for x, y in pos.values() if y == -2) == [-1.5, -0.5, 0.5, 1.5]


def test_keep_leaves_out_subtrees_and_handles_single_children():
    left, right = complete(3)
    keep = np.ones(left.size, dtype=bool)
    keep[2] = False  # the whole right subtree of the root goes
    keep[3] = False  # node 1 keeps only its right child 4
    pos = tidy_layout((left, right), keep=keep)
    assert set(pos) == {0, 1, 4, 9, 10}
    assert pos[1][0] == pos[0][0] == pos[4][0]  # single children sit right under their parent
    check_tidy(left, right, pos)


def test_breadth_first_arrays_order():
    left, right = complete(2)
    nodes, _x, y = layout_arrays((left, right))
    assert nodes.tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert y.tolist() == [0, -1, -1, -2, -2, -2, -2]


def test_accepts_a_tree_object():
    from sklearn.datasets import load_iris

    from models.cart.estimators import CARTClassifier

    X, y = load_iris(return_X_y=True)
    tree = CARTClassifier(max_depth=4).fit(X, y).to_tree()
    pos = tidy_layout(tree)
    assert set(pos) == set(range(tree.n_nodes))
    assert all(pos[v][1] == -tree.node_depth[v] for v in pos)
    check_tidy(tree.children_left, tree.children_right, pos)


def test_bad_arguments():
    tree = complete(2)
    with pytest.raises(TreevizError):
        tidy_layout(tree, root=99)
    with pytest.raises(TreevizError):
        tidy_layout(tree, max_levels=-1)
    with pytest.raises(ValueError):
        tidy_layout(tree, sibling_sep=0)


def test_deep_and_large_trees_are_iterative_and_linear():
    # 40+ levels and thousands of nodes, and a 20,000-node caterpillar (no recursion limit).
    # Both finish at all (a recursive walk would hit the recursion limit; speed is measured in
    # benchmarks, not asserted here).
    left, right = random_tree(2500, 5, deep=0.2)
    nodes, _x, y = layout_arrays((left, right))
    assert nodes.size == left.size and -y.min() >= 40
    left2, right2 = caterpillar(10_000)
    nodes2, _, y2 = layout_arrays((left2, right2))
    assert nodes2.size == 20_001 and -y2.min() == 10_000
