"""Uploads are read by the verification worker, not the web process; duplicates are judged
by scored content, per token; every upload attempt counts toward the rate limit.

- ``upload_attempts``: one row per upload a token made, stored or refused (the rate limit
  counts these); filled with the submissions stored before.
- ``submissions.raw_summary`` and ``raw_metadata``: the parts as sent, read by the worker.
- ``submissions.content_digest`` becomes the scored content's fingerprint
  (:meth:`colbench.leaderboard.upload.ParsedRun.digest`), unique per token instead of
  everywhere, and may be empty until the upload is read; ``duplicate_of`` names the entry a
  copy duplicates. Stored rows get the new fingerprint, computed from their stored upload:
  a token's later copy of its own earlier results keeps its status but names the earlier
  one in ``duplicate_of`` (and has no fingerprint of its own), as does a copy under
  another token.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

#: The name SQLite's unnamed unique constraint on content_digest gets when batch mode
#: reflects it (PostgreSQL named it itself).
_NAMING = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def upgrade() -> None:
    op.create_table(
        "upload_attempts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("token_id", sa.Integer(), sa.ForeignKey("tokens.id"), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_upload_attempts_token_created", "upload_attempts",
                    ["token_id", "created_at"])
    op.execute("INSERT INTO upload_attempts (token_id, created_at) "
               "SELECT token_id, created_at FROM submissions")
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        with op.batch_alter_table("submissions", recreate="always",
                                  naming_convention=_NAMING) as batch:
            batch.drop_constraint("uq_submissions_content_digest", type_="unique")
            batch.alter_column("content_digest", existing_type=sa.String(64), nullable=True)
    else:
        op.drop_constraint("submissions_content_digest_key", "submissions", type_="unique")
        op.alter_column("submissions", "content_digest", existing_type=sa.String(64),
                        nullable=True)
    op.add_column("submissions", sa.Column("raw_summary", sa.LargeBinary(), nullable=True))
    op.add_column("submissions", sa.Column("raw_metadata", sa.LargeBinary(), nullable=True))
    op.add_column("submissions", sa.Column("duplicate_of", sa.String(32), nullable=True))
    _refingerprint(bind)
    op.create_index("uq_submissions_token_digest", "submissions",
                    ["token_id", "content_digest"], unique=True)
    op.create_index("ix_submissions_content_digest", "submissions", ["content_digest"])


def _refingerprint(bind: sa.engine.Connection) -> None:
    """The new fingerprint for every stored row, oldest first, one upload in memory at a
    time. A row whose upload cannot be read (none should: each was read when accepted)
    keeps none."""
    from colbench.leaderboard.upload import UploadError, UploadLimits, parse_run

    ids = bind.execute(sa.text("SELECT id, token_id FROM submissions "
                               "ORDER BY created_at, id")).fetchall()
    first_of_token: dict[tuple[int, str], str] = {}
    first_anywhere: dict[str, str] = {}
    for submission_id, token_id in ids:
        summary_json, episodes_gz = bind.execute(
            sa.text("SELECT summary_json, episodes_gz FROM submissions WHERE id = :id"),
            {"id": submission_id}).one()
        try:
            digest: str | None = parse_run(summary_json.encode("utf-8"), bytes(episodes_gz),
                                           UploadLimits.unlimited()).digest()
        except UploadError:
            digest = None
        duplicate_of = None
        if digest is not None:
            duplicate_of = first_of_token.get((token_id, digest)) or first_anywhere.get(digest)
            if (token_id, digest) in first_of_token:
                digest = None  # unique per token: the earlier row keeps it
            else:
                first_of_token[(token_id, digest)] = submission_id
                first_anywhere.setdefault(digest, submission_id)
        bind.execute(sa.text("UPDATE submissions SET content_digest = :digest, "
                             "duplicate_of = :duplicate_of WHERE id = :id"),
                     {"digest": digest, "duplicate_of": duplicate_of, "id": submission_id})


def downgrade() -> None:
    op.drop_index("ix_submissions_content_digest", table_name="submissions")
    op.drop_index("uq_submissions_token_digest", table_name="submissions")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("duplicate_of")
        batch.drop_column("raw_metadata")
        batch.drop_column("raw_summary")
    op.drop_index("ix_upload_attempts_token_created", table_name="upload_attempts")
    op.drop_table("upload_attempts")
