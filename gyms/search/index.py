"""BM25 search over a corpus, through the ``bm25s`` library.

Text is lower-cased, split into word characters, and English stop words are dropped (the
list ``bm25s`` ships); the title of a document counts twice, since a search engine weighs
titles. Results are ranked by score and, at equal scores, by document id, so a search gives
the same list on every machine (numpy's partial sort leaves the order of ties open).

An index is built once per corpus and kept in the suite's private cache folder
(``$COLBENCH_CACHE/search/``), under a name carrying the world's seed and a fingerprint of
the generator's code; a later process loads it instead of building it, and a damaged or
stale entry is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from colbench.errors import MissingExtraError

try:
    import bm25s
    from bm25s.stopwords import STOPWORDS_EN
except ImportError as exc:  # pragma: no cover - the extra is installed in CI
    raise MissingExtraError("the deep-search gym", "search", "bm25s") from exc

from colbench.gyms.search.corpus import Document

_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(STOPWORDS_EN)
#: How far past ``k`` a search reads BM25's ranking, so that ties at the cut are ordered
#: by document id rather than by numpy's partial sort.
_TIE_MARGIN = 16
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
SNIPPET_CHARS = 240


def tokenize(text: str) -> list[str]:
    """The index's terms of ``text``: lower-cased words, stop words left out."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def corpus_hash(documents: Sequence[Document]) -> str:
    """A hash of the documents' ids, titles and texts, in order."""
    digest = hashlib.sha256()
    for document in documents:
        digest.update(json.dumps([document.id, document.title, document.text]).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Hit:
    """One search result: the document, its BM25 score and a snippet of its text."""

    document: Document
    score: float
    snippet: str


def snippet(document: Document, query_terms: set[str], limit: int = SNIPPET_CHARS) -> str:
    """The document's sentence that shares most terms with the query (the first one at a
    tie), cut to ``limit`` characters."""
    sentences = _SENTENCE.split(document.text)
    best = max(sentences, key=lambda s: (len(query_terms & set(tokenize(s))), -sentences.index(s)))
    return best if len(best) <= limit else best[:limit - 3].rstrip() + "..."


class SearchIndex:
    """A BM25 index over ``documents`` (see the module docstring)."""

    def __init__(self, documents: Sequence[Document],
                 retriever: bm25s.BM25 | None = None) -> None:
        self.documents = list(documents)
        self.by_id = {d.id: d for d in self.documents}
        if retriever is None:
            retriever = bm25s.BM25()
            retriever.index([tokenize(f"{d.title} {d.title} {d.text}") for d in self.documents],
                            show_progress=False)
        self.retriever = retriever

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The top ``k`` documents for ``query`` with a positive score, best first."""
        terms = [t for t in tokenize(query) if t in self.retriever.vocab_dict]
        if not terms or k < 1:
            return []
        wanted = min(len(self.documents), k + _TIE_MARGIN)
        found, scores = self.retriever.retrieve([terms], k=wanted, show_progress=False,
                                                n_threads=0)
        pairs = zip(found[0], scores[0], strict=True)
        ranked = sorted(((round(float(s), 5), int(i)) for i, s in pairs if s > 0),
                        key=lambda pair: (-pair[0], self.documents[pair[1]].id))
        query_terms = set(terms)
        return [Hit(self.documents[i], score, snippet(self.documents[i], query_terms))
                for score, i in ranked[:k]]

    def save(self, folder: Path) -> None:
        """Write the BM25 index (numpy arrays and JSON, no pickles) to ``folder``, with the
        hash of the documents it was built for."""
        self.retriever.save(str(folder), show_progress=False)
        (folder / "documents.json").write_text(json.dumps(corpus_hash(self.documents)))

    @classmethod
    def load(cls, folder: Path, documents: Sequence[Document]) -> SearchIndex:
        """The index saved in ``folder`` for ``documents`` (ValueError when it was saved for
        other documents or cannot be read)."""
        try:
            saved = json.loads((folder / "documents.json").read_text())
            retriever = bm25s.BM25.load(str(folder), show_progress=False, verbosity=0)
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"unreadable index in {folder}: {exc}") from exc
        if saved != corpus_hash(documents):
            raise ValueError(f"the index in {folder} was built for other documents")
        return cls(documents, retriever)


_lock = threading.Lock()


def cached_index(documents: Sequence[Document], folder: Path) -> SearchIndex:
    """The index of ``documents`` saved in ``folder``, else built and saved there (a
    damaged entry is rebuilt)."""
    with _lock:
        if (folder / "documents.json").is_file():
            try:
                return SearchIndex.load(folder, documents)
            except ValueError:
                shutil.rmtree(folder, ignore_errors=True)
        index = SearchIndex(documents)
        partial = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True, mode=0o700)
        index.save(partial)
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
        return index
