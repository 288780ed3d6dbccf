"""Side information: what the engine needs, compiled from what the expert did (annotations).

Pure numpy/scipy; no database. `app.services.side_information` loads the annotations and views
and calls `compile_side_information`.
"""

from app.sideinfo.compile import compile_side_information
from app.sideinfo.model import AnnotationRecord, Conflict, SideInformation

__all__ = ["AnnotationRecord", "Conflict", "SideInformation", "compile_side_information"]
