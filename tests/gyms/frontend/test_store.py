"""The render store's size cap: it holds after many renders, evicts least recently used renders
first (a cache hit counts as a use), never removes a path just handed out, cleans folders of old
renderer versions and reads its cap from the environment with clear errors. A fake renderer
stands in for chromium, so these run without a browser."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from colbench.errors import ConfigError
from colbench.gyms.frontend.render import RenderResult
from colbench.gyms.frontend.render import store as store_module
from colbench.gyms.frontend.render.store import SIZE_ENV, RenderStore, cache_cap, parse_size

PNG_BYTES = 10_000
_VERSIONS = itertools.count()


class FakeRenderer:
    """Renders any page to ``PNG_BYTES`` bytes of "picture" and counts its renders. Each one
    is its own renderer version unless told (so tests do not share protected keys)."""

    def __init__(self, version: str | None = None) -> None:
        self.version = version or f"fake-{next(_VERSIONS)}"
        self.renders = 0

    def render(self, html: str) -> RenderResult:
        self.renders += 1
        png = (html.encode() * (PNG_BYTES // max(1, len(html)) + 1))[:PNG_BYTES]
        return RenderResult(status="ok", png=png, width=10, height=10, dom={"sections": []})


def entry_size(store: RenderStore) -> int:
    """Bytes one render takes on disk (PNG + JSON)."""
    return store.disk_usage()


def age_everything(root: Path, seconds: float = 3600.0) -> None:
    """Make every file under ``root`` look ``seconds`` older (mtimes are the LRU order)."""
    for path in root.rglob("*"):
        if path.is_file():
            old = path.stat().st_mtime - seconds
            os.utime(path, (old, old))


def page(i: int) -> str:
    return f"<html><body>page {i}</body></html>"


@pytest.fixture(autouse=True)
def no_env_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SIZE_ENV, raising=False)


def test_the_cap_holds_after_many_renders_and_hits_are_not_rendered_again(tmp_path):
    probe = RenderStore(FakeRenderer(), tmp_path / "probe")
    probe.render(page(0))
    one = entry_size(probe)
    cap = 10 * one
    store = RenderStore(FakeRenderer("shared"), tmp_path / "cache", max_bytes=cap, protect=2)
    for i in range(60):
        result, path = store.render(page(i))
        assert result.ok and path is not None and path.is_file()
        assert store.disk_usage() <= cap
    assert store.disk_usage() >= int(cap * store_module.LOW_WATER) - one
    png_files = list(store.folder.glob("*.png"))
    assert len(png_files) == len(list(store.folder.glob("*.json")))  # pairs go together
    assert {p.stem for p in png_files} == {p.stem for p in store.folder.glob("*.json")}

    # What survived is served from disk by a fresh store, without rendering.
    again = FakeRenderer("shared")
    fresh = RenderStore(again, tmp_path / "cache", max_bytes=cap)
    _, last = fresh.render(page(59))
    assert again.renders == 0 and last == store.path(store.key(page(59)))


def test_accounting_is_cheap_it_does_not_scan_on_every_write(tmp_path, monkeypatch):
    scans = []
    real_scan = store_module._scan
    monkeypatch.setattr(store_module, "_scan", lambda root: scans.append(root) or real_scan(root))
    store = RenderStore(FakeRenderer(), tmp_path, max_bytes="1G")
    for i in range(50):
        store.render(page(i))
    assert len(scans) == 1  # the first write learns the size; the rest keep a running total
    monkeypatch.setattr(store_module, "SCAN_EVERY", 10)
    for i in range(50, 80):
        store.render(page(i))
    assert len(scans) == 4  # and other processes' writes are seen every SCAN_EVERY writes


def test_least_recently_used_go_first_and_a_hit_counts_as_a_use(tmp_path):
    store = RenderStore(FakeRenderer(), tmp_path, max_bytes="1G", protect=0, memory=0)
    for i in range(6):
        store.render(page(i))
    one = store.disk_usage() // 6
    age_everything(tmp_path)
    # Spread the six renders in time: page 0 oldest ... page 5 newest.
    for i in range(6):
        for path in (store.path(store.key(page(i))), store.folder / f"{store.key(page(i))}.json"):
            t = path.stat().st_mtime + i
            os.utime(path, (t, t))
    renderer = store.renderer
    before = renderer.renders
    _, hit = store.render(page(0))  # a disk hit: page 0 becomes the most recently used
    assert renderer.renders == before
    store.max_bytes = int(4.5 * one / store_module.LOW_WATER)  # room for four renders
    store.trim()
    left = {p.stem for p in store.folder.glob("*.png")}
    assert left == {store.key(page(i)) for i in (0, 3, 4, 5)}
    assert hit.is_file()


def test_a_path_just_returned_is_never_evicted_even_under_a_zero_cap(tmp_path):
    store = RenderStore(FakeRenderer(), tmp_path, max_bytes=0, protect=2, memory=0)
    _, target = store.render(page(0))
    _, first = store.render(page(1))
    _, second = store.render(page(2))
    assert second.is_file() and first.is_file()  # the last two handed out
    assert not target.is_file()  # older ones go: the cap is zero
    assert len(list(store.folder.glob("*.png"))) == 2


def test_keep_protects_a_held_path_and_restores_it_when_another_process_removed_it(tmp_path):
    store = RenderStore(FakeRenderer(), tmp_path, max_bytes=0, protect=2, memory=0)
    target, target_path = store.render(page(0))  # held for the whole episode, like the env's
    inode = target_path.stat().st_ino
    for i in range(1, 4):
        store.render(page(i))
        assert store.keep(target, target_path) == target_path
        assert target_path.stat().st_ino == inode  # never removed, so never written again
    assert len(list(store.folder.glob("*.png"))) == 2  # the target and the latest page
    target_path.unlink()  # as another process's eviction would
    (store.folder / f"{target_path.stem}.json").unlink()
    assert store.keep(target, target_path) == target_path
    assert target_path.read_bytes() == target.png
    assert store.renderer.renders == 4  # restored from memory, not rendered again


def test_a_memory_hit_whose_file_was_evicted_elsewhere_gets_it_back(tmp_path):
    renderer = FakeRenderer()
    store = RenderStore(renderer, tmp_path)
    result, path = store.render(page(0))
    path.unlink()
    again, same = store.render(page(0))
    assert same == path and path.read_bytes() == result.png and renderer.renders == 1


def test_another_store_of_the_process_does_not_evict_what_this_one_handed_out(tmp_path):
    mine = RenderStore(FakeRenderer("shared"), tmp_path, max_bytes="1G", protect=1)
    _, held = mine.render(page(0))
    other = RenderStore(FakeRenderer("shared"), tmp_path, max_bytes=0, protect=1)
    for i in range(1, 5):
        other.render(page(i))
    assert held.is_file()
    assert len(list(other.folder.glob("*.png"))) == 2  # mine's one and other's latest


def test_old_renderer_versions_are_evicted_first_and_their_empty_folders_removed(tmp_path):
    old = RenderStore(FakeRenderer("fake-old"), tmp_path, protect=0)
    for i in range(5):
        old.render(page(i))
    old_folder = old.folder
    del old
    (tmp_path / "notes.txt").write_text("not a render: never touched")
    age_everything(tmp_path)
    new = RenderStore(FakeRenderer("fake-new"), tmp_path, protect=0)
    assert new.folder != old_folder
    new.render(page(0))
    one = new.disk_usage() // 6
    new.max_bytes = int(3.5 * one / store_module.LOW_WATER)
    for i in range(1, 3):
        new.render(page(i))
    assert len(list(old_folder.glob("*.png"))) == 0  # the stale version went first
    assert len(list(new.folder.glob("*.png"))) == 3
    assert (tmp_path / "notes.txt").is_file()  # foreign files are left alone
    # The emptied folder goes once it has been empty for a while.
    old_time = old_folder.stat().st_mtime - 2 * store_module.STALE_SECONDS
    os.utime(old_folder, (old_time, old_time))
    new.trim()
    assert not old_folder.exists() and new.folder.is_dir()


def test_left_over_temporary_files_are_removed_and_foreign_files_never(tmp_path):
    store = RenderStore(FakeRenderer(), tmp_path, max_bytes=0, protect=0)
    key = store.key(page(9))
    stale = store.folder / f"{key}.png.abcd1234.tmp"
    fresh = store.folder / f"{key}.json.efgh5678.tmp"
    foreign = store.folder / "mine.png"
    for path in (stale, fresh, foreign):
        path.write_bytes(b"x" * 100)
    old = stale.stat().st_mtime - 2 * store_module.STALE_SECONDS
    os.utime(stale, (old, old))
    store.render(page(0))
    store.trim()
    assert not stale.exists()
    assert fresh.exists() and foreign.exists()  # a write in flight, and not ours


@pytest.mark.parametrize(("raw", "expected"), [
    ("0", 0), ("1048576", 1048576), ("500M", 500 * 1024**2), ("2G", 2 * 1024**3),
    ("1.5GiB", int(1.5 * 1024**3)), ("800MB", 800 * 10**6), (" 3 k ", 3 * 1024),
    ("10b", 10),
])
def test_sizes_parse(raw, expected):
    assert parse_size(raw, SIZE_ENV) == expected


def test_the_cap_comes_from_the_argument_then_the_environment_then_the_default(monkeypatch):
    assert cache_cap() == store_module.DEFAULT_MAX_BYTES == 2 * 1024**3
    monkeypatch.setenv(SIZE_ENV, "100M")
    assert cache_cap() == 100 * 1024**2
    assert cache_cap(5000) == 5000 and cache_cap("1K") == 1024
    monkeypatch.setenv(SIZE_ENV, "")
    assert cache_cap() == store_module.DEFAULT_MAX_BYTES


@pytest.mark.parametrize(("raw", "says"), [
    ("lots", "is not a size"), ("2 gallons", "is not a size"), ("-1", "is negative"),
    ("-5G", "is negative"), ("1e3", "is not a size"),
])
def test_a_bad_environment_value_is_a_clear_error(monkeypatch, tmp_path, raw, says):
    monkeypatch.setenv(SIZE_ENV, raw)
    with pytest.raises(ConfigError, match=says) as caught:
        RenderStore(FakeRenderer(), tmp_path)
    assert SIZE_ENV in str(caught.value) and repr(raw) in str(caught.value)


def test_a_bad_argument_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match=r"max_bytes=-3 is negative"):
        RenderStore(FakeRenderer(), tmp_path, max_bytes=-3)
    with pytest.raises(ConfigError, match="max_bytes"):
        RenderStore(FakeRenderer(), tmp_path, max_bytes=1.5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="protect"):
        RenderStore(FakeRenderer(), tmp_path, protect=-1)


def test_a_store_keeps_its_own_empty_folder_and_remakes_it_when_removed_elsewhere(tmp_path):
    store = RenderStore(FakeRenderer(), tmp_path)
    old = store.folder.stat().st_mtime - 2 * store_module.STALE_SECONDS
    os.utime(store.folder, (old, old))
    store.trim()
    assert store.folder.is_dir()
    store.folder.rmdir()  # as a process of another renderer version may do
    result, path = store.render(page(0))
    assert path is not None and path.read_bytes() == result.png


class PictureRenderer(FakeRenderer):
    """A fake renderer whose pictures are real PNGs (a colour from the page's hash)."""

    def render(self, html: str) -> RenderResult:
        import io
        import zlib

        from PIL import Image

        self.renders += 1
        shade = zlib.crc32(html.encode()) % 256
        buffer = io.BytesIO()
        Image.new("RGB", (40, 30), (shade, 255 - shade, 128)).save(buffer, format="PNG")
        return RenderResult(status="ok", png=buffer.getvalue(), width=40, height=30,
                            dom={"sections": []})


def test_the_env_keeps_the_paths_it_reported_valid_when_another_process_evicts_them(
        tmp_path, monkeypatch):
    from colbench.gyms.frontend.env import FrontendEnv
    from colbench.tasks import Task, TaskSet

    monkeypatch.setenv(SIZE_ENV, "0")
    task = Task(id="page-1", suite="frontend", split="test", prompt="A plain page, please.",
                privileged={"ground_truth": "<html><body>the target</body></html>"})
    env = FrontendEnv(tasks=TaskSet("one", [task]), scorer="perceptual",
                      renderer=PictureRenderer(), image_dir=tmp_path)
    env.reset(seed=0, options={"task_id": "page-1"})
    _, _, _, _, info = env.step("```html\n<html><body>my page</body></html>\n```")
    [answer] = info["images"]
    target = env.target_render()[1]
    for path in env.store.folder.iterdir():  # another process's eviction takes everything
        path.unlink()
    _, _, _, _, info = env.step("Anything else?")
    assert info["images"] == [answer] and Path(answer).is_file()
    _, _, terminated, _, info = env.step("I WANT TO ANSWER: done")
    assert terminated
    assert Path(info["metrics"]["target_image"]) == target and target.is_file()
    assert info["metrics"]["final_image"] == answer and Path(answer).is_file()
    assert env.store.renderer.renders == 2  # put back from memory, never rendered again
