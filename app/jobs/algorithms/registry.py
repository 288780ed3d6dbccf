"""Every algorithm the workbench can run, by id."""

from app.jobs.algorithms.base import Algorithm
from app.jobs.algorithms.c3l import C3L_ALGORITHM
from app.jobs.algorithms.c4s import C4S_ALGORITHM
from app.jobs.algorithms.cec import CEC_ALGORITHM, CEC_IB_ALGORITHM
from app.jobs.algorithms.ppc import PPC_ALGORITHM
from app.jobs.algorithms.smic import SMIC_ALGORITHM

ALGORITHMS: dict[str, Algorithm] = {
    a.id: a
    for a in (
        CEC_ALGORITHM,
        CEC_IB_ALGORITHM,
        PPC_ALGORITHM,
        C4S_ALGORITHM,
        C3L_ALGORITHM,
        SMIC_ALGORITHM,
    )
}


def get_algorithm(algorithm_id: str) -> Algorithm | None:
    return ALGORITHMS.get(algorithm_id)
