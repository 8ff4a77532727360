import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from colbench.env import AnyText, Outcome, ScriptedAgent, TextEnv
from colbench.errors import ConfigError
from colbench.tasks import Task, TaskSet


class EchoEnv(TextEnv):
    """Ends when the agent says the secret word."""

    default_max_turns = 3

    def _begin(self, task):
        return task.prompt, {"extra": 1}

    def _act(self, action, *, last_turn):
        won = action.strip() == self.task.privileged["word"]
        if won or last_turn:
            return Outcome("bye", reward=float(won), terminated=won,
                           metrics={"success": won, "score": float(won)})
        return Outcome("again")


class Oracle(ScriptedAgent):
    def act(self, messages):
        return self.env.unwrapped.privileged()["word"]


EchoEnv.scripted_agents = {"oracle": Oracle}


def tasks():
    return TaskSet("echo", [Task(id=f"e{i}", suite="echo", split="test", prompt=f"say {i}",
                                 privileged={"word": f"w{i}"}) for i in range(4)])


def test_reset_by_task_id_and_info_keys():
    env = EchoEnv(tasks())
    obs, info = env.reset(options={"task_id": "e2"})
    assert obs == "say 2"
    assert info["task_id"] == "e2" and info["turn"] == 0 and info["max_turns"] == 3
    assert "system_prompt" in info and info["extra"] == 1


def test_reset_by_seed_is_deterministic():
    env = EchoEnv(tasks())
    picks = {env.reset(seed=s)[1]["task_id"] for s in range(20)}
    assert len(picks) > 1
    assert env.reset(seed=7)[1]["task_id"] == EchoEnv(tasks()).reset(seed=7)[1]["task_id"]


def test_termination_truncation_and_metrics():
    env = EchoEnv(tasks())
    env.reset(options={"task_id": "e1"})
    obs, reward, term, trunc, info = env.step("w1")
    assert (reward, term, trunc) == (1.0, True, False)
    assert info["metrics"]["success"] is True
    with pytest.raises(RuntimeError, match="call reset"):
        env.step("again")
    env.reset(options={"task_id": "e1"})
    for _ in range(2):
        assert env.step("nope")[2:4] == (False, False)
    _, reward, term, trunc, info = env.step("nope")
    assert (term, trunc, reward) == (False, True, 0.0)
    assert info["metrics"]["success"] is False


def test_per_episode_max_turns_for_horizon_curricula():
    env = EchoEnv(tasks())
    _, info = env.reset(options={"task_id": "e0", "max_turns": 1})
    assert info["max_turns"] == 1
    assert env.step("x")[3] is True  # truncated after one turn
    with pytest.raises(ConfigError):
        env.reset(options={"max_turns": 0})


def test_reset_option_budget_holds_for_one_episode_only():
    env = EchoEnv(tasks(), max_turns=5)
    _, info = env.reset(options={"task_id": "e0", "max_turns": 3})
    assert info["max_turns"] == 3
    ends = [env.step("nope")[2:4] for _ in range(3)]
    assert ends == [(False, False), (False, False), (False, True)]  # truncated at turn 3
    _, info = env.reset(options={"task_id": "e0"})
    assert info["max_turns"] == 5  # back to the env's own budget
    ends = [env.step("nope")[2:4] for _ in range(5)]
    assert ends[-1] == (False, True) and all(e == (False, False) for e in ends[:-1])


@pytest.mark.parametrize("bad", [0, -2, 2.5, "3", True, [3]])
def test_bad_reset_budget_is_named_and_leaves_the_episode_alone(bad):
    env = EchoEnv(tasks())
    env.reset(options={"task_id": "e1", "max_turns": 2})
    with pytest.raises(ConfigError, match=r"reset\(options=\{'max_turns': \.\.\.\}\).*at least 1"):
        env.reset(options={"task_id": "e2", "max_turns": bad})
    # The episode in progress keeps its task and its budget.
    assert env.step("nope")[2:4] == (False, False)
    _, _, _, truncated, info = env.step("nope")
    assert truncated and info["task_id"] == "e1" and info["max_turns"] == 2


class TimerEnv(TextEnv):
    """A wrapped game with its own clock: "tick" uses one of ``ticks`` steps, "win" solves it.
    Running out of ticks truncates the episode before the turn budget does; ``both`` makes the
    winning step also report the clock running out."""

    default_max_turns = 10

    def __init__(self, task_set, *, ticks=2, both=False):
        super().__init__(task_set)
        self.ticks, self.both = ticks, both

    def _begin(self, task):
        self.used = 0
        return task.prompt, {}

    def _act(self, action, *, last_turn):
        self.used += 1
        won = action == "win"
        out_of_time = self.used >= self.ticks
        if won or out_of_time or last_turn:
            return Outcome("over", reward=float(won), terminated=won,
                           truncated=out_of_time if (self.both or not won) else False,
                           metrics={"success": won, "score": float(won)})
        return Outcome("tick")


