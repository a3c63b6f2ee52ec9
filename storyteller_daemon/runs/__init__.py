"""Runs: what each attention batch, turn and digest refresh did, what it cost, and replaying it.

The one public face of run records:

- `RunRecorder` wraps every attention batch, turn and digest refresh, owns the model
  requests made inside it (`attribution`), tapes what the world and the repositories answered
  (`tape`) and stores the record (`records`) with one cost-ledger row per request;
- `replay_turn` runs a recorded turn again with today's code over its tape (passing a policy
  point as the recorded turn did, `replay_policy`) and reports the `Difference`s;
- `Comparer` replays recorded turns under a `Change` of model, effort or system prompt, asks
  their attention batches again (`rejudge`) and reports before and after (`Comparison`).

The record types the agent produces (`TurnRecord`, its calls and requests) live with the agent
(`agent.records`) and are re-exported here. Storage of runs is `storage.runs`;
prices are `agent.models.pricing`.
"""

from storyteller_daemon.agent.records import TurnOutcome, TurnRecord
from storyteller_daemon.runs.attribution import (
    Charge,
    Exchange,
    RunContext,
    attributed,
    current_run,
)
from storyteller_daemon.runs.compare import Comparer, RecordedTurn
from storyteller_daemon.runs.comparison import Change, Comparison
from storyteller_daemon.runs.differences import Difference
from storyteller_daemon.runs.recorder import RunRecorder
from storyteller_daemon.runs.records import AttentionRun, DigestRun, TurnRun
from storyteller_daemon.runs.replay import ReplayReport, RunnerFactory, replay_turn
from storyteller_daemon.runs.tape import Tape, decode_trigger, encode_trigger

__all__ = [
    "AttentionRun",
    "Change",
    "Charge",
    "Comparer",
    "Comparison",
    "Difference",
    "DigestRun",
    "Exchange",
    "RecordedTurn",
    "ReplayReport",
    "RunContext",
    "RunRecorder",
    "RunnerFactory",
    "Tape",
    "TurnOutcome",
    "TurnRecord",
    "TurnRun",
    "attributed",
    "current_run",
    "decode_trigger",
    "encode_trigger",
    "replay_turn",
]
