/*
 * gf2nofini.so: preloaded into fio by test/bench/run for the raw-libgfapi
 * ceiling.  glfs_fini() of gluster 10.3 takes ~10 s (the same wait smbd
 * pays at tree disconnect with the stock module); fio calls it after the
 * measured part, once per run.  This stub returns at once; the process
 * exits right after and the kernel closes its connections.  Files were
 * already closed (glfs_close) and, for writes, read back by fio's verify.
 */
struct glfs;

int glfs_fini(struct glfs *fs);

int glfs_fini(struct glfs *fs)
{
	(void)fs;
	return 0;
}
