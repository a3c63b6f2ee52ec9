"""The eval report: pass/fail by threshold, its JSON, and JUnit XML valid against the schema."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from storyteller_daemon.app.evals import EvalReport, ScenarioReport, junit_xml
from storyteller_daemon.app.evals.report import FailedRun
from storyteller_daemon.domain.scenarios import Rate, Result

SCHEMA = Path(__file__).parents[1] / "data" / "evals" / "junit.xsd"
HERE = Path("seed/harbour-ward/scenarios")


def _report(threshold: float = 0.8) -> EvalReport:
    held = ScenarioReport(
        name="a cry of thief",
        source=HERE / "thief.toml",
        storyteller="Harbour Ward Watch",
        rates=(Rate("the run completed", 5, 5), Rate("event 1 (say) is attended", 5, 5)),
        runs=5,
        tokens=1234.0,
        usd=0.0021,
        seconds=1.5,
    )
    flaky = ScenarioReport(
        name="small talk <is> left alone & quiet",
        source=HERE / "small-talk.toml",
        storyteller="Harbour Ward Watch",
        rates=(
            Rate("the run completed", 5, 5),
            Rate("CreateSituation not called", 3, 5, ("called 1 times", "called 2 times")),
        ),
        runs=5,
        seconds=0.5,
        failures=(FailedRun(2, (Result("CreateSituation not called", False, "called 1 times"),)),),
    )
    skipped = ScenarioReport(
        name="judgement",
        source=HERE / "judgement.toml",
        storyteller="Harbour Ward Watch",
        skipped="needs a language model (run with --model)",
    )
    return EvalReport("harbour-ward", "scripted", 5, threshold, (held, flaky, skipped))


def test_a_scenario_passes_when_every_expectation_reaches_the_threshold() -> None:
    report = _report(0.8)
    assert [s.passed(0.8) for s in report.scenarios] == [True, False, True]
    assert not report.passed and report.counts() == (1, 1, 1)
    lenient = _report(0.6)  # 3 of 5 is 0.6
    assert lenient.passed and lenient.counts() == (2, 0, 1)


def test_the_json_report_has_rates_costs_and_failed_runs() -> None:
    data = _report().to_json()
    assert data["passed"] is False
    assert data["counts"] == {"passed": 1, "failed": 1, "skipped": 1}
    held, flaky, skipped = data["scenarios"]
    assert (held["tokens"], held["usd"], held["seconds"]) == (1234.0, 0.0021, 1.5)
    assert flaky["expectations"][1] == {
        "expectation": "CreateSituation not called",
        "passed": 3,
        "runs": 5,
        "rate": 0.6,
        "failures": ["called 1 times", "called 2 times"],
    }
    assert flaky["failed_runs"] == [
        {
            "run": 2,
            "failed": [{"expectation": "CreateSituation not called", "got": "called 1 times"}],
            "runs": [],
        }
    ]
    assert skipped["skipped"] == "needs a language model (run with --model)"


def test_junit_xml_is_valid_against_the_junit_schema() -> None:
    schema = etree.XMLSchema(etree.parse(str(SCHEMA)))
    xml = junit_xml(_report()).encode()
    document = etree.fromstring(xml)
    schema.assertValid(document)
    assert document.get("tests") == "5" and document.get("failures") == "1"
    assert document.get("skipped") == "1"
    suites = document.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "a cry of thief",
        "small talk <is> left alone & quiet",
        "judgement",
    ]
    assert [s.get("failures") for s in suites] == ["0", "1", "0"]
    (failure,) = document.iter("failure")
    assert failure.get("message") == "held in 3 of 5 runs"
    assert failure.text == "run got: called 1 times\nrun got: called 2 times"
    case = failure.getparent()
    assert case.get("classname") == "harbour-ward.small-talk"
    (skip,) = document.iter("skipped")
    assert skip.get("message") == "needs a language model (run with --model)"


def test_the_schema_refuses_what_ci_servers_would_not_read() -> None:
    """The schema is not a formality: a report without its test counts is invalid."""
    schema = etree.XMLSchema(etree.parse(str(SCHEMA)))
    document = etree.fromstring(junit_xml(_report()).encode())
    suite = document.find("testsuite")
    assert suite is not None
    del suite.attrib["tests"]
    assert not schema.validate(document)
