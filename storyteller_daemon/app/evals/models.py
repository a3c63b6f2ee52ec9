"""Which model ``storyteller eval --model`` runs scenarios against.

``stand-in`` is the offline stand-in (rule-based, not a language model: scenarios that need one
are skipped), ``configured`` the configuration's own endpoint (its storytellers' models), and
``ENDPOINT/MODEL`` one model on one endpoint (``default`` is ``[model]``'s, others come from
``[endpoints]``) for every scope of the storyteller.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from storyteller_daemon.agent.models.offline import OfflineStandInModel
from storyteller_daemon.app.adapters import choose_model, endpoint_models
from storyteller_daemon.app.evals.runner import EvalModel
from storyteller_daemon.config import DEFAULT_ENDPOINT, Config
from storyteller_daemon.errors import ConfigError

STAND_IN = "stand-in"
CONFIGURED = "configured"


def eval_model(spec: str, cfg: Config, environ: Mapping[str, str] = os.environ) -> EvalModel:
    """The model `spec` names.

    Raises:
        ConfigError: the configuration has no usable model, the endpoint is not configured or
            its key is not set, or `spec` is none of the three forms.
    """
    if spec == STAND_IN:
        offline = OfflineStandInModel()
        return EvalModel(offline, offline.name, stand_in=True)
    if spec == CONFIGURED:
        choice = choose_model(cfg, environ)
        if choice.model is None:
            raise ConfigError("--model", f"the configuration has no model: {choice.description}")
        return EvalModel(choice.model, choice.description, stand_in=choice.offline)
    endpoint, slash, name = spec.partition("/")
    if not slash or not endpoint or not name.strip():
        raise ConfigError(
            "--model",
            f"'{spec}' is not stand-in, configured or ENDPOINT/MODEL (default/gpt-5-mini)",
        )
    found = endpoint_models(cfg, environ)
    if endpoint not in found:
        known = ", ".join(sorted(found))
        raise ConfigError("--model", f"no endpoint named '{endpoint}' (configured: {known})")
    model = found[endpoint]
    if isinstance(model, str):
        raise ConfigError("--model", f"endpoint '{endpoint}' cannot be used: {model}")
    where = "[model]" if endpoint == DEFAULT_ENDPOINT else f"endpoint {endpoint}"
    return EvalModel(model, f"{name.strip()} on {where}", model_name=name.strip())
