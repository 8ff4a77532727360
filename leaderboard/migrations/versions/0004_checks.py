"""Submissions say which checks they passed (``checks_json``), for the board and the API.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("submissions", sa.Column("checks_json", sa.Text(), nullable=True))


def downgrade() -> None:
    # batch mode: SQLite drops a column by rebuilding the table.
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("checks_json")
