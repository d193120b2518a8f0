"""What one page or view computes from stored runs and data: no Streamlit, no figures, no labels."""
