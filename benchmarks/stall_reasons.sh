#!/usr/bin/env bash
# Nsight Compute's warp-stall sampling of one launch of each contestant (benchmarks/stall_reasons.py), one report
# per contestant, exported as CSV: $OUT/NAME-sass.csv (every SASS instruction with its stall samples by reason),
# $OUT/NAME-details.csv (the sections: issue slots, pipes, occupancy, memory), $OUT/NAME-raw.csv (every metric).
# Clocks are left alone (--clock-control none), as the timed benchmarks leave them.
#
#   bash benchmarks/stall_reasons.sh attention [--shape 4,4096,32 --head-dim 128 --causal --param NAME=VALUE]
#   bash benchmarks/stall_reasons.sh gemm --gemm 320,8192,8192
#
# On the GPU machine, after `source .peers/env.sh` (CuTe DSL and flash-attn-4 there); OUT defaults to ./stall-reasons.
set -uo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
  attention) who=(tslab fa4) ;;
  gemm) who=(tslab torch) ;;
  *) echo "usage: bash benchmarks/stall_reasons.sh attention|gemm [stall_reasons.py options]" >&2; exit 2 ;;
esac
shift
OUT=${OUT:-stall-reasons}
mkdir -p "$OUT"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
[[ -x $NCU ]] || { echo "no ncu on this machine" >&2; exit 3; }
"$NCU" --version | tail -1
# --dirty-l2 (stall_reasons.py) wants the L2 as the script leaves it: ncu's own flush off
cache=all
for arg in "$@"; do [[ $arg == --dirty-l2 ]] && cache=none; done
for name in "${who[@]}"; do
  "$NCU" --clock-control none --cache-control "$cache" --profile-from-start off --set full --import-source no -f -o "$OUT/$name" \
    python3 benchmarks/stall_reasons.py --which "$name" "$@" 2>&1 | grep -v "^==PROF==" | tail -5
  "$NCU" -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/$name-sass.csv"
  "$NCU" -i "$OUT/$name.ncu-rep" --page details --csv > "$OUT/$name-details.csv"
  "$NCU" -i "$OUT/$name.ncu-rep" --page raw --csv > "$OUT/$name-raw.csv"
  wc -c "$OUT/$name"*.csv
done
