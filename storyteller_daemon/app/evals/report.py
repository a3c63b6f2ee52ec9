"""What ``storyteller eval`` found: pass rates per expectation, cost and latency per scenario.

`EvalReport` holds one `ScenarioReport` per scenario (its pass rate per expectation over the
runs, the mean tokens, USD and real seconds of a run, and each failing run's failed expectations
with its transcripts), and says whether every expectation held in at least the threshold share
of the runs. `to_json` is ``--json``'s form; `junit_xml` is ``--junit``'s: one test case per
expectation of a scenario, failed below the threshold, skipped with its scenario.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from storyteller_daemon.app.evals.observe import Transcript
from storyteller_daemon.domain.eval_results import EvalResult
from storyteller_daemon.domain.scenarios import Rate, Result, passes
from storyteller_daemon.interchange.packs.scenarios import PackScenario


@dataclass(frozen=True)
class FailedRun:
    """One run in which some expectation did not hold."""

    run: int
    """Its number, from 1."""
    failed: tuple[Result, ...]
    transcripts: tuple[Transcript, ...] = ()


@dataclass(frozen=True)
class ScenarioReport:
    """One scenario over its runs."""

    name: str
    source: Path
    storyteller: str
    rates: tuple[Rate, ...] = ()
    runs: int = 0
    tokens: float = 0.0
    """Mean tokens (input and output) of a run."""
    usd: float = 0.0
    """Mean USD of a run."""
    seconds: float = 0.0
    """Mean real seconds a run took."""
    failures: tuple[FailedRun, ...] = ()
    skipped: str | None = None
    """Why the scenario was not run (None: it was)."""

    @classmethod
    def skipped_one(cls, item: PackScenario, why: str) -> ScenarioReport:
        """A scenario left out, and why."""
        name = item.scenario.storyteller or ""
        return cls(item.scenario.name, item.source, name, skipped=why)

    def passed(self, threshold: float) -> bool:
        """Whether every expectation held in at least `threshold` of the runs (a skipped
        scenario fails nothing)."""
        return self.skipped is not None or passes(self.rates, threshold)

    def to_json(self, threshold: float) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": str(self.source),
            "storyteller": self.storyteller,
            "skipped": self.skipped,
            "passed": self.passed(threshold),
            "runs": self.runs,
            "tokens": self.tokens,
            "usd": self.usd,
            "seconds": self.seconds,
            "expectations": [
                {
                    "expectation": rate.label,
                    "passed": rate.passed,
                    "runs": rate.runs,
                    "rate": rate.rate,
                    "failures": list(rate.details),
                }
                for rate in self.rates
            ],
            "failed_runs": [
                {
                    "run": failure.run,
                    "failed": [{"expectation": r.label, "got": r.detail} for r in failure.failed],
                    "runs": [t.summary.to_json() for t in failure.transcripts],
                }
                for failure in self.failures
            ],
        }


@dataclass(frozen=True)
class EvalReport:
    """Every scenario of one ``storyteller eval``."""

    pack: str
    model: str
    repeat: int
    threshold: float
    scenarios: tuple[ScenarioReport, ...]

    @property
    def passed(self) -> bool:
        """Whether every scenario run held every expectation often enough."""
        return all(s.passed(self.threshold) for s in self.scenarios)

    def counts(self) -> tuple[int, int, int]:
        """Scenarios passed, failed and skipped."""
        skipped = sum(1 for s in self.scenarios if s.skipped is not None)
        failed = sum(1 for s in self.scenarios if not s.passed(self.threshold))
        return len(self.scenarios) - skipped - failed, failed, skipped

    def to_json(self) -> dict[str, Any]:
        passed, failed, skipped = self.counts()
        return {
            "pack": self.pack,
            "model": self.model,
            "repeat": self.repeat,
            "threshold": self.threshold,
            "passed": self.passed,
            "counts": {"passed": passed, "failed": failed, "skipped": skipped},
            "scenarios": [s.to_json(self.threshold) for s in self.scenarios],
        }


def kept_results(report: EvalReport, evaluated_at: datetime) -> list[EvalResult]:
    """The report as the rows the database keeps (one per scenario), for the dashboard."""
    return [
        EvalResult(
            storyteller=s.storyteller,
            pack=report.pack,
            scenario=s.name,
            model=report.model,
            evaluated_at=evaluated_at,
            runs=s.runs,
            threshold=report.threshold,
            pass_rate=min((r.rate for r in s.rates), default=1.0),
            passed=s.skipped is None and s.passed(report.threshold),
            skipped=s.skipped is not None,
            tokens=s.tokens,
            usd=s.usd,
            seconds=s.seconds,
        )
        for s in report.scenarios
    ]


def junit_xml(report: EvalReport) -> str:
    """The report as JUnit XML: a test suite per scenario, a test case per expectation."""
    root = ET.Element("testsuites", name=f"storyteller eval {report.pack}")
    total = failures = skipped = 0
    for scenario in report.scenarios:
        cases: list[tuple[str, Rate | None]] = [(r.label, r) for r in scenario.rates]
        cases = cases or [("scenario", None)]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=scenario.name,
            tests=str(len(cases)),
            failures="0",
            errors="0",
            skipped=str(len(cases) if scenario.skipped else 0),
            time=f"{scenario.seconds * scenario.runs:.3f}",
        )
        failed_here = 0
        for label, rate in cases:
            case = ET.SubElement(
                suite,
                "testcase",
                name=label,
                classname=f"{report.pack}.{scenario.source.stem}",
                time=f"{scenario.seconds:.3f}",
            )
            if scenario.skipped is not None:
                ET.SubElement(case, "skipped", message=scenario.skipped)
            elif rate is not None and rate.rate < report.threshold:
                failed_here += 1
                message = f"held in {rate.passed} of {rate.runs} runs"
                failure = ET.SubElement(case, "failure", message=message, type="expectation")
                failure.text = "\n".join(f"run got: {d}" for d in rate.details)
        suite.set("failures", str(failed_here))
        total += len(cases)
        failures += failed_here
        skipped += len(cases) if scenario.skipped else 0
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("skipped", str(skipped))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
