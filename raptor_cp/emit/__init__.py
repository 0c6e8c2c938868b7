"""Emission of selected schedules as pimsim-nn programs (the seeds' steps 9–10).

`program` lowers, allocates and verifies a checked schedule in memory
(`order`, `lower`, `allocate`, `rendezvous`); `files` writes the program, the
chip config and its network table; `backend` selects again among costed
pipeline candidates when the backend rejects one.
"""
