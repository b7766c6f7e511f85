"""The `interviewer` command's contracts. Those that need a process of its own (Ctrl-C, exit 130, locks between
processes, what is imported) run it as one, the way other tools call it; the rest run `app.cli.main` (the
`interviewer` entry point) in this process, which maps errors to exit codes as the installed script does and
spares each run the interpreter's and torch's start (~4 s on a loaded machine)."""
# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments

from __future__ import annotations

import gc
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.api_fixtures import scorer  # noqa: F401  (a fixture)
from tests.conftest import SEEDS
from tests.processes import Watch, read_until, run_bounded

CLI = Path(sys.executable).with_name("interviewer")


def run(*args: str, env: dict[str, str], stdin: str | None = None):
    return run_bounded([str(CLI), *args], text=True, env=env, input=stdin)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """`interviewer ARGS` in this process, with run()'s arguments and result: only the INTERVIEWER_ variables of
    env are set (the settings read afresh for each run), stdin is the text given, and stdout and stderr are caught."""
    from app import cli as entry_point
    from app.config import get_settings

    def interviewer_run(*args: str, env: dict[str, str], stdin: str | None = None):
        capsys.readouterr()  # what came before is not this run's
        with monkeypatch.context() as scoped:
            for key in list(os.environ):
                if key.startswith("INTERVIEWER_"):
                    scoped.delenv(key)
            for key, value in env.items():
                if key.startswith("INTERVIEWER_") or key == "COLUMNS":  # COLUMNS: the width a console is made with
                    scoped.setenv(key, value)
            if "COLUMNS" not in env:
                scoped.delenv("COLUMNS", raising=False)
            scoped.setattr("sys.argv", ["interviewer", *args])
            scoped.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO((stdin or "").encode())))
            get_settings.cache_clear()
            code: object = 0
            try:
                entry_point.main()
            except SystemExit as done:
                code = done.code or 0
            finally:
                get_settings.cache_clear()
        said = capsys.readouterr()
        assert isinstance(code, int), code  # main() exits with numbers only
        return subprocess.CompletedProcess(["interviewer", *args], code, said.out, said.err)

    return interviewer_run


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    data = tmp_path_factory.mktemp("cli-data")
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")}
    env["INTERVIEWER_DATA_DIR"] = str(data)
    first = run("ingest", env=env)
    assert first.returncode == 0, first.stderr
    assert "Embedded" in first.stderr
    return env


def test_reingest_says_nothing_changed(cli_env, cli):
    again = cli("ingest", env=cli_env)
    assert again.returncode == 0 and "Bank unchanged" in again.stderr


def test_ingest_stores_every_rubric_vector_so_scoring_embeds_none(cli_env):
    """The first `grade` run and server start on a machine then read ~7,900 vectors instead of embedding them."""
    from evaluators.base import GradingTask
    from evaluators.rubric import RubricScorer
    from knowledge.embeddings import MiniLMEmbedder
    from knowledge.loader import bank_index
    from knowledge.stored_vectors import StoredEmbedder

    class RefusingEmbedder(MiniLMEmbedder):  # the ingest's model fingerprint, but it will not embed
        def embed_batch(self, texts):
            assert not texts, f"not stored by ingest: {list(texts)[:3]}"
            return super().embed_batch(texts)

    refusing = RefusingEmbedder()
    stored = StoredEmbedder(refusing, Path(cli_env["INTERVIEWER_DATA_DIR"]) / "rubric-vectors.sqlite3")
    RubricScorer(refusing, rubric_embedder=stored).warm(
        [GradingTask.from_question(q, "") for q in bank_index().values()]
    )


def test_search_json_contract(cli_env, cli):
    out = cli("search", "--json", "--k", "3", "--topic", "training-loop", "why reset gradients", "what is sgd",
              env=cli_env)
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)
    assert [r["query"] for r in results] == ["why reset gradients", "what is sgd"]
    hit = results[0]["results"][0]
    assert set(hit) == {"id", "question", "topic", "difficulty", "score"}
    assert all(h["topic"] == "training-loop" for r in results for h in r["results"])


def test_search_prints_a_query_with_brackets_as_typed(cli_env, cli):
    """rich reads "[/y]" as a closing tag: a query (or any user text) holding one raised MarkupError."""
    out = cli("search", "--k", "1", "x[0] [/y] reset gradients", env=cli_env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "x[0] [/y] reset gradients"



@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts the descriptors /proc lists")
def test_commands_run_again_and_again_in_one_process_leave_no_descriptors_open(cli_env, cli, tmp_path):
    """A program that calls main() many times (these tests, a tool embedding the CLI) keeps its descriptors: each
    run's embedded Chroma client stayed in chromadb's process-wide cache, open (~13 descriptors a data folder: the
    database's connections, the index files, a runtime's event handles), until the process ended."""
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"question": "Why call optimizer.zero_grad() before backward?",
                                 "answer": "Gradients accumulate across backward calls."}) + "\n")

    def each_command_in_a_data_folder_of_its_own(round_: int) -> None:
        data = tmp_path / f"data-{round_}"
        shutil.copytree(cli_env["INTERVIEWER_DATA_DIR"], data)  # indexed already: no run embeds the bank again
        env = {**cli_env, "INTERVIEWER_DATA_DIR": str(data)}
        for args, stdin in [(("search", "--json", "why zero grad"), None),
                            (("grade", "--input", str(lines), "--output", str(tmp_path / "out.jsonl")), None),
                            (("interview", "--topics", "tensors", "--questions", "1", "--seed", "1"), ":quit\n"),
                            (("sessions", "--json"), None), (("keys", "list", "--json"), None), (("ingest",), None)]:
            out = cli(*args, env=env, stdin=stdin)
            assert out.returncode == 0, (args, out.stderr)

    def open_descriptors() -> int:
        gc.collect()  # what only waits for the collector is let go by then: not a leak
        return len(os.listdir("/proc/self/fd"))

    each_command_in_a_data_folder_of_its_own(0)  # what a process loads once (the model, its threads) is loaded
    before = open_descriptors()
    for round_ in range(1, 4):
        each_command_in_a_data_folder_of_its_own(round_)
    left = open_descriptors() - before
    assert left <= 3, f"{left} descriptors left open by 3 rounds of in-process commands"

@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "--json", "--topic", "quantum", "x"), "unknown topic 'quantum'"),
        (("search", "--json", "   "), "empty query"),
        (("grade", "--input", "/nonexistent.jsonl", "--output", "/tmp/x.jsonl"), "does not exist"),
        # said before any work, as one line (it was a traceback)
        (("grade", "--input", __file__, "--output", "/nonexistent-folder/x.jsonl"),
         "folder /nonexistent-folder does not exist"),
        (("grade", "--input", __file__, "--output", str(Path(__file__).parent)), "is a folder"),
    ],
)
def test_bad_input_is_one_line_without_traceback(cli_env, cli, args, message):
    out = cli(*args, env=cli_env)
    assert out.returncode != 0
    assert message in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [("keys", "list"), ("serve", "--port", "9")])
def test_a_database_that_cannot_be_opened_is_one_line_with_its_password_hidden(cli_env, cli, command):
    env = {**cli_env, "INTERVIEWER_DATABASE_URL": "postgresql+psycopg://me:s3cret@127.0.0.1:9/interviews"}
    out = (run if command[0] == "serve" else cli)(*command, env=env)  # `serve` a process: it might start serving
    assert out.returncode == 1 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "the database postgresql+psycopg://me:***@127.0.0.1:9/interviews cannot be opened" in out.stderr
    assert "s3cret" not in out.stderr


def test_unreadable_document_is_one_line_and_writes_nothing(cli_env, cli, tmp_path):
    bad = tmp_path / "scan.pdf"
    bad.write_bytes(b"%PDF-1.7\x00\xff\xfe binary")
    out_file = tmp_path / "drafts.yaml"
    out = cli("ingest", "--docs", str(bad), "--out", str(out_file), env=cli_env)
    assert out.returncode == 1 and "scan.pdf" in out.stderr and "Traceback" not in out.stderr
    assert not out_file.exists()


@pytest.mark.parametrize("args", [("search", "--json", "tensors"), ("serve", "--port", "9")])
def test_unreachable_chroma_server_is_one_clear_line(cli_env, cli, args):
    env = {**cli_env, "INTERVIEWER_CHROMA_HOST": "127.0.0.1", "INTERVIEWER_CHROMA_PORT": "9"}
    out = (run if args[0] == "serve" else cli)(*args, env=env)  # `serve` a process: it might start serving
    assert out.returncode == 1 and "Chroma server at 127.0.0.1:9 is not reachable" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_serve_with_a_broken_pack_is_one_line(cli_env, tmp_path):
    """`serve` loaded the bank only in the app's start-up: a pack with invalid YAML printed 81 lines (29 frames and
    "Application startup failed") where grade, search, ingest and interview print one."""
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "p.yaml").write_text("- id: a\n  question: [one, two\n", encoding="utf-8")
    out = run("serve", "--port", "9", env={**cli_env, "INTERVIEWER_BANK_DIR": str(pack)})
    assert out.returncode == 1 and "p.yaml: invalid YAML" in out.stderr, out.stderr[-600:]
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_bank_stats_json_contract(cli_env, cli):
    stats = json.loads(cli("bank", "stats", "--json", env=cli_env).stdout)
    assert set(stats) == {"questions", "code_tasks", "by_framework", "by_topic", "by_difficulty", "seed_refs"}
    assert len(stats["seed_refs"]) == 157 and stats["code_tasks"] >= 20


