"""The offline embedding model: loads from registry packages, and behaves like MiniLM."""

from __future__ import annotations

import numpy as np


def test_vectors_are_unit_length_and_semantic(embedder):
    vectors = embedder.embed_batch(
        [
            "optimizer.zero_grad() clears the gradients accumulated by the previous backward pass",
            "before each step you reset the stored grads to zero so they do not add up",
            "TensorFlow Serving exposes SavedModels over gRPC and REST",
        ]
    )
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar - unrelated > 0.3


def test_batches_match_single_calls(embedder):
    texts = [f"sentence number {i} about tensors" for i in range(70)]  # crosses a batch boundary
    batch = embedder.embed_batch(texts)
    np.testing.assert_allclose(batch[65], embedder.embed(texts[65]), atol=1e-4)
    assert embedder.embed_batch([]).shape == (0, 384)
