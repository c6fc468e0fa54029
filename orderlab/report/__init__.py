"""Rendering only: terminal tables (rich), matplotlib figures, the HTML report and its templates."""