def test_grade_contract_continues_past_bad_lines(cli_env, cli, tmp_path):
    lines = [
        json.dumps({"question_id": "zero-grad", "question": "q", "answer": "It clears old gradients."}),
        "{not json",
        json.dumps({"question": "Why call optimizer.zero_grad() before backward?",
                    "answer": "Because gradients accumulate in .grad across backward calls."}),
        json.dumps({"question": "Why is the sky blue?", "reference_answer": "Air scatters blue light more.",
                    "answer": "Blue light scatters more in air.", "score": 4.5, "feedback": "Good."}),
        json.dumps({"question_id": "dropout", "question": "q", "answer": "x" * 1_000_000}),
        json.dumps({"question": "Why is the sky blue?", "answer": "Blue light scatters more in air.",
                    "reference_answer": ["The sea reflects it.", "Air scatters blue light more."]}),
        json.dumps({"question": "Why is the sky blue?", "reference_answer": 3, "answer": "Scattering."}),
        json.dumps({"question": "Why is the sky blue?", "reference_answer": ["Air scatters blue light.", " "],
                    "answer": "Scattering."}),
        json.dumps({"question": "Why is the sky blue?", "reference_answer": "Air scatters it.", "answer": 5}),
        json.dumps({"question_id": 7.0, "question": "Why?", "reference_answer": "Air scatters it.", "answer": "Air."}),
        json.dumps({"question_id": True, "answer": "It clears old gradients."}),
    ]
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    # A byte-order mark first, as Windows tools write one: the first line is still read.
    source.write_bytes("\ufeff".encode() + ("\n".join(lines) + "\n").encode() + b'{"answer": "\xff"}\n')
    out = cli("grade", "--input", str(source), "--output", str(target), env=cli_env)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(rows) == 12
    assert {"score", "points", "misconceptions", "feedback", "evaluator", "gate", "notes"} <= set(rows[0])
    assert "error" in rows[1] and rows[1]["line"] == 2
    assert rows[2]["matched_id"] == "zero-grad"
    assert 0 <= rows[3]["score"] <= 5 and rows[3]["given"] == {"score": 4.5, "feedback": "Good."}  # theirs kept
    assert "limit" in rows[4]["error"] and "UTF-8" in rows[11]["error"]
    assert rows[5]["score"] == rows[3]["score"]  # the best of its two references is row 3's own
    assert "must be a string or a list" in rows[6]["error"]
    assert rows[7]["error"].startswith("reference_answer[1] is empty")  # which alternative
    assert rows[8]["error"] == "field 'answer' must be a string, not int"  # given, but not as text
    # As the API reads an id: an integer is its digits, another kind of value is refused ('7.0' and 'True' were ids).
    assert "field 'question_id' must be a string or an integer" in rows[9]["error"] and "decimal" in rows[9]["error"]
    assert "not true or false" in rows[10]["error"]


def test_grade_at_the_standard_of_own_examples(cli_env, cli, tmp_path):
    question = {"question": "Why is the sky blue?", "reference_answer": "Air scatters blue light more than red."}
    source, examples, target = tmp_path / "in.jsonl", tmp_path / "graded.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps({**question, "answer": "Because of scattering."}) + "\n")
    examples.write_text("".join(json.dumps({**question, "answer": a, "grade": 2, "grade_max": 2}) + "\n"
                                for a in ("Scattering.", "Blue scatters more.")))
    out = cli("grade", "--input", str(source), "--output", str(target), "--examples", str(examples), env=cli_env)
    assert out.returncode == 0, out.stderr
    (row,) = [json.loads(line) for line in target.read_text().splitlines()]
    assert row["score"] > row["score_without_examples"] and row["examples_used"] == 2
    examples.write_text(json.dumps({**question, "answer": "x", "grade": 3, "grade_max": 2}) + "\n")
    out = cli("grade", "--input", str(source), "--output", str(target), "--examples", str(examples), env=cli_env)
    assert out.returncode == 1 and "example 1: field 'grade' must be a number from 0 to 2" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_grade_says_which_examples_set_no_standard(cli_env, cli, tmp_path):
    """As the API's `examples`: an example of no input line's question (a typo in its id) or a non-answer is
    named on a line of its own, with why; the run still succeeds."""
    question = {"question": "Why is the sky blue?", "reference_answer": "Air scatters blue light more than red."}
    source, examples, target = tmp_path / "in.jsonl", tmp_path / "graded.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps({**question, "question_id": "sky-1", "answer": "Because of scattering."}) + "\n")
    examples.write_text("".join(json.dumps({**question, **extra, "grade": 2, "grade_max": 2}) + "\n" for extra in (
        {"question_id": "sky-1", "answer": "Scattering."}, {"question_id": "sky-11", "answer": "Blue scatters more."},
        {"question_id": "sky-1", "answer": "No idea"})))
    out = cli("grade", "--input", str(source), "--output", str(target), "--examples", str(examples), env=cli_env)
    assert out.returncode == 0, out.stderr
    assert json.loads(target.read_text())["examples_used"] == 1
    said = [line for line in out.stderr.splitlines() if "set no standard" in line]
    assert said == [f"{examples}: example 2 set no standard: no graded answer has question_id 'sky-11'; one asks "
                    "the same question with question_id 'sky-1': give the example that id",
                    f"{examples}: example 3 set no standard: the answer is a non-answer, which scores 0 at any "
                    "standard, so it teaches none"]


def test_grade_names_an_examples_line_when_blank_lines_come_before_it(cli_env, cli, tmp_path):
    """Blank lines in --examples are skipped, and "example 2" was the file's line 3: the line is said too."""
    question = {"question": "Why is the sky blue?", "reference_answer": "Air scatters blue light more than red."}
    source, examples, target = tmp_path / "in.jsonl", tmp_path / "graded.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps({**question, "question_id": "sky-1", "answer": "Because of scattering."}) + "\n")
    first, typo = ({**question, "question_id": qid, "answer": "Scattering.", "grade": 2, "grade_max": 2}
                   for qid in ("sky-1", "sky-11"))
    examples.write_text(f"{json.dumps(first)}\n\n{json.dumps(typo)}\n")
    out = cli("grade", "--input", str(source), "--output", str(target), "--examples", str(examples), env=cli_env)
    assert out.returncode == 0, out.stderr
    assert f"{examples}: example 2 (line 3) set no standard: no graded answer has question_id 'sky-11'" in out.stderr
    examples.write_text(f"\n{json.dumps(first)}\n{json.dumps({**typo, 'grade': 3})}\n")
    out = cli("grade", "--input", str(source), "--output", str(target), "--examples", str(examples), env=cli_env)
    assert out.returncode == 1 and f"{examples}: example 2 (line 3): field 'grade' must be" in out.stderr, out.stderr


def test_grade_indexes_a_never_ingested_bank_to_match_free_questions(cli_env, cli, tmp_path):
    lines = [
        {"question": "Why call optimizer.zero_grad() before backward?",
         "answer": "Because gradients accumulate in .grad across backward calls."},
        {"question": "How to implement a custom autograd function?", "answer": "Subclass torch.autograd.Function."},
        {"question": "What is the reparameterization trick in a variational autoencoder?", "answer": "Sampling."},
    ]
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    fresh = {**cli_env, "INTERVIEWER_DATA_DIR": str(tmp_path / "never-ingested")}
    out = cli("grade", "--input", str(source), "--output", str(target), env=fresh)
    assert out.returncode == 0, out.stderr
    assert "not indexed yet: indexing its" in out.stderr and "Indexed the question bank" in out.stderr
    zero_grad, autograd, not_in_bank = [json.loads(line) for line in target.read_text().splitlines()]
    assert zero_grad["matched_id"] == "zero-grad" and 0 < zero_grad["match_confidence"] <= 1
    assert autograd["matched_id"] == "relu-autograd-function"
    assert "closely enough" in not_in_bank["error"] and "score" not in not_in_bank

    source.write_text(json.dumps(lines[0]) + "\n", encoding="utf-8")
    unreachable = {**fresh, "INTERVIEWER_CHROMA_HOST": "127.0.0.1", "INTERVIEWER_CHROMA_PORT": "9"}
    out = cli("grade", "--input", str(source), "--output", str(target), env=unreachable)
    assert out.returncode == 1 and "Traceback" not in out.stderr  # its only line failed
    assert "Question matching is off" in out.stderr and "127.0.0.1:9 is not reachable" in out.stderr
    assert "no bank search is available" in json.loads(target.read_text())["error"]


def test_grade_writes_one_output_line_per_input_line(cli_env, cli, tmp_path):
    """An LMS zips its rows with ours by line: a blank line keeps its place, and an answer holding a line
    separator (U+2028, U+2029, U+0085) stays on one line for a reader that splits on them."""
    answer = "Gradients add up\u2028across calls,\u2029so clear them\u0085each step."
    record = json.dumps({"question_id": "zero-grad", "answer": answer}, ensure_ascii=False)
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(f"{record}\n\n   \n{record}\n", encoding="utf-8")
    out = cli("grade", "--input", str(source), "--output", str(target), env=cli_env)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 4 and rows[1] == {"line": 2, "skipped": "blank line"} and rows[2]["line"] == 3
    assert rows[0]["answer"] == rows[3]["answer"] == answer and rows[0]["score"] == rows[3]["score"]


def test_grade_exits_nonzero_only_when_every_line_failed(cli_env, cli, tmp_path):
    """A blank line is neither graded nor failed: beside failed lines alone it used to count as graded, and the run
    exited 0 having graded nothing."""
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("nope\n\n{}\n", encoding="utf-8")
    out = cli("grade", "--input", str(source), "--output", str(target), env=cli_env)
    assert out.returncode == 1 and target.exists()
    assert "Graded 0 of 3 lines; 2 with errors; 1 blank line skipped." in out.stderr, out.stderr


def test_grade_counts_graded_failed_and_blank_lines_apart(cli_env, cli, tmp_path):
    """Review s51: 2 gradable lines, a blank one and 5 bad ones printed "Graded 3 of 8 lines; 5 with errors"."""
    lines = [json.dumps({"question_id": "zero-grad", "answer": "It clears gradients before backward."}), "",
             json.dumps({"question": "Why use a validation set?", "answer": "to tune hyperparams",
                         "reference_answer": "To tune hyperparameters and detect overfitting."}),
             json.dumps({"question": "nonsense question here", "answer": "x"}), "not json",
             json.dumps({"question_id": "zero-grad"}), "[1,2]", json.dumps({"question_id": "zero-grad", "answer": 5})]
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = cli("grade", "--input", str(source), "--output", str(target), env=cli_env)
    assert out.returncode == 0, out.stderr  # some lines were graded: the failed ones carry `error`
    assert "Graded 2 of 8 lines; 5 with errors; 1 blank line skipped." in out.stderr, out.stderr
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [("score" in r, "error" in r, "skipped" in r) for r in rows] == \
        [(True, False, False), (False, False, True), (True, False, False)] + [(False, True, False)] * 5


