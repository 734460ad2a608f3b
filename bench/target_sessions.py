"""What acting in a cluster's target costs a step, against the hub's own account and region.

    .venv/bin/python bench/target_sessions.py [--repeat 10] [--hours 3] [--every 30] [--targets 10] [--no-judge]

A step runs as the hub's stacks function does in Lambda (bench/target_world.py: in-process moto with the sandbox's
patches and, unless --no-judge, its IAM judging the function's role session, the AssumeRole against the target
role's trust policy and the target session's calls), for a cluster at home (123456789012/eu-central-1: the
function's own clients, clm.aws) and one in a target (222222222222/eu-west-1: a session of the target role,
clm.target_sessions), in three states of the container:

- cold: a new container (every kept client, the deployment's identity and the target sessions forgotten);
- first: a warm container's first step in that target (its target sessions forgotten: AssumeRole, STS
  GetCallerIdentity to verify the account, a new boto3 session and its clients); at home the same as warm;
- warm: the next step (the kept session and clients).

Steps: `check_stack` (one DescribeStacks in the target) and `pools` (the cluster from the hub's registry, then
ListStacks in the target). Per step and state: AWS calls and clients made at home and in the target, and the
median milliseconds of --repeat runs (moto answers in-process in ~1 ms; AWS's STS is a network round trip away).
Then the renewal, on a virtual clock: AssumeRole calls per target over --hours of one step every --every seconds.
Then what a kept target holds: clients and Python memory (tracemalloc) per target over --targets targets.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from target_memory import kept_targets, print_kept
from target_world import HUB, TARGET, Meter, World, metered, world

from clm import aws
from clm.target_sessions import DURATION, RENEW_BEFORE, TargetSessions
from clm.targets import TargetPolicy
from clm.workflow import stack_steps, target_aws

STATES = ("cold", "first", "warm")
STEPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "check_stack": stack_steps.check_stack,
    "pools": stack_steps.pools,
}
PARTS = ("calls", "clients", "sessions")  # what a step's time is spent in (Meter.seconds)
STS_MS = (20, 50)  # estimate of an in-region STS call from Lambda (not measured here)


@dataclass(frozen=True)
class Sample:
    """One step's wall seconds and what it asked of AWS."""

    seconds: float
    meter: Meter


def forget(state: str) -> None:
    """Bring the process to `state`: cold forgets every kept client and the parsed service models (the deployment's
    identity and the target sessions are kept per hub STS client: new ones follow); first only the target sessions;
    warm nothing."""
    if state == "cold":
        aws.forget_clients()
        aws._loader.cache_clear()  # a new container parses the service models anew
    if state == "first":
        target_aws._kept_sessions.cache_clear()


def run_step(step: str, event: dict[str, Any], state: str) -> Sample:
    """The step once in `state`, timed and metered (the garbage of earlier runs collected first: a new container has
    none, and a warm one's collections are not the step's)."""
    forget(state)
    gc.collect()
    with metered() as meter:
        start = time.perf_counter()
        STEPS[step](event)
        seconds = time.perf_counter() - start
    return Sample(seconds, meter)


def measure(made: World, repeat: int) -> dict[tuple[str, bool, str], list[Sample]]:
    """Every step at home and in the target, in each state, `repeat` times taking turns (the objects alive before
    frozen out of the garbage collector's way meanwhile: moto's and the imported modules')."""
    samples: dict[tuple[str, bool, str], list[Sample]] = {}
    gc.collect()
    gc.freeze()
    try:
        for run in range(repeat):
            for step in STEPS:
                for home in (True, False)[:: 1 if run % 2 else -1]:  # taking turns at going first
                    for state in STATES:
                        samples.setdefault((step, home, state), []).append(run_step(step, made.event(home), state))
    finally:
        gc.unfreeze()
    return samples


def counts(samples: list[Sample]) -> tuple[int, int, int]:
    """AWS calls, of which STS, and clients made: the same in every run (ValueError otherwise)."""
    found = {(sum(s.meter.calls.values()), s.meter.sts_calls(), sum(s.meter.clients.values())) for s in samples}
    if len(found) != 1:
        raise ValueError(f"counts differ from run to run: {sorted(found)}")
    return found.pop()


def median_ms(samples: list[Sample], part: Callable[[Sample], float] = lambda s: s.seconds) -> float:
    """The median of `part` of the runs, in milliseconds."""
    return statistics.median(part(s) for s in samples) * 1000


def extra_ms(home: list[Sample], there: list[Sample], part: Callable[[Sample], float]) -> float:
    """How many more milliseconds of `part` (median) the target's runs took than the home ones."""
    return median_ms(there, part) - median_ms(home, part)


