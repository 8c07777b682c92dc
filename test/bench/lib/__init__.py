"""The benchmark suite behind test/bench/run, by concern:

  common     names (backends, workloads), sizes, small helpers
  config     the sizes and durations of a run (default, --quick, presets)
  build      the load generators (test/bench/*.c), built when stale
  stack      test/stack env, the main smbd, --volume-group
  cpu        RSS and CPU time of the processes serving a run
  clients    the load generators, smbclient and fio as the run's clients
  data       the data set, the bricks, the page cache
  workloads  one method per workload
  bench      the driver: the runs, interleaved and repeated; the records
  report     summary, ratios; results.json, results.csv, results.md
  chart      chart.png (gnuplot)
  meta       versions, git revision, the modules installed
  cli        the command line (main)
"""
