"""Tree embeddings: t-SNE and the elastic embedding with a decision tree as the out-of-sample mapping."""
