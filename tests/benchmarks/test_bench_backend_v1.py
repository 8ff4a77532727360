"""The Backend-v1 benchmark (benchmarks/bench_backend_v1.py) runs end to end with small sizes
and prints its three tables; its leak measure and its matcher see what they claim to."""

from __future__ import annotations

import pytest
from benchmark_scripts import load_benchmark

from colbench.baselines import BlindAgent
from colbench.gyms.backend.programs.generator import generate_tasks


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_backend_v1")


def test_the_script_prints_shapes_leaks_and_the_matcher_table(bench, capsys):
    assert bench.main(["--n", "30", "--leak-n", "20", "--play-n", "4", "--index", "150",
                       "--challenge-n", "3"]) == 0
    out = capsys.readouterr().out
    assert "1. distinct program shapes" in out and "2. off-topic leak rate" in out
    for label in ("no-ask (blind)", "ask-then-answer (blind)", "template matcher",
                  "oracle (ceiling)"):
        assert label in out
    oracles = [line.split() for line in out.splitlines() if "oracle (ceiling)" in line]
    assert [o[-2:] for o in oracles] == [["100.0", "100.0"]] * 2  # test split, challenge split
    assert out.count("matcher minus best blind") == 2
    with pytest.raises(SystemExit):
        bench.main(["--play-n", "0"])


def test_hidden_constants_leave_out_what_the_request_states(bench):
    task = generate_tasks("test", 1, 5)[0]
    hidden = bench.hidden_constants(task)
    assert hidden
    assert not any(bench.reply_reveals(task.prompt, [h]) for h in hidden)


def test_the_matcher_is_blind_and_answers_with_the_chats_signature(bench):
    assert issubclass(bench.TemplateMatcher, BlindAgent)
    index = bench.TemplateIndex(50)
    agent = bench.TemplateMatcher.with_index(index)()
    task = generate_tasks("test", 1, 5)[0]
    messages = [{"role": "user", "content": task.prompt}]
    first = agent.act(messages)
    assert isinstance(first, str) and first
    final = agent.act(messages + [{"role": "assistant", "content": "q"},
                                  {"role": "user", "content": "no idea"}] * 10)
    assert final.startswith("I WANT TO ANSWER:")
    assert f"def {task.privileged['function_name']}(" in final
