"""Streamlit helpers shared by the pages (the only part of treeviz that imports Streamlit)."""
