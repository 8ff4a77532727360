"""Model adapters. ``load_model(spec)`` builds one from a spec string."""

from colbench.models.base import BaseChatModel, ChatModel, Completion, Conversation, SamplingParams
from colbench.models.spec import load_model

__all__ = ["BaseChatModel", "ChatModel", "Completion", "Conversation", "SamplingParams",
           "load_model"]
