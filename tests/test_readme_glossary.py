"""docs/glossary.md explains the terms a newcomer meets in colbench's output (issue 26), and
the names it lists are the code's: the blind baselines, the protocols and the scorers a run
records."""

from __future__ import annotations

import re
from pathlib import Path

from benchmark_scripts import load_benchmark

from colbench import registry, suites

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "docs" / "glossary.md"

#: Terms the output shows that the glossary must explain (issue 26 names most of them).
REQUIRED = ("blind baseline", "oracle", "generator-check", "privileged data", "protocol",
            "pass@k", "pass^k", "effective sample size", "ci95", "scorer", "error / ok",
            "failure", "terminated / truncated", "isolation", "task set, hash",
            "simulated human", "score", "success, success rate", "trials")


def entries() -> dict[str, str]:
    """Bold term -> its paragraph."""
    text = GLOSSARY.read_text(encoding="utf-8")
    found = {}
    for paragraph in text.split("\n\n"):
        match = re.match(r"\*\*([^*]+)\*\*", paragraph)
        if match:
            found[match.group(1)] = paragraph
    return found


def names_in(paragraph: str) -> set[str]:
    return set(re.findall(r"`([a-z][a-z0-9+-]*)`", paragraph))


def test_the_glossary_explains_the_terms_of_the_output():
    parts = {part for term in entries() for part in (term, *term.split(", "))}
    missing = [term for term in REQUIRED if term not in parts]
    assert not missing, f"docs/glossary.md does not explain {missing}"
    terms = list(entries())
    assert terms == sorted(terms, key=str.lower), "the glossary's terms are not in order"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/glossary.md)" in readme.split("\n## ", 1)[0]


def test_the_blind_baselines_it_lists_are_the_benchmarks():
    bench = load_benchmark("bench_baselines").ENVS.values()
    baselines = {name for env in bench for name in env.baselines}
    assert names_in(entries()["blind baseline"]) == baselines


def test_the_protocols_it_lists_are_the_suites():
    declared = {name for manifest in suites.manifests().values() for name in manifest.protocols}
    listed = names_in(entries()["protocol"].split(":", 1)[0])
    assert listed == declared, f"suites declare {sorted(declared)}, the glossary {sorted(listed)}"


def test_the_scorers_it_lists_are_recorded_by_the_code():
    from colbench.gyms.backend.replay import SCORER_PROTOCOLS

    paragraph = entries()["scorer"]
    # Each scorer's name stands before the colon that explains it (`clip` and `perceptual`:).
    listed = set(re.findall(r"`([a-z][a-z0-9+-]*)`(?=:|\s+and\s+`)", paragraph))
    known = set(SCORER_PROTOCOLS) | set(registry.scorers.names()) | {"web-checkers"}
    assert set(SCORER_PROTOCOLS) | set(registry.scorers.names()) <= listed
    assert listed <= known, f"the glossary names scorers no code records: {listed - known}"
    web = (ROOT / "gyms" / "web" / "env.py").read_text(encoding="utf-8")
    assert 'scorer="web-checkers"' in web