def test_grade_keeps_what_the_caller_sent_and_counts_only_its_own_failures(cli_env, cli, tmp_path):
    lines = [
        '{"question_id": "zero-grad", "answer": "It clears grads \\ud800 before backward"}',  # half an emoji
        json.dumps({"question_id": "zero-grad", "answer": "It clears the accumulated gradients.", "score": 2,
                    "given": {"grader": "alice"}}),
        json.dumps({"question_id": "zero-grad", "answer": "It clears the accumulated gradients.", "error": None}),
        '{"question_id": "zero-grad", "answer": "It clears gradients.", "weight": NaN}',
    ]
    source, real = tmp_path / "in.jsonl", tmp_path / "real" / "out.jsonl"
    real.parent.mkdir()
    (link := tmp_path / "out.jsonl").symlink_to(real)
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = cli("grade", "--input", str(source), "--output", str(link), env=cli_env)
    assert out.returncode == 0, out.stderr
    assert link.is_symlink() and real.is_file()  # written through the link, not over it
    assert "Graded 2 of 4 lines; 2 with errors." in out.stderr  # the caller's own "error": null is no failure
    text = real.read_text(encoding="utf-8")
    assert "\\ud800" in text  # written back as the escape it came as
    rows = [json.loads(line) for line in text.splitlines()]
    assert rows[0]["error"].startswith("field 'answer' holds half of a UTF-16 surrogate pair (\\ud800)")
    assert rows[1]["given"] == {"score": 2, "given": {"grader": "alice"}} and "score" in rows[1]
    assert rows[2]["error"] is None and "score" in rows[2]
    assert rows[3]["error"].startswith("invalid JSON: NaN is not a JSON value")
    # A process of its own: `--output -` writes to the real standard output's file descriptor, as UTF-8.
    piped = run("grade", "--input", str(source), "--output", "-", env=cli_env)
    assert [json.loads(line).get("question_id") for line in piped.stdout.splitlines()] == ["zero-grad"] * 3 + [None]
    assert not (Path.cwd() / "-").exists()


def test_grade_refuses_a_utf16_file_in_one_line(cli_env, cli, tmp_path):
    """Windows PowerShell's `>` writes UTF-16; said once rather than as an error on every line."""
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text('{"question_id": "zero-grad", "answer": "It clears gradients."}\n', encoding="utf-16")
    out = cli("grade", "--input", str(source), "--output", str(target), env=cli_env)
    assert out.returncode == 1 and not target.exists()
    assert out.stderr.strip() == f"error: input file {source} is UTF-16 text: save it as UTF-8"


