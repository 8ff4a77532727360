"""DeepSearch's actions as OpenAI tools (``colbench.tools``), per protocol: each stands for
the message the env's grammar reads (``search[...]`` under colbench's protocol, the
``<search>`` tags under ``agentgym``)."""

from __future__ import annotations

from colbench.tools import ActionTool

_QUERY = {"query": {"type": "string", "description": "what to search for, e.g. a name"}}
_ANSWER = {"text": {"type": "string",
                    "description": "the answer: a name, a year or a few words"}}

COLBENCH_TOOLS = (
    ActionTool(name="search", template="Action: search[{query}]", properties=_QUERY,
               description="Search the articles: the best matches with their ids, titles and "
                           "a snippet each."),
    ActionTool(name="open", template="Action: open[{doc_id}]",
               description="Read the whole article with this id (ids come from search "
                           "results, e.g. d0042).",
               properties={"doc_id": {"type": "string", "description": "the article's id"}}),
    ActionTool(name="answer", template="Action: answer[{text}]", properties=_ANSWER,
               description="Give the final answer; this ends the episode."),
)

AGENTGYM_TOOLS = (
    ActionTool(name="search", template="<search>{query}</search>", properties=_QUERY,
               description="Search: the top passages come back between <information> tags."),
    ActionTool(name="answer", template="<answer>{text}</answer>", properties=_ANSWER,
               description="Answer; a wrong answer may be followed by more searches."),
)
