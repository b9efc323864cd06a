"""The stress test's draw brings every kind of action at least once, and otherwise keeps to its weights: a
draw by weight alone left out raise_all (weight 0.3 of about 115) at seed 11, so its checks never ran."""
from __future__ import annotations

import random
from collections import Counter

from tests.app.stress_actions import ACTIONS, schedule

NAMES, WEIGHTS = zip(*[(name, weight) for name, weight, _ in ACTIONS])


def test_a_draw_by_weight_alone_can_miss_a_kind():
    missed = [seed for seed in range(200) if len(set(random.Random(seed).choices(NAMES, WEIGHTS, k=1000))) < len(NAMES)]
    assert missed, "no seed of 200 misses a kind: the schedule's guarantee would test nothing"


def test_every_kind_comes_at_least_once_and_the_rest_is_the_weighted_draw():
    for seed in [7, 11, 20261130, *range(200)]:
        plain = random.Random(seed).choices(NAMES, WEIGHTS, k=1000)
        drawn = schedule(random.Random(seed), 1000)
        assert len(drawn) == 1000 and set(drawn) == set(NAMES), f"seed {seed}: {set(NAMES) - set(drawn)} missing"
        changed = [i for i, (a, b) in enumerate(zip(plain, drawn)) if a != b]
        assert len(changed) == len(set(NAMES) - set(plain)), f"seed {seed}: {len(changed)} actions changed"
        most = Counter(plain).most_common(1)[0][0]
        assert all(plain[i] == most for i in changed), f"seed {seed}: a kind other than {most} was given up"


def test_a_draw_shorter_than_the_kinds_is_still_a_draw():
    assert len(schedule(random.Random(3), 5)) == 5
