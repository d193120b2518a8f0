"""The one exception type the app shows to users.

Every error a user can cause (bad file, bad parameter, missing column, a model file that is not
ours) is raised as :class:`TreevizError` with a message that is a complete sentence saying what
was wrong and what to do. The app catches exactly this type and shows ``str(err)`` with
``st.error``; anything else is a bug and is reported as one.
"""

from __future__ import annotations


class TreevizError(ValueError):
    """A problem the user can fix, described in one or two plain sentences.

    It subclasses ValueError so scikit-learn style callers that expect ValueError for bad
    input keep working.
    """


class TrainingCancelled(Exception):
    """Raised by a callback to stop training early at the user's request."""
