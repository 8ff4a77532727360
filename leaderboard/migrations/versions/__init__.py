"""Revisions of the leaderboard's schema, oldest first."""
