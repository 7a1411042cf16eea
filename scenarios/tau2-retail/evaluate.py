"""Grades a results file SAGE-RS exported (`sage export DIR --format tau2`) with tau2-bench's
own evaluator, as `tau2 evaluate-trajs` does (Results.load, evaluate_simulation), the
environment part only (the database check: the NL assertions would call a hosted LLM) and with
strict replay: every recorded tool answer must equal what tau2's tools answer now.

    V/bin/python evaluate.py results.json    prints {"simulation id": db_match, ...}

V: a Python 3.12+ environment with tau2 installed (PROVENANCE.md, tests/tau2_retail.rs).
"""

import importlib.abc
import importlib.machinery
import json
import sys
import types

# The reference archive leaves tau2's voice modules out (PROVENANCE.md), but the modules the
# evaluator loads import from them: every `tau2.voice*` module stands in empty (voice off; no
# voice run is graded here). Its constants are off/empty/1, anything else a placeholder class.
class _Placeholder:
    def __init__(self, *args, **kwargs):
        pass


def _voice_setting(name):
    if name.startswith("__"):
        raise AttributeError(name)
    if not name.isupper():
        return _Placeholder
    if name.startswith("ENABLE_"):
        return False
    if name in ("VOCAL_TICS", "NON_DIRECTED_PHRASES"):
        return []
    if "_RANGE_" in name:
        return (1, 1)
    return 1


class _VoiceStubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name == "tau2.voice_config" or name == "tau2.voice" or name.startswith("tau2.voice."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = _voice_setting
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _VoiceStubs())

from tau2.data_model.simulation import Results  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402


def main(path):
    results = Results.load(path)
    tasks = {task.id: task for task in results.tasks}
    verdicts = {}
    for simulation in results.simulations:
        info = evaluate_simulation(
            simulation=simulation,
            task=tasks[simulation.task_id],
            evaluation_type=EvaluationType.ENV,
            solo_mode=False,
            domain=results.info.environment_info.domain_name,
            strict_replay=True,
        )
        verdicts[simulation.id] = None if info.db_check is None else info.db_check.db_match
    json.dump(verdicts, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1])
