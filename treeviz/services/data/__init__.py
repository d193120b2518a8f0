"""The data layer: built-in datasets, the upload path, and preprocessing.

Data flows one way: a file or a catalogue key becomes a :class:`Dataset` (numeric features,
encoded target, notes), and :func:`prepare` splits it and fits imputation and scaling on the
training part only.
"""

from treeviz.services.data.catalogue import CATALOGUE, CatalogueEntry, list_datasets, load_dataset, load_table
from treeviz.services.data.dataset import Dataset
from treeviz.services.data.preprocess import PreparedData, PrepConfig, prepare
from treeviz.services.data.upload import (
    TableOptions,
    detect_task,
    inspect_table,
    max_upload_mb,
    read_table,
    suggest_target,
    table_to_dataset,
)

__all__ = [
    "CATALOGUE",
    "CatalogueEntry",
    "Dataset",
    "PrepConfig",
    "PreparedData",
    "TableOptions",
    "detect_task",
    "inspect_table",
    "list_datasets",
    "load_dataset",
    "load_table",
    "max_upload_mb",
    "prepare",
    "read_table",
    "suggest_target",
    "table_to_dataset",
]
