"""Alembic environment and revisions (a package so an installed copy ships them)."""