def test_grade_writes_over_neither_its_input_nor_the_examples(cli_env, cli, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text('{"question_id": "zero-grad", "answer": "It clears gradients."}\nnot json\n', encoding="utf-8")
    for target, name in ((source, "input"), (tmp_path / "link.jsonl", "input")):
        if target.name == "link.jsonl":
            target.symlink_to(source)
        out = cli("grade", "--input", str(source), "--output", str(target), env=cli_env)
        assert out.returncode == 1 and f"is the {name} file" in out.stderr
    out = cli("grade", "--input", str(source), "--examples", str(source), "--output", str(source), env=cli_env)
    assert out.returncode == 1 and "is the input file" in out.stderr
    assert source.read_text(encoding="utf-8").endswith("not json\n")  # the user's file as it was


def test_grade_refuses_numbers_past_json_and_lines_past_the_stack_line_by_line(cli_env, cli, tmp_path):
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    good = {"question_id": "zero-grad", "answer": "It clears gradients."}
    source.write_text("\n".join([json.dumps({**good, "n": 1}).replace("1}", "1e999}"), '{"n": ' + "9" * 5000 + "}",
                                 "[" * 100_000 + "]" * 100_000, json.dumps(good)]) + "\n", encoding="utf-8")
    out = cli("grade", "--input", str(source), "--output", str(target), env=cli_env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    rows = [json.loads(line) for line in target.read_text().splitlines()]  # valid JSON, every line
    assert [("error" in row) for row in rows] == [True, True, True, False]
    assert "past the largest number" in rows[0]["error"] and "nested too deeply" in rows[2]["error"]


def test_ingest_docs_writes_drafts_for_new_questions(cli_env, cli, tmp_path):
    if not SEEDS.is_dir():
        pytest.skip("shared seeds not present")
    out_file = tmp_path / "drafts.yaml"
    out = cli("ingest", "--docs", str(SEEDS / "002_a8e96841d809bc4a.txt"), "--out", str(out_file), env=cli_env)
    assert out.returncode == 0, out.stderr
    assert "Found 55 questions" in out.stderr and "duplicate:" in out.stderr


def test_terminal_interview_reads_answers_from_stdin(cli_env, cli):
    script = "\n".join(
        [
            ":x[/x]",  # an unknown command, printed back as typed
            ":code /nonexistent/answer.py",  # a file that is not there: said, and the question asked again
            ".",
            ".",  # an empty answer: the terminal's own commands are named (it said "skip / I don't know")
            ":hint",
            "It is used so that gradients [/b] do not accumulate across steps.",
            ".",
            ":idk",
            ":skip",
            "",
        ]
    )
    out = cli("interview", "--topics", "training-loop", "--questions", "2", "--seed", "3", env=cli_env,
              stdin=script)
    assert out.returncode == 0, out.stderr
    assert "Question 1 of 2" in out.stdout
    assert "hints cost" in out.stdout
    assert "Score" in out.stdout
    assert "unknown command :x[/x]" in out.stdout and "code file /nonexistent/answer.py was not found" in out.stdout
    assert "An answer needs text or code (or :skip / :idk); nothing was sent." in out.stdout


@pytest.mark.slow
def test_a_terminal_interview_whose_start_finds_the_database_locked_says_so_in_a_line_and_leaves_nothing(
    cli_env, tmp_path
):
    """Another writer holds the database while the first question is worded (by an LLM): the session's insert
    waits out the busy timeout. That printed a traceback and left an active session with no question."""
    import sqlite3
    import threading
    import time

    from tests.fake_openai import FakeOpenAI, echo

    database = tmp_path / "locked.db"
    holder = sqlite3.connect(database, isolation_level=None, check_same_thread=False, timeout=30)

    release = threading.Thread(target=lambda: (time.sleep(20), holder.execute("ROLLBACK")), daemon=True)

    def lock_then_reword(message: str) -> str:
        holder.execute("BEGIN IMMEDIATE")  # held past the CLI's busy timeout (15 s), then let go
        release.start()
        return message.rpartition("Line:\n")[2]

    with FakeOpenAI(models=["m"]) as llm:
        llm.script([echo(lock_then_reword)] + ["unused"] * 4)
        env = {**cli_env, "INTERVIEWER_DATABASE_URL": f"sqlite:///{database}", "INTERVIEWER_LLM_BASE_URL": llm.base_url,
               "INTERVIEWER_LLM_MODEL": "m"}
        out = run("interview", "--topics", "autograd", "--questions", "1", env=env, stdin="")
    release.join()
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith(
        "error: the database cannot be used right now (database is locked); try again shortly"), out.stderr
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


def test_a_terminal_interview_without_code_never_loads_the_code_runner(cli_env):
    """The sandbox pool started with every `interviewer interview`: 7 s of waiting (plus torch's import) in a
    21 s one-question run on an indexed data dir, for sessions that mostly send no code. It starts at the
    first code answer now (tests/test_interview.py checks that it does)."""
    report = ("import atexit, sys\n"
              "atexit.register(lambda: print('LOADED', *sorted(m for m in ('evaluators.code.runner', 'torch') "
              "if m in sys.modules), file=sys.stderr))\n"
              "from app.cli import main\nmain()\n")
    out = run_bounded([sys.executable, "-c", report, "interview", "--questions", "1"], text=True, env=cli_env,
                      input=":quit\n")
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1] == "LOADED", out.stderr


def test_terminal_interview_shows_the_model_answer_keeps_an_interview_report_and_reads_any_bytes(cli_env, cli):
    practice = cli("interview", "--topics", "deployment", "--questions", "1", "--seed", "1", env=cli_env,
                   stdin=":idk\n")
    assert practice.returncode == 0, practice.stderr
    assert "Model answer" in practice.stdout  # what ":idk" is for
    # A process of its own: bytes that are no UTF-8 reach the answer through the real stdin's decoding.
    proc = run_bounded([str(CLI), "interview", "--mode", "interview", "--questions", "2"], env=cli_env,
                       input=b"backward \xff\xfe chains.\n.\n:quit\n")
    said = proc.stdout.decode()
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    assert "report is ready once the session is completed" in said and "Score" not in said  # no scores yet


def test_terminal_interview_takes_comma_separated_topics_and_ends_early_with_a_report(cli_env, cli, tmp_path):
    """frameworks (7 questions) and distributed (6): a session of 6 draws on both (for a user who has seen
    none of them: its own data directory). `:end` finishes it there, with the report."""
    env = {**cli_env, "INTERVIEWER_DATA_DIR": str(tmp_path / "data")}
    out = cli("interview", "--topics", "frameworks, distributed", "--questions", "6", env=env, stdin=":end\n")
    assert out.returncode == 0, out.stderr
    assert "Question 1 of 6" in out.stdout and "Question 2 of 6" not in out.stdout
    assert "The interview has ended" in out.stdout and "Ended early" in out.stdout


def test_grading_opens_the_question_search_only_at_the_first_line_that_needs_it():
    from app.grading import BulkGrader
    from evaluators.rubric import RubricScorer
    from knowledge.embeddings import HashingEmbedder
    from knowledge.loader import bank_index

    opened: list[str] = []

    def open_store():
        opened.append("chroma")
        return None  # as when the bank was never ingested

    grader = BulkGrader(evaluator=RubricScorer(HashingEmbedder()), bank=bank_index(), store=None, open_store=open_store)
    by_id = json.dumps({"question_id": "zero-grad", "question": "q", "answer": "It clears old gradients."})
    assert "score" in next(grader.grade_stream(iter([by_id.encode()])))
    assert opened == []
    free = json.dumps({"question": "Why call zero_grad?", "answer": "Gradients accumulate in .grad."}).encode()
    rows = list(grader.grade_stream(iter([free, free])))
    assert opened == ["chroma"]  # once, not per line
    assert all("no bank search is available" in r["error"] for r in rows)


def test_search_on_a_fresh_data_dir_indexes_the_bank_first(cli_env, cli, tmp_path):
    env = {**cli_env, "INTERVIEWER_DATA_DIR": str(tmp_path / "never-ingested")}
    first = cli("search", "--json", "why zero grad", env=env)
    assert first.returncode == 0, first.stderr
    assert "not indexed yet" in first.stderr and "Indexed the question bank" in first.stderr
    assert json.loads(first.stdout)[0]["results"][0]["id"] == "zero-grad"
    again = cli("search", "--json", "why zero grad", env=env)
    assert again.returncode == 0 and "Indexed" not in again.stderr



def test_a_missing_option_is_a_usage_line_not_a_traceback(cli_env, cli):
    """typer raises usage errors from the click it vendors, which main() must still recognise."""
    result = cli("grade", env=cli_env)
    assert result.returncode == 2
    assert "Missing option '--input'" in result.stderr and "Traceback" not in result.stderr


def test_code_files_in_terminal_answers(tmp_path):
    import io

    from app.cli_answers import read_answer

    good, binary = tmp_path / "relu.py", tmp_path / "blob.bin"
    good.write_text("def relu(x):\n    return x.clamp(min=0)\n", encoding="utf-8")
    binary.write_bytes(b"\x7fELF\x02\xd0\xff")
    said: list[str] = []
    assert read_answer(io.StringIO(f"It clamps.\n:code {good}\n.\n"), said.append) == (
        "answer", "It clamps.", "def relu(x):\n    return x.clamp(min=0)")
    block = f"It clamps.\n:code {binary}\n:code\n:code {tmp_path}\n:code {good}\nElementwise.\n.\n"
    assert read_answer(io.StringIO(block), said.append) == (  # each bad line left out, the rest kept
        "answer", "It clamps.\nElementwise.", "def relu(x):\n    return x.clamp(min=0)")
    kept = "; that line was left out, the rest of the answer is kept"
    assert said == [f"code file {binary} cannot be read (not UTF-8 text){kept}",
                    f":code needs a file: `:code PATH`{kept}", f"{tmp_path} is a folder, not a code file{kept}"]


def test_a_code_file_dragged_into_the_terminal_is_found_quoted_or_escaped(tmp_path):
    """A terminal pastes a dropped file's path quoted, or with its spaces escaped: both were "not found"."""
    import io

    from app.cli_answers import read_answer

    spaced = tmp_path / "my relu.py"
    spaced.write_text("def relu(x):\n    return x.clamp(min=0)\n", encoding="utf-8")
    escaped = str(spaced).replace(" ", "\\ ")
    for given in (f"'{spaced}'", f'"{spaced}"', escaped, str(spaced)):
        said: list[str] = []
        assert read_answer(io.StringIO(f":code {given}\n.\n"), said.append) == (
            "answer", None, "def relu(x):\n    return x.clamp(min=0)"), said


def test_a_code_file_past_the_code_limit_is_not_sent(cli, tmp_path):
    """INTERVIEWER_MAX_CODE_CHARS held for the API only: a `:code` of a large file was stored whole and the
    report printed every line of it. Like a too-long answer, it is said and nothing is sent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")}
    env.update(INTERVIEWER_DATA_DIR=str(tmp_path / "data"), INTERVIEWER_MAX_CODE_CHARS="40")
    code = tmp_path / "long.py"
    code.write_text("x = 1\n" * 20, encoding="utf-8")
    out = cli("interview", "--topics", "autograd", "--questions", "1", env=env, stdin=f":code {code}\n.\n:end\n")
    assert out.returncode == 0, out.stderr
    said = " ".join(out.stdout.split())
    assert "The code is 119 characters; the limit is 40. Nothing was sent" in said and "x = 1" not in said


def test_a_code_file_that_cannot_be_read_is_said_at_its_line_and_loses_nothing_typed_with_it():
    """`:code /nonexistent.py` then `:repeat` and an answer: the whole block was thrown away when it ended, with
    `:repeat` read as words of the answer; the error is said when the line is read, and only it is left out."""
    from app.cli_answers import read_answer

    heard: list[str] = []

    def typed(*lines: str):  # a terminal: each line is read when the reader asks for it
        for line in lines:
            heard.append(f"read {line}")
            yield line + "\n"

    stream = typed(":code /nonexistent.py", ":repeat", "Dropout zeroes random activations.", ".", ":end")
    assert read_answer(stream, heard.append) == ("repeat", None, None)
    assert heard == ["read :code /nonexistent.py", "code file /nonexistent.py was not found; that line was left "
                     "out, the rest of the answer is kept", "read :repeat"]
    assert read_answer(stream, heard.append) == ("answer", "Dropout zeroes random activations.", None)
    assert read_answer(stream, heard.append) == ("end", None, None)


def test_the_terminal_report_wraps_a_model_answer_once():
    """The bank breaks its prose near 95 characters: at 80 columns each of those lines was wrapped again,
    leaving a line of a word or two after each. Each paragraph is now wrapped once, at the terminal's width."""
    from types import SimpleNamespace

    from rich.console import Console

    from app.cli_sessions import print_report
    from app.config import Settings
    from tests.test_reports import session, session_turns

    record = session({"autograd-basics": 3.8, "relu-autograd-function": 2.5, "save-and-load-models": 0.0})
    repo = SimpleNamespace(get_session=lambda *_: record, turns=lambda _: session_turns())
    console = Console(width=80, record=True)
    print_report(console, repo, "s1", 7, Settings())
    shown = [line.strip() for line in console.export_text().split("Model answer:")[1].splitlines()]
    start = next(i for i, line in enumerate(shown) if line)
    paragraph = shown[start : shown.index("", start)]
    assert paragraph[0].startswith("Autograd is PyTorch's reverse-mode automatic differentiation engine.")
    assert len(paragraph) > 3 and all(len(line) > 60 for line in paragraph[:-1]), paragraph


def test_the_terminal_report_of_a_session_stored_with_half_a_surrogate_pair_shows_a_replacement_character():
    """A check's message stored before input was checked could hold half a UTF-16 surrogate pair: `interviewer
    report` (and the report after a terminal interview) ended in a UnicodeEncodeError traceback."""
    import dataclasses
    from types import SimpleNamespace

    from rich.console import Console

    from app.cli_sessions import print_report
    from app.config import Settings
    from tests.test_reports import session, session_turns

    turns = session_turns()
    stored = turns[2].code_result
    checks = [{**check, "message": "half \ud800 pair"} for check in stored["checks"]]
    turns[2] = dataclasses.replace(turns[2], code_result={**stored, "checks": checks})
    record = session({"autograd-basics": 3.8, "relu-autograd-function": 2.5, "save-and-load-models": 0.0})
    repo = SimpleNamespace(get_session=lambda *_: record, turns=lambda _: turns)
    console = Console(width=100, record=True)
    print_report(console, repo, "s1", 7, Settings())
    assert "half \ufffd pair" in console.export_text()


def test_the_terminal_report_wraps_a_contracts_list_items_once():
    """A contract's list item goes on over lines indented under its text ("must give finite,\n  accurate results");
    those lines were kept, so at 80 columns each was wrapped again: "must give finite," alone on a line, then
    "accurate results, ...". An item's own lines now join it, and it is wrapped once, at the terminal's width."""
    from types import SimpleNamespace

    from rich.console import Console

    from app.cli_sessions import print_report
    from app.config import Settings
    from tests.test_reports import session, turn

    asked = turn(1, "stable-log-softmax", "autograd", answer_text="I subtract the max.",
                 evaluation={"score": 1.0, "evaluator": "rubric", "points": [], "misconceptions": []})
    repo = SimpleNamespace(get_session=lambda *_: session({"stable-log-softmax": 1.0}), turns=lambda _: [asked])
    console = Console(width=80, record=True)
    print_report(console, repo, "s1", 7, Settings())
    contract = console.export_text().split("Contract:")[1].split("Your answer")[0]
    shown = [line.strip() for line in contract.splitlines() if line.strip()]
    assert shown[0].startswith("Define `log_softmax(") and len(shown) > 8, shown
    # A line the terminal wrapped (the next one goes on with the item, not a new "- " item) is nearly full.
    broken = [line for line, after in zip(shown, shown[1:], strict=False) if not after.startswith("- ")
              and len(line) < 60]
    assert not broken, shown
    assert any("give finite, accurate results" in line for line in shown), shown


def test_the_terminal_report_shows_a_model_answers_prose_as_text_and_its_code_as_a_block():
    """The prose of a code task's model answer was printed inside the code's block, indented and shaded with it."""
    from types import SimpleNamespace

    from rich.console import Console

    from app.cli_sessions import print_report
    from app.config import Settings
    from knowledge.loader import bank_index
    from tests.test_reports import evaluation, session, turn

    turns = [turn(1, "relu-autograd-function", "autograd", answer_text="Some words.", evaluation=evaluation(1.0, []))]
    record = session({"relu-autograd-function": 1.0})
    repo = SimpleNamespace(get_session=lambda *_: record, turns=lambda _: turns)
    console = Console(width=100, record=True)
    print_report(console, repo, "s1", 7, Settings())
    shown = console.export_text().split("Model answer:")[1].split("Strengths")[0].splitlines()
    prose = next(line for line in shown if "Subclass torch.autograd.Function" in line)
    assert prose.startswith("Subclass"), prose  # a paragraph, not inside the code block's padding
    code = bank_index()["relu-autograd-function"].code.solution.strip().splitlines()
    lines = [line[1:].rstrip() for line in shown if line.startswith(" ")]  # the block, its one-column padding off
    start = lines.index(code[0])
    assert lines[start:start + len(code)] == code  # each line of the code on its own, indentation kept


def test_terminal_answers_from_windows_files_and_odd_first_lines():
    import io

    from app.cli_answers import read_answer
    from app.interview.fenced import split_fenced

    crlf = "Here is my ReLU.\r\n```python\r\ndef relu(x):\r\n    return x.clamp(min=0)\r\n```\r\n.\r\n"
    command, text, code = read_answer(io.StringIO(crlf), print)  # the fence stays in the words, for the engine to run
    assert (command, code) == ("answer", None)
    assert split_fenced(text) == ("Here is my ReLU.", "def relu(x):\n    return x.clamp(min=0)")
    for odd in ("``` python \n  def relu(x):\n      return x\n  ```", "  ```py\n  def relu(x):\n      return x\n  ```"):
        assert split_fenced(f"Mine:\n{odd}") == ("Mine:", "def relu(x):\n    return x")  # spaces; indented as a whole
    smiley = ":) backward computes the gradients\nwith the chain rule.\n.\n"
    assert read_answer(io.StringIO(smiley), print) == (
        "answer", ":) backward computes the gradients\nwith the chain rule.", None)
    assert read_answer(io.StringIO(":Hint\n"), print) == ("hint", None, None)
    not_utf8 = "backward \udcff\udcfe chains.\n.\n"  # how Python reads bytes that are not UTF-8 from a terminal
    assert read_answer(io.StringIO(not_utf8), print) == ("answer", "backward \ufffd\ufffd chains.", None)


@pytest.mark.parametrize("args, code, said", [
    (["keys", "create", "--name", "a", "--user", ""], 2,
     "error: --user (or INTERVIEWER_USER): a user name cannot be empty"),
    # Names travel in the admin routes' paths: one the CLI made with a space, no admin route could reach.
    (["keys", "create", "--name", "my laptop"], 1, "error: a key name may hold only letters, digits and _ . @ + -"),
    (["interview", "--difficulty", "²"], 2, "Invalid value for '--difficulty'"),  # usage errors exit 2
    (["interview", "--mode", "exam"], 2, "Invalid value for '--mode'"),
    # was "error: invalid topics.0: Input should be ..." and exit 1
    (["interview", "--topics", "autograd, nonsense"], 2,
     "Invalid value for '--topics': 'nonsense' is not a topic; the topics are frameworks, tensors, autograd"),
    (["search", "--difficulty", "4", "zero_grad"], 2, "Invalid value for '--difficulty'"),
])
def test_more_bad_input_is_one_line(cli_env, cli, args, code, said):
    out = cli(*args, env=cli_env, stdin=":quit\n")
    assert out.returncode == code and said in out.stderr and "Traceback" not in out.stderr


def test_drafts_are_not_written_over_a_folder_or_the_document_read(cli_env, cli, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("1. What does zero_grad do?\n", encoding="utf-8")
    for out_path, said in ((tmp_path, "is a folder"), (notes, "is one of the documents read"),
                           (notes / "x.yaml", "is a file, not a folder")):
        out = cli("ingest", "--docs", str(notes), "--out", str(out_path), env=cli_env)
        assert out.returncode == 1 and said in out.stderr and "Traceback" not in out.stderr
    assert notes.read_text(encoding="utf-8") == "1. What does zero_grad do?\n" and not list(tmp_path.glob("*.tmp"))
    curated = tmp_path / "curated.yaml"
    curated.write_text("- id: my-entry\n", encoding="utf-8")
    out = cli("ingest", "--docs", str(notes), "--out", str(curated), env=cli_env)
    assert out.returncode == 1 and "exists (drafts you may have curated)" in out.stderr
    assert curated.read_text(encoding="utf-8") == "- id: my-entry\n"


def test_ctrl_c_says_aborted_and_exits_130(cli_env):
    import signal

    # Ctrl-C as a terminal sends it, even where this run ignores it (a background job inherits SIG_IGN).
    proc = subprocess.Popen([str(CLI), "interview", "--questions", "1"], env=cli_env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    read_until(proc, "Question 1 of 1", Watch(proc.pid))  # waiting for the answer now
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "aborted" in stderr and "Traceback" not in stderr


def test_a_bank_changed_since_indexing_is_reindexed_before_a_search(cli_env, cli, tmp_path):
    """A data dir indexed from one bank, then used with a pack lacking an entry: no search may return the
    entry the bank no longer has (a session would be asked a question it cannot score)."""
    import shutil

    import yaml

    data, pack = tmp_path / "data", tmp_path / "pack"
    shutil.copytree(cli_env["INTERVIEWER_DATA_DIR"], data)
    shutil.copytree(Path(__file__).parents[1] / "knowledge" / "bank", pack)
    entries = {f: yaml.safe_load(f.read_text(encoding="utf-8")) for f in pack.glob("*.yaml")}
    linked = {r for es in entries.values() for e in es for r in e.get("related") or []}
    file, gone = next((f, e) for f, es in sorted(entries.items()) for e in es if e["id"] not in linked)
    f_entries = [e for e in entries[file] if e is not gone]
    file.write_text(yaml.safe_dump(f_entries, sort_keys=False, allow_unicode=True), encoding="utf-8")
    env = {**cli_env, "INTERVIEWER_DATA_DIR": str(data), "INTERVIEWER_BANK_DIR": str(pack)}
    out = cli("search", "--json", "--k", "3", gone["question"], env=env)
    assert out.returncode == 0, out.stderr
    assert "The question bank changed since it was indexed: 0 new, 0 changed and 1 removed" in out.stderr
    assert gone["id"] not in [hit["id"] for hit in json.loads(out.stdout)[0]["results"]]


def test_the_terminal_says_when_a_score_came_from_the_offline_fallback():
    from rich.console import Console

    from app.cli_interview import show_outcome
    from app.interview.models import TurnOutcome

    why = "LLM judge failed: HTTP 500; offline score used"
    console = Console(record=True, width=200)
    show_outcome(console, TurnOutcome(status="active", evaluation={"score": 2.1, "points": [], "notes": [why]}))
    assert why in console.export_text()


def test_the_terminal_says_why_code_checks_failed_and_shows_the_model_answer_after_giving_up_a_follow_up():
    from rich.console import Console

    from app.cli_interview import show_outcome
    from app.interview.models import TurnOutcome

    console = Console(record=True, width=200)
    checks = [{"name": "large-logits", "description": "stays finite for large logits", "passed": False,
               "message": "got inf for logits near 1000"},
              {"name": "other-dims", "description": "works along any dim", "passed": True, "message": None}]
    show_outcome(console, TurnOutcome(
        status="active", evaluation={"score": 2.0, "points": [], "follow_up": "dont_know", "model_answer": "THE MODEL"},
        code_result={"passed_checks": 1, "total_checks": 2, "status": "failed", "checks": checks}))
    shown = console.export_text()
    assert "stays finite for large logits: got inf for logits near 1000" in shown
    assert "works along any dim" not in shown
    assert "THE MODEL" in shown


def test_the_terminal_says_a_failed_checks_torch_report_on_one_line():
    """It printed torch's comparison report whole ("Tensor-likes are not close!", then a line each for mismatched
    elements and greatest differences), where the API, the UI and the reports say it on one line."""
    from rich.console import Console

    from app.cli_interview import show_outcome
    from app.interview.models import TurnOutcome

    console = Console(record=True, width=300)
    report = ("Tensor-likes are not close!\n\nMismatched elements: 10 / 30 (33.3%)\nGreatest absolute difference: 1.23 "
              "at index (0, 2) (up to 1e-05 allowed)\nGreatest relative difference: inf at index (0, 2) (up to 1.3e-06 "
              "allowed)")
    checks = [{"name": "gradient-values", "description": "x.grad matches the ReLU gradient", "passed": False,
               "message": report},
              {"name": "large-logits", "description": "stays finite for large logits", "passed": False,
               "message": "got inf\nfor logits near 1000"}]
    show_outcome(console, TurnOutcome(status="active", evaluation={"score": 2.0, "points": []},
                                      code_result={"passed_checks": 0, "total_checks": 2, "status": "failed",
                                                   "checks": checks}))
    lines = console.export_text().splitlines()
    assert " ✘ x.grad matches the ReLU gradient: not met (10 of 30 values differ)" in lines
    assert " ✘ stays finite for large logits: got inf for logits near 1000" in lines
    assert not any("Greatest" in line for line in lines)


def test_the_terminal_says_a_wrong_claim_quoted_from_the_code_is_the_codes():
    from rich.console import Console

    from app.cli_interview import show_outcome
    from app.interview.models import TurnOutcome

    console = Console(record=True, width=200)
    wrong = [{"claim": "c", "correction": "Mask by the input.", "quote": "return grad_output.clamp(min=0)",
              "from_code": True}, {"claim": "d", "correction": "Use apply.", "quote": "I call MyReLU()(x)"}]
    show_outcome(console, TurnOutcome(status="active",
                                      evaluation={"score": 2.0, "points": [], "misconceptions": wrong}))
    lines = console.export_text().splitlines()
    assert ' wrong: your code has "return grad_output.clamp(min=0)" - Mask by the input.' in lines
    assert ' wrong: "I call MyReLU()(x)" - Use apply.' in lines


def test_the_terminal_says_a_point_a_full_code_score_did_not_need_is_not_missed():
    """Review s50: "Score 5.0 / 5" above "✘ Calls the function through MyReLU.apply ...", judged from the words,
    which never take from a code score."""
    from rich.console import Console

    from app.cli_interview import show_outcome
    from app.interview.models import TurnOutcome

    console = Console(record=True, width=200)
    unneeded = {"point_id": "apply-usage", "description": "Calls the function through MyReLU.apply.",
                "verdict": "missed", "beyond_score": True}
    show_outcome(console, TurnOutcome(status="active", evaluation={"score": 5.0, "points": [unneeded]}))
    shown = console.export_text()
    assert "✘" not in shown
    assert "· Calls the function through MyReLU.apply. (not needed for the score, worth saying in an interview)" \
        in shown


def test_the_terminal_says_what_a_turn_was_charged():
    """A follow-up given up after a hint scored 0.5 less than the answer before it and the terminal said nothing of
    why (review s50)."""
    from rich.console import Console

    from app.cli_interview import show_outcome
    from app.interview.models import TurnOutcome

    console = Console(record=True, width=200)
    hint = "1 hint(s) used on the follow-up: -0.5 points"
    show_outcome(console, TurnOutcome(status="active", evaluation={
        "score": 2.8, "points": [], "follow_up": "dont_know", "penalties": [hint],
        "question_penalties": ["answered after the 30s limit: score halved", hint]}))
    shown = console.export_text()
    assert f"penalty: {hint}" in shown and "limit" not in shown


@pytest.mark.parametrize("width", [60, 100])
def test_the_terminals_feedback_lines_wrap_under_their_words_not_under_their_mark(width):
    """A point, a wrong claim, a failed check or a penalty too long for the terminal went on at its margin, under
    its mark: " ✔ The answer explains that" / "torch.nn.functional.cross_entropy combines ..."."""
    from rich.console import Console

    from app.cli_interview import show_outcome
    from app.interview.models import TurnOutcome

    long = ("torch.nn.functional.cross_entropy takes raw logits, so optimizer.zero_grad() and x.requires_grad_() "
            "come up, and CustomLinear(5, 3) holds a weight whose gradient ∂L/∂w is σ-scaled, 梯度累积 and all; ")
    console = Console(record=True, width=width)
    show_outcome(console, TurnOutcome(
        status="active",
        evaluation={"score": 2.0, "penalties": [f"1 hint(s) used: {long}"], "notes": [f"judge note: {long}"],
                    "points": [{"verdict": "covered", "description": f"Covered: {long}"},
                               {"verdict": "missed", "description": f"Missed: {long}", "beyond_score": True}],
                    "misconceptions": [{"claim": "c", "quote": "grads reset", "correction": long, "from_code": True}]},
        code_result={"passed_checks": 0, "total_checks": 1, "status": "failed",
                     "checks": [{"name": "n", "description": f"The check: {long}", "passed": False, "message": None}]}))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    for lead, words in ((" penalty: ", "1 hint(s)"), (" scoring: ", "judge note"), (" ✔ ", "Covered:"),
                        (" · ", "Missed:"), (" wrong: ", "your code has"), (" ✘ ", "The check:")):
        first = next(n for n, line in enumerate(lines) if line.startswith(lead + words))
        last = next(n for n in range(first, len(lines)) if lines[n].endswith(("all;", "interview)")))
        assert last > first and all(line.startswith(" " * len(lead)) and line[len(lead)] != " "
                                    for line in lines[first + 1:last + 1]), lines[first:last + 1]
        said = " ".join(line.strip() for line in lines[first:last + 1])
        assert all(name in said for name in ("torch.nn.functional.cross_entropy", "梯度累积", "∂L/∂w")), said


@pytest.mark.parametrize("width", [60, 100])
def test_the_terminals_feedback_lines_end_at_their_last_word_not_padded_to_the_width(width):
    """Review s54: each line of a wrapped point ended in spaces up to the terminal's width, which a log or a copy
    kept and a terminal reflowing on resize wrapped onto blank lines."""
    from rich.console import Console

    from app.cli_interview import show_outcome
    from app.interview.models import TurnOutcome

    long = "torch.nn.functional.cross_entropy combines log_softmax and nll_loss, so passing probabilities " * 2
    console = Console(record=True, width=width)
    show_outcome(console, TurnOutcome(status="active", evaluation={
        "score": 2.0, "penalties": ["1 hint(s) used: -0.5 points"], "notes": [f"judge note: {long}"],
        "points": [{"verdict": "covered", "description": f"Covered: {long}"},
                   {"verdict": "partial", "description": "Short."}],
        "misconceptions": [{"claim": "c", "quote": "grads reset", "correction": long}]}))
    lines = console.export_text().splitlines()
    assert len(lines) > 8 and [line for line in lines if line != line.rstrip()] == [], lines
    assert " ~ Short." in lines and " penalty: 1 hint(s) used: -0.5 points" in lines

def test_the_terminal_lists_what_a_code_question_asks_for_in_words_as_missed_when_unsaid(embedder):
    """Review s54: resnet-block's reference code with "Here is my solution." showed "Score 5.0 / 5" and
    "· Skip connections give gradients a direct path ... (not needed for the score, worth saying in an interview)",
    though the question asks to explain why skip connections help."""
    from rich.console import Console

    from app.cli_interview import show_outcome
    from app.interview.models import TurnOutcome
    from app.interview.scoring import AnswerScorer
    from evaluators.rubric import RubricScorer
    from knowledge.loader import bank_index
    from tests.code_fixtures import ScriptedRunner

    task = bank_index()["resnet-block"]
    scored = AnswerScorer(evaluator=RubricScorer(embedder), code_runner=ScriptedRunner()).score(
        task, text="Here is my solution.", code=task.code.solution, earlier=[])
    console = Console(record=True, width=400)
    show_outcome(console, TurnOutcome(status="active", evaluation=scored.evaluation))
    shown = console.export_text()
    assert "not needed for the score" not in shown
    assert "✘ Skip connections give gradients a direct path" in shown and "✘ Deployment means the model" in shown


def test_python_dash_m_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "app.cli", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "Usage" in out.stdout, (out.stdout, out.stderr)


def test_seed_help_and_readme_say_the_draw_depends_on_the_history(cli_env):
    """`--seed` was "Random seed for a reproducible session.", yet the same seed gives a user other questions in
    each session: those already asked are left out (no repeats). The help and the README say so."""
    out = run("interview", "--help", env={**cli_env, "COLUMNS": "200"})
    said = " ".join(out.stdout.split())
    assert out.returncode == 0 and "reproducible session" not in said, said
    assert "same questions for the same history" in said and "no repeats" in said, said
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8").split())
    assert "`--seed N`" in readme and "for the same history" in readme


def test_bank_validate_stops_a_task_whose_check_never_returns_and_checks_the_next(tmp_path):
    """A pack whose `inputs()` ran `while True` hung `bank validate` for ever."""
    from knowledge.loader import load_bank

    task = next(q for q in load_bank() if q.id == "relu-autograd-function").model_dump(mode="json")
    looping, passing = (dict(task, related=[]) for _ in range(2))
    looping["id"], passing["id"] = "loops-for-ever", "starter-passes"
    for entry in (looping, passing):  # a question text of its own: one asked twice is a problem of its own
        entry["question"] = f"{task['question']} ({entry['id']})"
    first, *rest = task["code"]["checks"]
    forever = "def inputs(gen):\n    while True:\n        pass\n"
    looping["code"] = dict(task["code"], checks=[dict(first, inputs=forever), *rest])
    passing["code"] = dict(task["code"], starter=task["code"]["solution"])
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "tasks.yaml").write_text(yaml.safe_dump([looping, passing], sort_keys=False), encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")},
           "INTERVIEWER_DATA_DIR": str(tmp_path / "data"), "INTERVIEWER_BANK_DIR": str(pack),
           "INTERVIEWER_RUNNER_TIMEOUT_S": "4"}  # 12 s a task: ample for the one that ends, even on a busy machine
    done = run("bank", "validate", env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "loops-for-ever: its checks did not finish in 12 s and were stopped" in done.stderr
    assert "starter-passes: the starter code passes every check" in done.stderr  # the next task was checked
    assert "2 problem(s) in the bank" in done.stderr


def _validate_pack(cli, tmp_path: Path, entries: list[dict]):
    """`bank validate` run on a pack of these entries, in a data directory of its own."""
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "tasks.yaml").write_text(yaml.safe_dump(entries, sort_keys=False), encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")},
           "INTERVIEWER_DATA_DIR": str(tmp_path / "data"), "INTERVIEWER_BANK_DIR": str(pack)}
    return cli("bank", "validate", env=env)


def test_bank_validate_refuses_a_mistyped_solution_mark_in_one_line(cli, tmp_path):
    from knowledge.loader import load_bank

    task = next(q for q in load_bank() if q.id == "relu-autograd-function").model_dump(mode="json")
    task.update(related=[], reference_answer="A custom Function saves its input.\n\n{{soluton}}\n")
    done = _validate_pack(cli, tmp_path, [task])
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if "{{soluton}}" in line]
    assert len(said) == 1 and "entry relu-autograd-function" in said[0], done.stderr
    assert "1 problem(s) in the bank" in done.stderr


def test_bank_validate_says_when_yaml_read_a_bare_word_as_a_boolean(cli, tmp_path):
    """`id: off` on a rubric point was refused with "Input should be a valid string" alone (review s56): YAML reads
    the bare word as false, and the line now says so and to quote it."""
    from knowledge.loader import load_bank

    entry = next(q for q in load_bank() if q.id == "requires-grad").model_dump(mode="json")
    entry["related"] = []
    text = yaml.safe_dump([entry], sort_keys=False)
    for point, word in zip(entry["rubric"], ("off", "Yes"), strict=False):
        text = text.replace(f"- id: {point['id']}\n", f"- id: {word}\n", 1)
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "p.yaml").write_text(text, encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")},
           "INTERVIEWER_DATA_DIR": str(tmp_path / "data"), "INTERVIEWER_BANK_DIR": str(pack)}
    done = cli("bank", "validate", env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert ("p.yaml: entry requires-grad: field rubric.0.id: Input should be a valid string (YAML read the bare word "
            'as the boolean false, as it does no, off and false: put it in quotes, e.g. "off")') in done.stderr
    assert ("field rubric.1.id: Input should be a valid string (YAML read the bare word as the boolean true, as it "
            'does yes, on and true: put it in quotes, e.g. "on")') in done.stderr


def test_bank_validate_refuses_a_point_asked_in_words_that_a_check_verifies(cli, tmp_path):
    """A point a check names is judged from the run: marked asked_in_words too, it would be judged twice."""
    from knowledge.loader import load_bank

    task = next(q for q in load_bank() if q.id == "resnet-block").model_dump(mode="json")
    task.update(related=[], rubric=[dict(p, asked_in_words=p["id"] in {"why-skip-helps", "projection-shortcut"})
                                    for p in task["rubric"]])
    done = _validate_pack(cli, tmp_path, [task])
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if "asked_in_words" in line]
    assert len(said) == 1 and "entry resnet-block" in said[0] and "'projection-shortcut'" in said[0], done.stderr
    assert "check 'projection-block-eval' verifies it" in said[0], done.stderr
    assert "1 problem(s) in the bank" in done.stderr


