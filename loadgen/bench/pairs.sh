# Sourced by the benchmarks: A B A B pairs of loadgen against another
# client, each pair's line and the set-up's medians.
#
# run_pairs OTHER PAIRS MEASURE_A MEASURE_B: runs PAIRS pairs; MEASURE_A
# and MEASURE_B are commands printing "rps requests cpu_s" (loadgen first,
# then OTHER); prints a line per pair (requests/s of each, their ratio,
# CPU seconds per million requests of each, their ratio) and the medians.
run_pairs() {
  local other=$1 n=$2 measure_a=$3 measure_b=$4 i line lr lreq lcpu orr oreq ocpu
  local rps_ratios=() cpu_ratios=()
  printf '%-5s %12s %12s %8s %14s %14s %8s\n' pair loadgen_rps "${other}_rps" ratio loadgen_cpu/M "${other}_cpu/M" ratio
  for i in $(seq "$n"); do
    read -r lr lreq lcpu _ < <(eval "$measure_a")
    read -r orr oreq ocpu _ < <(eval "$measure_b")
    line=$(python3 -c "
lr,lreq,lcpu,orr,oreq,ocpu=map(float,'$lr $lreq $lcpu $orr $oreq $ocpu'.split())
lm=lcpu/lreq*1e6; om=ocpu/oreq*1e6
print(f'{lr:12.0f} {orr:12.0f} {lr/orr:8.3f} {lm:14.3f} {om:14.3f} {lm/om:8.3f}')")
    printf '%-5s %s\n' "$i" "$line"
    rps_ratios+=("$(awk '{print $3}' <<<"$line")"); cpu_ratios+=("$(awk '{print $6}' <<<"$line")")
  done
  python3 -c "
import statistics as s
r=[float(x) for x in '${rps_ratios[*]}'.split()]; c=[float(x) for x in '${cpu_ratios[*]}'.split()]
print(f'median  rps ratio loadgen/$other {s.median(r):.3f}   cpu-per-request ratio loadgen/$other {s.median(c):.3f}')"
}
