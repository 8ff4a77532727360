"""DeepSearch's BM25 index: built once per world and cached on disk, loaded in later
processes, rebuilt when damaged or stale; a title search finds its article."""

from __future__ import annotations

import pytest

bm25s = pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")

from colbench.gyms.search import index as index_module  # noqa: E402
from colbench.gyms.search.corpus import build_corpus  # noqa: E402
from colbench.gyms.search.index import SearchIndex, cached_index  # noqa: E402
from colbench.gyms.search.tasks import load_corpus  # noqa: E402
from colbench.gyms.search.world import generate_world  # noqa: E402

SMALL = {"country": 3, "city": 12, "person": 40, "organisation": 12, "work": 20}


@pytest.fixture(scope="module")
def documents():
    return build_corpus(generate_world(9, SMALL))


def test_a_cached_index_is_loaded_not_rebuilt(tmp_path, documents, monkeypatch) -> None:
    folder = tmp_path / "index"
    built = cached_index(documents, folder)
    assert (folder / "documents.json").is_file()

    def refuse(*args, **kwargs):
        raise AssertionError("the index was built again")

    monkeypatch.setattr(bm25s.BM25, "index", refuse)
    loaded = cached_index(documents, folder)
    for query in ("founded", documents[5].title, "capital city"):
        assert [(h.document.id, h.score) for h in loaded.search(query)] == [
            (h.document.id, h.score) for h in built.search(query)]


def test_a_damaged_or_foreign_index_is_rebuilt(tmp_path, documents) -> None:
    folder = tmp_path / "index"
    cached_index(documents, folder)
    (folder / "params.index.json").write_text("{not json")
    rebuilt = cached_index(documents, folder)
    assert rebuilt.search(documents[0].title)[0].document.id == documents[0].id
    other = build_corpus(generate_world(10, SMALL))
    for_other = cached_index(other, folder)  # built for other documents: rebuilt for these
    assert for_other.search(other[3].title)[0].document.id == other[3].id


def test_the_worlds_index_lives_in_the_private_search_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COLBENCH_CACHE", str(tmp_path))
    load_corpus.cache_clear()
    try:
        corpus = load_corpus(77)
    finally:
        load_corpus.cache_clear()
    folders = list((tmp_path / "search").glob("index-s77-g*"))
    assert len(folders) == 1 and (tmp_path / "search").stat().st_mode & 0o077 == 0
    assert corpus.index.search(corpus.documents[10].title)[0].document.id == "d0010"


def test_every_title_search_finds_its_article_first_or_near(documents) -> None:
    index = SearchIndex(documents)
    for document in documents:
        assert document.id in [h.document.id for h in index.search(document.title, 5)]


def test_snippets_are_the_sentence_that_matches_best(documents) -> None:
    index = SearchIndex(documents)
    person = next(d for d in documents if "birthplace" in d.text or "was born in" in d.text)
    hit = index.search(f"{person.title} born", 5)[0]
    assert hit.document.id == person.id
    assert len(hit.snippet) <= index_module.SNIPPET_CHARS and hit.snippet in person.text