def test_bank_validate_stops_what_a_tasks_code_started_too(tmp_path):
    """The stopped task's code had started a process that slept on: `bank validate` printed its lines, but the
    process held its stdout and stderr, so a caller reading them (a pipe, CI) waited 10 minutes until it was
    killed by hand. Killing the task's process group then missed one that left it (`setsid()` and a second
    fork), which slept on."""
    from knowledge.loader import load_bank

    task = next(q for q in load_bank() if q.id == "relu-autograd-function").model_dump(mode="json")
    first, *rest = task["code"]["checks"]
    stays, leaves = tmp_path / "stays.pid", tmp_path / "leaves.pid"
    starts = (f"def inputs(gen):\n    import os, time\n    if os.fork() == 0:\n"
              f"        open({str(stays)!r}, 'w').write(str(os.getpid()))\n        time.sleep(3600)\n"
              f"    if os.fork() == 0:\n        os.setsid()\n        if os.fork() == 0:\n"
              f"            open({str(leaves)!r}, 'w').write(str(os.getpid()))\n            time.sleep(3600)\n"
              f"        os._exit(0)\n    while True:\n        pass\n")
    looping = dict(task, related=[], id="starts-a-sleeper", code=dict(task["code"], checks=[dict(first, inputs=starts),
                                                                                           *rest]))
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "tasks.yaml").write_text(yaml.safe_dump([looping], sort_keys=False), encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")},
           "INTERVIEWER_DATA_DIR": str(tmp_path / "data"), "INTERVIEWER_BANK_DIR": str(pack),
           "INTERVIEWER_RUNNER_TIMEOUT_S": "2"}
    try:
        done = run("bank", "validate", env=env)  # captures its output: returns once the pipes close
        assert done.returncode == 1 and "starts-a-sleeper: its checks did not finish" in done.stderr
    finally:
        alive = []
        for pid_file in (stays, leaves):  # both were written long before the 6 s the task had
            started = int(pid_file.read_text())
            status = Path(f"/proc/{started}/status")
            if status.is_file() and "State:\tZ" not in status.read_text():  # a zombie is gone, not yet reaped
                alive.append(pid_file.stem)
                os.kill(started, signal.SIGKILL)
    assert not alive, f"processes the task's code started outlived bank validate: {alive}"


