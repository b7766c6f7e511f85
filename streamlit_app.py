"""Practice page: search the bank, answer a question, get rubric feedback with quoted evidence.

Interim front end until the HTTP API lands: it calls the same services the API will wrap, and holds
no scoring logic of its own.
"""

from __future__ import annotations

import streamlit as st

from app.config import get_settings
from app.errors import domain_errors, one_line
from knowledge.schema import Topic

st.set_page_config(page_title="PyTorch mock interviewer", page_icon="🎤", layout="wide")


@st.cache_resource
def services():
    from app.services import embedder_for, store_for
    from evaluators.rubric import RubricScorer
    from knowledge.loader import bank_index

    settings = get_settings()
    return store_for(settings), RubricScorer(embedder_for(settings)), bank_index(settings.bank_dir)


def show_evaluation(evaluation) -> None:
    st.metric("Score", f"{evaluation.score} / 5")
    for point in evaluation.points:
        icon = {"covered": "✅", "partial": "🟡", "missed": "❌"}[point.verdict.value]
        line = f"{icon} **{point.description}**"
        if point.evidence:
            line += f"  \n> {point.evidence}"
        st.markdown(line)
    for wrong in evaluation.misconceptions:
        st.error(f'Wrong: "{wrong.quote}". {wrong.correction}')
    with st.expander("Model answer"):
        st.markdown(evaluation.model_answer)


def main() -> None:
    settings = get_settings()
    st.title("PyTorch & deep-learning mock interviewer")
    st.caption("LLM: " + (settings.llm_model if settings.llm_enabled else "none, offline interviewer in use"))
    try:
        store, scorer, bank = services()
        topic = st.sidebar.selectbox("Topic", ["any", *(t.value for t in Topic)])
        query = st.sidebar.text_input("Find a question", value="autograd")
        filters = {"topic": None if topic == "any" else topic}
        hits = store.search(query or "pytorch", k=10, filters=filters) if query.strip() else []
        if not hits:
            st.info("No question matches; try other words or another topic.")
            return
        choice = st.sidebar.radio("Questions", [h.id for h in hits], format_func=lambda i: bank[i].question[:70])
        question = bank[choice]
        st.subheader(question.question)
        st.caption(f"{question.topic.value} · difficulty {question.difficulty} · {question.kind.value}")
        if question.code:
            st.markdown(question.code.contract)
        answer = st.text_area("Your answer", height=200, key=f"answer-{choice}")
        if st.button("Score my answer", type="primary"):
            from evaluators.base import GradingTask

            show_evaluation(scorer.evaluate(GradingTask.from_question(question, answer)))
    except domain_errors() as exc:
        st.error(one_line(exc))


main()