def test_outcome_truncated_ends_the_episode_before_the_budget_with_metrics():
    env = TimerEnv(tasks(), ticks=2)
    env.reset(options={"task_id": "e0"})
    assert env.step("tick")[2:4] == (False, False)
    _, reward, term, trunc, info = env.step("tick")
    assert (term, trunc, reward) == (False, True, 0.0)
    assert info["turn"] == 2 < info["max_turns"]
    assert info["metrics"] == {"success": False, "score": 0.0}
    with pytest.raises(RuntimeError, match="call reset"):
        env.step("tick")


def test_terminated_wins_when_an_outcome_sets_both():
    env = TimerEnv(tasks(), ticks=1, both=True)
    env.reset(options={"task_id": "e0"})
    _, reward, term, trunc, info = env.step("win")
    assert (term, trunc, reward) == (True, False, 1.0)
    assert info["metrics"]["success"] is True


def test_subclass_that_never_sets_truncated_is_truncated_at_the_budget():
    # EchoEnv predates Outcome.truncated: the base still truncates on the budget's last turn.
    assert Outcome("x").truncated is False
    env = EchoEnv(tasks(), max_turns=1)
    env.reset(options={"task_id": "e0"})
    assert env.step("nope")[2:4] == (False, True)


def test_scripted_agent_and_privileged():
    env = EchoEnv(tasks())
    env.reset(options={"task_id": "e3"})
    assert env.scripted_agent("oracle").act([]) == "w3"
    with pytest.raises(ConfigError, match="no scripted agent 'nope'.*oracle"):
        env.scripted_agent("nope")


def test_bad_arguments():
    with pytest.raises(ConfigError, match="empty"):
        EchoEnv(TaskSet("none", []))
    with pytest.raises(ConfigError, match="max_turns"):
        EchoEnv(tasks(), max_turns=0)
    env = EchoEnv(tasks())
    env.reset()
    with pytest.raises(TypeError, match="action is a str"):
        env.step(3)


def test_any_text_space_admits_unicode():
    space = AnyText(10)
    assert space.contains("héllo ✓")
    assert not space.contains("x" * 11)
    assert not space.contains(3)
    assert isinstance(space, gym.spaces.Text)


def test_check_env_on_base_subclass():
    check_env(EchoEnv(tasks()), skip_render_check=True)


def test_an_env_may_give_each_task_its_own_default_budget():
    class LongTasksEnv(EchoEnv):
        def default_episode_max_turns(self, task):
            return 5 if task.id == "e1" else self.max_turns

    env = LongTasksEnv(tasks())
    assert env.reset(options={"task_id": "e1"})[1]["max_turns"] == 5
    assert env.reset(options={"task_id": "e2"})[1]["max_turns"] == 3
    # A budget named at reset wins over the task's.
    assert env.reset(options={"task_id": "e1", "max_turns": 2})[1]["max_turns"] == 2
    env.reset(options={"task_id": "e1"})
    for _ in range(4):
        *_, truncated, _ = env.step("no")
        assert not truncated
    *_, truncated, _ = env.step("no")
    assert truncated


def test_an_env_with_budgets_per_task_gets_them_from_the_base_class():
    # BabyAI (per level family) and SciWorld (per task type) each carried this logic in their
    # constructors; an env now only says each task's budget.
    class PerTaskEnv(EchoEnv):
        def task_turn_budget(self, task):
            return 6 if task.id == "e1" else 2

    env = PerTaskEnv(tasks())
    assert env.max_turns == 6  # the most any episode may take
    assert env.reset(options={"task_id": "e1"})[1]["max_turns"] == 6
    assert env.reset(options={"task_id": "e2"})[1]["max_turns"] == 2
    assert env.reset(options={"task_id": "e2", "max_turns": 4})[1]["max_turns"] == 4
    # A budget given to the env is every task's.
    given = PerTaskEnv(tasks(), max_turns=3)
    assert given.max_turns == 3
    assert {given.reset(options={"task_id": t})[1]["max_turns"] for t in ("e1", "e2")} == {3}
    # An env that says none keeps one budget.
    assert EchoEnv(tasks()).reset(options={"task_id": "e1"})[1]["max_turns"] == 3


def test_an_envs_tasks_argument_is_a_task_set_a_file_or_the_split(tmp_path):
    own = tasks()
    path = own.save(tmp_path / "mine.jsonl")
    never = lambda: pytest.fail("the split is loaded only without a tasks argument")  # noqa: E731
    assert TaskSet.from_argument(own, never) is own
    assert TaskSet.from_argument(path, never).hash == own.hash
    assert TaskSet.from_argument(str(path), never).hash == own.hash
    assert TaskSet.from_argument(None, lambda: own) is own
    with pytest.raises(ConfigError, match="does not exist"):
        TaskSet.from_argument(tmp_path / "missing.jsonl", never)
