"""Model adapters. ``load_model(spec)`` builds one from a spec string."""

from colbench.models.base import (
    BaseChatModel,
    ChatModel,
    Completion,
    Conversation,
    EpisodeContext,
    SamplingParams,
)
from colbench.models.spec import load_model
from colbench.models.tiny import build_tiny_model

__all__ = ["BaseChatModel", "ChatModel", "Completion", "Conversation", "EpisodeContext",
           "SamplingParams", "build_tiny_model", "load_model"]