def test_ctrl_c_while_an_llm_scores_the_answer_keeps_it_as_the_prompts_draft(cli_env, tmp_path):
    """A judge on a CPU takes minutes; Ctrl-C then lost the answer (the turn is recorded once scored) and said only
    "aborted". It is kept as the open prompt's draft, which the API returns with the session."""
    import shutil
    import sqlite3
    import time

    from tests.fake_openai import FakeOpenAI, content, slow

    data = tmp_path / "data"
    shutil.copytree(cli_env["INTERVIEWER_DATA_DIR"], data)
    answer = "Gradients add up in .grad over backward calls, so zero_grad clears them before each step."
    with FakeOpenAI() as fake:
        fake.script([content("What does zero_grad clear, and why?"), slow(delay_s=120)])
        env = {**cli_env, "INTERVIEWER_DATA_DIR": str(data), "INTERVIEWER_LLM_BASE_URL": fake.base_url,
               "INTERVIEWER_LLM_MODEL": "fake-judge", "INTERVIEWER_LLM_TIMEOUT_S": "150",
               "INTERVIEWER_LLM_MAX_RETRIES": "0"}
        proc = subprocess.Popen([str(CLI), "interview", "--questions", "1"], env=env, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert proc.stdin is not None
        watch = Watch(proc.pid)
        read_until(proc, "Question 1 of 1", watch)
        proc.stdin.write(f"{answer}\n.\n")
        proc.stdin.flush()
        while not any("Answer to evaluate" in r.prompt_text for r in fake.requests):  # the judge is waiting
            assert watch.stuck() is None and proc.poll() is None
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "aborted" in stderr and "Traceback" not in stderr
    assert "the answer was not scored; it is kept as the draft of this prompt" in " ".join(stdout.split())
    with sqlite3.connect(data / "interviewer.db") as db:
        assert db.execute("SELECT text FROM answer_drafts").fetchall() == [(answer,)]


def _without_sessions(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The module's data directory (its bank indexed) with a database of its own: no session of other tests."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(cli_env["INTERVIEWER_DATA_DIR"], data, ignore=shutil.ignore_patterns("interviewer.db*"))
    return {**cli_env, "INTERVIEWER_DATA_DIR": str(data)}


def test_a_paused_terminal_interview_is_resumed_listed_and_reported_from_the_terminal(cli_env, cli, tmp_path):
    """`:quit` said "it can be resumed through the API", as the user `local` no key was given for: the terminal had
    no way back to the session, each `:quit` left one more behind, and its report was printed only at the end."""
    import re

    env = _without_sessions(cli_env, tmp_path)
    data = Path(env["INTERVIEWER_DATA_DIR"])
    assert cli("sessions", "--json", env=env).stdout.strip() == "[]"
    nothing = cli("interview", "--resume", env=env)
    assert nothing.returncode == 1 and nothing.stderr.startswith("error: no paused session to resume")

    paused = cli("interview", "--topics", "tensors", "--questions", "2", "--seed", "1", env=env,
                 stdin="A tensor has a shape and a dtype.\n.\n:quit\n")
    assert paused.returncode == 0, paused.stderr
    sid = re.search(r"Session paused\. Resume it with:\n  interviewer interview --resume (\w+)\n", paused.stdout)[1]
    listed = json.loads(cli("sessions", "--json", env=env).stdout)
    assert [(s["id"], s["status"], s["answered"]) for s in listed] == [(sid, "active", 1)]
    # Review s54: at 80 columns the table cut every id with "…", and the 8 characters the app shows were refused.
    table = cli("sessions", env={**env, "COLUMNS": "80"}).stdout
    assert f" {sid[:8]} " in table and "…" not in table
    so_far = cli("report", sid[:8], "--format", "json", env=env)  # a practice session's report so far
    assert so_far.returncode == 0 and json.loads(so_far.stdout)["session_id"] == sid, so_far.stderr

    given = cli("interview", "--resume", "--questions", "3", env=env)
    assert given.returncode == 2 and "leave out --questions" in given.stderr  # a usage error
    from app.store import open_repository

    repo = open_repository(f"sqlite:///{data / 'interviewer.db'}")  # a draft of the open prompt, as the app keeps
    repo.save_draft(sid, user_id=repo.user_named("local").id, turn=repo.turns(sid)[-1].position,
                    text="Typed in the app, never sent.", code=None)
    resumed = cli("interview", "--resume", sid[:8], env=env, stdin=":end\n")  # as the app shows its id
    assert resumed.returncode == 0, resumed.stderr
    assert "kept from before but not sent" in resumed.stdout and "Typed in the app, never sent." in resumed.stdout
    assert f"Resuming session {sid} at question " in resumed.stdout and "The interview has ended" in resumed.stdout
    assert [s["status"] for s in json.loads(cli("sessions", "--json", env=env).stdout)] == ["completed"]  # no new one
    assert json.loads(cli("report", sid[:8], "--format", "json", env=env).stdout)["session_id"] == sid
    done = cli("interview", "--resume", sid, env=env)
    assert done.returncode == 1 and f"session {sid} is completed" in done.stderr and "Traceback" not in done.stderr
    unknown = cli("interview", "--resume", "no-such-session", env=env)
    assert unknown.returncode == 1 and "no session 'no-such-session'" in unknown.stderr

    as_json = cli("report", sid, "--format", "json", env=env)
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["session_id"] == sid
    written = cli("report", sid, "--output", str(tmp_path / "report.html"), env=env)
    assert written.returncode == 0 and "<html" in (tmp_path / "report.html").read_text()
    assert "Interview report" in cli("report", sid, env=env).stdout
    for args, said in ((["--output", str(tmp_path / "r.txt")], "names no format"),
                       (["--format", "docx"], "is not one of md, html, pdf, json")):
        refused = cli("report", sid, *args, env=env)
        assert refused.returncode == 1 and said in refused.stderr and len(refused.stderr.splitlines()) == 1


def test_a_new_terminal_interview_names_the_paused_ones_and_an_interview_reports_once_completed(cli_env, cli, tmp_path):
    env = _without_sessions(cli_env, tmp_path)
    first = cli("interview", "--mode", "interview", "--questions", "1", env=env, stdin=":quit\n")
    sid = json.loads(cli("sessions", "--json", "--active", env=env).stdout)[0]["id"]
    assert first.returncode == 0 and f"--resume {sid}" in first.stdout
    second = cli("interview", "--questions", "1", env=env, stdin=":quit\n")
    said = " ".join(second.stdout.split())
    assert f"You have 1 unfinished session(s): `interviewer interview --resume` continues the latest ({sid})" in said
    early = cli("report", sid, env=env)
    assert early.returncode == 1 and f"ready once the session is completed: continue it with `interviewer interview " \
        f"--resume {sid}`" in " ".join(early.stderr.split())


def test_an_api_users_sessions_are_listed_resumed_and_reported_from_the_terminal_with_user(
    cli_env, cli, tmp_path, ingested_store, bank, scorer  # noqa: F811 - the fixture imported above
):
    """With keys on, the terminal acted only as `local`: a candidate using the app with their key could neither see
    nor resume their sessions from the terminal, and a terminal interview kept a second no-repeat history."""
    from tests.api_fixtures import build_api

    api = build_api(tmp_path, store=ingested_store, bank=bank, scorer=scorer)  # keys on
    key, _ = api.repo.create_api_key(api.repo.get_or_create_user("ana").id, "laptop")
    ana = {"Authorization": f"Bearer {key}"}
    assert api.client.get("/v1/sessions").status_code == 401  # no key, no user
    topic = "transfer-learning"
    in_topic = {q.id for q in bank if q.topic.value == topic}
    # All but one of the topic's questions asked in the app: the last of them left on screen, paused.
    created = api.client.post("/v1/sessions", headers=ana, json={
        "topics": [topic], "num_questions": len(in_topic) - 1, "seed": 5, "difficulty": "adaptive"})
    assert created.status_code == 201, created.text
    sid, prompt = created.json()["id"], created.json()["prompt"]
    while prompt["number"] < len(in_topic) - 1:
        skipped = api.client.post(f"/v1/sessions/{sid}/skip", headers=ana, params={"turn": prompt["turn"]})
        assert skipped.status_code == 200, skipped.text
        prompt = skipped.json()["prompt"]
    env = {**_without_sessions(cli_env, tmp_path), "INTERVIEWER_DATABASE_URL": f"sqlite:///{tmp_path / 'api.db'}"}

    listed = cli("sessions", "--json", "--user", "ana", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [(s["id"], s["status"]) for s in json.loads(listed.stdout)] == [(sid, "active")]
    assert sid[:8] in cli("sessions", env={**env, "INTERVIEWER_USER": "ana"}).stdout  # the variable names her too
    nobody = cli("sessions", "--user", "nobody", env=env)
    assert nobody.returncode == 0 and nobody.stderr.strip() == (
        "No sessions for user 'nobody': start one with `interviewer interview --user nobody`.")
    assert cli("sessions", "--json", env=env).stdout.strip() == "[]"  # `local` has none of hers

    resumed = cli("interview", "--resume", "--user", "ana", env=env, stdin=":skip\n")
    assert resumed.returncode == 0, resumed.stderr
    assert f"Resuming session {sid} at question {len(in_topic) - 1} of {len(in_topic) - 1}" in resumed.stdout
    assert api.client.get(f"/v1/sessions/{sid}", headers=ana).json()["status"] == "completed"

    report = cli("report", sid, "--format", "json", "--user", "ana", env=env)
    assert report.returncode == 0 and json.loads(report.stdout)["session_id"] == sid
    for other in (["--user", "bob"], []):  # another user, and `local`: refused as a session they do not have
        refused = cli("report", sid, *other, env=env)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert refused.stderr.startswith(f"error: no session '{sid}' (it does not exist or belongs to someone else)")
        assert len(refused.stderr.splitlines()) == 1

    # One no-repeat history: a terminal interview of hers draws the one question of the topic the app never asked.
    asked = {turn.question_id for turn in api.repo.turns(sid)}
    assert len(asked) == len(in_topic) - 1
    fresh = cli("interview", "--user", "ana", "--topics", topic, "--questions", "1", "--seed", "5", env=env,
                stdin=":quit\n")
    assert fresh.returncode == 0, fresh.stderr
    assert f"--resume {sid}" not in fresh.stdout and "--user ana" in fresh.stdout  # how to resume it, as her
    terminal = [s["id"] for s in json.loads(cli("sessions", "--json", "--user", "ana", env=env).stdout)]
    assert len(terminal) == 2 and terminal[1] == sid
    assert {turn.question_id for turn in api.repo.turns(terminal[0])} == in_topic - asked


@pytest.mark.parametrize("name", ["my laptop", ".ana", ""])
def test_a_bad_user_name_is_one_usage_line(cli_env, cli, name):
    """--user is held to the rule `keys create --user` holds new users to, said as a usage error (exit 2); the keys
    commands are held to it the same way (they said it as exit 1 with no word of --user, or not at all for list)."""
    for args in (["sessions", "--user", name], ["report", "x", "--user", name], ["interview", "--user", name],
                 ["keys", "create", "--name", "k", "--user", name], ["keys", "list", "--user", name],
                 ["keys", "revoke", "--name", "k", "--user", name]):
        out = cli(*args, env=cli_env, stdin=":quit\n")
        assert out.returncode == 2 and out.stderr.startswith("error: --user (or INTERVIEWER_USER): a user name "), (
            args, out.stderr)
        assert len(out.stderr.splitlines()) == 1 and "Traceback" not in out.stderr
    for command in (["sessions"], ["keys", "list"]):
        via_variable = cli(*command, env={**cli_env, "INTERVIEWER_USER": "my laptop"})
        assert via_variable.returncode == 2 and "a user name may hold only letters" in via_variable.stderr


def test_the_keys_commands_act_as_interviewer_user_like_the_others(cli, tmp_path):
    """`keys create`, `list` and `revoke` kept a --user of their own that did not read INTERVIEWER_USER: set for
    the terminal's sessions, it made and listed the keys of `local` instead."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")},
           "INTERVIEWER_DATA_DIR": str(tmp_path / "data"), "INTERVIEWER_USER": "ana"}
    created = cli("keys", "create", "--name", "laptop", "--json", env=env)
    assert created.returncode == 0, created.stderr
    assert [k["name"] for k in json.loads(cli("keys", "list", "--json", "--user", "ana", env=env).stdout)] == ["laptop"]
    assert json.loads(cli("keys", "list", "--json", "--user", "local", env=env).stdout) == []
    assert cli("keys", "revoke", "--name", "laptop", env=env).returncode == 0
    assert json.loads(cli("keys", "list", "--json", env=env).stdout)[0]["revoked_at"]


def test_a_user_stored_before_the_naming_rule_can_still_be_named(cli, tmp_path):
    """A user kept from before the naming rule ("my laptop", which the CLI once made) could not be named by --user
    at all, so their sessions and keys were out of the terminal's reach; the rule is for new names, and those are
    still refused, by looking or by making (keys list made the user it was asked about)."""
    from app.store import open_repository
    from app.store.accounts import _new_user

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")},
           "INTERVIEWER_DATA_DIR": str(tmp_path / "data")}
    (tmp_path / "data").mkdir()
    repo = open_repository(f"sqlite:///{tmp_path / 'data' / 'interviewer.db'}")
    with repo._writing() as session:  # as an older CLI stored it, past today's rule
        _new_user(session, "my laptop")
    nothing = cli("sessions", "--user", "my laptop", env=env)  # what to type next is quoted for the shell
    assert nothing.returncode == 0 and nothing.stderr.strip() == (
        "No sessions for user 'my laptop': start one with `interviewer interview --user 'my laptop'`.")
    created = cli("keys", "create", "--name", "old", "--user", "my laptop", "--json", env=env)
    assert created.returncode == 0, created.stderr
    listed = cli("keys", "list", "--json", env={**env, "INTERVIEWER_USER": "my laptop"})
    assert [k["name"] for k in json.loads(listed.stdout)] == ["old"]
    for name in ("my desktop", ".ana"):  # not stored: still refused, and not made
        refused = cli("keys", "list", "--user", name, env=env)
        assert refused.returncode == 2 and refused.stderr.startswith("error: --user (or INTERVIEWER_USER): ")
    assert cli("keys", "list", "--user", "newcomer", env=env).returncode == 0
    assert repo.user_named("newcomer") is None  # looking made no user
    assert repo.user_for_key(json.loads(created.stdout)["key"]).name == "my laptop"


def test_bank_validate_names_both_ids_of_a_question_asked_twice(cli, tmp_path):
    from knowledge.loader import load_bank

    first, second = ({**q.model_dump(mode="json"), "related": [], "sources": [{"seed": "cards.txt", "ref": "#1"}]}
                     for q in [q for q in load_bank() if q.code is None][:2])
    first["question"] = "Why would my own pack ask about tensor strides?"
    second["question"] = first["question"].lower() + "  "
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "mine.yaml").write_text(yaml.safe_dump([first, second], sort_keys=False), encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")},
           "INTERVIEWER_DATA_DIR": str(tmp_path / "data"), "INTERVIEWER_BANK_DIR": str(pack)}
    done = cli("bank", "validate", env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    line = f"mine.yaml: entry {second['id']}: field question: same text as entry {first['id']} in mine.yaml"
    assert line in " ".join(done.stderr.split()), done.stderr
    assert "1 problem(s) in the bank" in done.stderr  # the pack's own source file is no problem
    # An interview on the pack was started without a word of it: it says so in one line (and still runs). A
    # process of its own: the line is a logged warning, which reaches stderr through the process's logging set-up.
    interview = run("interview", "--questions", "1", env=env, stdin=":quit\n")
    assert interview.returncode == 0 and "Traceback" not in interview.stderr, interview.stderr
    warned = [said for said in interview.stderr.splitlines() if said.startswith("warning: ")]
    assert warned == [f"warning: {line}; served all the same, and a session may ask both: give one of them another "
                      "text"], interview.stderr


def test_a_session_is_named_by_the_start_of_its_id_unless_that_starts_several():
    """The terminal takes the start of an id as the app shows it (8 characters); one starting several is one line."""
    from app.cli_sessions import full_session_id
    from app.errors import UserFacingError

    class Sessions:
        ids = ["ab12cd0000", "ab12ef0000", "ff00000000"]

        def get_session(self, given, user_id):
            return given if given in self.ids else None

        def session_ids_starting(self, prefix, user_id, limit):
            return [i for i in self.ids if i.startswith(prefix)][:limit]

    repo = Sessions()
    assert full_session_id(repo, 1, "ff00") == "ff00000000"
    assert full_session_id(repo, 1, "ab12ef0000") == "ab12ef0000"
    assert full_session_id(repo, 1, "FF00") == "ff00000000"  # on PostgreSQL too, whose LIKE minds the case
    assert full_session_id(repo, 1, "0000") == "0000"
    with pytest.raises(UserFacingError, match=r"no session 'ff0' .*; name a session by its id or its first 8 char"):
        full_session_id(repo, 1, "ff0")  # too short to read as a start (review2 s54: "no session" and no more)
    with pytest.raises(UserFacingError, match=r"'ab12' starts 2 session ids \(ab12cd0000, ab12ef0000\); give more"):
        full_session_id(repo, 1, "ab12")


def test_a_refused_user_name_on_a_fresh_or_unreachable_store_is_the_names_error(cli, tmp_path):
    """Review2 s54: looking the refused name up among stored users created the database of a fresh data directory,
    and with the database down the user was told of the connection instead of the name."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")},
           "INTERVIEWER_DATA_DIR": str(tmp_path / "fresh")}
    for extra in ({}, {"INTERVIEWER_DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:9/none"}):
        out = cli("sessions", "--user", "my laptop", env={**env, **extra})
        assert out.returncode == 2 and out.stderr.startswith("error: --user (or INTERVIEWER_USER): a user name "), \
            out.stderr
    assert not (tmp_path / "fresh" / "interviewer.db").exists()


