"""One fake reranker and one tiny-model builder in the tests: ``tests/support/fakes.py``
holds the only fake reranker and ``tests/support/tiny_models.py`` the only model builders. A test file
elsewhere that defines a class named ``Fake...`` with a ``score`` method, subclasses ``FakeReranker`` to
change its ``score``, or builds a model configuration itself (``BertConfig(``, ``Qwen3Config(``,
``Qwen2Config(``) fails this test, named by file and line. The benchmarks are held to the builder rule too
(they build their models through tests/support/tiny_models.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import sources

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = ROOT / "tests" / "support"
CONFIGS = frozenset({"BertConfig", "Qwen3Config", "Qwen2Config"})
# file (relative to the repository) -> why it may define its own fake or model configuration
ALLOWED: dict[str, str] = {
    "tests/equality/test_reference_memory.py": "a one-layer Qwen3 with the real 151,669-word vocabulary, "
    "whose logits' memory is what the test measures (build_qwen's tiny vocabulary cannot show it)",
    "tests/gpu/checks.py": "the same real-vocabulary Qwen3 on the GPU, for the reference's memory check",
}
USE_FAKE = "use tests.support.fakes.FakeReranker (its keywords; on_call for a test's own hook)"
USE_BUILDER = "build it with tests.support.tiny_models (build_bert, build_sentence_transformer, build_qwen)"


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _base_names(node: ast.ClassDef) -> set[str]:
    return {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}


def offences(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line what`` for each fake reranker class or model configuration built in ``path``."""
    rel = path.relative_to(root).as_posix()
    tree = sources.tree(path)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            scores = any(isinstance(n, ast.FunctionDef) and n.name == "score" for n in node.body)
            if scores and (node.name.startswith("Fake") or "FakeReranker" in _base_names(node)):
                what = f"class {node.name} with a score method"
                found.append((node.lineno, f"{rel}:{node.lineno} {what}: {USE_FAKE}"))
        elif isinstance(node, ast.Call) and _called_name(node) in CONFIGS:
            found.append((node.lineno, f"{rel}:{node.lineno} {_called_name(node)}(...): {USE_BUILDER}"))
    return [text for _, text in sorted(found)]


def scanned(root: Path = ROOT) -> list[Path]:
    support = root / "tests" / "support"
    files = [p for p in sorted((root / "tests").rglob("*.py")) if not p.is_relative_to(support)]
    return files + sorted((root / "benchmarks").rglob("*.py"))


def test_one_fake_reranker_and_one_model_builder() -> None:
    files = scanned()
    assert len(files) > 100 and (SUPPORT / "fakes.py").is_file() and (SUPPORT / "tiny_models.py").is_file()
    found = [o for p in files for o in offences(p) if p.relative_to(ROOT).as_posix() not in ALLOWED]
    assert found == [], f"{len(found)} fake(s) or model config(s) outside tests/support:\n" + "\n".join(found)


def test_the_support_modules_hold_what_the_rule_points_to() -> None:
    """The rule's two places are not empty: the fake and the builders are where the messages send a reader."""
    fakes = [o.split(" ", 1)[1].split(" with")[0] for o in offences(SUPPORT / "fakes.py")]
    assert fakes == ["class FakeReranker"]
    built = {o.split(" ", 1)[1].split("(")[0] for o in offences(SUPPORT / "tiny_models.py")}
    assert built == CONFIGS


def test_the_rule_catches_each_kind(tmp_path: Path) -> None:
    bad = tmp_path / "tests" / "x" / "test_bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "from transformers import BertConfig\n"
        "import transformers\n"
        "class FakeModel:\n"
        "    def score(self, q, p): ...\n"
        "class Slow(FakeReranker):\n"
        "    def score(self, q, p): ...\n"
        "class FakeTime:\n"  # a fake of something else, without score: allowed
        "    def now(self): ...\n"
        "cfg = BertConfig(vocab_size=3)\n"
        "q = transformers.Qwen2Config()\n"
        "text = 'Qwen3Config(' \n",  # a string is not a call
        encoding="utf-8",
    )
    got = [o.split(" ", 1)[0] for o in offences(bad, tmp_path)]
    assert got == [
        "tests/x/test_bad.py:3",
        "tests/x/test_bad.py:5",
        "tests/x/test_bad.py:9",
        "tests/x/test_bad.py:10",
    ]
