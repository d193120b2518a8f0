"""A decision stump: the smallest family, kept in the tests to prove that a new family needs only its
own package (family.py + estimators.py), registered through TREEVIZ_FAMILIES."""
