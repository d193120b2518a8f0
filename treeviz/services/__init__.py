"""The app's services: data, runs and their store, background jobs, training, sweeps, searches,
grids, the views' computations and exports. No Streamlit, no plotly; no family is named here."""
