"""Summing gradients across the processes (poprun's instances) of one run.

Every instance computes the gradient sum of its own replicas; the sums are
added over all instances before the Mean division, so that each instance
applies the same update and keeps the same weights.

Why MPI (mpi4py) and not torch.distributed: poprun starts the instances with
Open MPI's mpirun, so MPI's world is already there with the instances in
order; it needs no rendezvous address or port, and it is what popdist's own
collectives use (popdist.init). Debian's PyTorch has no MPI backend for
torch.distributed, and its gloo backend would need a store address agreed
beforehand. One Allreduce per weight update, on one flat buffer of every
gradient (float64, so the sum does not depend on the order of instances),
keeps it cheap.
"""
from ._errors import Error

__all__ = ["GradientReducer"]


class GradientReducer:
    """Sums the gradients of `params` over `num_processes` MPI processes;
    this one must be rank `process_id` of MPI's world."""

    def __init__(self, num_processes, process_id):
        self._num_processes = num_processes
        self._process_id = process_id
        self._comm = None

    def _world(self):
        if self._comm is not None:
            return self._comm
        try:
            from mpi4py import MPI  # noqa: WPS433 (only multi-process runs need MPI)
        except ImportError as e:
            raise Error(f"Summing gradients across {self._num_processes} processes needs mpi4py "
                        "(Debian: python3-mpi4py)") from e
        comm = MPI.COMM_WORLD
        if comm.Get_size() != self._num_processes or comm.Get_rank() != self._process_id:
            raise Error(f"The options make this process {self._process_id} of {self._num_processes} "
                        f"(Distributed), but MPI makes it rank {comm.Get_rank()} of {comm.Get_size()}: run one "
                        "process per instance under poprun (or mpirun) and let popdist.poptorch.Options or "
                        "the OMPI_COMM_WORLD_* variables set the process id and count")
        self._comm = comm
        return comm

    def check(self):
        """Fails now, before any step, if MPI cannot reduce."""
        self._world()

    def allreduce(self, params):
        import numpy  # noqa: WPS433 (mpi4py needs numpy)
        import torch  # noqa: WPS433
        comm = self._world()
        sizes = [p.numel() for p in params]
        buffer = numpy.zeros(sum(sizes) + len(params), dtype=numpy.float64)
        offset = 0
        for index, (p, n) in enumerate(zip(params, sizes)):
            if p.grad is not None:
                buffer[offset:offset + n] = p.grad.detach().reshape(-1).double().numpy()
                buffer[sum(sizes) + index] = 1.0
            offset += n
        from mpi4py import MPI  # noqa: WPS433
        comm.Allreduce(MPI.IN_PLACE, buffer, op=MPI.SUM)
        offset = 0
        for index, (p, n) in enumerate(zip(params, sizes)):
            if buffer[sum(sizes) + index] > 0:
                value = torch.from_numpy(buffer[offset:offset + n].copy()).reshape(p.shape).to(p.dtype)
                p.grad = value
            offset += n
