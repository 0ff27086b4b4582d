"""The one backoff policy: bounds, cap, jitter range, tries, horizon, Retry-After."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_hub._backoff import Backoff
from a2a_hub.client import RetryPolicy
from a2a_hub.llm._retry import backoff as llm_backoff

delays = st.floats(min_value=0.0, max_value=1e4, allow_nan=False)
factors = st.floats(min_value=1.0, max_value=10.0, allow_nan=False)
fractions = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
attempts = st.integers(min_value=1, max_value=2000)
seeds = st.integers(min_value=0, max_value=2**32)


def lowest(low: float, high: float) -> float:
    return low


def highest(low: float, high: float) -> float:
    return high


@given(initial=delays, factor=factors, cap=delays, attempt=attempts)
def test_nominal_waits_grow_exponentially_up_to_the_cap(
    initial: float, factor: float, cap: float, attempt: int
) -> None:
    policy = Backoff(initial=initial, factor=factor, max_delay=cap)
    wait = policy.nominal(attempt)
    assert 0.0 <= wait <= cap
    assert policy.nominal(attempt + 1) >= wait
    if attempt <= 30:
        assert wait == pytest.approx(min(cap, initial * factor ** (attempt - 1)))


@given(initial=delays, cap=delays, jitter=fractions, attempt=attempts, seed=seeds)
def test_a_jittered_wait_stays_within_the_jitter_of_the_nominal_one(
    initial: float, cap: float, jitter: float, attempt: int, seed: int
) -> None:
    policy = Backoff(
        initial=initial, max_delay=cap, jitter=jitter, uniform=random.Random(seed).uniform
    )
    nominal = policy.nominal(attempt)
    wait = policy.delay(attempt)
    assert nominal * (1 - jitter) <= wait <= nominal * (1 + jitter)
    assert wait <= cap * (1 + jitter)


@given(jitter=fractions, attempt=st.integers(min_value=1, max_value=10))
def test_the_jitter_range_is_reached_at_both_ends(jitter: float, attempt: int) -> None:
    low = Backoff(jitter=jitter, uniform=lowest)
    high = Backoff(jitter=jitter, uniform=highest)
    nominal = low.nominal(attempt)
    assert low.delay(attempt) == pytest.approx(nominal * (1 - jitter))
    assert high.delay(attempt) == pytest.approx(nominal * (1 + jitter))


def test_a_jitter_pair_gives_the_range_of_factors() -> None:
    policy = Backoff(initial=4.0, jitter=(0.5, 1.0), uniform=lowest)
    assert policy.spread == (0.5, 1.0)
    assert policy.delay(1) == 2.0
    assert Backoff(initial=4.0, jitter=(0.5, 1.0), uniform=highest).delay(1) == 4.0


@given(tries=st.integers(min_value=0, max_value=50), attempt=attempts)
def test_the_policy_gives_up_after_max_tries(tries: int, attempt: int) -> None:
    policy = Backoff(max_tries=tries)
    assert policy.exhausted(attempt) == (attempt > tries)
    assert len(list(policy.schedule())) == tries


@given(seed=seeds)
def test_an_injected_random_source_makes_it_deterministic(seed: int) -> None:
    one = Backoff(max_tries=8, uniform=random.Random(seed).uniform)
    two = Backoff(max_tries=8, uniform=random.Random(seed).uniform)
    assert list(one.schedule()) == list(two.schedule())


@given(retry_after=delays, attempt=st.integers(min_value=1, max_value=10), seed=seeds)
def test_retry_after_lengthens_a_wait_up_to_the_cap(
    retry_after: float, attempt: int, seed: int
) -> None:
    policy = Backoff(initial=0.5, max_delay=8.0, uniform=random.Random(seed).uniform)
    wait = policy.delay(attempt, retry_after)
    assert wait >= min(retry_after, 8.0)
    assert wait <= max(min(retry_after, 8.0), policy.nominal(attempt) * 1.2)
    deaf = Backoff(initial=0.5, max_delay=8.0, honour_retry_after=False, uniform=lowest)
    assert deaf.delay(attempt, retry_after) == pytest.approx(deaf.nominal(attempt) * 0.8)


def test_a_push_schedule_with_steps_and_a_horizon() -> None:
    day = 86400.0
    policy = Backoff(steps=(5, 30, 120), max_delay=3600, jitter=0.0, max_tries=None, horizon=day)
    waits = list(policy.schedule())
    assert waits[:9] == [5, 30, 120, 240, 480, 960, 1920, 3600, 3600]
    assert sum(waits) <= day < sum(waits) + 3600
    assert policy.offset(len(waits)) == sum(waits)
    assert policy.exhausted(len(waits) + 1)
    # a caller that measured the real time since the first failure passes it
    assert not policy.exhausted(3, elapsed=day - 120)
    assert policy.exhausted(3, elapsed=day - 119)


def test_without_tries_or_horizon_the_schedule_never_ends() -> None:
    policy = Backoff(max_tries=None, uniform=lowest)
    schedule = policy.schedule()
    assert [next(schedule) for _ in range(1000)][-1] == 30 * 0.8
    assert not policy.exhausted(10**6)
    assert policy.nominal(10**6) == 30


@pytest.mark.parametrize(
    "options",
    [
        {"initial": -1.0},
        {"max_delay": -1.0},
        {"steps": (1.0, -1.0)},
        {"factor": 0.5},
        {"jitter": 1.5},
        {"jitter": (1.0, 0.5)},
        {"max_tries": -1},
        {"horizon": -1.0},
    ],
)
def test_nonsense_is_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Backoff(**options)  # type: ignore[arg-type]


def test_retries_are_numbered_from_1() -> None:
    with pytest.raises(ValueError):
        Backoff().nominal(0)


def test_the_client_policy_is_1s_doubling_20_percent_30s_5_tries() -> None:
    policy = RetryPolicy()
    assert [policy.nominal(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert policy.spread == (0.8, 1.2)
    assert [policy.exhausted(n) for n in range(1, 7)] == [False] * 5 + [True]


@given(tries=st.integers(min_value=1, max_value=20), attempt=st.integers(1, 30), seed=seeds)
def test_the_llm_policy_counts_every_try_and_uses_equal_jitter(
    tries: int, attempt: int, seed: int
) -> None:
    policy = replace(llm_backoff(tries, 0.5, 8.0), uniform=random.Random(seed).uniform)
    assert policy.exhausted(attempt) == (attempt >= tries)
    nominal = min(8.0, 0.5 * 2 ** (attempt - 1))
    assert policy.nominal(attempt) == nominal
    assert nominal / 2 <= policy.delay(attempt) <= nominal
