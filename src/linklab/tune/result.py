"""What tune() returns: the inputs, the settings, their explanation and both profiles
(tune/__init__.py makes it, tune/writer.py writes its two files)."""

from __future__ import annotations

from dataclasses import dataclass

from linklab.tune.explain import Explanation
from linklab.tune.inputs import TuningInput
from linklab.tune.settings import TunedSettings


@dataclass(frozen=True)
class TuningResult:
    inputs: TuningInput
    settings: TunedSettings
    explanation: Explanation
    fastdds_xml: str
    cyclonedds_xml: str

    @property
    def verdict(self) -> str:
        return self.explanation.verdict

    def to_dict(self) -> dict:
        return {"inputs": self.inputs.to_dict(), "settings": self.settings.to_dict(),
                "explanation": self.explanation.to_dict(), "verdict": self.verdict}
