"""Free-embedding objectives (t-SNE, the elastic embedding) and the spectral-direction optimiser
of the coordinate step (the Z-step) of tree embeddings.

Notation: N points, embedding Z of shape (N, L) (L = 2 usually), sums over ordered pairs (n, m)
with n ≠ m (each unordered pair counts twice), ``Lap(A) = diag(A·1) − A``.

* **Elastic embedding (EE)** (:mod:`.elastic`): ``E(Z) = Σ w⁺_nm ||z_n − z_m||² + λ Σ w⁻_nm
  exp(−||z_n − z_m||²)``.
* **t-SNE** (:mod:`.tsne`): ``E(Z) = Σ p_nm log(p_nm / q_nm)`` with the joint P and the Student-t Q.
* **Penalty** (:mod:`.penalty`): what the alternation with the tree adds,
  ``μ ||Z − T||² − 2 ⟨β, Z − T⟩``.

The objectives share their API (:mod:`.base`) and are evaluated on one of three paths
(:mod:`.paths`): every pair at once ("dense", the reference), all pairs exactly in blocks of rows
("chunked"), or the repulsion on a lattice by FFT ("fft", above 5000 points). :mod:`.spectral`
minimises them along spectral directions; :mod:`.free` builds the objective of a data set and
its free embedding.
"""

from models.embedding.objectives.base import EmbeddingObjective
from models.embedding.objectives.elastic import REPULSIONS, WEIGHT_NORMS, ElasticEmbedding
from models.embedding.objectives.free import (
    INITS,
    METHOD_NAMES,
    FreeEmbedding,
    embedding_objective,
    free_embedding,
    initial_embedding,
)
from models.embedding.objectives.paths import BLOCK_PAIRS, DENSE_MAX_POINTS, EXACT_MAX_POINTS, PATHS
from models.embedding.objectives.penalty import Penalty
from models.embedding.objectives.spectral import (
    EIGH_MAX_POINTS,
    METHODS,
    SPLU_MAX_POINTS,
    SpectralDirection,
    ZStepResult,
    armijo_backtracking,
)
from models.embedding.objectives.tsne import TSNE, student_t_q

__all__ = [
    "BLOCK_PAIRS",
    "DENSE_MAX_POINTS",
    "EIGH_MAX_POINTS",
    "EXACT_MAX_POINTS",
    "INITS",
    "METHODS",
    "METHOD_NAMES",
    "PATHS",
    "REPULSIONS",
    "SPLU_MAX_POINTS",
    "TSNE",
    "WEIGHT_NORMS",
    "ElasticEmbedding",
    "EmbeddingObjective",
    "FreeEmbedding",
    "Penalty",
    "SpectralDirection",
    "ZStepResult",
    "armijo_backtracking",
    "embedding_objective",
    "free_embedding",
    "initial_embedding",
    "student_t_q",
]
