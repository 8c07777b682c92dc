"""The sizes and durations of a run: the default set, --quick, and what
--prefetch-compare changes."""

from .common import KiB, MiB, GiB


# How clients that take a lease read and write (Explorer's copy engine,
# the kernel client's readahead): (request size, requests in flight)
LEASE_PROFILES = [(64 * KiB, 1), (64 * KiB, 8), (1 * MiB, 4), (1 * MiB, 16),
                  (4 * MiB, 4)]
# --quick checks that every kind of lease run works, not every size: the
# smallest and the deepest read warm, one read cold, and a write of each
# request size range; every profile stays in the default set
QUICK_LEASE_READS = [(64 * KiB, 1, 'warm'), (1 * MiB, 16, 'warm'),
                     (1 * MiB, 4, 'cold')]
QUICK_LEASE_WRITES = [(64 * KiB, 8), (4 * MiB, 4)]


class Config:
    def __init__(self, quick, prefetch_compare=False):
        self.quick = quick
        if quick:
            self.seq_size = 128 * MiB
            self.seq_cap = 2.0
            self.seq_variants = [(64 * KiB, 'warm'), (1 * MiB, 'cold')]
            self.write_size = 128 * MiB
            self.write_cap = 2.0
            self.write_bs = [1 * MiB]
            self.rand_secs = 1.5
            self.mc_clients = 16
            self.mc_size = 8 * MiB
            self.mc_cap = 2.0
            self.mw_clients = 16
            self.mw_secs = 1.5
            self.mw_region = 2 * MiB
            self.sr_clients = 16
            self.sr_files = 200
            self.sr_secs = 1.5
            self.sf_files = 100
            self.lease_size = 64 * MiB
            self.lease_read_variants = list(QUICK_LEASE_READS)
            self.lease_write_variants = list(QUICK_LEASE_WRITES)
        else:
            self.seq_size = 1 * GiB
            self.seq_cap = 3.0
            self.seq_variants = [(64 * KiB, 'warm'), (1 * MiB, 'warm'),
                                 (64 * KiB, 'cold'), (1 * MiB, 'cold')]
            self.write_size = 1 * GiB
            self.write_cap = 3.0
            self.write_bs = [64 * KiB, 1 * MiB]
            self.rand_secs = 2.5
            self.mc_clients = 16
            self.mc_size = 64 * MiB
            self.mc_cap = 3.0
            self.mw_clients = 16
            self.mw_secs = 2.5
            self.mw_region = 8 * MiB
            self.sr_clients = 16
            self.sr_files = 1000
            self.sr_secs = 2.5
            self.sf_files = 1000
            self.lease_size = 256 * MiB
            self.lease_read_variants = [
                (bs, depth, cache) for cache in ('warm', 'cold')
                for bs, depth in LEASE_PROFILES]
            self.lease_write_variants = [(1 * MiB, 1)] + LEASE_PROFILES
        if prefetch_compare:
            # warm reads and writes at 64 KiB and 1 MiB
            self.seq_variants = [(64 * KiB, 'warm'), (1 * MiB, 'warm')]
            self.write_bs = [64 * KiB, 1 * MiB]
        self.rand_bs = 4 * KiB
        self.mw_bs = 8 * KiB
        self.mc_bs = 64 * KiB
        self.sf_size = 4 * KiB
        self.sr_size = 4 * KiB
        self.pw_size = self.seq_size      # pipewrite: as the pipelined read

    def as_dict(self):
        return {k: v for k, v in vars(self).items()}
