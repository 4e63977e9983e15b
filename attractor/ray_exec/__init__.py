"""The Ray executor (the ``attractor[ray]`` extra): runs and the branches of
parallel nodes on a Ray cluster; only the launcher picks it."""