class _TimedEngine:
    """Scores nothing: notes what the terminal had said when an answer was sent, and ends the session."""

    hint = skip = repeat = dont_know = finish = None

    def __init__(self, console) -> None:
        self.console, self.said_before_scoring = console, None

    def answer(self, **_: object):
        from app.interview.models import TurnOutcome

        self.said_before_scoring = self.console.export_text(clear=False)
        return TurnOutcome(status="completed")


def _timed_prompt():
    from datetime import UTC, datetime

    from app.interview.models import Prompt, PromptKind

    return Prompt(turn=0, kind=PromptKind.QUESTION, question_id="q", text="What is a tensor?", topic="tensors",
                  difficulty=1, number=1, total=1, time_limit_s=30, asked_at=datetime.now(UTC))


@pytest.mark.parametrize("asked_s_ago, typing_s", [(0, 0), (0, 40), (45, 0)], ids=["in-time", "typed-past", "resumed"])
def test_the_terminal_shows_a_prompts_time_limit_and_says_time_is_up_before_scoring(monkeypatch, asked_s_ago, typing_s):
    """A timed question's limit was never shown in the terminal, yet a late answer scored half: the candidate first
    read of it in the report's penalties (review s55). Now it is shown with the prompt and, past it, said to be up:
    on the prompt shown after the limit (resumed) and before a late answer is scored."""
    import io

    from rich.console import Console

    from app import cli_interview
    from app.interview import turns

    clock = {"elapsed": asked_s_ago}  # since the prompt was asked; the typing time is added as the answer is read
    monkeypatch.setattr(turns, "elapsed_s", lambda since: clock["elapsed"])

    class Typing(io.StringIO):
        def __next__(self) -> str:
            clock["elapsed"] = asked_s_ago + typing_s
            return super().__next__()

    console = Console(record=True, width=200)
    engine = _TimedEngine(console)
    cli_interview.run_interview(engine, 1, "s", _timed_prompt(), Typing("A tensor.\n.\n"), console)
    shown = " ".join(engine.said_before_scoring.split())
    if asked_s_ago:  # resumed past its limit: said with the prompt, and again as the answer is sent
        assert "Time is up (30 s): an answer given now scores half." in shown and "Time limit:" not in shown
    else:
        assert "Time limit: 30 s on this question, 0:30 left: an answer after that scores half." in shown, shown
        assert "Time is up (30 s): an answer given now" not in shown
    late = bool(asked_s_ago or typing_s)
    assert ("Time is up (30 s): this answer scores half." in shown) is late, shown


