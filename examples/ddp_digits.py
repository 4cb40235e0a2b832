"""The quickstart's digits MLP trained data-parallel with DistributedDataParallel.

    wick run -n 2 examples/ddp_digits.py        # 2 processes (any N that divides the batch)
    python examples/ddp_digits.py               # 1 process, the same code

Each process holds a replica of the model (64 -> 32 -> 10, GELU), reads its share of every
global batch of 64 images (a DistributedSampler with the same seed on every rank), and DDP
averages the gradients during backward, so every replica takes the same SGD step as one process
on the whole batch would. Rank 0 prints the test accuracy; with the same seeds, N processes
reach the same accuracy as one (the parameters agree to float rounding).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import eager as torch  # noqa: E402
import eager.distributed as dist  # noqa: E402
from eager.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from eager.utils.data import DataLoader, TensorDataset  # noqa: E402
from eager.utils.data.distributed import DistributedSampler  # noqa: E402
from quickstart import load_split  # noqa: E402

EPOCHS, BATCH, LR, MOMENTUM, SEED = 30, 64, 0.05, 0.9, 0


def main() -> float:
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if BATCH % world:
        raise SystemExit(f"the global batch {BATCH} must divide by the number of processes")
    x_train, y_train, x_test, y_test = load_split()
    torch.manual_seed(SEED)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.GELU(),
                                torch.nn.Linear(32, 10))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR, momentum=MOMENTUM)
    data = TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train))
    t0 = time.perf_counter()
    rng = np.random.default_rng(SEED)
    for epoch in range(EPOCHS):
        # one permutation per epoch, shared by all ranks (the same seed); the sampler gives rank
        # r the positions r, r + N, r + 2N, ... of it, so batch k of every rank together is
        # global batch k of one process reading `order` in batches of 64 (the sampler pads the
        # last one by repeating indices when N does not divide the dataset)
        order = rng.permutation(len(data)).tolist()
        sampler = DistributedSampler(order, num_replicas=world, rank=rank, shuffle=False)
        loader = DataLoader(torch.utils.data.Subset(data, order), batch_size=BATCH // world,
                            sampler=sampler)
        total = 0.0
        for xb, yb in loader:
            loss = torch.nn.functional.cross_entropy(ddp(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(yb)
        if rank == 0 and (epoch % 10 == 9 or epoch == 0):
            print(f"epoch {epoch + 1:3d}  loss (rank 0's shard) {total / len(sampler):.4f}")
    with torch.no_grad():
        acc = float((model(torch.from_numpy(x_test)).numpy().argmax(1) == y_test).mean())
    flat = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    every = [None] * world
    dist.all_gather_object(every, flat)
    spread = max(float(np.abs(every[0] - f).max()) for f in every)
    if rank == 0:
        print(f"{world} process(es): test accuracy {acc:.4f}, replicas differ by {spread:.1e}, "
              f"{time.perf_counter() - t0:.1f} s")
    assert spread == 0.0, "replicas diverged"
    assert acc >= 0.90, f"accuracy {acc:.3f} is below 90%"
    dist.destroy_process_group()
    return acc


if __name__ == "__main__":
    main()
