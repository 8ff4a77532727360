"""Submissions record their env's protocol (summary.json's ``protocol``): boards group by it,
so runs of different protocols are never ranked together. Rows stored before read as
``colbench``, the only protocol there was.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("submissions", sa.Column("protocol", sa.String(50), nullable=False,
                                           server_default="colbench"))


def downgrade() -> None:
    # batch mode: SQLite drops a column by rebuilding the table.
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("protocol")