def print_steps(samples: dict[tuple[str, bool, str], list[Sample]], repeat: int) -> None:
    """Per step and state: calls, STS calls, clients, ms at home and in the target, the extra and the ratio."""
    print(f"per step, home (hub's account and region) vs target (222222222222/eu-west-1), median ms of {repeat} runs")
    print(
        f"{'step':<12} {'state':<6} {'calls h/t':>9} {'sts h/t':>7} {'clients h/t':>11}  {'ms home':>8} "
        f"{'ms target':>9} {'extra ms':>8} {'ratio':>6}  extra ms in: {', '.join(PARTS)}"
    )
    for step in STEPS:
        for state in STATES:
            home, there = samples[(step, True, state)], samples[(step, False, state)]
            (hc, hs, hn), (tc, ts, tn) = counts(home), counts(there)
            ms_home, ms_target = median_ms(home), median_ms(there)
            parts = [extra_ms(home, there, lambda s, what=what: s.meter.seconds[what]) for what in PARTS]
            print(
                f"{step:<12} {state:<6} {f'{hc}/{tc}':>9} {f'{hs}/{ts}':>7} {f'{hn}/{tn}':>11}  {ms_home:8.1f} "
                f"{ms_target:9.1f} {ms_target - ms_home:+8.1f} {ms_target / ms_home:6.2f}  "
                f"{', '.join(f'{part:+.1f}' for part in parts)}"
            )
    home_first, there_first = (samples[("check_stack", home, "first")][0].meter for home in (True, False))
    added = (there_first.calls - home_first.calls, there_first.clients - home_first.clients)
    print("a target's first step in a warm container adds the calls " + _listed(added[0]))
    print("  and the clients " + _listed(added[1]))
    print(
        f"on AWS each STS call is a round trip (~{STS_MS[0]}-{STS_MS[1]} ms in-region, an estimate): a target's "
        f"first step ~{2 * STS_MS[0]}-{2 * STS_MS[1]} ms more than moto shows; warm steps 0 calls more"
    )


def _listed(counted: Counter[str]) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(counted.items()))


class VirtualClock:
    """A clock the benchmark moves (epoch seconds)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class VirtualSts:
    """The function's STS client on a virtual clock: moto's Expiration follows the real clock, so each answer's is
    set to the virtual now + DurationSeconds, STS's contract. Keeps the virtual times of the AssumeRole calls."""

    def __init__(self, sts: Any, clock: VirtualClock) -> None:
        self.sts, self.clock, self.meta, self.assumed_at = sts, clock, sts.meta, []

    def assume_role(self, **kwargs: Any) -> Any:
        """STS AssumeRole, its Expiration on the virtual clock."""
        answer = self.sts.assume_role(**kwargs)
        self.assumed_at.append(self.clock())
        expires = self.clock() + kwargs["DurationSeconds"]
        answer["Credentials"]["Expiration"] = datetime.datetime.fromtimestamp(expires, datetime.UTC)
        return answer


@dataclass(frozen=True)
class Renewals:
    """AssumeRole and GetCallerIdentity calls of `hours` of steps in one target, and when (minutes) each assume was."""

    hours: float
    assumes: int
    verifies: int
    minutes: list[float]


def renewals(made: World, hours: float, every: float) -> Renewals:
    """A step every `every` seconds for `hours` in the target, on a virtual clock, with one kept TargetSessions."""
    clock = VirtualClock(float(int(time.time())))  # whole seconds: the virtual minutes stay exact
    start = clock.now
    sts = VirtualSts(aws.client("sts"), clock)
    sessions = TargetSessions(TargetPolicy.from_env(home=HUB.account), sts, clock)
    with metered() as meter:
        while clock.now < start + hours * 3600:
            sessions.client("cloudformation", made.target_cluster, TARGET)
            clock.now += every
    minutes = [(at - start) / 60 for at in sts.assumed_at]
    return Renewals(hours, meter.calls["sts:AssumeRole"], meter.calls["sts:GetCallerIdentity"], minutes)


def print_renewals(found: Renewals, every: float) -> None:
    """The renewal figures beside what the constants give."""
    lifetime = DURATION - RENEW_BEFORE
    print(
        f"renewal: a {DURATION // 60}-minute session renewed {RENEW_BEFORE / 60:.0f} min before it expires is used "
        f"{lifetime / 60:.0f} min: {3600 / lifetime:.2f} AssumeRole an hour per target and function container"
    )
    print(
        f"  measured, a step every {every:.0f} s for {found.hours:g} h (virtual clock): {found.assumes} AssumeRole, "
        f"{found.verifies} GetCallerIdentity, at minutes {', '.join(f'{m:.1f}' for m in found.minutes)}"
    )


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10, help="runs of each step, place and state")
    parser.add_argument("--hours", type=float, default=3.0, help="virtual hours of steps for the renewal")
    parser.add_argument("--every", type=float, default=30.0, help="virtual seconds between those steps")
    parser.add_argument("--targets", type=int, default=10, help="kept targets for the memory figure")
    parser.add_argument("--no-judge", action="store_true", help="the sandbox's IAM judge off")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with world(judge=not args.no_judge) as made:
        print(f"in-process moto with the sandbox's IAM judge {'off' if args.no_judge else 'on'}")
        print_steps(measure(made, args.repeat), args.repeat)
        print_renewals(renewals(made, args.hours, args.every), args.every)
        print_kept(kept_targets(args.targets))
    print(f"load average (1 min) up to {max(load_before, os.getloadavg()[0]):.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
