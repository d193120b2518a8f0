"""treeviz: learn optimisation-based decision trees and look inside them.

Run with ``streamlit run app.py``. This is a thin frame: the page table lives in
:mod:`treeviz.ui.pages` (defined once, also used by every page switch) and the page scripts in
``app_pages/``. That folder is deliberately not called ``pages/``: a ``pages/`` folder next to
this file would switch Streamlit 1.67 to its legacy multipage mode, which runs a page file without
this script (no navigation, no shared sidebar) when a page URL is opened directly.

After the page has run, the first script run of the server process gets the first training ready
(:func:`treeviz.ui.state.warm_jobs`): the job child process is started and runs every family's
small trainings, so imports, numba's kernels and a forest's worker pool are ready before the user
trains.
"""

import streamlit as st

from treeviz.ui import pages, sidebar, state

# the icon ships with the app: a Material icon name would make every browser fetch it from a font CDN
st.set_page_config(page_title="treeviz", page_icon=str(pages.ICON), layout="wide")

# expanded: past twelve pages Streamlit folds the list behind "View N more", hiding the last ones
navigation = st.navigation(pages.navigation_pages(), expanded=True)
sidebar.render()
navigation.run()
# after the page: its first render does not share the start of the warm-up
state.warm_jobs()
