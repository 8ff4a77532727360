"""Quill, the forum: boards, threads with replies and votes, subscriptions, search, member
profiles and personal settings."""
