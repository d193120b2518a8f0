"""Measures the figure tests share (tests/treeviz/test_figure_defects.py and its browser twin,
tests/e2e/test_figure_defects.py): how far a colour is from every class colour, for normal vision
and the three colour-vision deficiencies, and a node's place in tree order."""

from __future__ import annotations

import numpy as np

from treeviz.plots import style

#: Machado, Oliveira & Fernandes (2009) simulation matrices at full severity, on linear RGB.
CVD = {
    "normal": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
#: The least CIE76 colour difference the highlight keeps to every class colour, in every vision
#: (about 2.3 is just noticeable; the old highlight, #FFB000, was 6.7 from class 1's orange).
MIN_DELTA_E = 25.0


def rgb_of(color: str) -> tuple[int, int, int]:
    """'#RRGGBB' or 'rgb(r, g, b)' as three integers."""
    c = color.strip()
    if c.startswith("#"):
        return tuple(int(c[i:i + 2], 16) for i in (1, 3, 5))
    return tuple(int(float(v)) for v in c[c.index("(") + 1:c.index(")")].split(",")[:3])


def _lab(linear: np.ndarray) -> np.ndarray:
    to_xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = to_xyz @ np.clip(linear, 0, 1)
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: str, b: str, vision: str = "normal") -> float:
    """CIE76 difference of two colours as someone with ``vision`` sees them."""
    def lab(color: str) -> np.ndarray:
        c = np.asarray(rgb_of(color), dtype=float) / 255
        linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        return _lab(CVD[vision] @ linear)
    return float(np.linalg.norm(lab(a) - lab(b)))


def nearest_class_difference(color: str) -> float:
    """The smallest difference between ``color`` and any class colour, over every vision."""
    return min(delta_e(color, c, v) for c in style.CLASS_PALETTE for v in CVD)


def branch_code(tree, v: int) -> tuple[int, ...]:
    """The turns from the root to ``v`` (0 left, 1 right): on one level, tree order is their order."""
    turns = []
    while tree.parent[v] >= 0:
        p = int(tree.parent[v])
        turns.append(int(tree.children_right[p] == v))
        v = p
    return tuple(reversed(turns))
