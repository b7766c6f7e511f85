"""All settings in one place: INTERVIEWER_* environment variables or a .env file."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ADMIN_KEY_MIN_CHARS = 32
# The user a server with auth_disabled acts as, and the terminal's when no --user is given: named once here, below
# both front ends, so that the terminal's history and the local app's stay one (each front end wrote it apart).
LOCAL_USER = "local"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="INTERVIEWER_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    data_dir: Path = Path("data")
    # The YAML question bank; point it elsewhere to interview on your own question pack.
    bank_dir: Path = Path(__file__).resolve().parent.parent / "knowledge" / "bank"
    # Empty means SQLite under data_dir; a URL (postgresql+psycopg://...) selects another database.
    database_url: str = ""
    # Chroma: embedded PersistentClient under data_dir unless a server host is given.
    chroma_host: str = ""
    chroma_port: int = 8000
    chroma_collection: str = "question_bank"
    # Embedding model: "minilm" (offline ONNX, default), "minilm-fp32" (its float32 reference),
    # "hash" (tests only), or "openai".
    embedder: str = "minilm"
    openai_embedding_model: str = "text-embedding-3-small"
    # How the API server runs MiniLM: "runners" (single-threaded, one queue: best when requests
    # overlap) or "threads" (ORT's own threads: best for one caller at a time). See embeddings.py.
    server_embedding: Literal["runners", "threads"] = "runners"

    # Optional LLM mode: any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp server).
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key: SecretStr = SecretStr("not-needed")
    llm_timeout_s: float = Field(default=20.0, gt=0, le=300)
    llm_max_retries: int = Field(default=1, ge=0, le=5)
    # Judge calls sent at once for a batch of answers; 1 for a server that answers one request at a time (a queued
    # call's timeout runs while it waits), as `make run-llm`'s llama-cpp-python does.
    llm_calls_in_flight: int = Field(default=4, ge=1, le=32)
    # The reply's length limit, and the model's context window (0: as the server reports it, if it
    # does); the judge's prompt must fit the window less the reply, or the answer is scored offline.
    llm_max_tokens: int = Field(default=1024, ge=16, le=32_768)
    llm_context_tokens: int = Field(default=0, ge=0)
    # How to ask for JSON: "auto" tries json_schema, then json_mode, then function_calling, once.
    llm_structured_output: Literal["auto", "json_schema", "json_mode", "function_calling"] = "auto"

    # API
    auth_disabled: bool = False
    # Turns on /v1/admin (accounts and their keys over HTTP) for whoever sends it as a bearer token; empty
    # leaves those routes off (404).
    admin_key: SecretStr = SecretStr("")
    api_url: str = "http://127.0.0.1:8000"  # where the Streamlit app finds the API
    cors_origins: list[str] = Field(default_factory=list)
    max_answer_chars: int = Field(default=20_000, gt=0)
    max_code_chars: int = Field(default=50_000, gt=0)
    code_checks_per_minute: int = Field(default=30, gt=0)
    code_checks_in_flight: int = Field(default=1, gt=0)
    # POST /v1/grade and /v1/grade/batch one user may have running at once: each holds a thread of the slow
    # routes for as long as the model takes, so without it one key's batches took every slot from everyone.
    grading_in_flight: int = Field(default=2, gt=0)

    # Code runner
    runner_workers: int = Field(default=0, ge=0, le=32)  # 0 means one per core
    runner_timeout_s: float = Field(default=10.0, gt=0, le=120)
    runner_memory_mb: int = Field(default=2048, ge=256)  # a submission's address space, per process
    # The whole jail together (its cgroup: the warm worker, every process of a submission, memfds, /tmp and
    # its kernel objects). 0: runner_memory_mb + the jail's 64 MiB /tmp + 512 MiB for the warm worker,
    # and 32 tasks beyond a submission's own 32.
    runner_jail_memory_mb: int = Field(default=0, ge=0)
    runner_jail_tasks: int = Field(default=0, ge=0)
    runner_allow_unsandboxed: bool = False

    @field_validator("llm_base_url")
    @classmethod
    def _an_http_url(cls, value: str) -> str:
        """Checked here, so a typo is one line at start-up rather than a traceback from the HTTP client."""
        if not value:
            return value
        import httpx

        try:
            url = httpx.URL(value)
        except (httpx.InvalidURL, ValueError) as exc:
            raise ValueError(f"INTERVIEWER_LLM_BASE_URL {value!r} is not a URL ({exc})") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"INTERVIEWER_LLM_BASE_URL {value!r} is not an http(s) URL with a host")
        return value

    @field_validator("admin_key")
    @classmethod
    def _a_strong_admin_key(cls, value: SecretStr) -> SecretStr:
        """It can make and revoke every account's keys: a short one is refused at start-up, not guessed later."""
        if value.get_secret_value() and len(value.get_secret_value()) < ADMIN_KEY_MIN_CHARS:
            raise ValueError(f"INTERVIEWER_ADMIN_KEY is shorter than {ADMIN_KEY_MIN_CHARS} characters; make one "
                             "with: python -c 'import secrets; print(secrets.token_urlsafe(32))'")
        return value

    @model_validator(mode="after")
    def _llm_needs_both(self) -> Settings:
        if bool(self.llm_base_url) != bool(self.llm_model):
            raise ValueError(
                "LLM mode needs both INTERVIEWER_LLM_BASE_URL and INTERVIEWER_LLM_MODEL "
                "(set both, or neither for the offline interviewer)"
            )
        return self

    @model_validator(mode="after")
    def _jail_holds_a_submission(self) -> Settings:
        if self.runner_jail_memory_mb and self.runner_jail_memory_mb < self.runner_memory_mb + 256:
            raise ValueError(
                f"INTERVIEWER_RUNNER_JAIL_MEMORY_MB={self.runner_jail_memory_mb} leaves no room for the warm worker "
                f"beside a submission's {self.runner_memory_mb} MB: set 0 (derived) or at least "
                f"{self.runner_memory_mb + 256}"
            )
        if self.runner_jail_tasks and self.runner_jail_tasks < 8:
            raise ValueError("INTERVIEWER_RUNNER_JAIL_TASKS below 8 cannot start a worker: set 0 (derived) or more")
        return self

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)

    @property
    def chroma_path(self) -> Path:
        return self.data_dir / "chroma"

    @property
    def rubric_vectors_path(self) -> Path:
        return self.data_dir / "rubric-vectors.sqlite3"

    @property
    def sqlite_path(self) -> Path:
        """The database file used when no database URL is given."""
        return self.data_dir / "interviewer.db"

    @property
    def sqlalchemy_url(self) -> str:
        return self.database_url or f"sqlite:///{self.sqlite_path}"


@lru_cache
def get_settings() -> Settings:
    """The process's settings, read once; tests clear the cache to swap them. A setting that cannot be read
    at all (a list not written as JSON, a .env that is not UTF-8) is one line, as a bad value is."""
    from pydantic_settings import SettingsError

    from app.errors import UserFacingError

    try:
        return Settings()
    except (SettingsError, UnicodeDecodeError) as exc:
        why = ("the .env file is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else
               f'{exc} (a list such as INTERVIEWER_CORS_ORIGINS is written as JSON: ["http://localhost:8501"])')
        raise UserFacingError(f"settings: {why}") from None
