"""The estimators of every model family (no Streamlit, no plotly here)."""
