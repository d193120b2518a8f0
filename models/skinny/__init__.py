"""Skinny Trees: soft oblique tree ensembles with group-ℓ0 feature selection
(Ibrahim, Behdin & Mazumder, AISTATS 2024)."""
