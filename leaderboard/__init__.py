"""The colbench leaderboard service."""
