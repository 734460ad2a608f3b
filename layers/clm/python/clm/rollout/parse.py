"""Reading a rollout policy (cluster/rollout.yaml): strict, bounded, every error naming file and line.

Unknown keys, values of the wrong kind, a list that selects nothing, durations that are not Go durations or
longer than a week, concurrencies below 1, percentages outside 1-100%, no waves, more than MAX_WAVES,
duplicate wave names, and freezes without an offset, a reason, or longer than MAX_FREEZE are refused
(docs/rollouts.md: the format).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, NoReturn

import yaml

from clm.errors import RolloutPolicyError
from clm.kube.settings import parse_duration
from clm.rollout.policy import (
    ALARM_FIELD,
    ALARM_FIELDS,
    ORDER_KEYS,
    UNMATCHED,
    Concurrency,
    Freeze,
    HealthGate,
    Policy,
    Selector,
    Wave,
)
from clm.yamlutil import LineDict, LineList, error_line, error_reason, load_with_lines, scalar_text

MAX_BYTES = 64 * 1024  # a policy of 100 waves with long cluster lists fits; a huge file is refused before parsing
MAX_WAVES = 100
MAX_CONCURRENCY = 1000
MAX_BAKE = (7 * 24 * 3600, "a week (168h)")  # a longer bake is a typo (or a way to stop rollouts no one would see)
POLICY_KEYS = ("waves", "max_concurrency", "environments", "health", "freeze")
HEALTH_KEYS = ("hold", "timeout", "interval", "namespaces", "workloads", "alarms")
MAX_GATE = (24 * 3600, "a day (24h)")  # a hold or timeout of a day is already a rollout no one watches
MIN_INTERVAL, MAX_INTERVAL = 5, (600, "10m")
MAX_GATE_ITEMS = 20  # namespaces, workloads, alarms: each check asks the cluster and CloudWatch for all of them
MAX_FREEZES = 50
MAX_FREEZE = timedelta(days=31)  # a longer freeze is a typo, or disruptive work stopped for good without a word
MAX_REASON = 200
FREEZE_KEYS = ("from", "to", "reason")
WAVE_KEYS = ("name", "select", "exclude", "size", "concurrency", "bake", "order")
SELECTOR_KEYS = ("environment", "criticality", "channel", "account", "region", "clusters", "config_items")
_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_ACCOUNT = re.compile(r"(aws:)?(\d{12})")
_PERCENT = re.compile(r"(\d{1,3})%")
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_WORKLOAD = re.compile(r"([a-z0-9][-a-z0-9]{0,62})/(deployment|statefulset|daemonset)/([a-z0-9][-a-z0-9.]{0,252})")
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d{1,9})?([Zz]|[+-]\d\d:\d\d)")


def parse(text: str | bytes, source: str) -> Policy:
    """The policy `text` (read from `source`) describes; RolloutPolicyError naming `source` and the line."""
    reader = _Reader(source)
    if len(text) > MAX_BYTES:
        reader.fail(None, f"{len(text):,} bytes: a rollout policy is at most {MAX_BYTES:,}")
    try:
        data = load_with_lines(text)
    except yaml.YAMLError as exc:
        reader.fail(error_line(exc), error_reason(exc))
    if not isinstance(data, LineDict):
        reader.fail(getattr(data, "line", None) or 1, "expected a mapping with `waves`")
    reader.known_keys(data, POLICY_KEYS, "policy")
    waves = data.get("waves")
    if not isinstance(waves, LineList) or not waves:
        reader.fail(data.line_of("waves"), "waves: a non-empty list of waves (name, select, concurrency, bake...)")
    if len(waves) > MAX_WAVES:
        reader.fail(waves.line, f"{len(waves)} waves: at most {MAX_WAVES}")
    parsed, lines = [], {}
    for item, line in zip(waves, waves.item_lines, strict=True):
        wave = reader.wave(item, line)
        if wave.name in lines:
            reader.fail(line, f"wave {wave.name!r} is named twice (first at line {lines[wave.name]})")
        lines[wave.name] = line
        parsed.append(wave)
    max_concurrency = reader.count(data, "max_concurrency", 3, "policy")
    environments = tuple(reader.strings(data, "environments", "policy") or ("test", "staging", "production"))
    health = reader.health(data) if "health" in data else HealthGate()
    freezes = tuple(reader.freezes(data["freeze"], data.line_of("freeze"))) if "freeze" in data else ()
    return Policy(tuple(parsed), max_concurrency, environments, source, health, freezes)


class _Reader:
    """Reads the parts of one policy file, failing with its name and the line at fault."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, line: int | None, message: str) -> NoReturn:
        raise RolloutPolicyError(message, self.source, line)

    def known_keys(self, data: LineDict, keys: tuple[str, ...], what: str) -> None:
        for key in data:
            if key not in keys:
                self.fail(data.line_of(str(key)), f"{what}: unknown key {key!r} (known: {', '.join(keys)})")

    def wave(self, item: Any, line: int) -> Wave:
        if not isinstance(item, LineDict):
            self.fail(line, "a wave is a mapping (name, select, concurrency, bake...)")
        self.known_keys(item, WAVE_KEYS, "wave")
        name = item.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            self.fail(item.line_of("name"), f"wave name {name!r}: lower-case letters, digits and '-', 1-63")
        if name == UNMATCHED:
            self.fail(item.line_of("name"), f"wave name {UNMATCHED!r} is the clusters no wave selects")
        what = f"wave {name}"
        values: dict[str, Any] = {"name": name}
        if "select" in item:
            values["selector"] = self.selector(item["select"], item.line_of("select"), f"{what}: select")
        if "exclude" in item:
            values["exclude"] = self.selector(item["exclude"], item.line_of("exclude"), f"{what}: exclude")
        if "size" in item:
            values["size"] = self.count(item, "size", 1, what, bound=None)
        if "concurrency" in item:
            values["concurrency"] = self.concurrency(item, what)
        if "bake" in item:
            values["bake_seconds"] = self.duration(item, "bake", what, MAX_BAKE)
        if "order" in item:
            values["order"] = self.order(item, what)
        return Wave(**values)

    def selector(self, data: Any, line: int, what: str) -> Selector:
        if not isinstance(data, LineDict):
            self.fail(line, f"{what}: a mapping of {', '.join(SELECTOR_KEYS)}")
        self.known_keys(data, SELECTOR_KEYS, what)
        values: dict[str, Any] = {}
        for key in ("environment", "channel", "region", "clusters"):
            if key in data:
                values[key] = frozenset(self.strings(data, key, what))
        if "criticality" in data:
            values["criticality"] = frozenset(self.listed(data, "criticality", what, int, "a whole number"))
        if "account" in data:
            values["account"] = frozenset(
                self.account(data, value, what) for value in self.strings(data, "account", what)
            )
        if "config_items" in data:
            items = data["config_items"]
            if not isinstance(items, LineDict) or not items:
                self.fail(data.line_of("config_items"), f"{what}: config_items: a mapping of item names to values")
            values["config_items"] = {
                str(name): frozenset(self.listed(items, str(name), f"{what}: config_items", (str, int, float), "text"))
                for name in items
            }
        return Selector(**values)

    def listed(self, data: LineDict, key: str, what: str, kind: Any, described: str) -> list[Any]:
        """A value or a non-empty list of values of `kind` (never a bool), config items' as text."""
        value = data[key]
        items = list(value) if isinstance(value, list) else [value]
        if not items:
            self.fail(data.line_of(key), f"{what}: {key}: an empty list selects nothing; list at least one value")
        for entry in items:
            if isinstance(entry, bool) or not isinstance(entry, kind):
                self.fail(data.line_of(key), f"{what}: {key}: {entry!r} is not {described}")
        return [entry if kind is int else scalar_text(entry) for entry in items]

    def strings(self, data: LineDict, key: str, what: str) -> list[str] | None:
        if key not in data:
            return None
        return self.listed(data, key, what, str, "text (quote numbers)")

    def account(self, data: LineDict, value: str, what: str) -> str:
        match = _ACCOUNT.fullmatch(value)
        if not match:
            self.fail(data.line_of("account"), f"{what}: account {value!r} is not aws:<12 digits> or 12 digits")
        return match.group(2)

    def count(self, data: LineDict, key: str, default: int, what: str, bound: int | None = MAX_CONCURRENCY) -> int:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (bound and value > bound):
            limit = f"1 to {bound}" if bound else "at least 1"
            self.fail(data.line_of(key), f"{what}: {key} {value!r} is not a whole number {limit}")
        return value

    def concurrency(self, data: LineDict, what: str) -> Concurrency:
        value = data["concurrency"]
        if isinstance(value, str):
            match = _PERCENT.fullmatch(value.strip())
            if not match or not 1 <= int(match.group(1)) <= 100:
                self.fail(data.line_of("concurrency"), f"{what}: concurrency {value!r} is not a percentage 1-100%")
            return Concurrency(int(match.group(1)), percent=True)
        return Concurrency(self.count(data, "concurrency", 1, what))

    def health(self, data: LineDict) -> HealthGate | None:
        """`health: false` (no gate), or a mapping of HEALTH_KEYS (those left out: HealthGate's defaults)."""
        item, line = data["health"], data.line_of("health")
        if item is False:
            return None
        if not isinstance(item, LineDict):
            self.fail(line, f"health: false, or a mapping of {', '.join(HEALTH_KEYS)}")
        self.known_keys(item, HEALTH_KEYS, "health")
        values: dict[str, Any] = {}
        for key, bound in (("hold", MAX_GATE), ("timeout", MAX_GATE), ("interval", MAX_INTERVAL)):
            if key in item:
                values[f"{key}_seconds"] = self.duration(item, key, "health", bound)
        gate = HealthGate(**values)
        if gate.interval_seconds < MIN_INTERVAL:
            self.fail(item.line_of("interval"), f"health: interval is at least {MIN_INTERVAL}s")
        if gate.timeout_seconds < gate.hold_seconds:
            self.fail(item.line_of("timeout") or line, "health: timeout is shorter than hold: no gate could pass")
        namespaces = self.gate_items(item, "namespaces", _NAMESPACE, "a namespace name")
        workloads = self.gate_items(item, "workloads", _WORKLOAD, "namespace/deployment|statefulset|daemonset/name")
        alarms = tuple(self.alarm(item, template) for template in self.gate_items(item, "alarms", None, "") or ())
        return replace(
            gate,
            namespaces=gate.namespaces if namespaces is None else namespaces,
            workloads=workloads or (),
            alarms=alarms,
        )

    def gate_items(
        self, item: LineDict, key: str, pattern: re.Pattern[str] | None, described: str
    ) -> tuple[str, ...] | None:
        """A list (maybe empty) of at most MAX_GATE_ITEMS texts, each matching `pattern`; None when `key` is absent."""
        if key not in item:
            return None
        values = item[key]
        if not isinstance(values, list) or len(values) > MAX_GATE_ITEMS:
            self.fail(item.line_of(key), f"health: {key}: a list of at most {MAX_GATE_ITEMS}")
        for value in values:
            if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
                self.fail(item.line_of(key), f"health: {key}: {value!r} is not {described or 'text'}")
        return tuple(values)

    def alarm(self, item: LineDict, template: str) -> str:
        """An alarm name template: at most 255 characters, naming only ALARM_FIELDS in braces."""
        unknown = [field for field in ALARM_FIELD.findall(template) if field not in ALARM_FIELDS]
        if unknown or not 0 < len(template) <= 255 or template.count("{") != template.count("}"):
            self.fail(
                item.line_of("alarms"),
                f"health: alarms: {template[:80]!r}: 1-255 characters, with {{field}} one of {', '.join(ALARM_FIELDS)}",
            )
        return template

    def duration(self, data: LineDict, key: str, what: str, bound: tuple[int, str]) -> int:
        """A Go duration of at most `bound` (seconds, said in words), rounded up to whole seconds."""
        value = data[key]
        try:
            seconds = (
                parse_duration(str(value)) if isinstance(value, str) or (type(value) is int and value == 0) else None
            )
        except ValueError:
            seconds = None
        if seconds is None:
            self.fail(data.line_of(key), f"{what}: {key} {value!r} is not a duration like 30m, 2h or 1h30m")
        if seconds > bound[0]:
            self.fail(data.line_of(key), f"{what}: {key} {value!r} is longer than {bound[1]}")
        return math.ceil(seconds)

    def order(self, data: LineDict, what: str) -> tuple[str, ...]:
        keys = self.strings(data, "order", what) or []
        for key in keys:
            if key.removeprefix("-") not in ORDER_KEYS:
                self.fail(
                    data.line_of("order"),
                    f"{what}: order {key!r}: one of {', '.join(ORDER_KEYS)}, '-' first to reverse",
                )
        fields = [key.removeprefix("-") for key in keys]
        if len(set(fields)) != len(fields):
            self.fail(data.line_of("order"), f"{what}: order names a field twice")
        return tuple(keys) if "id" in fields else (*keys, "id")

    def freezes(self, data: Any, line: int) -> list[Freeze]:
        if not isinstance(data, LineList) or len(data) > MAX_FREEZES:
            self.fail(line, f"freeze: a list of at most {MAX_FREEZES} freezes (from, to, reason)")
        return [self.freeze(item, item_line) for item, item_line in zip(data, data.item_lines, strict=True)]

    def freeze(self, item: Any, line: int) -> Freeze:
        if not isinstance(item, LineDict):
            self.fail(line, "freeze: each is a mapping of from, to and reason")
        self.known_keys(item, FREEZE_KEYS, "freeze")
        start, end = self.time(item, "from"), self.time(item, "to")
        reason = item.get("reason")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON:
            self.fail(item.line_of("reason"), f"freeze: reason: text of 1 to {MAX_REASON} characters")
        if not start < end <= start + MAX_FREEZE:
            self.fail(line, f"freeze: `to` must be after `from`, by at most {MAX_FREEZE.days} days")
        return Freeze(start, end, reason.strip())

    def time(self, item: LineDict, key: str) -> datetime:
        """An RFC 3339 time with its offset (YAML may have read it as a time already)."""
        value = item.get(key)
        if isinstance(value, str) and _RFC3339.fullmatch(value.strip()):
            value = datetime.fromisoformat(value.strip())
        if not isinstance(value, datetime) or value.tzinfo is None:
            self.fail(item.line_of(key), f"freeze: {key}: an RFC 3339 time, e.g. 2026-12-20T00:00:00Z")
        return value
