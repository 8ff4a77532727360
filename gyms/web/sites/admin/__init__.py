"""Ledger CMS, the admin site: articles (filter, sort, edit, publish, delete), staff users and
roles, site settings and an audit log."""
