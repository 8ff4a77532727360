"""Trainer plugins on TRL and PEFT, registered as ``trainers``."""