def test_a_terminal_interview_starts_timed_with_the_apis_option_name(monkeypatch):
    """The app and the API could time each question (`time_limit_s`); `interviewer interview` could not."""
    import typer
    from typer.testing import CliRunner

    from app import cli_interview, cli_output, services
    from app.errors import UserFacingError

    started = []

    class Engine:
        def start(self, *, user_id, config):
            started.append(config)
            raise UserFacingError("started")  # what follows is the terminal interview tested elsewhere

    class Repo:
        def get_or_create_user(self, name):
            return type("User", (), {"id": 1})()

    class Store:
        def close(self):  # the command closes the store it opened
            pass

    monkeypatch.setattr(services, "repository_for", lambda settings: Repo())
    monkeypatch.setattr(services, "engine_for", lambda settings, **_: Engine())
    monkeypatch.setattr(cli_output, "open_bank_search", lambda settings: Store())
    monkeypatch.setattr(cli_interview, "unfinished_note", lambda *_: None)
    root = typer.Typer()
    root.callback()(lambda: None)
    cli_interview.register(root)

    run_in = CliRunner().invoke
    out = run_in(root, ["interview", "--mode", "interview", "--questions", "1", "--time-limit-s", "45"])
    assert isinstance(out.exception, UserFacingError), out.output
    assert [(c.time_limit_s, c.mode.value) for c in started] == [(45, "interview")]
    assert run_in(root, ["interview"]).exception is not None and started[-1].time_limit_s is None  # untimed
    too_short = run_in(root, ["interview", "--time-limit-s", "10"])
    assert too_short.exit_code == 2 and "--time-limit-s" in too_short.output
    resumed = run_in(root, ["interview", "--resume", "--time-limit-s", "60"])
    assert "leave out --time-limit-s" in str(resumed.exception)
