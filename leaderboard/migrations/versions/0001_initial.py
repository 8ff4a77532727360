"""The first schema: tokens and submissions.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("token_id", sa.Integer(), sa.ForeignKey("tokens.id"), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("errors", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("verified_at", sa.DateTime(), nullable=True),
        sa.Column("env", sa.String(200), nullable=False),
        sa.Column("split", sa.String(100), nullable=False),
        sa.Column("run_model", sa.String(500), nullable=False),
        sa.Column("simulator", sa.String(200), nullable=True),
        sa.Column("scorer", sa.String(200), nullable=True),
        sa.Column("colbench_version", sa.String(50), nullable=False),
        sa.Column("task_set_name", sa.String(200), nullable=False),
        sa.Column("task_set_hash", sa.String(100), nullable=False),
        sa.Column("task_count", sa.Integer(), nullable=False),
        sa.Column("trials", sa.Integer(), nullable=False),
        sa.Column("episodes", sa.Integer(), nullable=False),
        sa.Column("model_name", sa.String(200), nullable=False),
        sa.Column("organization", sa.String(200), nullable=True),
        sa.Column("revision", sa.String(200), nullable=True),
        sa.Column("base_model", sa.String(200), nullable=True),
        sa.Column("adapter", sa.String(200), nullable=True),
        sa.Column("open_weights", sa.Boolean(), nullable=True),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("content_digest", sa.String(64), nullable=False, unique=True),
        sa.Column("summary_json", sa.Text(), nullable=False),
        sa.Column("episodes_gz", sa.LargeBinary(), nullable=False),
        sa.Column("success_mean", sa.Float(), nullable=True),
        sa.Column("success_lo", sa.Float(), nullable=True),
        sa.Column("success_hi", sa.Float(), nullable=True),
        sa.Column("score_mean", sa.Float(), nullable=True),
        sa.Column("score_lo", sa.Float(), nullable=True),
        sa.Column("score_hi", sa.Float(), nullable=True),
        sa.Column("metrics_json", sa.Text(), nullable=True),
        sa.Column("claimed_metrics_json", sa.Text(), nullable=True),
        sa.Column("breakdown_json", sa.Text(), nullable=True),
        sa.Column("claim_owner", sa.String(100), nullable=True),
        sa.Column("claimed_at", sa.DateTime(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
    )
    op.create_index("ix_submissions_token_id", "submissions", ["token_id"])
    op.create_index("ix_submissions_created_at", "submissions", ["created_at"])
    op.create_index("ix_submissions_board", "submissions",
                    ["env", "split", "status", "verified_at"])
    op.create_index("ix_submissions_status_created", "submissions", ["status", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_submissions_status_created", table_name="submissions")
    op.drop_index("ix_submissions_board", table_name="submissions")
    op.drop_index("ix_submissions_created_at", table_name="submissions")
    op.drop_index("ix_submissions_token_id", table_name="submissions")
    op.drop_table("submissions")
    op.drop_table("tokens")
