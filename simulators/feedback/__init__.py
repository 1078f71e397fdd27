"""Feedback channels: label flips, a biased judge, missing (at random or by outcome) and
delayed ratings, composed by ``Feedback`` (``feedback.base``)."""

from simulators.feedback.base import (
    CHANNELS,
    ArrivalLine,
    Feedback,
    FeedbackChannel,
    Signals,
)
from simulators.feedback.delay import DelayedRatings
from simulators.feedback.flips import LabelFlips
from simulators.feedback.informative import InformativeMissing
from simulators.feedback.judge import BiasedJudge
from simulators.feedback.missing import MissingRatings

__all__ = [
    "CHANNELS",
    "ArrivalLine",
    "BiasedJudge",
    "DelayedRatings",
    "Feedback",
    "FeedbackChannel",
    "InformativeMissing",
    "LabelFlips",
    "MissingRatings",
    "Signals",
]
