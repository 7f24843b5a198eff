"""The code record's versions from uv.lock (analysis.reporting.codeinfo._locked): uv's own layout is read by a
pattern instead of tomllib (0.2 s of a cold report's CPU); every lock gives tomllib's answer."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from analysis.reporting import codeinfo

REPO_LOCK = Path(__file__).resolve().parents[2] / "uv.lock"

HEAD = 'version = 1\nrequires-python = ">=3.11"\n\n'
TWO = (
    '[[package]]\nname = "Foo_Bar"\nversion = "1.0"\nsource = { registry = "https://pypi.org/simple" }\n\n'
    '[[package]]\nname = "baz"\nversion = "2.0.post1"\ndependencies = [\n    { name = "foo-bar" },\n]\n'
)


def _tomllib(data: bytes) -> list[tuple[str, str]]:
    packages = tomllib.loads(data.decode("utf-8")).get("package", [])
    return list({codeinfo._norm(str(p.get("name"))): str(p.get("version")) for p in packages}.items())


@pytest.mark.parametrize(
    "text",
    [
        HEAD + TWO,  # uv's layout: the pattern
        HEAD + TWO + '\n[[package]]\nname = "baz"\nversion = "3"\n',  # a name twice: the last, as tomllib
        HEAD + TWO.replace('version = "2.0.post1"', 'version  = "2.0.post1"'),  # other spacing: tomllib
        HEAD + TWO.replace('[[package]]\nname = "baz"', '[[ package ]]\nname = "baz"'),
        HEAD + TWO.replace('version = "1.0"\n', ""),  # no version: tomllib ("None")
        HEAD + 'note = """\n[[package]]\nname = "ghost"\nversion = "9"\n"""\n' + TWO,  # hidden in a string
        HEAD + TWO + '[[other]]\nname = "x"\nversion = "1"\n',
        HEAD + TWO.replace('"1.0"', '"1.\\u0030"'),  # an escape: tomllib decodes it
        HEAD + TWO + '[metadata] # [[package]]\nname = "ghost"\nversion = "9"\n',  # not a line's start
        HEAD + TWO + 'x = ["[["]\n',  # "[[" elsewhere: the lines are counted
    ],
)
def test_locked_versions_are_tomllibs(text: str) -> None:
    data = text.encode()
    codeinfo._locked.cache_clear()
    assert list(codeinfo._locked(data).items()) == _tomllib(data)


def test_the_repositorys_lock_takes_the_pattern_and_reads_the_same() -> None:
    data = REPO_LOCK.read_bytes()
    text = data.decode()
    assert len(codeinfo._lock_packages(text)) == len(codeinfo._TABLE_ARRAY.findall(text)) > 100
    codeinfo._locked.cache_clear()
    assert list(codeinfo._locked(data).items()) == _tomllib(data)


def test_a_broken_lock_outside_uvs_layout_still_raises() -> None:
    codeinfo._locked.cache_clear()
    with pytest.raises(tomllib.TOMLDecodeError):
        codeinfo._locked(b'[[package]]\nname = "a"\nversion = 1.0.0\n')
