"""Reporting: a synthesis as report.md, report.json and report.html."""
