"""Challenge splits: the hidden tasks minted from the server's secret, and the questions each
token asked the server's simulated human about them (the per-task question budget).

Revision ID: 0003
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "challenges",
        sa.Column("name", sa.String(40), primary_key=True),
        sa.Column("env", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("task_count", sa.Integer(), nullable=False),
        sa.Column("public_hash", sa.String(100), nullable=False, unique=True),
        sa.Column("tasks_gz", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "challenge_questions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("challenge", sa.String(40), sa.ForeignKey("challenges.name"),
                  nullable=False),
        sa.Column("token_id", sa.Integer(), sa.ForeignKey("tokens.id"), nullable=False),
        sa.Column("task_id", sa.String(100), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("asked_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("challenge", "token_id", "task_id", "digest",
                            name="uq_challenge_questions"),
    )


def downgrade() -> None:
    op.drop_table("challenge_questions")
    op.drop_table("challenges")
