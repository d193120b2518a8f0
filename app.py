"""treeviz: learn optimisation-based decision trees and look inside them.

Run with ``streamlit run app.py``. The pages live in ``app_pages/``: a folder named ``pages/``
next to this file would switch Streamlit to its legacy multipage mode, which runs a page file
without this script (no navigation, no shared sidebar) when a page URL is opened directly.
"""

import streamlit as st

from treeviz.ui import sidebar

st.set_page_config(page_title="treeviz", page_icon=":material/account_tree:", layout="wide")

PAGES = [
    st.Page("app_pages/data.py", title="Data", icon=":material/table_chart:", default=True),
    st.Page("app_pages/train.py", title="Train", icon=":material/model_training:"),
    st.Page("app_pages/explorer.py", title="Tree explorer", icon=":material/account_tree:"),
    st.Page("app_pages/routing.py", title="Routing", icon=":material/alt_route:"),
    st.Page("app_pages/pruning.py", title="Pruning / λ path", icon=":material/content_cut:"),
    st.Page("app_pages/clustering.py", title="Clustering", icon=":material/bubble_chart:"),
    st.Page("app_pages/runs.py", title="Runs", icon=":material/history:"),
]

navigation = st.navigation(PAGES)
sidebar.render()
navigation.run()
