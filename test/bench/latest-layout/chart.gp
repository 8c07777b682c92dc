set terminal pngcairo size 1340,760 font "DejaVu Sans,10"
set output 'test/bench/latest-layout/chart.png'
set datafile missing "?"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 10
set yrange [0.005:20]
set ytics ("0.01" 0.01, "0.03" 0.03, "0.1" 0.1, "0.3" 0.3, "1" 1, "3" 3, "10" 10)
set grid ytics
set xtics rotate by 35 right scale 0 font ",9"
set bmargin 12
set key top left horizontal
set ylabel "relative to the local share, higher is better (log scale; seconds and MiB inverted)" font ",9"
set title "glusterfs2 benchmark: each backend's median relative to the local share = 1\n2026-12-01 22:50 UTC, 2 cores, Debian GNU/Linux 12 (bookworm), loopback"
set arrow from graph 0, first 1 to graph 1, first 1 nohead lc rgb "black" lw 1.5
plot 'test/bench/latest-layout/chart.dat' using 2:xtic(1) title 'fuse' lc rgb '#4daf4a', '' using 3 title 'glusterfs (stock)' lc rgb '#e41a1c', '' using 4 title 'glusterfs2' lc rgb '#377eb8', '' using 5 title 'glusterfs2-base, baseline build (gf2-base)' lc rgb '#ff7f00'
