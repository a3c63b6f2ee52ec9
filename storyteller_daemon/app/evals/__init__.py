"""``storyteller eval``: a pack's scenarios run through the whole daemon and judged.

`suite` finds and runs scenarios and sums them up into a `report`; `runner` runs one scenario
once over the bridge to a served world (`worlds`), on a throw-away database and virtual time
(`clock`); `observe` reads back what the storyteller did. docs/evals.md is the guide.
"""

from storyteller_daemon.app.evals.report import EvalReport, ScenarioReport, junit_xml
from storyteller_daemon.app.evals.runner import EvalModel
from storyteller_daemon.app.evals.suite import evaluate, find_pack_of, find_scenarios

__all__ = [
    "EvalModel",
    "EvalReport",
    "ScenarioReport",
    "evaluate",
    "find_pack_of",
    "find_scenarios",
    "junit_xml",
]
