"""``--protocol sweet-rl`` on the frontend: the designer is the released SWEET-RL harness's,
a vision model shown only the agent's render of the current message and the target's render,
whose reply is cut to its first 1,000 characters. The model here is a stand-in that records
what it was sent (the real path is the model adapter's)."""

from __future__ import annotations

import base64
import io
import json
from types import SimpleNamespace

import pytest

from colbench.errors import ConfigError
from colbench.gyms.frontend import sweet_rl
from colbench.gyms.frontend.designer import SUITE
from colbench.gyms.frontend.env import FrontendEnv
from colbench.gyms.frontend.generator import compose_page
from colbench.models.base import BaseChatModel, Completion
from colbench.tasks import Task, TaskSet

FAKE = "python:gyms.frontend.harness_models:chatty"
TASK = Task(id="frontend/t", suite="frontend", split="test",
            prompt="A page for a bakery called Crumb.")
DIALOGUE = [{"role": "user", "content": TASK.prompt},
            {"role": "assistant", "content": "Which colours do you like?"},
            {"role": "user", "content": "Warm ones."}]


def _png(colour: str) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _render(colour: str) -> SimpleNamespace:
    return SimpleNamespace(png=_png(colour), ok=True)


def _pictures(parts: list[dict]) -> list[bytes]:
    prefix = "data:image/png;base64,"
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert all(url.startswith(prefix) for url in urls)
    return [base64.b64decode(url[len(prefix):]) for url in urls]


@pytest.fixture()
def seen():
    from gyms.frontend import harness_models

    harness_models.SEEN.clear()
    return harness_models.SEEN


def test_the_designer_sees_the_two_pictures_and_no_words_of_the_dialogue(seen):
    designer = sweet_rl.make_harness_designer(FAKE, SUITE)
    assert isinstance(designer, sweet_rl.HarnessDesigner)
    assert designer.name == f"sweet-rl:{FAKE}"
    agent, target = _render("red"), _render("blue")
    designer.reply(TASK, DIALOGUE, "Here is a warmer page: <html>...</html>",
                   target=target, answer=agent)
    [sent] = seen
    assert [m["role"] for m in sent] == ["user"]  # one message, no system prompt
    parts = sent[0]["content"]
    assert _pictures(parts) == [agent.png, target.png]  # the agent's first, then the target
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts == [sweet_rl.INSTRUCTION, sweet_rl.AGENT_PICTURE, sweet_rl.TARGET_PICTURE]
    dump = json.dumps(sent)
    for words in ("Crumb", "bakery", "Which colours", "Warm ones", "warmer page"):
        assert words not in dump


def test_without_a_page_in_the_message_the_designer_is_told_there_is_none(seen):
    designer = sweet_rl.make_harness_designer(f"model:{FAKE}", SUITE)
    target = _render("blue")
    designer.reply(TASK, [], "What do you want?", target=target, answer=None)
    parts = seen[-1][0]["content"]
    assert _pictures(parts) == [target.png]
    assert sweet_rl.NO_AGENT_PICTURE in [p.get("text") for p in parts]


def test_the_reply_is_cut_as_the_harness_cuts_it(seen):
    from gyms.frontend.harness_models import CHATTY_REPLY

    designer = sweet_rl.make_harness_designer(f"sweet-rl:{FAKE}", SUITE)
    reply = designer.reply(TASK, [], "hi", target=_render("blue"), answer=_render("red"))
    # Its first 1,000 characters, nothing removed (not even the HTML colbench's own
    # designers strip).
    assert reply == CHATTY_REPLY[:1000] and "<b>dark blue</b>" in reply
    assert designer.params.temperature == 0.0 and designer.params.max_tokens == 4096


@pytest.mark.parametrize("spec", [None, "", "builtin", "frontend/model", "model",
                                  "gyms.frontend.harness_models:chatty"])
def test_without_a_vision_model_the_protocol_refuses_naming_the_flag(spec):
    with pytest.raises(ConfigError, match="--simulator openai:MODEL@URL"):
        sweet_rl.make_harness_designer(spec, SUITE)


def test_the_env_refuses_at_start_without_a_vision_model(tmp_path, renderer, image_dir):
    refusal = "--protocol sweet-rl needs a vision model"
    # Its tasks are read without one (the leaderboard loads a sweet-rl split so)...
    env = FrontendEnv(protocol="sweet-rl", scorer="perceptual", renderer=renderer,
                      image_dir=image_dir)
    assert len(env.tasks) == 500 and env.max_turns == 10
    # ...but describing it (the runner does before any episode) or starting an episode stops.
    with pytest.raises(ConfigError, match=refusal):
        env.describe()
    with pytest.raises(ConfigError, match=refusal):
        env.reset(seed=0)
    from colbench.runner import EvalConfig, evaluate

    out = tmp_path / "run"
    with pytest.raises(ConfigError, match=refusal):
        evaluate(EvalConfig(env="colbench/Frontend-v0", model="scripted:oracle", out=out,
                            num_tasks=1, progress=False,
                            env_kwargs={"protocol": "sweet-rl", "scorer": "perceptual"}))
    assert not (out / "episodes.jsonl").exists()


class TextOnly(BaseChatModel):
    name = "text-only"
    accepts_images = False

    def generate(self, conversations, params=None):
        return [Completion(text="ok") for _ in conversations]


def test_a_text_only_model_is_refused():
    with pytest.raises(ConfigError, match="does not accept images"):
        sweet_rl.HarnessDesigner(TextOnly())
    from colbench.models.hf import HFChatModel

    assert HFChatModel.accepts_images is False


def test_an_episode_shows_the_page_of_the_current_message_only(seen, renderer, image_dir):
    target = compose_page(1).to_html()
    task = Task(id="frontend/sweet", suite="frontend", split="test", prompt="A page.",
                privileged={"ground_truth": target})
    env = FrontendEnv(tasks=TaskSet("one", [task]), protocol="sweet-rl", simulator=FAKE,
                      scorer="perceptual", renderer=renderer, image_dir=image_dir)
    _, info = env.reset(options={"task_id": task.id})
    assert "picsum.photos/id/48" in info["system_prompt"]
    reply, *_ = env.step(f"Try this:\n{compose_page(2).to_html()}")
    assert len(_pictures(seen[-1][0]["content"])) == 2 and len(reply) == 1000
    env.step("And now? (no page in this message)")
    assert len(_pictures(seen[-1][0]["content"])) == 1
    *_, info = env.step("I WANT TO ANSWER:")
    assert 0.0 <= info["metrics"]["score"] <= 1.0 and "success" in info["metrics"]
    facts = env.describe()
    assert facts["protocol"] == "sweet-rl" and facts["simulator"] == f"sweet-rl:{FAKE}"
