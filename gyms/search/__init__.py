"""DeepSearch: multi-hop questions over a generated world's articles, with a real BM25 search
engine, as a text environment.

Needs the ``[search]`` extra (the ``bm25s`` package).
"""

from colbench.gyms.search.corpus import Document, build_corpus
from colbench.gyms.search.env import DeepSearchEnv
from colbench.gyms.search.game import parse_action
from colbench.gyms.search.index import Hit, SearchIndex
from colbench.gyms.search.oracle import DeepSearchOracle
from colbench.gyms.search.questions import Question, generate_questions
from colbench.gyms.search.scoring import exact_match, normalize_answer, token_f1
from colbench.gyms.search.tasks import Corpus, load_corpus, load_search_tasks
from colbench.gyms.search.world import Entity, World, generate_world

__all__ = [
    "Corpus", "DeepSearchEnv", "DeepSearchOracle", "Document", "Entity", "Hit", "Question",
    "SearchIndex", "World", "build_corpus", "exact_match", "generate_questions",
    "generate_world", "load_corpus", "load_search_tasks", "normalize_answer", "parse_action",
    "token_f1",
]
