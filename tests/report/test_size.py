"""The page grows by a bounded number of bytes per frontend episode, whatever the size of
its renders and HTML answers (issue 17, item 6: a 1,000-episode report stays a few MB)."""

from __future__ import annotations

from colbench.report import load_run, write_html

#: What one 3-turn frontend episode may add to the page: its summary line, short messages
#: whole, the start of each HTML answer, four image references and its metrics. The page
#: that embedded renders spent about 100 KB per episode on 16 KB renders.
MAX_BYTES_PER_EPISODE = 5_000


def page_bytes(tmp_path, bench, episodes: int, image_kb: int) -> int:
    run = bench.build_frontend_run(tmp_path / f"run-{episodes}-{image_kb}", episodes,
                                   image_kb=image_kb)
    page = write_html([load_run(run)], tmp_path / f"out-{episodes}-{image_kb}" / "r.html")
    return page.stat().st_size


def test_bytes_per_episode_are_bounded_and_independent_of_render_size(tmp_path, bench):
    few, many = page_bytes(tmp_path, bench, 5, 1), page_bytes(tmp_path, bench, 45, 1)
    per_episode = (many - few) / 40
    assert 1_000 < per_episode <= MAX_BYTES_PER_EPISODE
    # Renders eight times larger leave the page as large as it was (within the few bytes
    # that other paths and random scores take): references are names, not contents.
    assert abs(page_bytes(tmp_path, bench, 5, 8) - few) < 100
