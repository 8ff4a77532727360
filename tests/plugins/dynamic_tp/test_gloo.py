"""Across two gloo processes (CPU): TP2 gives TP1's logits, greedy decoding is unchanged by a
switch TP2 -> TP1 -> TP2 mid-stream (also through the executor's own switches), and the all-to-all dispatcher delivers exactly what
gather-then-scatter delivers. One spawn of two processes runs every check (gloo_checks.py)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch.distributed")

from colbench.plugins.dynamic_tp.gloo import run_on_gloo  # noqa: E402

from . import gloo_checks  # noqa: E402


@pytest.fixture(scope="module")
def ranks() -> list[dict[str, Any]]:
    return run_on_gloo(gloo_checks.all_checks, 2, timeout_s=180)


def test_tp2_gives_the_logits_of_tp1(ranks):
    for result in ranks:
        tp = result["tp"]
        assert tp["sharded_type"] == "DTensor"  # the weights really were sharded
        assert tp["logits_shape"] == (1, 6, gloo_checks.VOCAB)
        assert tp["max_logit_diff"] < 1e-9


def test_a_switch_tp2_tp1_tp2_mid_stream_keeps_greedy_generation(ranks):
    for result in ranks:
        tp = result["tp"]
        assert tp["degrees"] == [2] * 8 + [1] * 8 + [2] * 8
        assert tp["generated"] == tp["reference"]
        assert len(set(tp["reference"][4:])) > 1  # not a constant stream


def test_all_to_all_delivers_exactly_what_gather_then_scatter_delivers(ranks):
    delivered = 0
    for result in ranks:
        dispatch = result["dispatch"]
        assert dispatch["direct"] == dispatch["baseline"] == dispatch["expected"]
        delivered += len(dispatch["direct"])
    assert delivered == 23



def test_the_executor_reshards_its_tiny_engine_without_changing_generation(ranks):
    for result in ranks:
        executor = result["executor"]
        assert executor["degrees"] == [2, 1, 2]
        first, *others = executor["outputs"]
        assert all(output == first for output in others) and len(first) == 6
        assert (executor["prompt_tokens"], executor["reply_tokens"]) == (2, 3)
