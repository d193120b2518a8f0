"""The app's page scripts, run by st.navigation from app.py (see treeviz/ui/pages.py for the table)."""
