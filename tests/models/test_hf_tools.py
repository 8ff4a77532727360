"""``hf:...?tools=1``: prompts render the env's tools through the chat template's tool
support, and a reply's tool call, read by the tokenizer, becomes the env's message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import colbench
from colbench.models.base import EpisodeContext

pytest.importorskip("transformers")
trl_templates = pytest.importorskip("trl.chat_template_utils")


@pytest.fixture(scope="module")
def tool_model(tmp_path_factory: pytest.TempPathFactory):
    """A tiny random model whose tokenizer has the Qwen3 chat template (tool support) and
    TRL's response schema for it (tool calls read back)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from colbench.models.hf import HFChatModel
    from colbench.models.tiny import build_tiny_model

    path = build_tiny_model(Path(tmp_path_factory.mktemp("tiny")) / "m", family="qwen2",
                            chat_template=trl_templates.qwen3_chat_template)
    tokenizer = trl_templates.add_response_schema(AutoTokenizer.from_pretrained(path))
    model = HFChatModel(AutoModelForCausalLM.from_pretrained(path), tokenizer,
                        name="hf:tiny?tools=1", tools=True)
    yield model
    model.close()


def test_prompts_carry_the_tools_and_calls_become_the_envs_messages(tool_model) -> None:
    from colbench.models.hf import ToolPrompt

    env = colbench.make("colbench/TextCraft-v0")
    try:
        first, _ = env.reset(seed=0)
        episode = tool_model.bind_episode(env, EpisodeContext("colbench/TextCraft-v0", "t", 0, 0))
        prompt = tool_model.render(ToolPrompt(
            episode.chat.messages([{"role": "user", "content": first}], 0),
            episode.chat.schemas))
        assert '"name": "craft"' in prompt and "<tools>" in prompt
        reply = ('<tool_call>\n{"name": "get", "arguments": {"count": 2, "item": "oak log"}}\n'
                 "</tool_call>")
        calls = episode.tool_calls(reply, 0, prompt)
        assert calls == [{"id": "call_0_0", "type": "function", "function": {
            "name": "get", "arguments": json.dumps({"count": 2, "item": "oak log"})}}]
        completion = colbench.Completion(text=reply, extra={"tool_calls": calls})
        assert episode.chat.take(completion, 0).text == "Action: get 2 oak log"
        # The next prompt holds the call and the env's answer as the tool's message.
        chat = episode.chat.messages([
            {"role": "user", "content": first},
            {"role": "assistant", "content": "Action: get 2 oak log"},
            {"role": "user", "content": "Got 2 oak log"}], 1)
        rendered = tool_model.render(ToolPrompt(chat, episode.chat.schemas))
        assert "<tool_response>\nGot 2 oak log\n</tool_response>" in rendered
        assert episode.tool_calls("just words, no call", 1, rendered) == []
    finally:
        env.close()


def test_a_tools_mode_run_plays_and_records(tool_model, tmp_path) -> None:
    from colbench.runner import EvalConfig, evaluate

    evaluate(EvalConfig(env="colbench/TextCraft-v0", model="hf:tiny?tools=1",
                        out=tmp_path / "run", num_tasks=1, max_turns=2, progress=False,
                        sampling=colbench.SamplingParams(max_tokens=8)), model=tool_model)
    (record,) = [json.loads(line)
                 for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert record["status"] == "ok" and len(record["turns"]) == 2
