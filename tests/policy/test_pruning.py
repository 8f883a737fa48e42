"""policy/pruning: which Lessons Learned and Foreclosed Avenues bullets leave, and in what order."""

from __future__ import annotations

from statefile.model.patterns import agent_bullet
from statefile.policy.pruning import plan_list

MAINTAINER = "- Rewriting the parser in assembly was slower: the branch predictor could not keep up\n"
AGENT = (
    "- " + agent_bullet("Rewriting the parser in assembly was faster: the branch predictor kept up", "agent", 12) + "\n"
)


def test_a_near_duplicate_agent_bullet_never_replaces_the_maintainers() -> None:
    """Found by a cold review: the newest of a similar group was kept, and an agent's report is always the newest,
    so a report that echoed a maintainer's avenue sent the maintainer's words to the archive."""
    plan = plan_list([MAINTAINER, AGENT], "avenue", collapse=True, similarity=0.5, limit=None, newest_last=True)
    assert set(plan.remove) == {1} and "maintainer's" in plan.remove[1]
    assert set(plan.rewrite) == {0}  # the maintainer's bullet stands for the group
    lessons = plan_list([MAINTAINER, AGENT], "lesson", collapse=True, similarity=0.5, limit=None, newest_last=True)
    assert set(lessons.remove) == {1}


def test_agent_bullets_go_first_when_a_list_is_cut() -> None:
    texts = [f"- Maintainer lesson {n}: keep the cache warm for table {n}\n" for n in range(4)]
    texts += ["- " + agent_bullet(f"agent idea {n} about vectors", "agent", 20 + n) + "\n" for n in range(3)]
    plan = plan_list(texts, "lesson", collapse=True, similarity=0.99, limit=4, newest_last=True)
    assert set(plan.remove) == {4, 5, 6}
    plan = plan_list(texts, "lesson", collapse=True, similarity=0.99, limit=2, newest_last=True)
    assert set(plan.remove) == {0, 1, 4, 5, 6}  # then the oldest maintainer bullets, as before
