"""LapTAO: semi-supervised sparse oblique trees with a graph-Laplacian penalty (Zharmagambetov, PhD thesis 2022)."""
