"""Feedback reports: a Report built from a stored session, rendered as JSON, Markdown, HTML or PDF."""

from app.reports.build import build_report
from app.reports.model import Report
from app.reports.render import FORMATS, content_disposition, media_type, render

__all__ = ["FORMATS", "Report", "build_report", "content_disposition", "media_type", "render"]
